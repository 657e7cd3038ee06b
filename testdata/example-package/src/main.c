/*
 * src/main.c -- example-saxpy [--target T] [--compile-at-startup T|device]:
 * starts the library and prints what it resolved and how long that took.
 * With neither option the kernel is loaded on the GPU present; with
 * `--compile-at-startup device` it is compiled for that GPU and loaded.  Exit 0
 * when the kernels are ready, or when no GPU is present (it says so); 1 on
 * an error.
 *
 * The time is counted from main(), or, when SAXPY_START_NS holds the
 * CLOCK_REALTIME (nanoseconds, `date +%s%N`) at which the caller started
 * this process, from then: that includes the dynamic loader mapping
 * libgpucc and what it links, which the time in main() leaves out
 * (scripts/demo sets it).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "saxpy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Milliseconds since the process started, from SAXPY_START_NS; -1 when
 * unset or not a time before now. */
static double since_process_start_ms(void)
{
	double now = now_ms(CLOCK_REALTIME);
	const char *env = getenv("SAXPY_START_NS");
	if (!env || !*env)
		return -1;
	char *end;
	unsigned long long ns = strtoull(env, &end, 10);
	double start = (double)ns / 1e6;
	return *end == '\0' && start > 0 && start <= now ? now - start : -1;
}

int main(int argc, char **argv)
{
	const char *target = NULL, *compile = NULL;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--target") == 0)
			target = argv[i + 1];
		else if (strcmp(argv[i], "--compile-at-startup") == 0)
			compile = argv[i + 1];
	}
	double start = now_ms(CLOCK_MONOTONIC);
	saxpy_kernels k;
	int rc = compile ? saxpy_kernels_compile_at_startup(&k, compile) : saxpy_kernels_init(&k, target);
	double in_main = now_ms(CLOCK_MONOTONIC) - start;
	double since_start = since_process_start_ms();
	if (rc == SAXPY_READY && since_start >= 0)
		printf("kernels ready in %.2f ms from process start (%.2f ms of it in main): %s\n",
		       since_start, in_main, k.message);
	else if (rc == SAXPY_READY)
		printf("kernels ready in %.2f ms: %s\n", in_main, k.message);
	else if (rc == SAXPY_NO_GPU)
		printf("no GPU present (%s); the image holds the kernels for later\n", k.message);
	else
		fprintf(stderr, "example-saxpy: %s\n", k.message);
	saxpy_kernels_release(&k);
	return rc == SAXPY_ERROR ? 1 : 0;
}
