/*
 * formats/errors.h -- setting the thread-local last error (internal).
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
/* An options struct of a version this libgpucc does not know (what:
 * "write options"): GPUCC_EINVALID naming both; 0 for version known. */
int gpucc_options_version_check(const char *what, unsigned version, unsigned known);
/* Out of memory; returns GPUCC_ERROR. */
int gpucc_error_oom(void);

/* Not an error, and no message set: what an internal function that serves
 * only some inputs (a fast path, an entry that may have gone) returns for
 * one it does not, so that its caller takes the other path.  Positive, so
 * never one of the negative GPUCC_E* codes. */
#define GPUCC_OTHER_PATH 1

/*
 * NULL for a pointer that a public function's contract requires
 * (gpucc/common.h): GPUCC_EINVALID, and the message names the function and
 * the argument, always in these words: "gpucc_image_open: 'path' is NULL".
 * A function checks its arguments first, one line each, before it does
 * anything else (opens a file, loads LLVM or a GPU runtime); a `**out` is
 * checked first and set to NULL before the others, so that it is NULL
 * whichever argument is refused:
 *
 *   GPUCC_REQUIRE(path);                 int functions: return GPUCC_EINVALID
 *   GPUCC_REQUIRE_OR(img, NULL);         accessors: return NULL, 0 or false
 *   GPUCC_REQUIRE_VOID(out);             void functions: return
 *   if (size != 0) GPUCC_REQUIRE(data);  a buffer: (NULL, 0) is an empty one
 *   GPUCC_REQUIRE_EACH(sources, count);  an array of count pointers, each
 *                                        required ("'sources[1]' is NULL")
 *
 * The argument is named as it is spelt in the call, which is the name the
 * public header gives it.  Arguments the header calls optional are not
 * checked.
 */
int gpucc_error_null_argument(const char *function, const char *argument);
/* The same for element index of the array argument array. */
int gpucc_error_null_element(const char *function, const char *array, size_t index);

#define GPUCC_REQUIRE_OR(argument, value)                                   \
	do {                                                                    \
		if ((argument) == NULL) {                                           \
			gpucc_error_null_argument(__func__, #argument);                 \
			return value;                                                   \
		}                                                                   \
	} while (0)
#define GPUCC_REQUIRE(argument) GPUCC_REQUIRE_OR(argument, GPUCC_EINVALID)
#define GPUCC_REQUIRE_VOID(argument) GPUCC_REQUIRE_OR(argument, /* nothing */)
#define GPUCC_REQUIRE_EACH(array, count)                                    \
	do {                                                                    \
		if ((count) != 0)                                                   \
			GPUCC_REQUIRE(array);                                           \
		for (size_t require_i_ = 0; require_i_ < (count); require_i_++)     \
			if ((array)[require_i_] == NULL)                                \
				return gpucc_error_null_element(__func__, #array, require_i_); \
	} while (0)

#endif
