/*
 * lib/errors.h -- setting the thread-local last error (internal).
 *
 * Every failing path in libgpucc sets exactly one message, saying what failed
 * first and quoting its subject ("'x.gpucc': truncated image ..."), and
 * returns the code it set, so that failure paths read `return gpucc_error_set(...)`.
 */
#ifndef GPUCC_LIB_ERRORS_H
#define GPUCC_LIB_ERRORS_H

#include "gpucc/common.h"

/* Set the last error; returns code. */
int gpucc_error_set(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Set the last error from errno: "<message>: <strerror>", code
 * GPUCC_ENOTFOUND for ENOENT and GPUCC_ERROR otherwise; returns the code. */
int gpucc_error_set_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prefix the current message with "<prefix>: " keeping its code; returns it. */
int gpucc_error_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The errno behind the last error: what gpucc_error_set_errno reported,
 * kept by gpucc_error_prefix; 0 when the last error was set otherwise.
 * What tells a full disk (ENOSPC) from one file's problem (EACCES). */
int gpucc_error_last_errno(void);
/* Give the last error that errno again: for a caller that rewords the
 * message with gpucc_error_set, which forgets it. */
void gpucc_error_keep_errno(int sys_errno);
/* Out of memory; returns GPUCC_ERROR. */
int gpucc_error_oom(void);

#endif
