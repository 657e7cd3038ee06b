/*
 * lib/base/file_identity.h -- when two names are one file: the one rule for
 * an output that would replace an input, and for an input named twice
 * (internal; implemented in lib/base/file_identity.c, whose public half is
 * declared in gpucc/common.h).
 */
#ifndef GPUCC_LIB_FILE_IDENTITY_H
#define GPUCC_LIB_FILE_IDENTITY_H

#include "gpucc/common.h"

#include <stdbool.h>
#include <sys/stat.h>

/* Whether a and b, two stat(2) results, describe one file: the same
 * device and inode. */
bool gpucc_stat_same_file(const struct stat *a, const struct stat *b);

/* Whether path names, following links, the existing file that file (a
 * stat(2) or fstat(2) result of an input) describes: then an output
 * published at path, written beside it and renamed over it, would replace
 * that input.  False when path names nothing. */
bool gpucc_path_names_file(const char *path, const struct stat *file);

#endif
