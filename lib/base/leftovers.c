/*
 * lib/base/leftovers.c -- gpucc_leftovers_remove (gpucc/common.h): what this
 * process leaves behind when a signal ends it midway, found by the names
 * lib/base/temp_name.c gives it.  Only this process's own temporary files
 * and directories match (their names hold its pid), so no other process's
 * is touched; the lock is removed only on the caller's word that this
 * process holds it, since another's has the same name.
 */
#include "config_internal.h"
#include "temp_name.h"

#include "gpucc/common.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Which entries of a directory go. */
typedef struct matcher {
	const char *output; /* its temporary files, or NULL: its temporary directories */
	pid_t pid;
} matcher;

static bool matches(const matcher *m, const char *name)
{
	if (!m)
		return true;
	return m->output ? gpucc_temp_file_is_of(name, m->output, m->pid)
	                 : gpucc_temp_dir_is_of(name, m->pid);
}

/* Remove the entries of the directory open at dir_fd that m matches (all
 * when NULL): files, and with directories, whole trees.  Closes dir_fd. */
static void remove_matching(int dir_fd, const matcher *m, bool directories)
{
	int fd = dup(dir_fd); /* fdopendir takes the descriptor */
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d && fd >= 0)
		close(fd);
	for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || !matches(m, e->d_name))
			continue;
		if (unlinkat(dir_fd, e->d_name, 0) == 0 || !directories)
			continue;
		int sub_fd = openat(dir_fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub_fd >= 0)
			remove_matching(sub_fd, NULL, true);
		unlinkat(dir_fd, e->d_name, AT_REMOVEDIR);
	}
	if (d)
		closedir(d);
	close(dir_fd);
}

void gpucc_leftovers_remove(const char *output, unsigned flags)
{
	pid_t pid = getpid();
	const char *slash = output ? strrchr(output, '/') : NULL;
	char *directory = !output ? NULL
	                  : slash ? strndup(output, slash == output ? 1 : (size_t)(slash - output))
	                          : strdup(".");
	int dir_fd = directory ? open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	free(directory);
	if (dir_fd >= 0) {
		if (flags & GPUCC_LEFTOVERS_LOCK) {
			char *lock = gpucc_lock_path_of(output);
			if (lock)
				unlink(lock);
			free(lock);
		}
		matcher temp_files = {output, pid};
		remove_matching(dir_fd, &temp_files, false);
	}
	dir_fd = flags & GPUCC_LEFTOVERS_TEMP_DIRS
	                 ? open(gpucc_temp_parent(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
	                 : -1;
	if (dir_fd >= 0) {
		matcher temp_dirs = {NULL, pid};
		remove_matching(dir_fd, &temp_dirs, true);
	}
}
