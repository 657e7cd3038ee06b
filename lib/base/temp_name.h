/*
 * lib/base/temp_name.h -- the names of what gpucc keeps for a while and
 * then removes, built here and nowhere else:
 *
 *   TMP/gpucc-backend-PID-XXXXXX      a compile's temporary directory (clang's
 *                                     files, a compile worker's, a backend
 *                                     thread's inside the worker's)
 *   DIR/.NAME.tmp.PID.N               a file being written beside DIR/NAME
 *                                     (lib/base/atomic_file.h)
 *   DIR/.NAME.lock                    the lock that serialises writers of
 *                                     DIR/NAME (gpucc_merge_lock_acquire)
 *
 * PID is the process that made the name, so that a process finds its own
 * and never another's (gpucc_leftovers_remove, gpucc/common.h).
 *
 * Also built into the LLVM backend (lib/backend_llvm/meson.build), which
 * does not link libgpucc: nothing here sets the library's last error;
 * failures are -1 with errno.
 */
#ifndef GPUCC_LIB_TEMP_NAME_H
#define GPUCC_LIB_TEMP_NAME_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Make a new private directory PARENT/gpucc-backend-PID-XXXXXX (parent
 * /tmp when NULL or empty: libgpucc passes gpucc_temp_parent(), the
 * config's, the backend its own $TMPDIR) and write its path into path
 * (size bytes).  0, or -1 with errno (ENAMETOOLONG when it does not fit). */
int gpucc_temp_dir_create(char *path, size_t size, const char *parent);

/* Whether name, an entry of a temporary directories' parent, is a
 * temporary directory of process pid. */
bool gpucc_temp_dir_is_of(const char *name, pid_t pid);

/* Write the temporary name "DIR/.NAME.tmp.PID.N" of path (DIR/NAME, or
 * NAME for the working directory) for this process and number n into out,
 * as snprintf does: the length it needs is returned. */
int gpucc_temp_file_path(char *out, size_t size, const char *path, unsigned long n);

/* Whether name, an entry of path's directory, is a temporary file of
 * path's: of process pid's only when pid > 0. */
bool gpucc_temp_file_is_of(const char *name, const char *path, pid_t pid);
/* Whether name, an entry of a directory, is a temporary file of any name
 * there, of any process (what a cache's walk passes over and gc removes
 * once it is old). */
bool gpucc_temp_file_is_any(const char *name);

/* The lock's name "DIR/.NAME.lock" of path, in a new string; NULL when out
 * of memory. */
char *gpucc_lock_path_of(const char *path);

#endif
