/*
 * formats/byte_buffer.h -- the one growable byte buffer: append bytes or
 * printf output, reserve room, take the bytes over, free.  Every size is
 * checked before it is added, so a buffer never wraps: an append that
 * cannot grow it (out of memory, or past SIZE_MAX) marks it failed, and
 * later appends do nothing, so a writer may check once at the end.
 *
 * In formats/, the lowest place that builds bytes (keys, manifests), and
 * plain C without libgpucc's errors: the caller says what failed.  The LLVM
 * backend module and the compile worker compile it in.
 */
#ifndef GPUCC_LIB_BYTE_BUFFER_H
#define GPUCC_LIB_BYTE_BUFFER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct gpucc_buffer {
	char *data;      /* NULL until something is added; then NUL after size bytes */
	size_t size;     /* bytes held */
	size_t capacity; /* bytes allocated, the NUL's included */
	bool failed;     /* an append could not grow it; it holds what came before */
} gpucc_buffer;

#define GPUCC_BUFFER_INIT {NULL, 0, 0, false}

/* Room for more bytes (and the NUL) after size, without adding them: 0,
 * or -1 (failed set). */
int gpucc_buffer_reserve(gpucc_buffer *b, size_t more);
/* Add n bytes, uninitialised: where they start, or NULL (failed set). */
void *gpucc_buffer_extend(gpucc_buffer *b, size_t n);
/* Add bytes[0..n), or a string without its NUL, or printf's output:
 * 0, or -1 (failed set). */
int gpucc_buffer_append(gpucc_buffer *b, const void *bytes, size_t n);
int gpucc_buffer_append_string(gpucc_buffer *b, const char *s);
int gpucc_buffer_printf(gpucc_buffer *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int gpucc_buffer_vprintf(gpucc_buffer *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Drop the bytes, keep the allocation (and a failure). */
void gpucc_buffer_clear(gpucc_buffer *b);
/* Hand the bytes over (NUL-terminated; the caller frees them), *size their
 * count when size is not NULL, and reset b.  NULL when b failed (the bytes
 * are freed) or never held anything. */
char *gpucc_buffer_take(gpucc_buffer *b, size_t *size);
/* Free the bytes and reset b. */
void gpucc_buffer_free(gpucc_buffer *b);

#endif
