/*
 * lib/compile/compile_source_text.c -- the text a run of sources builds
 * (lib/compile/compile_source_run.h): printf into a new string.  (Growable
 * text is formats/byte_buffer.h's.)
 */
#include "compile_source_run.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

char *string_printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *out = NULL;
	if (vasprintf(&out, fmt, ap) < 0)
		out = NULL;
	va_end(ap);
	return out;
}
