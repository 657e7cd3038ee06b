/*
 * lib/base/input_file.h -- opening the input files libgpucc reads by the names
 * users give (a module to compile, an image to embed, a payload to pack),
 * and quoting those names in messages on one line (internal; implemented
 * in lib/base/input_file.c).
 */
#ifndef GPUCC_LIB_INPUT_FILE_H
#define GPUCC_LIB_INPUT_FILE_H

#include "gpucc/common.h"

#include <stddef.h>
#include <sys/stat.h>

/* Room for a path as open messages quote it: absurd ones are cut. */
#define GPUCC_SHOWN_PATH_SIZE 256

/* Receives bytes in order (a file's, a payload's before it is verified);
 * returns 0, or an error code (already set) to stop. */
typedef int (*gpucc_payload_sink)(void *ctx, const void *data, size_t size);

/* Open path, an input a user named, for reading into *out_fd (the caller
 * closes it) and its status into *out_st (when not NULL), without waiting
 * on a FIFO.  Messages say "NOUN 'PATH'" (noun may be NULL), the path
 * through gpucc_escape_controls.  What is not a regular file is refused
 * with refuse_code ("'x' is a directory, not KIND"), and so is a name too
 * long to open (ENAMETOOLONG): both are defects of the name given, not
 * failures of the machine.  Other failures: gpucc_error_set_errno's codes. */
int gpucc_open_input_file(int *out_fd, struct stat *out_st, const char *path, const char *noun,
                          const char *kind, int refuse_code);

/* The error of a failed open(2) of path, an input a user named, with errno
 * as open left it: "cannot open NOUN 'PATH': REASON" (noun may be NULL).
 * A name too long to open (ENAMETOOLONG) is a defect of the name given,
 * GPUCC_EINVALID, its path quoted through gpucc_escape_controls (cut) with
 * its length, as gpucc_open_input_file words it; others are
 * gpucc_error_set_errno's, the path whole (its control characters spelt,
 * as in every message: formats/error.c).  Used by every open of an
 * image, snapshot or source by name (list, cat, merge, cache import...). */
int gpucc_error_set_open(const char *noun, const char *path);

/* Open path for reading into *out_fd (the caller closes it), without
 * waiting on a FIFO: GPUCC_EINVALID when it is not a regular file. */
int gpucc_open_regular_file(int *out_fd, const char *path);
/* Read the regular file at path front to back into sink in bounded chunks
 * (errors name path; GPUCC_EINVALID when it is not a regular file). */
int gpucc_read_file_chunks(const char *path, gpucc_payload_sink sink, void *ctx);
/* gpucc_digest_file, handing the bytes it hashes to sink as well (when
 * not NULL). */
int gpucc_digest_file_to(gpucc_digest *out, uint64_t *out_size, const char *path,
                         gpucc_payload_sink sink, void *ctx);

#endif
