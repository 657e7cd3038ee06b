/*
 * lib/atomic_file.c -- temporary file beside the target, fsync, rename,
 * directory fsync; and flock-based advisory locks (lib/atomic_file.h).
 */
#include "atomic_file.h"

#include "errors.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static atomic_uint temp_counter;

/* The directory part of path ("." when none), in a new string. */
static char *directory_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

int gpucc_atomic_file_open(gpucc_atomic_file *f, const char *path)
{
	memset(f, 0, sizeof *f);
	f->fd = -1;
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	if (!*base)
		return gpucc_error_set(GPUCC_EINVALID, "'%s' is a directory, not a file name", path);
	size_t dir_len = slash ? (size_t)(slash - path + 1) : 0;
	size_t size = strlen(path) + 64;
	f->path = strdup(path);
	f->temp_path = malloc(size);
	if (!f->path || !f->temp_path) {
		gpucc_atomic_file_abort(f);
		return gpucc_error_oom();
	}
	for (int attempt = 0; attempt < 100; attempt++) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		snprintf(f->temp_path, size, "%.*s.%s.tmp.%ld.%u%03ld", (int)dir_len, path, base,
		         (long)getpid(), atomic_fetch_add(&temp_counter, 1), now.tv_nsec % 1000);
		f->fd = open(f->temp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (f->fd >= 0)
			return 0;
		if (errno != EEXIST)
			break;
	}
	int rc = gpucc_error_set_errno("cannot create a file beside '%s'", path);
	if (rc == GPUCC_ENOTFOUND)
		rc = gpucc_error_set(GPUCC_ENOTFOUND, "cannot create '%s': its directory does not exist",
		                     path);
	free(f->temp_path);
	f->temp_path = NULL;
	gpucc_atomic_file_abort(f);
	return rc;
}

int gpucc_atomic_file_commit(gpucc_atomic_file *f)
{
	int rc = 0;
	if (!f->no_sync && fsync(f->fd) != 0)
		rc = gpucc_error_set_errno("cannot write '%s'", f->path);
	else if (close(f->fd) != 0)
		rc = gpucc_error_set_errno("cannot write '%s'", f->path);
	f->fd = -1;
	if (rc == 0 && rename(f->temp_path, f->path) != 0)
		rc = gpucc_error_set_errno("cannot replace '%s'", f->path);
	if (rc) {
		gpucc_atomic_file_abort(f);
		return rc == GPUCC_ENOTFOUND ? GPUCC_ERROR : rc;
	}
	char *dir = f->no_sync ? NULL : directory_of(f->path);
	if (dir) {
		int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd); /* best effort: some file systems refuse */
			close(dfd);
		}
		free(dir);
	}
	free(f->temp_path);
	f->temp_path = NULL;
	free(f->path);
	f->path = NULL;
	return 0;
}

void gpucc_atomic_file_abort(gpucc_atomic_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	if (f->temp_path)
		unlink(f->temp_path);
	free(f->temp_path);
	free(f->path);
	f->temp_path = NULL;
	f->path = NULL;
}

int gpucc_write_all(int fd, const void *buf, size_t size)
{
	const char *p = buf;
	while (size > 0) {
		ssize_t n = write(fd, p, size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		size -= (size_t)n;
	}
	return 0;
}

int gpucc_lock_acquire(const char *path, bool exclusive)
{
	size_t size = strlen(path) + 8;
	char *lock_path = malloc(size);
	if (!lock_path)
		return gpucc_error_oom();
	snprintf(lock_path, size, "%s.lock", path);
	int fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0)
		fd = open(lock_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int rc = gpucc_error_set_errno("cannot create lock '%s'", lock_path);
		free(lock_path);
		return rc;
	}
	while (flock(fd, exclusive ? LOCK_EX : LOCK_SH) != 0) {
		if (errno == EINTR)
			continue;
		int rc = gpucc_error_set_errno("cannot lock '%s'", lock_path);
		close(fd);
		free(lock_path);
		return rc;
	}
	free(lock_path);
	return fd;
}

void gpucc_lock_release(int lock_fd)
{
	if (lock_fd >= 0)
		close(lock_fd);
}
