/*
 * lib/tests/test_parallel.c -- the thread pool and the loop on it
 * (lib/base/parallel.c): every index run once, the thread cap, the stack
 * size asked for, and the failure of the lowest failing thread carried to
 * the thread that joins.
 */
#include "check.h"
#include "errors.h"
#include "parallel.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

typedef struct counting {
	atomic_int runs[GPUCC_POOL_MAX + 64];
	size_t stack_wanted;
	atomic_int small_stacks;
	atomic_int on_caller;
	pthread_t caller;
} counting;

static int count_run(void *ctx, size_t index)
{
	counting *c = ctx;
	atomic_fetch_add(&c->runs[index], 1);
	if (pthread_equal(pthread_self(), c->caller))
		atomic_fetch_add(&c->on_caller, 1);
	pthread_attr_t attr;
	size_t size = 0;
	if (c->stack_wanted && pthread_getattr_np(pthread_self(), &attr) == 0) {
		pthread_attr_getstacksize(&attr, &size);
		pthread_attr_destroy(&attr);
		if (size < c->stack_wanted)
			atomic_fetch_add(&c->small_stacks, 1);
	}
	return 0;
}

static void test_pool_runs_each_index_once(void)
{
	static counting c;
	memset(&c, 0, sizeof c);
	c.caller = pthread_self();
	c.stack_wanted = (size_t)16 << 20;
	gpucc_pool pool;
	size_t started = gpucc_pool_start(&pool, 12, c.stack_wanted, count_run, &c);
	CHECK_INT(started, 12);
	CHECK_INT(gpucc_pool_join(&pool), 0);
	for (size_t i = 0; i < 12; i++)
		CHECK_INT(atomic_load(&c.runs[i]), 1);
	CHECK_INT(atomic_load(&c.runs[12]), 0);
	CHECK_INT(atomic_load(&c.small_stacks), 0);
	CHECK_INT(atomic_load(&c.on_caller), 0);
}

static void test_pool_cap(void)
{
	static counting c;
	memset(&c, 0, sizeof c);
	c.caller = pthread_self();
	gpucc_pool pool;
	size_t started = gpucc_pool_start(&pool, GPUCC_POOL_MAX + 40, 0, count_run, &c);
	CHECK(started <= GPUCC_POOL_MAX);
	CHECK(started > 0);
	CHECK_INT(gpucc_pool_join(&pool), 0);
	for (size_t i = 0; i < GPUCC_POOL_MAX + 64; i++)
		CHECK_INT(atomic_load(&c.runs[i]), i < started ? 1 : 0);
}

static void test_pool_of_none(void)
{
	static counting c;
	memset(&c, 0, sizeof c);
	gpucc_pool pool;
	CHECK_INT(gpucc_pool_start(&pool, 0, 0, count_run, &c), 0);
	CHECK_INT(gpucc_pool_join(&pool), 0);
	CHECK_INT(atomic_load(&c.runs[0]), 0);
}

/* Threads 3 (unless ctx is given) and 5 fail, 5 perhaps first: 3's error
 * is the pool's. */
static int fail_some(void *ctx, size_t index)
{
	if (index == 5)
		return gpucc_error_set(GPUCC_ECORRUPT, "thread %zu: bad\n input", index);
	if (index == 3 && !ctx) {
		errno = ENOSPC;
		return gpucc_error_set_errno("thread %zu cannot write", index);
	}
	gpucc_error_clear();
	return 0;
}

static void test_pool_failure(void)
{
	for (int round = 0; round < 20; round++) {
		gpucc_error_clear();
		gpucc_pool pool;
		CHECK_INT(gpucc_pool_start(&pool, 8, 0, fail_some, NULL), 8);
		CHECK_INT(gpucc_pool_join(&pool), GPUCC_ERROR);
		CHECK_STR(gpucc_error_last()->message, "thread 3 cannot write: No space left on device");
		CHECK_INT(gpucc_error_last_errno(), ENOSPC);
	}
	/* Only 5 fails: its message, its code, its control character as
	 * libgpucc spells it. */
	gpucc_pool pool;
	CHECK_INT(gpucc_pool_start(&pool, 8, 0, fail_some, "only 5"), 8);
	gpucc_error_clear();
	int rc = gpucc_pool_join(&pool);
	CHECK_INT(rc, GPUCC_ECORRUPT);
	CHECK_STR(gpucc_error_last()->message, "thread 5: bad\\n input");
}

typedef struct sum_job {
	atomic_int seen[1000];
} sum_job;

static void mark(void *ctx, size_t i)
{
	sum_job *j = ctx;
	atomic_fetch_add(&j->seen[i], 1);
}

static void test_parallel_for(void)
{
	static sum_job j;
	size_t sizes[] = {0, 1, 2, 17, 1000};
	size_t threads[] = {0, 1, 4, 64};
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
		for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
			memset(&j, 0, sizeof j);
			gpucc_parallel_for(sizes[s], threads[t], mark, &j);
			for (size_t i = 0; i < 1000; i++)
				CHECK_INT(atomic_load(&j.seen[i]), i < sizes[s] ? 1 : 0);
		}
}

int main(void)
{
	RUN(test_pool_runs_each_index_once);
	RUN(test_pool_cap);
	RUN(test_pool_of_none);
	RUN(test_pool_failure);
	RUN(test_parallel_for);
	return CHECK_DONE();
}
