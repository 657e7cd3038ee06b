/*
 * cmd/tests/compile_stub_backend.c -- a stand-in LLVM backend module for
 * compile_bad.sh: it speaks the backend table (lib/backend.h) but reports
 * LLVM "19.0.0-stub", never the version gpucc was built with, and fails
 * every compile with a message that would show if it were ever used.
 * gpucc must refuse to compile with it (keys name the LLVM gpucc was built
 * with) before any job reaches it.
 */
#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gpucc_backend_thread {
	int unused;
};

static gpucc_backend_thread *thread_new(char *error, size_t error_size)
{
	gpucc_backend_thread *t = calloc(1, sizeof *t);
	if (!t)
		snprintf(error, error_size, "out of memory");
	return t;
}

static void thread_free(gpucc_backend_thread *t)
{
	free(t);
}

static int compile(gpucc_backend_thread *t, const gpucc_backend_job *job,
                   gpucc_backend_result *out)
{
	(void)t;
	memset(out, 0, sizeof *out);
	out->code = GPUCC_ECOMPILE;
	out->message = strdup("the stub backend was asked to compile");
	(void)job;
	return out->code;
}

static void result_release(gpucc_backend_result *r)
{
	free(r->message);
	memset(r, 0, sizeof *r);
}

static const gpucc_backend table = {
	.abi_version = GPUCC_BACKEND_ABI,
	.struct_size = sizeof(gpucc_backend),
	.llvm_version = "19.0.0-stub",
	.thread_new = thread_new,
	.thread_free = thread_free,
	.compile = compile,
	.result_release = result_release,
};

const gpucc_backend *gpucc_backend_get(unsigned abi_version);

const gpucc_backend *gpucc_backend_get(unsigned abi_version)
{
	return abi_version == GPUCC_BACKEND_ABI ? &table : NULL;
}
