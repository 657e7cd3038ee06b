/*
 * formats/error.c -- the thread-local last error (one line, its control
 * characters spelt as formats/escape.h says).
 */
#include "errors.h"
#include "escape.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define MESSAGE_SIZE 1024

static _Thread_local char last_message[MESSAGE_SIZE] = "no error";
static _Thread_local gpucc_error last = {0, NULL};
/* The errno behind the last error, when gpucc_error_set_errno set it. */
static _Thread_local int last_errno;

const gpucc_error *gpucc_error_last(void)
{
	last.message = last_message;
	return &last;
}

void gpucc_error_clear(void)
{
	last.code = 0;
	last_errno = 0;
	snprintf(last_message, sizeof last_message, "no error");
}

static void set_message(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

static void set_message(const char *fmt, va_list ap)
{
	char buffer[MESSAGE_SIZE];
	vsnprintf(buffer, sizeof buffer, fmt, ap);
	/* One line, and no escape sequence for a terminal: the command prints
	 * messages as they are.  Control characters are spelt as the command
	 * spells names, whoever quoted them; what a caller spelt already
	 * (gpucc_escape_controls) reads the same, and so does a message
	 * set again with a prefix (gpucc_error_prefix). */
	gpucc_escape_controls(last_message, sizeof last_message, buffer);
}

int gpucc_error_set(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	set_message(fmt, ap);
	va_end(ap);
	last.code = code;
	last_errno = 0;
	return code;
}

int gpucc_error_set_errno(const char *fmt, ...)
{
	int saved = errno;
	char buffer[MESSAGE_SIZE];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buffer, sizeof buffer, fmt, ap);
	va_end(ap);
	int code = saved == ENOENT ? GPUCC_ENOTFOUND : GPUCC_ERROR;
	gpucc_error_set(code, "%s: %s", buffer, strerror(saved));
	last_errno = saved;
	return code;
}

int gpucc_error_prefix(const char *fmt, ...)
{
	char prefix[MESSAGE_SIZE];
	char message[MESSAGE_SIZE];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	memcpy(message, last_message, sizeof message);
	int saved = last_errno;
	int code = gpucc_error_set(last.code ? last.code : GPUCC_ERROR, "%s: %s", prefix, message);
	last_errno = saved;
	return code;
}

int gpucc_error_last_errno(void)
{
	return last_errno;
}

void gpucc_error_keep_errno(int sys_errno)
{
	last_errno = sys_errno;
}

int gpucc_error_oom(void)
{
	return gpucc_error_set(GPUCC_ERROR, "out of memory");
}

int gpucc_options_version_check(const char *what, unsigned version, unsigned known)
{
	if (version == known)
		return 0;
	return gpucc_error_set(GPUCC_EINVALID,
	                       "%s of version %u: this libgpucc knows version %u (set the field "
	                       "version, or start from the header's _INIT)",
	                       what, version, known);
}

int gpucc_error_null_argument(const char *function, const char *argument)
{
	return gpucc_error_set(GPUCC_EINVALID, "%s: '%s' is NULL", function, argument);
}

int gpucc_error_null_element(const char *function, const char *array, size_t index)
{
	return gpucc_error_set(GPUCC_EINVALID, "%s: '%s[%zu]' is NULL", function, array, index);
}

const char *gpucc_error_name(int code)
{
	switch (code) {
	case GPUCC_OK: return "GPUCC_OK";
	case GPUCC_ERROR: return "GPUCC_ERROR";
	case GPUCC_ENOTFOUND: return "GPUCC_ENOTFOUND";
	case GPUCC_EAMBIGUOUS: return "GPUCC_EAMBIGUOUS";
	case GPUCC_EINVALID: return "GPUCC_EINVALID";
	case GPUCC_ECORRUPT: return "GPUCC_ECORRUPT";
	case GPUCC_EVERSION: return "GPUCC_EVERSION";
	case GPUCC_ECONFLICT: return "GPUCC_ECONFLICT";
	case GPUCC_ECOMPILE: return "GPUCC_ECOMPILE";
	case GPUCC_EUNAVAILABLE: return "GPUCC_EUNAVAILABLE";
	default: return "GPUCC_E?";
	}
}
