/*
 * lib/base/atomic_file.h -- publishing files atomically (docs/design.md invariant 4),
 * and advisory locks.
 *
 * An atomic file is written under a temporary name in the target's own
 * directory (".<name>.tmp.<pid>.<n>", lib/base/temp_name.h), then flushed,
 * renamed over the target and the directory flushed: a reader, or a
 * process killed at any point, sees the old file or the new one, never a
 * torn one.  The writer holds an
 * exclusive flock on the temporary file until it is renamed, which tells a
 * live writer's file from a killed one's.
 */
#ifndef GPUCC_LIB_ATOMIC_FILE_H
#define GPUCC_LIB_ATOMIC_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

typedef struct gpucc_atomic_file {
	int fd;          /* open for writing, -1 when closed */
	char *path;      /* the target */
	char *temp_path; /* the temporary file */
	bool no_sync;    /* set before commit to skip the fsyncs */
	bool no_sweep;   /* set before commit when the directory's owner removes
	                    killed writers' leftovers itself (the cache's gc) */
} gpucc_atomic_file;

/* Create the temporary file for path (mode 0666 less the umask).
 * Errors name path. */
int gpucc_atomic_file_open(gpucc_atomic_file *f, const char *path);
/* fsync, close, rename over path, fsync the directory.  On failure the
 * temporary file is removed and path is unchanged.  Always releases f. */
int gpucc_atomic_file_commit(gpucc_atomic_file *f);
/* Close and remove the temporary file; path is unchanged.  Accepts a
 * released or zeroed f. */
void gpucc_atomic_file_abort(gpucc_atomic_file *f);

/* Where flock does not work: the age at which a temporary file counts as
 * left behind by a killed writer. */
#define GPUCC_ABANDONED_SECONDS 3600

/* Remove the temporary file name in dir_fd if no live writer holds it: its
 * flock is free (where flock does not work: it is older than
 * max_age_seconds at now).  Returns whether it was removed.  Safe against a
 * writer creating the file concurrently. */
bool gpucc_atomic_file_remove_abandoned(int dir_fd, const char *name, time_t now,
                                        int max_age_seconds);

/* Write all of buf to fd (retrying short writes and EINTR).  0 or -1 with
 * errno set. */
int gpucc_write_all(int fd, const void *buf, size_t size);

/* Whether a flock error means "this file system has no flock": writers then
 * go without, and cleaners fall back on the file's age. */
bool gpucc_flock_unsupported(int err);

/* An advisory lock (flock) on the file lock_path, created if needed (and
 * opened read-only where it may not be written) and left in place.  how is
 * LOCK_EX or LOCK_SH, with LOCK_NB not to wait: GPUCC_LOCK_BUSY then when
 * another process holds it.  Returns the lock fd (>= 0) or an error code;
 * release with gpucc_lock_release. */
#define GPUCC_LOCK_BUSY (-2)
int gpucc_lock_file(const char *lock_path, int how);

/* gpucc_lock_file on "<path>.lock", waiting for it. */
int gpucc_lock_acquire(const char *path, bool exclusive);
void gpucc_lock_release(int lock_fd);

#endif
