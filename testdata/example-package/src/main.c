/*
 * src/main.c -- example-saxpy [--target T] [--compile-at-startup T]: starts
 * the library and prints what it resolved and how long that took.  Exit 0
 * when the kernels are ready, or when no GPU is present (it says so); 1 on
 * an error.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "saxpy.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
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
	double start = now_ms();
	saxpy_kernels k;
	int rc = compile ? saxpy_kernels_compile_at_startup(&k, compile) : saxpy_kernels_init(&k, target);
	double took = now_ms() - start;
	if (rc == SAXPY_READY)
		printf("kernels ready in %.2f ms: %s\n", took, k.message);
	else if (rc == SAXPY_NO_GPU)
		printf("no GPU present (%s); the image holds the kernels for later\n", k.message);
	else
		fprintf(stderr, "example-saxpy: %s\n", k.message);
	saxpy_kernels_release(&k);
	return rc == SAXPY_ERROR ? 1 : 0;
}
