/*
 * lib/base/atomic_file.c -- temporary file beside the target, fsync, rename,
 * directory fsync; and flock-based advisory locks (lib/base/atomic_file.h).
 *
 * A writer holds an exclusive flock on its temporary file from creation to
 * the rename, so that a cleaner can tell the file of a live writer (locked)
 * from one a killed process left behind (unlocked): the kernel drops the
 * lock when the process dies, however it dies.
 */
#include "atomic_file.h"

#include "errors.h"
#include "temp_name.h"

#include <dirent.h>
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

bool gpucc_flock_unsupported(int err)
{
	return err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS || err == EINVAL;
}

/* Lock a just-created temporary file.  1: locked (or no locks here) and
 * still linked; 0: a cleaner removed it before we locked it; -1: error. */
static int lock_new_temp(int fd)
{
	while (flock(fd, LOCK_EX) != 0) {
		if (errno == EINTR)
			continue;
		return gpucc_flock_unsupported(errno) ? 1 : -1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0)
		return -1;
	return st.st_nlink > 0 ? 1 : 0;
}

int gpucc_atomic_file_open(gpucc_atomic_file *f, const char *path)
{
	memset(f, 0, sizeof *f);
	f->fd = -1;
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	if (!*path) /* a caller's unset variable, not a directory */
		return gpucc_error_set(GPUCC_EINVALID, "an empty string is not a file name");
	if (!*base)
		return gpucc_error_set(GPUCC_EINVALID, "'%s' is a directory, not a file name", path);
	/* The rename would replace what is there: refused unless it is a file
	 * (or a link to one, replaced as links planted at outputs are), lest
	 * `-o /dev/null` run as root put a file in the device's place. */
	struct stat st;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return gpucc_error_set(GPUCC_EINVALID,
		                       S_ISDIR(st.st_mode)
		                               ? "'%s' is a directory, not a file name"
		                               : "'%s' is not a regular file: outputs are written beside "
		                                 "their name and renamed into place",
		                       path);
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
		gpucc_temp_file_path(f->temp_path, size, path,
		                     (unsigned long)atomic_fetch_add(&temp_counter, 1) * 1000 +
		                             (unsigned long)(now.tv_nsec % 1000));
		f->fd = open(f->temp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (f->fd >= 0) {
			int locked = lock_new_temp(f->fd);
			if (locked > 0)
				return 0;
			int err = errno;
			close(f->fd);
			f->fd = -1;
			unlink(f->temp_path);
			errno = err;
			if (locked < 0)
				break;
			continue; /* a cleaner took it for a leftover: another name */
		}
		if (errno != EEXIST)
			break;
	}
	/* ENOENT says only that some name on the way is missing: the
	 * directory when it is gone (removed since the caller checked it), or
	 * something else (a dangling link, a file system taking no new names)
	 * when it is still there, which the message must not call missing. */
	int err = errno;
	int rc = gpucc_error_set_errno("cannot create a file beside '%s'", path);
	char *dir = err == ENOENT ? directory_of(path) : NULL;
	int dir_found = dir ? stat(dir, &st) == 0 ? 1 : errno == ENOENT ? 0 : -1 : -1;
	if (dir_found == 0)
		rc = gpucc_error_set(GPUCC_ENOTFOUND, "cannot create '%s': its directory does not exist",
		                     path);
	else if (dir_found == 1)
		rc = gpucc_error_set(GPUCC_ERROR,
		                     "cannot create '%s': its directory '%s' exists but takes no new "
		                     "files (%s)",
		                     path, dir, strerror(err));
	free(dir);
	free(f->temp_path);
	f->temp_path = NULL;
	gpucc_atomic_file_abort(f);
	return rc;
}

/* Remove the temporary files of path (any process's, in its directory
 * dir_fd) that killed writers left behind.  Not for the cache's files
 * (no_sweep), which its gc sweeps. */
