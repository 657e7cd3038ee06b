/*
 * lib/remote/remote_support.c -- what the remote backends (lib/remote/remote_http.c,
 * lib/remote/remote_redis.c, lib/remote/remote_sign.c) share with lib/remote/remote.c: object
 * names and keeping SIGPIPE from ending the process
 * (lib/remote/remote_impl.h).
 */
#include "remote_impl.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void gpucc_remote_object_name(char *out, size_t size, const remote *r, const gpucc_digest *key)
{
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, key);
	if (r->layout == REMOTE_LAYOUT_SUBDIRS)
		snprintf(out, size, "%.2s/%s.gpucc", hex, hex);
	else if (r->layout == REMOTE_LAYOUT_BAZEL)
		snprintf(out, size, "ac/%s", hex);
	else
		snprintf(out, size, "%s.gpucc", hex);
}

void gpucc_remote_sigpipe_block(remote_sigpipe_guard *g)
{
	sigset_t pipe_set, pending;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigemptyset(&pending);
	sigpending(&pending);
	g->was_pending = sigismember(&pending, SIGPIPE) == 1;
	pthread_sigmask(SIG_BLOCK, &pipe_set, &g->old);
}

void gpucc_remote_sigpipe_restore(remote_sigpipe_guard *g)
{
	sigset_t pipe_set, pending;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigemptyset(&pending);
	if (!g->was_pending && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
		struct timespec zero = {0, 0};
		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

long long gpucc_remote_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long gpucc_remote_request_ms(const remote *r)
{
	long long left = r->deadline_ms - gpucc_remote_now_ms();
	if (left <= 0)
		return 0;
	return left < r->timeout_ms ? (long)left : r->timeout_ms;
}
