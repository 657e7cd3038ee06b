/*
 * lib/backend_llvm/tools.c -- growable text, temporary directories and
 * running the device tools (ptxas, ld.lld) as subprocesses, and the
 * settings the worker is started with (worker_main.c): the backend reads
 * no environment.
 *
 * Tools read and write files in the calling thread's private temporary
 * directory (lib/base/temp_name.h), never in the user's directories, so a
 * failed or killed tool leaves nothing behind there.  They are run by
 * lib/base/process.c, with no signal blocked: Ctrl-C must stop ptxas and
 * ld.lld too.  Output goes to a file rather than a pipe: there is nothing
 * to drain concurrently, and it is read once the tool ends.
 */
#include "backend_llvm.h"
#include "process.h"
#include "temp_name.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void backend_text_appendv(backend_text *t, const char *fmt, va_list ap)
{
	gpucc_buffer_vprintf(t, fmt, ap);
}

void backend_text_append(backend_text *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	backend_text_appendv(t, fmt, ap);
	va_end(ap);
}

void backend_text_append_lines(backend_text *t, const char *prefix, const char *lines, size_t size)
{
	size_t i = 0;
	while (i < size) {
		size_t end = i;
		while (end < size && lines[end] != '\n')
			end++;
		if (end > i)
			backend_text_append(t, "%s%.*s\n", prefix, (int)(end - i), lines + i);
		i = end + 1;
	}
}

char *backend_text_take(backend_text *t)
{
	size_t size;
	char *data = gpucc_buffer_take(t, &size);
	if (data && size == 0) {
		free(data);
		data = NULL;
	}
	return data;
}

void backend_text_release(backend_text *t)
{
	gpucc_buffer_free(t);
}

/* Set once, before any backend thread starts (backend_settings_set). */
static const char *temp_parent = "/tmp";
#ifdef GPUCC_TEST_HOOKS
static const char *fault_hook;
#endif

void backend_settings_set(const char *temp_dir, const char *fault)
{
	temp_parent = temp_dir && *temp_dir ? temp_dir : "/tmp";
#ifdef GPUCC_TEST_HOOKS
	fault_hook = fault && *fault ? fault : NULL;
#else
	(void)fault;
#endif
}

const char *backend_temp_parent(void)
{
	return temp_parent;
}

#ifdef GPUCC_TEST_HOOKS
const char *backend_fault_hook(void)
{
	return fault_hook;
}
#endif

int backend_tempdir_create(char *path, size_t size)
{
	return gpucc_temp_dir_create(path, size, backend_temp_parent());
}

void backend_tempdir_remove(const char *path)
{
	DIR *dir = opendir(path);
	if (dir) {
		struct dirent *d;
		while ((d = readdir(dir)) != NULL) {
			if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
				continue;
			unlinkat(dirfd(dir), d->d_name, 0);
		}
		closedir(dir);
	}
	rmdir(path);
}

int backend_file_write(const char *path, const void *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	const char *p = data;
	while (size > 0) {
		ssize_t n = write(fd, p, size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int saved = errno;
			close(fd);
			errno = saved;
			return -1;
		}
		p += n;
		size -= (size_t)n;
	}
	return close(fd);
}

int backend_file_read(const char *path, void **out, size_t *out_size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	size_t capacity = (size_t)st.st_size + 1, size = 0;
	char *data = malloc(capacity);
	if (!data) {
		close(fd);
		errno = ENOMEM;
		return -1;
	}
	for (;;) {
		if (size + 1 >= capacity) {
			char *grown = realloc(data, capacity * 2);
			if (!grown) {
				free(data);
				close(fd);
				errno = ENOMEM;
				return -1;
			}
			data = grown;
			capacity *= 2;
		}
		ssize_t n = read(fd, data + size, capacity - size - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int saved = errno;
			free(data);
			close(fd);
			errno = saved;
			return -1;
		}
		if (n == 0)
			break;
		size += (size_t)n;
	}
	close(fd);
	data[size] = '\0';
	*out = data;
	*out_size = size;
	return 0;
}

int backend_run_tool(char *const argv[], const char *output_path)
{
	/* In the worker's process group, which a stuck job's kill ends whole. */
	gpucc_process_options o = {
		.streams = {{.kind = GPUCC_PROCESS_NULL},
		            {.kind = GPUCC_PROCESS_FILE, .path = output_path},
		            {.kind = GPUCC_PROCESS_STDOUT}},
	};
	gpucc_process p;
	int err = gpucc_process_start(&p, argv, &o);
	if (err) {
		errno = err;
		return -1;
	}
	int status;
	err = gpucc_process_wait(&p, 0, &status, NULL);
	if (err) {
		errno = err;
		return -1;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 255;
}
