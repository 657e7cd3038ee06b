/*
 * lib/base/parallel.h -- running work on the CPUs this process may use: a
 * pool of threads started together and joined together (every thread of
 * libgpucc but a single helper's is one of a pool's), and a loop over
 * independent items on one.
 */
#ifndef GPUCC_LIB_PARALLEL_H
#define GPUCC_LIB_PARALLEL_H

#include <pthread.h>
#include <stddef.h>

/* The CPUs this process may run on (its affinity mask), at least 1. */
size_t gpucc_cpu_count(void);

/* The most threads one pool starts. */
#define GPUCC_POOL_MAX 256

typedef struct gpucc_pool gpucc_pool;
typedef struct gpucc_pool_thread {
	pthread_t id;
	gpucc_pool *pool;
	size_t index;
} gpucc_pool_thread;

/* Threads that run fn(ctx, index), index 0 to started - 1, while the
 * thread that started them goes on with its own work; all on the caller's
 * stack, nothing to free.  A thread's nonzero return is its failure: the
 * one of the lowest index, with the libgpucc error it left on its thread,
 * is the pool's. */
struct gpucc_pool {
	gpucc_pool_thread threads[GPUCC_POOL_MAX];
	size_t started;
	int (*fn)(void *ctx, size_t index);
	void *ctx;
	pthread_mutex_t lock;   /* over the failure below */
	size_t failed_index;    /* GPUCC_POOL_MAX: none failed */
	int failed_code, failed_errno;
	char failed_message[1024];
};

/* Start up to count threads (at most GPUCC_POOL_MAX), each with a stack of
 * stack_size bytes (0: the default); the number started, fewer when the
 * system refuses more (slower, not wrong: the caller runs what no thread
 * took, as each pool's owner says).  Always gpucc_pool_join it, started
 * or not. */
size_t gpucc_pool_start(gpucc_pool *p, size_t count, size_t stack_size,
                        int (*fn)(void *ctx, size_t index), void *ctx);

/* Wait for every thread; 0, or the failure of the lowest-index thread that
 * failed, set again as this thread's libgpucc error. */
int gpucc_pool_join(gpucc_pool *p);

/* Call fn(ctx, i) for every i below n, on up to max_threads threads of a
 * pool (16 at most), the calling one included; returns when every call
 * has returned.  The calls must not depend on each other's order. */
void gpucc_parallel_for(size_t n, size_t max_threads, void (*fn)(void *ctx, size_t i), void *ctx);

#endif
