/*
 * lib/base/parallel.c -- running work on the CPUs this process may use: the
 * pool of threads and the loop over items on it (lib/base/parallel.h).
 */
#include "parallel.h"

#include "errors.h"

#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

size_t gpucc_cpu_count(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
		return (size_t)CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (size_t)n : 1;
}

/* ---- the pool ------------------------------------------------------------ */

static void *pool_thread(void *arg)
{
	gpucc_pool_thread *t = arg;
	gpucc_pool *p = t->pool;
	int rc = p->fn(p->ctx, t->index);
	if (rc) {
		pthread_mutex_lock(&p->lock);
		if (t->index < p->failed_index) {
			p->failed_index = t->index;
			p->failed_code = rc;
			p->failed_errno = gpucc_error_last_errno();
			snprintf(p->failed_message, sizeof p->failed_message, "%s",
			         gpucc_error_last()->message);
		}
		pthread_mutex_unlock(&p->lock);
	}
	return NULL;
}

size_t gpucc_pool_start(gpucc_pool *p, size_t count, size_t stack_size,
                        int (*fn)(void *ctx, size_t index), void *ctx)
{
	p->started = 0;
	p->fn = fn;
	p->ctx = ctx;
	p->failed_index = GPUCC_POOL_MAX;
	p->failed_code = p->failed_errno = 0;
	p->failed_message[0] = '\0';
	pthread_mutex_init(&p->lock, NULL);
	if (count > GPUCC_POOL_MAX)
		count = GPUCC_POOL_MAX;
	pthread_attr_t attr;
	bool attr_made = count > 0 && pthread_attr_init(&attr) == 0;
	if (!attr_made || (stack_size && pthread_attr_setstacksize(&attr, stack_size) != 0))
		count = 0; /* the caller runs it all */
	while (p->started < count) {
		gpucc_pool_thread *t = &p->threads[p->started];
		t->pool = p;
		t->index = p->started;
		if (pthread_create(&t->id, &attr, pool_thread, t) != 0)
			break;
		p->started++;
	}
	if (attr_made)
		pthread_attr_destroy(&attr);
	return p->started;
}

int gpucc_pool_join(gpucc_pool *p)
{
	for (size_t i = 0; i < p->started; i++)
		pthread_join(p->threads[i].id, NULL);
	p->started = 0;
	pthread_mutex_destroy(&p->lock);
	if (p->failed_index == GPUCC_POOL_MAX)
		return 0;
	int code = gpucc_error_set(p->failed_code, "%s", p->failed_message);
	gpucc_error_keep_errno(p->failed_errno);
	return code;
}

/* ---- a loop over items ---------------------------------------------------- */

#define THREADS_MAX 16

typedef struct parallel_job {
	size_t n;
	atomic_size_t next;
	void (*fn)(void *ctx, size_t i);
	void *ctx;
} parallel_job;

static int run(void *arg, size_t thread)
{
	(void)thread;
	parallel_job *job = arg;
	for (size_t i; (i = atomic_fetch_add(&job->next, 1)) < job->n;)
		job->fn(job->ctx, i);
	return 0;
}

void gpucc_parallel_for(size_t n, size_t max_threads, void (*fn)(void *ctx, size_t i), void *ctx)
{
	parallel_job job = {.n = n, .fn = fn, .ctx = ctx};
	atomic_init(&job.next, 0);
	size_t threads = max_threads < n ? max_threads : n;
	if (threads > THREADS_MAX)
		threads = THREADS_MAX;
	gpucc_pool pool;
	gpucc_pool_start(&pool, threads > 1 ? threads - 1 : 0, 0, run, &job);
	run(&job, 0);
	gpucc_pool_join(&pool);
}
