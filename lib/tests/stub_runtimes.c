/*
 * lib/tests/stub_runtimes.c -- a stand-in for both GPU runtimes, for
 * test_runtime_load.c's "stub" run (GPUCC_HIP_LIBRARY and GPUCC_CUDA_LIBRARY
 * name this one library): the HIP 5 and CUDA driver functions that
 * lib/runtime/runtime_hip.c and lib/runtime/runtime_cuda.c call, with the declarations they
 * use, and a per-thread current device (HIP) and context stack (CUDA) as the
 * real runtimes keep them.
 *
 * Like the real ones, a module belongs to the device or context it was
 * loaded in: HIP 5.2 refuses hipModuleGetFunction from another device (it
 * aborts; this stub returns hipErrorInvalidDevice), and the CUDA driver
 * needs the module's context current.  The test reads the current device
 * and context back through hipGetDevice and cuCtxGetCurrent.
 *
 * Faults, read from the environment at every call so that one test program
 * can set and clear them between cases:
 *   STUB_FAIL=NAME        the function NAME (e.g. cuModuleLoadDataEx) fails;
 *                         cuModuleGetFunction fails as the real driver's lazy
 *                         loading refuses a relocatable cubin there
 *                         (CUDA_ERROR_INVALID_IMAGE), and with NAME
 *                         hipModuleGetFunction HIP has no such kernel;
 *   STUB_HIP_DEVICES=0    HIP sees no GPU, answering as HIP 5.2 does then:
 *                         hipGetDeviceCount hipErrorNoDevice (100),
 *                         hipGetDevice and hipSetDevice hipErrorInvalidDevice;
 *   STUB_HIP_ARCH=NAME    the gcnArchName the HIP devices report;
 *   STUB_CUDA_CC=MAJ.MIN  the compute capability the CUDA device reports.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static int stub_fails(const char *function)
{
	const char *fail = getenv("STUB_FAIL");
	return fail && strcmp(fail, function) == 0;
}

/* ---- HIP ------------------------------------------------------------------ */

#define HIP_DEVICES 2
#define HIP_ERROR_NO_DEVICE 100
#define HIP_ERROR_INVALID_DEVICE 101
#define HIP_ERROR_INVALID_IMAGE 200
#define HIP_ERROR_INVALID_VALUE 1
#define HIP_ERROR_NOT_FOUND 500

static int hip_device_count(void)
{
	const char *devices = getenv("STUB_HIP_DEVICES");
	return devices ? atoi(devices) : HIP_DEVICES;
}

static _Thread_local int hip_current;

typedef struct stub_hip_module {
	int device;
} stub_hip_module;

EXPORT int hipGetDeviceCount(int *count);
EXPORT int hipGetDeviceProperties(void *props, int ordinal);
EXPORT int hipSetDevice(int ordinal);
EXPORT int hipGetDevice(int *ordinal);
EXPORT int hipDriverGetVersion(int *version);
EXPORT int hipModuleLoadData(void **module, const void *code);
EXPORT int hipModuleGetFunction(void **function, void *module, const char *name);
EXPORT int hipModuleUnload(void *module);
EXPORT const char *hipGetErrorName(int error);

EXPORT int hipGetDeviceCount(int *count)
{
	*count = hip_device_count();
	return *count ? 0 : HIP_ERROR_NO_DEVICE;
}

EXPORT int hipGetDeviceProperties(void *props, int ordinal)
{
	if (ordinal < 0 || ordinal >= hip_device_count())
		return HIP_ERROR_INVALID_DEVICE;
	const char *arch = getenv("STUB_HIP_ARCH");
	/* char name[256] at 0, char gcnArchName[256] at 396 (HIP 5.2). */
	snprintf((char *)props, 256, "Stub HIP GPU %d", ordinal);
	snprintf((char *)props + 396, 256, "%s", arch ? arch : "gfx90a:sramecc+:xnack-");
	return 0;
}

