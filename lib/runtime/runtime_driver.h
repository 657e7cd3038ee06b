/*
 * lib/runtime/runtime_driver.h -- the small table each GPU runtime (HIP in
 * runtime_hip.c, the CUDA driver in runtime_cuda.c) fills, so that
 * lib/runtime/runtime.c lists devices and loads modules without knowing which
 * runtime it talks to.
 *
 * A driver opens its library with dlopen() on first use and never before
 * (docs/design.md invariant 8), declares the few types and functions it calls
 * itself (no vendor header is needed to build), and turns every runtime
 * error into a libgpucc error naming the runtime, the call and the error
 * ("HIP runtime: hipGetDeviceCount: hipErrorNoDevice (100)").  Drivers are
 * safe to call from several threads.
 */
#ifndef GPUCC_LIB_RUNTIME_DRIVER_H
#define GPUCC_LIB_RUNTIME_DRIVER_H

#include "gpucc/runtime.h"
#include "library_loader.h"

/* A module as a driver loaded it. */
typedef struct runtime_loaded {
	void *module;  /* hipModule_t / CUmodule */
	void *context; /* CUDA: the retained primary context; HIP: unused */
	int ordinal;
} runtime_loaded;

typedef struct runtime_driver {
	gpucc_runtime_kind kind;
	const char *name; /* "HIP runtime", "CUDA driver" */
	/* Load the library (once) and count devices.  GPUCC_EUNAVAILABLE with
	 * the reason when the library is absent or sees no device. */
	int (*device_count)(int *count);
	/* Fill everything of *out but runtime (set by the caller). */
	int (*device_describe)(int ordinal, gpucc_device *out);
	/* Load code (NUL-terminated after size bytes, for PTX). */
	int (*module_load)(runtime_loaded *out, int ordinal, const void *code, size_t size,
	                   gpucc_part part);
	int (*module_function)(void **out, const runtime_loaded *m, const char *kernel);
	void (*module_unload)(runtime_loaded *m);
} runtime_driver;

extern const runtime_driver gpucc_runtime_hip_driver;
extern const runtime_driver gpucc_runtime_cuda_driver;

/* For a driver's load hook (lib/base/library_loader.h): open the library it
 * uses, forced (the config's setting) when set and not empty ("none":
 * disabled, GPUCC_EUNAVAILABLE), else the first of names that loads.  On
 * failure the message names the runtime, the setting by its variable
 * (env_name) and what dlopen said. */
int gpucc_runtime_library_open(gpucc_library *lib, const char *runtime_name, const char *forced,
                               const char *env_name, const char *const *names);

#endif
