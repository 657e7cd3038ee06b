/*
 * lib/runtime/runtime_cuda.c -- the CUDA driver API driver (lib/runtime/runtime_driver.h):
 * libcuda.so.1 opened with dlopen() on first use, devices described by their
 * compute capability and the driver version, PTX or cubin loaded with
 * cuModuleLoadDataEx in the device's primary context.
 *
 * The calling thread's current context belongs to the caller: each call
 * that needs the module's context pushes it (cuCtxPushCurrent) and pops it
 * after, which leaves the caller's context, or none, current again.
 *
 * The declarations below are our own, from the stable driver ABI: CUresult
 * and CUdevice are ints, contexts, modules and functions opaque pointers;
 * CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR/MINOR are 75/76 and
 * CU_JIT_ERROR_LOG_BUFFER(_SIZE_BYTES) 5/6; cuDevicePrimaryCtxRelease is
 * exported as cuDevicePrimaryCtxRelease_v2 since CUDA 11, cuCtxPushCurrent
 * and cuCtxPopCurrent as ..._v2 since CUDA 4.0 (read off cuda.h; no test
 * compares them with it).  lib/tests/stub_runtimes.c is a stand-in
 * library with these declarations, which lib/tests/test_runtime_load.c
 * (the runtime_stub test) loads to check what this file calls.
 */
#include "errors.h"
#include "config_internal.h"
#include "runtime_driver.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef int cu_result;
typedef int cu_device;
typedef void *cu_context;
typedef void *cu_module;
typedef void *cu_function;

#define CU_SUCCESS 0
#define CU_ERROR_NOT_FOUND 500
#define CU_ATTR_CC_MAJOR 75
#define CU_ATTR_CC_MINOR 76
#define CU_JIT_ERROR_LOG_BUFFER 5
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6

static gpucc_library library = GPUCC_LIBRARY_INIT;

static struct {
	cu_result (*init)(unsigned);
	cu_result (*driver_get_version)(int *);
	cu_result (*device_get_count)(int *);
	cu_result (*device_get)(cu_device *, int);
	cu_result (*device_get_attribute)(int *, int, cu_device);
	cu_result (*device_get_name)(char *, int, cu_device);
	cu_result (*primary_ctx_retain)(cu_context *, cu_device);
	cu_result (*primary_ctx_release)(cu_device);
	cu_result (*ctx_push_current)(cu_context);
	cu_result (*ctx_pop_current)(cu_context *);
	cu_result (*module_load_data_ex)(cu_module *, const void *, unsigned, int *, void **);
	cu_result (*module_get_function)(cu_function *, cu_module, const char *);
	cu_result (*module_unload)(cu_module);
	cu_result (*get_error_name)(cu_result, const char **);
} cuda;

static const char *error_name(cu_result r)
{
	const char *name = NULL;
	if (cuda.get_error_name && cuda.get_error_name(r, &name) == CU_SUCCESS && name)
		return name;
	return "unknown CUDA error";
}

static int cuda_fail(int code, const char *call, cu_result r)
{
	return gpucc_error_set(code, "CUDA driver: %s: %s (%d)", call, error_name(r), r);
}

/* Versioned names first: the driver keeps the old ones for old binaries,
 * with old semantics. */
static const gpucc_library_symbol symbols[] = {
	{"cuInit", &cuda.init, NULL, false},
	{"cuDriverGetVersion", &cuda.driver_get_version, NULL, false},
	{"cuDeviceGetCount", &cuda.device_get_count, NULL, false},
	{"cuDeviceGet", &cuda.device_get, NULL, false},
	{"cuDeviceGetAttribute", &cuda.device_get_attribute, NULL, false},
	{"cuDeviceGetName", &cuda.device_get_name, NULL, false},
	{"cuDevicePrimaryCtxRetain", &cuda.primary_ctx_retain, NULL, false},
	{"cuDevicePrimaryCtxRelease_v2", &cuda.primary_ctx_release, "cuDevicePrimaryCtxRelease", false},
	{"cuCtxPushCurrent_v2", &cuda.ctx_push_current, "cuCtxPushCurrent", false},
	{"cuCtxPopCurrent_v2", &cuda.ctx_pop_current, "cuCtxPopCurrent", false},
	{"cuModuleLoadDataEx", &cuda.module_load_data_ex, NULL, false},
	{"cuModuleGetFunction", &cuda.module_get_function, NULL, false},
	{"cuModuleUnload", &cuda.module_unload, NULL, false},
	{"cuGetErrorName", &cuda.get_error_name, NULL, false},
	{NULL, NULL, NULL, false},
};

static int load(gpucc_library *lib, void *unused)
{
	(void)unused;
	static const char *const names[] = {"libcuda.so.1", NULL};
	int rc = gpucc_runtime_library_open(lib, "CUDA driver", gpucc_config_current()->cuda_library,
	                                    "GPUCC_CUDA_LIBRARY", names);
	if (rc)
		return rc;
	const char *missing;
	if (gpucc_library_resolve(lib, symbols, &missing) != 0)
		return gpucc_library_fail(lib, GPUCC_EUNAVAILABLE,
		                          "CUDA driver: no symbol '%s' in the library", missing);
	cu_result r = cuda.init(0);
	if (r != CU_SUCCESS)
		return gpucc_library_fail(lib, GPUCC_EUNAVAILABLE,
		                          "CUDA driver: no device: cuInit returned %s (%d)", error_name(r), r);
	return 0;
}

/* Open once per process; later calls repeat the first result. */
static int open_library(void)
{
	int code = gpucc_library_load(&library, load, NULL);
	if (code)
		return gpucc_error_set(code, "%s", gpucc_library_error(&library));
	return 0;
}

