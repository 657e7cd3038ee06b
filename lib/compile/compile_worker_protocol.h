/*
 * lib/compile/compile_worker_protocol.h -- the messages between a compile worker
 * process and its caller (lib/compile/compile_worker_protocol.c): jobs one way,
 * results the other, over a stream socket.
 */
#ifndef GPUCC_LIB_COMPILE_WORKER_PROTOCOL_H
#define GPUCC_LIB_COMPILE_WORKER_PROTOCOL_H

#include "backend.h"

#include <time.h>

/* Send one job.  0, or -1 when it could not be sent (out of memory, the
 * worker gone). */
int gpucc_wire_send_job(int fd, const gpucc_backend_job *job);
/* Receive one result into *out (zeroed first; release with
 * gpucc_wire_result_release).  0; 1 the worker closed its end or the read
 * failed; 2 the deadline (CLOCK_MONOTONIC; tv_sec 0: none) passed; 3 the
 * message was malformed or too large to hold. */
int gpucc_wire_receive_result(int fd, gpucc_backend_result *out, const struct timespec *deadline);
void gpucc_wire_result_release(gpucc_backend_result *r);
/* The worker's loop: compile each job read from fd with backend b (on one
 * backend thread) and send its result, until the caller closes its end.
 * Returns the worker's exit status: 0, 3 when the backend thread could
 * not start (said on stderr), 4 after a malformed job or a failed send,
 * GPUCC_WORKER_EXIT_NO_MEMORY when a job does not fit in its memory. */
int gpucc_wire_serve(const gpucc_backend *b, int fd);
/* The worker's exit status when it cannot hold a job it was sent (its
 * address space is bounded); it first writes "cannot hold a job of N
 * bytes" on stderr. */
#define GPUCC_WORKER_EXIT_NO_MEMORY 6
/* The worker's exit status when the LLVM it runs is not the one its caller
 * was built with (which keys name); it first writes "runs LLVM VERSION" on
 * stderr. */
#define GPUCC_WORKER_EXIT_OTHER_LLVM 5

#endif