static void sweep_abandoned(int dir_fd, const char *path)
{
	int fd = dup(dir_fd); /* fdopendir takes the descriptor */
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	time_t now = time(NULL);
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		if (gpucc_temp_file_is_of(de->d_name, path, 0))
			gpucc_atomic_file_remove_abandoned(dir_fd, de->d_name, now, GPUCC_ABANDONED_SECONDS);
	closedir(d);
}

int gpucc_atomic_file_commit(gpucc_atomic_file *f)
{
	int rc = 0;
	/* A second descriptor keeps the temporary file's lock until the
	 * rename is done: close() checks for late write errors, and must not
	 * let a cleaner take the file for a leftover meanwhile. */
	int lock = dup(f->fd);
	if (lock < 0)
		rc = gpucc_error_set_errno("cannot write '%s'", f->path);
	else if (!f->no_sync && fsync(f->fd) != 0)
		rc = gpucc_error_set_errno("cannot write '%s'", f->path);
	else {
		int closed = close(f->fd);
		f->fd = -1;
		if (closed != 0)
			rc = gpucc_error_set_errno("cannot write '%s'", f->path);
	}
	if (rc == 0 && rename(f->temp_path, f->path) != 0)
		rc = gpucc_error_set_errno("cannot replace '%s'", f->path);
	if (lock >= 0)
		close(lock);
	if (rc) {
		gpucc_atomic_file_abort(f);
		return rc == GPUCC_ENOTFOUND ? GPUCC_ERROR : rc;
	}
	char *dir = f->no_sync && f->no_sweep ? NULL : directory_of(f->path);
	if (dir) {
		int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			if (!f->no_sync)
				fsync(dfd); /* best effort: some file systems refuse */
			if (!f->no_sweep)
				sweep_abandoned(dfd, f->path);
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

bool gpucc_atomic_file_remove_abandoned(int dir_fd, const char *name, time_t now,
                                        int max_age_seconds)
{
	int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return false; /* gone already, or not ours to open */
	struct stat held, named;
	bool remove = false;
	if (fstat(fd, &held) == 0 && S_ISREG(held.st_mode)) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			remove = true; /* no live writer holds it */
		else if (gpucc_flock_unsupported(errno))
			remove = held.st_mtime + max_age_seconds < now;
	}
	/* Unlink while holding the lock, and only the file we locked: a writer
	 * that created it and waits for the lock then sees it unlinked. */
	remove = remove && fstatat(dir_fd, name, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
	         named.st_ino == held.st_ino && named.st_dev == held.st_dev &&
	         unlinkat(dir_fd, name, 0) == 0;
	close(fd);
	return remove;
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

int gpucc_lock_file(const char *lock_path, int how)
{
	int fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0 && (errno == EACCES || errno == EROFS || errno == EPERM)) {
		/* A lock file we may not write can still be locked; when it does
		 * not exist either, the first reason is the one to report. */
		int err = errno;
		fd = open(lock_path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT)
			errno = err;
	}
	if (fd < 0)
		return gpucc_error_set_errno("cannot create lock '%s'", lock_path);
	while (flock(fd, how) != 0) {
		if (errno == EINTR)
			continue;
		int rc = errno == EWOULDBLOCK && (how & LOCK_NB)
		                 ? GPUCC_LOCK_BUSY
		                 : gpucc_error_set_errno("cannot lock '%s'", lock_path);
		close(fd);
		return rc;
	}
	return fd;
}

int gpucc_lock_acquire(const char *path, bool exclusive)
{
	size_t size = strlen(path) + 8;
	char *lock_path = malloc(size);
	if (!lock_path)
		return gpucc_error_oom();
	snprintf(lock_path, size, "%s.lock", path);
	int fd = gpucc_lock_file(lock_path, exclusive ? LOCK_EX : LOCK_SH);
	free(lock_path);
	return fd;
}

void gpucc_lock_release(int lock_fd)
{
	if (lock_fd >= 0)
		close(lock_fd);
}
