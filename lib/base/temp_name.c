/*
 * lib/base/temp_name.c -- the names of temporary directories, temporary
 * files and locks (lib/base/temp_name.h).
 */
#include "temp_name.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TEMP_DIR_STEM "gpucc-backend-"

int gpucc_temp_dir_create(char *path, size_t size, const char *parent)
{
	int n = snprintf(path, size, "%s/" TEMP_DIR_STEM "%ld-XXXXXX",
	                 parent && *parent ? parent : "/tmp", (long)getpid());
	if (n < 0 || (size_t)n >= size) {
		if (size)
			path[0] = '\0';
		errno = ENAMETOOLONG;
		return -1;
	}
	if (!mkdtemp(path)) {
		int err = errno;
		path[0] = '\0';
		errno = err;
		return -1;
	}
	return 0;
}

bool gpucc_temp_dir_is_of(const char *name, pid_t pid)
{
	char prefix[64];
	int n = snprintf(prefix, sizeof prefix, TEMP_DIR_STEM "%ld-", (long)pid);
	return strncmp(name, prefix, (size_t)n) == 0;
}

/* The part of path after its last slash. */
static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

int gpucc_temp_file_path(char *out, size_t size, const char *path, unsigned long n)
{
	const char *base = base_name(path);
	return snprintf(out, size, "%.*s.%s.tmp.%ld.%lu", (int)(base - path), path, base,
	                (long)getpid(), n);
}

bool gpucc_temp_file_is_any(const char *name)
{
	return name[0] == '.' && strstr(name, ".tmp.") != NULL;
}

bool gpucc_temp_file_is_of(const char *name, const char *path, pid_t pid)
{
	const char *base = base_name(path);
	size_t base_len = strlen(base);
	if (name[0] != '.' || strncmp(name + 1, base, base_len) != 0 ||
	    strncmp(name + 1 + base_len, ".tmp.", 5) != 0)
		return false;
	if (pid <= 0)
		return true;
	char pid_part[32];
	int n = snprintf(pid_part, sizeof pid_part, "%ld.", (long)pid);
	return strncmp(name + 1 + base_len + 5, pid_part, (size_t)n) == 0;
}

char *gpucc_lock_path_of(const char *path)
{
	const char *base = base_name(path);
	size_t size = strlen(path) + sizeof "..lock";
	char *lock = malloc(size);
	if (lock)
		snprintf(lock, size, "%.*s.%s.lock", (int)(base - path), path, base);
	return lock;
}