EXPORT int hipSetDevice(int ordinal)
{
	if (ordinal < 0 || ordinal >= hip_device_count() || stub_fails("hipSetDevice"))
		return HIP_ERROR_INVALID_DEVICE;
	hip_current = ordinal;
	return 0;
}

EXPORT int hipGetDevice(int *ordinal)
{
	if (!hip_device_count())
		return HIP_ERROR_INVALID_DEVICE;
	*ordinal = hip_current;
	return 0;
}

EXPORT int hipDriverGetVersion(int *version)
{
	*version = 50422803;
	return 0;
}

EXPORT int hipModuleLoadData(void **module, const void *code)
{
	if (!code)
		return HIP_ERROR_INVALID_VALUE;
	if (!hip_device_count())
		return HIP_ERROR_INVALID_DEVICE;
	if (stub_fails("hipModuleLoadData"))
		return HIP_ERROR_INVALID_IMAGE;
	stub_hip_module *m = malloc(sizeof *m);
	if (!m)
		return HIP_ERROR_INVALID_VALUE;
	m->device = hip_current;
	*module = m;
	return 0;
}

EXPORT int hipModuleGetFunction(void **function, void *module, const char *name)
{
	stub_hip_module *m = module;
	if (m->device != hip_current)
		return HIP_ERROR_INVALID_DEVICE;
	if (stub_fails("hipModuleGetFunction"))
		return HIP_ERROR_NOT_FOUND;
	*function = (void *)name;
	return 0;
}

EXPORT int hipModuleUnload(void *module)
{
	stub_hip_module *m = module;
	if (m->device != hip_current)
		return HIP_ERROR_INVALID_DEVICE; /* and leaks it, which LeakSanitizer reports */
	free(m);
	return 0;
}

EXPORT const char *hipGetErrorName(int error)
{
	switch (error) {
	case HIP_ERROR_NO_DEVICE:
		return "hipErrorNoDevice";
	case HIP_ERROR_INVALID_DEVICE:
		return "hipErrorInvalidDevice";
	case HIP_ERROR_INVALID_IMAGE:
		return "hipErrorInvalidImage";
	default:
		return "hipErrorStub";
	}
}

/* ---- CUDA driver ------------------------------------------------------------ */

#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_INVALID_PTX 218
#define CUDA_ERROR_INVALID_IMAGE 200
#define CUDA_CONTEXTS_MAX 8

/* One device, its primary context, and a per-thread context stack. */
static int primary_context;
static int primary_retained;
static _Thread_local void *context_stack[CUDA_CONTEXTS_MAX];
static _Thread_local int context_depth;

typedef struct stub_cuda_module {
	void *context;
} stub_cuda_module;

static void *current_context(void)
{
	return context_depth ? context_stack[context_depth - 1] : NULL;
}

EXPORT int cuInit(unsigned flags);
EXPORT int cuDriverGetVersion(int *version);
EXPORT int cuDeviceGetCount(int *count);
EXPORT int cuDeviceGet(int *device, int ordinal);
EXPORT int cuDeviceGetAttribute(int *value, int attribute, int device);
EXPORT int cuDeviceGetName(char *name, int size, int device);
EXPORT int cuDevicePrimaryCtxRetain(void **context, int device);
EXPORT int cuDevicePrimaryCtxRelease_v2(int device);
EXPORT int cuCtxPushCurrent_v2(void *context);
EXPORT int cuCtxPopCurrent_v2(void **context);
EXPORT int cuCtxSetCurrent(void *context);
EXPORT int cuCtxGetCurrent(void **context);
EXPORT int cuModuleLoadDataEx(void **module, const void *code, unsigned count, int *options,
                              void **values);
EXPORT int cuModuleGetFunction(void **function, void *module, const char *name);
EXPORT int cuModuleUnload(void *module);
EXPORT int cuGetErrorName(int error, const char **name);
EXPORT int stub_cuda_primary_retained(void);

EXPORT int cuInit(unsigned flags)
{
	return flags == 0 ? 0 : CUDA_ERROR_INVALID_VALUE;
}

EXPORT int cuDriverGetVersion(int *version)
{
	*version = 12040;
	return 0;
}

