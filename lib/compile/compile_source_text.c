/*
 * lib/compile/compile_source_text.c -- the text a run of sources builds
 * (lib/compile/compile_source_run.h): printf into a new string, and growable
 * text that remembers running out of memory.
 */
#include "compile_source_run.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void text_add(textbuf *t, const char *s, size_t len)
{
	if (t->failed)
		return;
	if (t->size + len + 1 > t->capacity) {
		size_t n = t->capacity ? t->capacity : 4096;
		while (n < t->size + len + 1)
			n *= 2;
		char *grown = realloc(t->data, n);
		if (!grown) {
			t->failed = true;
			return;
		}
		t->data = grown;
		t->capacity = n;
	}
	memcpy(t->data + t->size, s, len);
	t->size += len;
	t->data[t->size] = '\0';
}

void text_str(textbuf *t, const char *s)
{
	text_add(t, s, strlen(s));
}
