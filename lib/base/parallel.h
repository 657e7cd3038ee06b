/*
 * lib/base/parallel.h -- running independent work on the CPUs this process may
 * use.
 */
#ifndef GPUCC_LIB_PARALLEL_H
#define GPUCC_LIB_PARALLEL_H

#include <stddef.h>

/* The CPUs this process may run on (its affinity mask), at least 1. */
size_t gpucc_cpu_count(void);

/* Call fn(ctx, i) for every i below n, on up to max_threads threads, the
 * calling one included (fewer when threads cannot be started: slower, not
 * wrong); returns when every call has returned.  The calls must not depend
 * on each other's order. */
void gpucc_parallel_for(size_t n, size_t max_threads, void (*fn)(void *ctx, size_t i), void *ctx);

#endif
