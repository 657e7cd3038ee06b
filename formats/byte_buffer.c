/*
 * formats/byte_buffer.c -- the growable byte buffer (formats/byte_buffer.h).
 */
#include "byte_buffer.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first allocation: most buffers (a key's component, a message) fit. */
#define FIRST_CAPACITY 256

int gpucc_buffer_reserve(gpucc_buffer *b, size_t more)
{
	if (b->failed)
		return -1;
	if (more > SIZE_MAX - 1 - b->size) {
		b->failed = true;
		return -1;
	}
	size_t needed = b->size + more + 1;
	if (needed <= b->capacity)
		return 0;
	size_t capacity = b->capacity ? b->capacity : FIRST_CAPACITY;
	while (capacity < needed)
		capacity = capacity > SIZE_MAX / 2 ? needed : capacity * 2;
	char *grown = realloc(b->data, capacity);
	if (!grown) {
		b->failed = true;
		return -1;
	}
	b->data = grown;
	b->capacity = capacity;
	b->data[b->size] = '\0';
	return 0;
}

void *gpucc_buffer_extend(gpucc_buffer *b, size_t n)
{
	if (gpucc_buffer_reserve(b, n) != 0)
		return NULL;
	char *at = b->data + b->size;
	b->size += n;
	b->data[b->size] = '\0';
	return at;
}

int gpucc_buffer_append(gpucc_buffer *b, const void *bytes, size_t n)
{
	void *at = gpucc_buffer_extend(b, n);
	if (!at)
		return -1;
	if (n)
		memcpy(at, bytes, n);
	return 0;
}

int gpucc_buffer_append_string(gpucc_buffer *b, const char *s)
{
	return gpucc_buffer_append(b, s, strlen(s));
}

int gpucc_buffer_vprintf(gpucc_buffer *b, const char *fmt, va_list ap)
{
	if (b->failed)
		return -1;
	va_list again;
	va_copy(again, ap);
	char small[256];
	int n = vsnprintf(small, sizeof small, fmt, ap);
	if (n < 0) {
		va_end(again);
		b->failed = true;
		return -1;
	}
	int rc = 0;
	if ((size_t)n < sizeof small) {
		rc = gpucc_buffer_append(b, small, (size_t)n);
	} else if (gpucc_buffer_reserve(b, (size_t)n) == 0) {
		vsnprintf(b->data + b->size, (size_t)n + 1, fmt, again);
		b->size += (size_t)n;
	} else {
		rc = -1;
	}
	va_end(again);
	return rc;
}

int gpucc_buffer_printf(gpucc_buffer *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = gpucc_buffer_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

void gpucc_buffer_clear(gpucc_buffer *b)
{
	b->size = 0;
	if (b->data)
		b->data[0] = '\0';
}

char *gpucc_buffer_take(gpucc_buffer *b, size_t *size)
{
	char *data = b->failed ? NULL : b->data;
	if (size)
		*size = data ? b->size : 0;
	if (!data)
		free(b->data);
	*b = (gpucc_buffer)GPUCC_BUFFER_INIT;
	return data;
}

void gpucc_buffer_free(gpucc_buffer *b)
{
	free(b->data);
	*b = (gpucc_buffer)GPUCC_BUFFER_INIT;
}
