/*
 * lib/compile/compile_worker.h -- compile jobs in worker processes
 * (lib/compile/compile_worker.c): LLVM's crash, abort or hang is one job's failure.
 */
#ifndef GPUCC_LIB_COMPILE_WORKER_H
#define GPUCC_LIB_COMPILE_WORKER_H

#include "backend.h"

typedef struct gpucc_worker_limits {
	unsigned timeout_seconds; /* per job; 0: none */
	uint64_t memory_bytes;    /* address space of a worker; 0: none */
} gpucc_worker_limits;

typedef struct gpucc_worker gpucc_worker;

/* A worker slot for one compile thread and one backend; its process
 * (program: the path of gpucc-compile-worker-N, which must run LLVM
 * llvm_version) starts with the first job.  NULL when out of memory. */
gpucc_worker *gpucc_worker_new(const char *program, const char *llvm_version,
                               const gpucc_worker_limits *limits);
/* Stop the worker (it finishes nothing: call between jobs), remove its
 * temporary directory and free the slot; accepts NULL. */
void gpucc_worker_free(gpucc_worker *w);
/* Compile one job in the worker, as the backend's compile does in process:
 * always fills *out, returns out->code.  A worker that dies or runs past the
 * time limit fails the job with one line ("MODULE: TARGET: LLVM crashed
 * (SIGABRT): <LLVM's first words>") and is replaced for the next job. */
int gpucc_worker_compile(gpucc_worker *w, const gpucc_backend_job *job, gpucc_backend_result *out);
/* What gpucc_worker_compile put in *out is released with
 * gpucc_wire_result_release (lib/compile/compile_worker_protocol.h). */

#endif
