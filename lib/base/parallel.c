/*
 * lib/base/parallel.c -- running independent work on the CPUs this process may
 * use (lib/base/parallel.h).
 */
#include "parallel.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

size_t gpucc_cpu_count(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
		return (size_t)CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (size_t)n : 1;
}

#define THREADS_MAX 16

typedef struct parallel_job {
	size_t n;
	atomic_size_t next;
	void (*fn)(void *ctx, size_t i);
	void *ctx;
} parallel_job;

static void *run(void *arg)
{
	parallel_job *job = arg;
	for (size_t i; (i = atomic_fetch_add(&job->next, 1)) < job->n;)
		job->fn(job->ctx, i);
	return NULL;
}

void gpucc_parallel_for(size_t n, size_t max_threads, void (*fn)(void *ctx, size_t i), void *ctx)
{
	parallel_job job = {.n = n, .fn = fn, .ctx = ctx};
	atomic_init(&job.next, 0);
	size_t threads = max_threads < n ? max_threads : n;
	if (threads > THREADS_MAX)
		threads = THREADS_MAX;
	pthread_t started[THREADS_MAX];
	size_t count = 0;
	while (count + 1 < threads && pthread_create(&started[count], NULL, run, &job) == 0)
		count++;
	run(&job);
	for (size_t i = 0; i < count; i++)
		pthread_join(started[i], NULL);
}
