/*
 * lib/image/read_window.c -- reading a file's members in order through a
 * read-ahead window (lib/image/read_window.h).
 */
#include "read_window.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

/* A read starting at most this far past the end of the last one continues
 * it (the gap is the members between, skipped). */
#define SEQUENTIAL_GAP ((uint64_t)64 << 10)

void gpucc_read_window_init(gpucc_read_window *w, size_t capacity)
{
	*w = (gpucc_read_window){.capacity = capacity, .fd = -1};
}

void gpucc_read_window_release(gpucc_read_window *w)
{
	free(w->bytes);
	gpucc_read_window_init(w, w->capacity);
}

ssize_t gpucc_pread_full(int fd, void *buf, size_t len, uint64_t offset)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(offset + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

ssize_t gpucc_read_window_get(gpucc_read_window *w, int fd, uint64_t offset, size_t len,
                              const unsigned char **at)
{
	if (fd == w->fd && offset >= w->offset && offset + len <= w->offset + w->len) {
		*at = w->bytes + (offset - w->offset);
		w->next = offset + len;
		return (ssize_t)len;
	}
	if (len > w->capacity) {
		errno = EINVAL;
		return -1;
	}
	if (!w->bytes && !(w->bytes = malloc(w->capacity))) {
		errno = ENOMEM;
		return -1;
	}
	bool sequential = fd == w->fd && offset >= w->next && offset - w->next <= SEQUENTIAL_GAP;
	w->fd = -1;
	ssize_t n = gpucc_pread_full(fd, w->bytes, sequential ? w->capacity : len, offset);
	if (n < 0)
		return -1;
	w->fd = fd;
	w->offset = offset;
	w->len = (size_t)n;
	w->next = offset + len;
	*at = w->bytes;
	return n < (ssize_t)len ? n : (ssize_t)len;
}
