/*
 * lib/tests/fuzz_support.c -- what several fuzz targets need beyond the
 * code under test (lib/tests/fuzz.h): silencing stdio around code that
 * prints, and a scratch directory for targets that write files.  Linked
 * into every target, with either main.
 */
#include "fuzz.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static FILE *saved_stdout, *saved_stderr, *null_stream;

/* glibc's stdout and stderr are plain variables (its manual says so), which
 * is what makes this redirection of stdio alone possible. */
void fuzz_quiet_begin(void)
{
	if (!null_stream)
		null_stream = fopen("/dev/null", "w");
	if (!null_stream || saved_stdout)
		return;
	saved_stdout = stdout;
	saved_stderr = stderr;
	stdout = null_stream;
	stderr = null_stream;
}

void fuzz_quiet_end(void)
{
	if (!saved_stdout)
		return;
	fflush(null_stream);
	stdout = saved_stdout;
	stderr = saved_stderr;
	saved_stdout = saved_stderr = NULL;
}

char *fuzz_string(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		fuzz_fail("out of memory");
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

void fuzz_remove_tree(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		size_t len = strlen(path) + strlen(de->d_name) + 2;
		char *child = malloc(len);
		if (!child)
			break;
		snprintf(child, len, "%s/%s", path, de->d_name);
		struct stat st;
		if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode)) {
			fuzz_remove_tree(child);
			rmdir(child);
		} else {
			unlink(child);
		}
		free(child);
	}
	closedir(d);
}

static char scratch[128];

static void remove_scratch(void)
{
	fuzz_remove_tree(scratch);
	rmdir(scratch);
}

/* In $TMPDIR when set, else in /dev/shm when there is one: targets that
 * write files run ten times faster on tmpfs than on a disk. */
const char *fuzz_scratch_dir(void)
{
	if (scratch[0])
		return scratch;
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp || strlen(tmp) > 96)
		tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(scratch, sizeof scratch, "%s/gpucc-fuzz-XXXXXX", tmp);
	if (!mkdtemp(scratch))
		fuzz_fail("cannot create a scratch directory");
	atexit(remove_scratch);
	return scratch;
}