static int cuda_device_count(int *count)
{
	*count = 0;
	int rc = open_library();
	if (rc)
		return rc;
	cu_result r = cuda.device_get_count(count);
	if (r != CU_SUCCESS) {
		*count = 0;
		return gpucc_error_set(GPUCC_EUNAVAILABLE,
		                       "CUDA driver: no device: cuDeviceGetCount returned %s (%d)",
		                       error_name(r), r);
	}
	if (*count == 0)
		return gpucc_error_set(GPUCC_EUNAVAILABLE, "CUDA driver: no device (count 0)");
	return 0;
}

static int cuda_device_describe(int ordinal, gpucc_device *out)
{
	int rc = open_library();
	if (rc)
		return rc;
	cu_device dev;
	cu_result r = cuda.device_get(&dev, ordinal);
	if (r != CU_SUCCESS)
		return cuda_fail(GPUCC_EUNAVAILABLE, "cuDeviceGet", r);
	int major = 0, minor = 0, version = 0;
	if ((r = cuda.device_get_attribute(&major, CU_ATTR_CC_MAJOR, dev)) != CU_SUCCESS ||
	    (r = cuda.device_get_attribute(&minor, CU_ATTR_CC_MINOR, dev)) != CU_SUCCESS)
		return cuda_fail(GPUCC_EUNAVAILABLE, "cuDeviceGetAttribute", r);
	if ((r = cuda.driver_get_version(&version)) != CU_SUCCESS)
		return cuda_fail(GPUCC_EUNAVAILABLE, "cuDriverGetVersion", r);
	if (cuda.device_get_name(out->name, (int)sizeof out->name, dev) != CU_SUCCESS)
		snprintf(out->name, sizeof out->name, "CUDA device %d", ordinal);
	out->name[sizeof out->name - 1] = '\0';
	out->ordinal = ordinal;
	out->driver_version = version;
	snprintf(out->arch, sizeof out->arch, "sm_%d%d", major, minor);
	out->target_known = gpucc_target_from_cuda(&out->target, major, minor, version) == 0;
	return 0;
}

static int cuda_module_load(runtime_loaded *out, int ordinal, const void *code, size_t size,
                            gpucc_part part)
{
	memset(out, 0, sizeof *out);
	int rc = open_library();
	if (rc)
		return rc;
	if (part != GPUCC_PART_PTX && part != GPUCC_PART_CUBIN)
		return gpucc_error_set(GPUCC_EINVALID, "CUDA driver: cannot load a %s payload",
		                       gpucc_part_name(part));
	cu_device dev;
	cu_context ctx = NULL;
	cu_result r = cuda.device_get(&dev, ordinal);
	if (r != CU_SUCCESS)
		return cuda_fail(GPUCC_EUNAVAILABLE, "cuDeviceGet", r);
	if ((r = cuda.primary_ctx_retain(&ctx, dev)) != CU_SUCCESS)
		return cuda_fail(GPUCC_EUNAVAILABLE, "cuDevicePrimaryCtxRetain", r);
	if ((r = cuda.ctx_push_current(ctx)) != CU_SUCCESS) {
		cuda.primary_ctx_release(dev);
		return cuda_fail(GPUCC_ERROR, "cuCtxPushCurrent", r);
	}
	/* The JIT's error log goes into the message when PTX is refused. */
	char log[1024] = "";
	int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
	void *values[] = {log, (void *)(uintptr_t)sizeof log};
	cu_module module = NULL;
	r = cuda.module_load_data_ex(&module, code, 2, options, values);
	cu_context popped;
	cuda.ctx_pop_current(&popped);
	if (r != CU_SUCCESS) {
		cuda.primary_ctx_release(dev);
		log[sizeof log - 1] = '\0';
		for (char *p = log; *p; p++)
			if (*p == '\n')
				*p = ' ';
		return gpucc_error_set(GPUCC_ERROR, "CUDA driver: cuModuleLoadDataEx (%s): %s (%d)%s%s",
		                       gpucc_part_name(part), error_name(r), r, *log ? ": " : "", log);
	}
	(void)size;
	out->module = module;
	out->context = ctx;
	out->ordinal = ordinal;
	return 0;
}

static int cuda_module_function(void **out, const runtime_loaded *m, const char *kernel)
{
	cu_function f = NULL;
	cu_result r = cuda.ctx_push_current(m->context);
	if (r != CU_SUCCESS)
		return cuda_fail(GPUCC_ERROR, "cuCtxPushCurrent", r);
	r = cuda.module_get_function(&f, m->module, kernel);
	cu_context popped;
	cuda.ctx_pop_current(&popped);
	if (r != CU_SUCCESS)
		return gpucc_error_set(r == CU_ERROR_NOT_FOUND ? GPUCC_ENOTFOUND : GPUCC_ERROR,
		                       "CUDA driver: cuModuleGetFunction '%s': %s (%d)", kernel,
		                       error_name(r), r);
	*out = f;
	return 0;
}

static void cuda_module_unload(runtime_loaded *m)
{
	if (!m->module)
		return;
	if (cuda.ctx_push_current(m->context) == CU_SUCCESS) {
		cuda.module_unload(m->module);
		cu_context popped;
		cuda.ctx_pop_current(&popped);
	}
	cu_device dev;
	if (cuda.device_get(&dev, m->ordinal) == CU_SUCCESS)
		cuda.primary_ctx_release(dev);
	m->module = NULL;
}

const runtime_driver gpucc_runtime_cuda_driver = {
	.kind = GPUCC_RUNTIME_CUDA,
	.name = "CUDA driver",
	.device_count = cuda_device_count,
	.device_describe = cuda_device_describe,
	.module_load = cuda_module_load,
	.module_function = cuda_module_function,
	.module_unload = cuda_module_unload,
};
