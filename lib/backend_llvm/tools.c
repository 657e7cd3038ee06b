/*
 * lib/backend_llvm/tools.c -- growable text, temporary directories and
 * running the device tools (ptxas, ld.lld) as subprocesses.
 *
 * Tools read and write files in the calling thread's private temporary
 * directory, never in the user's directories, so a failed or killed tool
 * leaves nothing behind there.  Output goes to a file rather than a pipe:
 * there is nothing to drain concurrently, and it is read once the tool ends.
 */
#include "backend_llvm.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

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

int backend_tempdir_create(char *path, size_t size)
{
	const char *base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	/* The pid lets the command find this run's directories when a signal
	 * ends it (cmd/interrupt.c). */
	int n = snprintf(path, size, "%s/gpucc-backend-%ld-XXXXXX", base, (long)getpid());
	if (n < 0 || (size_t)n >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return mkdtemp(path) ? 0 : -1;
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
	posix_spawn_file_actions_t actions;
	if (posix_spawn_file_actions_init(&actions) != 0)
		return -1;
	posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&actions, 1, output_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_adddup2(&actions, 1, 2);
	/* The tool starts with no signal blocked, whatever the calling thread
	 * blocks (gpucc's command blocks SIGINT and SIGTERM in every thread to
	 * take them on one): Ctrl-C must stop ptxas and ld.lld too. */
	posix_spawnattr_t attr;
	sigset_t none;
	sigemptyset(&none);
	if (posix_spawnattr_init(&attr) != 0) {
		posix_spawn_file_actions_destroy(&actions);
		return -1;
	}
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
	pid_t pid;
	int rc = posix_spawn(&pid, argv[0], &actions, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&actions);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	int status;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -1;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 255;
}
