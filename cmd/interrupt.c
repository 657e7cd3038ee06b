/*
 * cmd/interrupt.c -- remove what an interrupted write leaves beside its
 * output (cmd/interrupt.h).
 *
 * The signals are blocked in every thread and taken by sigwait in a thread
 * of their own, so the clean-up runs as ordinary code (no async-signal
 * safety to keep) while the other threads go on until the process dies.
 * The names come from lib/base/atomic_file.c, lib/algebra/merge.c and
 * lib/backend_llvm/tools.c: a writer's temporary file is ".NAME.tmp.PID.N"
 * beside NAME, the merge lock ".NAME.lock", a backend thread's directory
 * "$TMPDIR/gpucc-backend-PID-XXXXXX" (lib/compile/compile_worker.c: a worker's,
 * which holds the backend's); only this process's own temporary
 * files and directories match, so no other process's is touched.
 */
#include "interrupt.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const int watched_signals[] = {SIGINT, SIGTERM, SIGHUP};

static pthread_mutex_t state = PTHREAD_MUTEX_INITIALIZER;
static sigset_t taken;
static char *directory;        /* the output's directory, NULL without one */
static char *temp_prefix;      /* ".NAME.tmp.PID." */
static char *lock_name;        /* ".NAME.lock" */
static bool lock_held;
static char *tempdir_parent;   /* $TMPDIR or /tmp, NULL when not watched */
static char tempdir_prefix[64]; /* "gpucc-backend-PID-" */

/* Remove the entries of the directory open at dir_fd whose names start
 * with prefix: files, or with directories, whole trees (a compile worker's
 * directory holds the backend's).  Closes dir_fd. */
static void remove_prefixed(int dir_fd, const char *prefix, bool directories)
{
	int fd = dup(dir_fd); /* fdopendir takes the descriptor */
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d && fd >= 0)
		close(fd);
	size_t prefix_len = strlen(prefix);
	for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
		if (strncmp(e->d_name, prefix, prefix_len) != 0 || strcmp(e->d_name, ".") == 0 ||
		    strcmp(e->d_name, "..") == 0)
			continue;
		if (unlinkat(dir_fd, e->d_name, 0) == 0 || !directories)
			continue;
		int sub_fd = openat(dir_fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub_fd >= 0)
			remove_prefixed(sub_fd, "", true);
		unlinkat(dir_fd, e->d_name, AT_REMOVEDIR);
	}
	if (d)
		closedir(d);
	close(dir_fd);
}

/* Remove this process's temporary files and directories and, when held,
 * the lock.  Called with state locked. */
static void remove_leftovers(void)
{
	int dir_fd = directory ? open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (dir_fd >= 0) {
		if (lock_held)
			unlinkat(dir_fd, lock_name, 0);
		remove_prefixed(dir_fd, temp_prefix, false);
	}
	dir_fd = tempdir_parent ? open(tempdir_parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (dir_fd >= 0)
		remove_prefixed(dir_fd, tempdir_prefix, true);
}

static void *take_signals(void *unused)
{
	(void)unused;
	int sig;
	while (sigwait(&taken, &sig) != 0)
		;
	/* Held until the process is gone: the lock's owner must not let go of
	 * it (and another process take its name) while it is being removed. */
	pthread_mutex_lock(&state);
	remove_leftovers();
	/* Die of the signal, so that the parent (a shell, make, a CI runner)
	 * sees what ended the process. */
	signal(sig, SIG_DFL);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, sig);
	pthread_sigmask(SIG_UNBLOCK, &one, NULL);
	raise(sig);
	_exit(128 + sig);
}

int cmd_interrupt_watch(const cmd_args *args, const char *output, bool backend_tempdirs)
{
	sigemptyset(&taken);
	for (size_t i = 0; i < sizeof watched_signals / sizeof *watched_signals; i++) {
		struct sigaction was;
		/* One ignored on entry stays ignored (nohup, a background job). */
		if (sigaction(watched_signals[i], NULL, &was) == 0 && was.sa_handler != SIG_IGN)
			sigaddset(&taken, watched_signals[i]);
	}
	if (sigisemptyset(&taken))
		return EXIT_OK;
	if (output) {
		const char *slash = strrchr(output, '/');
		const char *base = slash ? slash + 1 : output;
		size_t size = strlen(output) + 64;
		directory = slash ? strndup(output, slash == output ? 1 : (size_t)(slash - output))
		                  : strdup(".");
		temp_prefix = malloc(size);
		lock_name = malloc(size);
		if (!directory || !temp_prefix || !lock_name)
			return cmd_error(args, EXIT_FAIL, "out of memory");
		snprintf(temp_prefix, size, ".%s.tmp.%ld.", base, (long)getpid());
		snprintf(lock_name, size, ".%s.lock", base);
	}
	if (backend_tempdirs) {
		/* As lib/backend_llvm/tools.c chooses the parent. */
		const char *tmp = getenv("TMPDIR");
		tempdir_parent = strdup(tmp && *tmp ? tmp : "/tmp");
		if (!tempdir_parent)
			return cmd_error(args, EXIT_FAIL, "out of memory");
		snprintf(tempdir_prefix, sizeof tempdir_prefix, "gpucc-backend-%ld-", (long)getpid());
	}
	pthread_sigmask(SIG_BLOCK, &taken, NULL);
	pthread_t thread;
	int err = pthread_create(&thread, NULL, take_signals, NULL);
	if (err) {
		pthread_sigmask(SIG_UNBLOCK, &taken, NULL);
		return cmd_error(args, EXIT_FAIL, "cannot start a thread: %s", strerror(err));
	}
	pthread_detach(thread);
	return EXIT_OK;
}

void cmd_interrupt_hold_lock(bool held)
{
	pthread_mutex_lock(&state);
	lock_held = held;
	pthread_mutex_unlock(&state);
}
