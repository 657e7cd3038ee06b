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
/* Out of memory; returns GPUCC_ERROR. */
int gpucc_error_oom(void);

#endif
