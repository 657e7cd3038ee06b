/*
 * lib/image/read_window.h -- reading a file's members in order through a
 * read-ahead window.
 *
 * Payloads copied from an image in archive order are small (tens of KiB)
 * and mostly back to back.  Reading each with its own pread costs about
 * three times the system time of reading the same bytes in large pieces,
 * so a window reads a large piece when a read continues the last one, and
 * hands out pointers into it.  A read that jumps elsewhere reads just the
 * bytes asked for: picking scattered payloads reads no more than they hold.
 */
#ifndef GPUCC_LIB_READ_WINDOW_H
#define GPUCC_LIB_READ_WINDOW_H

#include <stdint.h>
#include <sys/types.h>

typedef struct gpucc_read_window {
	unsigned char *bytes; /* capacity bytes, allocated on first use */
	size_t capacity;
	int fd;               /* the file the bytes are from, or -1 */
	uint64_t offset;      /* bytes [offset, offset + len) of fd */
	size_t len;
	uint64_t next;        /* where the last read ended */
} gpucc_read_window;

/* An empty window of capacity bytes (nothing allocated yet). */
void gpucc_read_window_init(gpucc_read_window *w, size_t capacity);
void gpucc_read_window_release(gpucc_read_window *w);

/* Bytes [offset, offset + len) of fd, len <= the window's capacity: *at
 * points at them until the next call on w.  Returns how many there are
 * (fewer than len at the end of the file), or -1 with errno set. */
ssize_t gpucc_read_window_get(gpucc_read_window *w, int fd, uint64_t offset, size_t len,
                              const unsigned char **at);

/* pread len bytes at offset, retrying after interruptions and short
 * reads: the count read (short only at the end of the file), or -1. */
ssize_t gpucc_pread_full(int fd, void *buf, size_t len, uint64_t offset);

#endif
