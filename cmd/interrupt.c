/*
 * cmd/interrupt.c -- remove what an interrupted write leaves beside its
 * output (cmd/interrupt.h).
 *
 * The signals are blocked in every thread and taken by sigwait in a thread
 * of their own, so the clean-up runs as ordinary code (no async-signal
 * safety to keep) while the other threads go on until the process dies.
 * What to remove, and by which names, is libgpucc's to say
 * (gpucc_leftovers_remove): this file says only whose it is (the output,
 * whether the lock is held, whether a compile runs).
 */
#include "interrupt.h"

#include <gpucc.h>

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const int watched_signals[] = {SIGINT, SIGTERM, SIGHUP};

static pthread_mutex_t state = PTHREAD_MUTEX_INITIALIZER;
static sigset_t taken;
static char *watched_output;   /* NULL without one */
static bool lock_held;
static bool backend_tempdirs_watched;

static void *take_signals(void *unused)
{
	(void)unused;
	int sig;
	while (sigwait(&taken, &sig) != 0)
		;
	/* Held until the process is gone: the lock's owner must not let go of
	 * it (and another process take its name) while it is being removed. */
	pthread_mutex_lock(&state);
	gpucc_leftovers_remove(watched_output,
	                       (lock_held ? GPUCC_LEFTOVERS_LOCK : 0) |
	                               (backend_tempdirs_watched ? GPUCC_LEFTOVERS_TEMP_DIRS : 0));
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
	if (output && !(watched_output = strdup(output)))
		return cmd_error(args, EXIT_FAIL, "out of memory");
	backend_tempdirs_watched = backend_tempdirs;
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