EXPORT int cuDeviceGetCount(int *count)
{
	*count = 1;
	return 0;
}

EXPORT int cuDeviceGet(int *device, int ordinal)
{
	if (ordinal != 0)
		return CUDA_ERROR_INVALID_VALUE;
	*device = ordinal;
	return 0;
}

EXPORT int cuDeviceGetAttribute(int *value, int attribute, int device)
{
	(void)device;
	int major = 9, minor = 0; /* compute capability 9.0 */
	const char *cc = getenv("STUB_CUDA_CC");
	if (cc && sscanf(cc, "%d.%d", &major, &minor) != 2)
		return CUDA_ERROR_INVALID_VALUE;
	*value = attribute == 75 ? major : minor;
	return 0;
}

EXPORT int cuDeviceGetName(char *name, int size, int device)
{
	snprintf(name, (size_t)size, "Stub CUDA GPU %d", device);
	return 0;
}

EXPORT int cuDevicePrimaryCtxRetain(void **context, int device)
{
	(void)device;
	primary_retained++;
	*context = &primary_context;
	return 0;
}

EXPORT int cuDevicePrimaryCtxRelease_v2(int device)
{
	(void)device;
	primary_retained--;
	return 0;
}

EXPORT int cuCtxPushCurrent_v2(void *context)
{
	if (!context || context_depth == CUDA_CONTEXTS_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if (stub_fails("cuCtxPushCurrent_v2"))
		return CUDA_ERROR_INVALID_CONTEXT;
	context_stack[context_depth++] = context;
	return 0;
}

EXPORT int cuCtxPopCurrent_v2(void **context)
{
	if (!context_depth)
		return CUDA_ERROR_INVALID_CONTEXT;
	*context = context_stack[--context_depth];
	return 0;
}

EXPORT int cuCtxSetCurrent(void *context)
{
	if (!context) {
		if (context_depth)
			context_depth--;
		return 0;
	}
	if (!context_depth)
		context_depth = 1;
	context_stack[context_depth - 1] = context;
	return 0;
}

EXPORT int cuCtxGetCurrent(void **context)
{
	*context = current_context();
	return 0;
}

EXPORT int cuModuleLoadDataEx(void **module, const void *code, unsigned count, int *options,
                              void **values)
{
	if (current_context() != &primary_context)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (stub_fails("cuModuleLoadDataEx")) {
		/* As the driver does, the JIT's log goes to the caller's buffer. */
		for (unsigned i = 0; i < count; i++)
			if (options[i] == 5 && values[i])
				snprintf(values[i], 64, "ptxas fatal   : stub\nrefuses this PTX");
		return CUDA_ERROR_INVALID_PTX;
	}
	stub_cuda_module *m = malloc(sizeof *m);
	if (!m || !code) {
		free(m);
		return CUDA_ERROR_INVALID_VALUE;
	}
	m->context = current_context();
	*module = m;
	return 0;
}

EXPORT int cuModuleGetFunction(void **function, void *module, const char *name)
{
	stub_cuda_module *m = module;
	if (current_context() != m->context)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (stub_fails("cuModuleGetFunction"))
		return CUDA_ERROR_INVALID_IMAGE;
	*function = (void *)name;
	return 0;
}

EXPORT int cuModuleUnload(void *module)
{
	stub_cuda_module *m = module;
	if (current_context() != m->context)
		return CUDA_ERROR_INVALID_CONTEXT;
	free(m);
	return 0;
}

EXPORT int cuGetErrorName(int error, const char **name)
{
	*name = error == CUDA_ERROR_INVALID_CONTEXT ? "CUDA_ERROR_INVALID_CONTEXT"
	        : error == CUDA_ERROR_INVALID_PTX   ? "CUDA_ERROR_INVALID_PTX"
	                                            : "CUDA_ERROR_STUB";
	return 0;
}

/* For the test: how many retains of the primary context are outstanding. */
EXPORT int stub_cuda_primary_retained(void)
{
	return primary_retained;
}
