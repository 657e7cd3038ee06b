/*
 * saxpy.h -- the example package's library: y = a*x + y on the GPU present,
 * from kernels compiled when the package was built and embedded in it.
 */
#ifndef SAXPY_H
#define SAXPY_H

#include <gpucc.h>

typedef struct saxpy_kernels {
	gpucc_image *image;     /* the embedded image */
	gpucc_module *module;   /* loaded on the device present, or NULL */
	void *function;         /* hipFunction_t / CUfunction of "saxpy" */
	const gpucc_entry *entry; /* the entry chosen */
	gpucc_part part;
	void *code;             /* without a driver: the chosen code, verified */
	size_t code_size;
	char message[512];      /* what happened, one line */
} saxpy_kernels;

enum { SAXPY_READY = 0, SAXPY_NO_GPU = 1, SAXPY_ERROR = -1 };

/* Open the embedded image and resolve "saxpy": for target (e.g. "gfx90a",
 * "sm_90") when given, without touching a driver; else load it on the GPU
 * present.  SAXPY_NO_GPU when none is present (message says why). */
int saxpy_kernels_init(saxpy_kernels *k, const char *target);
/* The path the image avoids: compile the kernels' LLVM IR now, in process,
 * for target, with no cache.  Target "device": compile for the GPU present
 * and load the result on it, the work saxpy_kernels_init(k, NULL) does from
 * the image (SAXPY_NO_GPU when none is present). */
int saxpy_kernels_compile_at_startup(saxpy_kernels *k, const char *target);
void saxpy_kernels_release(saxpy_kernels *k);

#endif
