/*
 * lib/runtime/runtime_hip.c -- the HIP runtime driver (lib/runtime/runtime_driver.h):
 * libamdhip64.so.5 opened with dlopen() on first use, devices described by
 * hipGetDeviceProperties, code objects loaded by hipModuleLoadData.
 *
 * The declarations below are our own, for the HIP 5 ABI that the soname
 * pins: hipError_t is an int-sized enum, modules and functions are opaque
 * pointers, and hipDeviceProp_t (792 bytes in HIP 5.2) starts with
 * char name[256] and holds char gcnArchName[256] at byte 396 (read off the
 * HIP 5.2 header, and checked by hand with offsetof against Debian's
 * libamdhip64-dev 5.2.3; no test compares them with it).
 * lib/tests/stub_runtimes.c is a stand-in library with these declarations,
 * which lib/tests/test_runtime_load.c (the runtime_stub test) loads to
 * check what this file calls and in what order.  Without a GPU, HIP 5.2 answers hipGetDeviceCount with
 * hipErrorNoDevice (100) in well under a millisecond.
 *
 * The current device is per thread and belongs to the caller: each call
 * that needs the module's device sets it and sets the caller's back (HIP
 * 5.2 refuses hipModuleGetFunction on another device than the module's).
 */
#include "errors.h"
#include "config_internal.h"
#include "runtime_driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int hip_error;
typedef void *hip_module;
typedef void *hip_function;

#define HIP_SUCCESS 0
#define HIP_ERROR_NO_DEVICE 100
#define HIP_ERROR_INVALID_DEVICE 101
#define HIP_ERROR_NOT_FOUND 500

/* HIP 5 hipDeviceProp_t: only the fields we read, at their offsets; the
 * buffer is larger than the struct to leave room. */
#define HIP_PROPS_SIZE 792
#define HIP_PROPS_NAME_OFFSET 0
#define HIP_PROPS_ARCH_OFFSET 396
#define HIP_PROPS_STRING_SIZE 256

static gpucc_library library = GPUCC_LIBRARY_INIT;

static struct {
	hip_error (*get_device_count)(int *);
	hip_error (*get_device_properties)(void *, int);
	hip_error (*set_device)(int);
	hip_error (*get_device)(int *);
	hip_error (*driver_get_version)(int *);
	hip_error (*module_load_data)(hip_module *, const void *);
	hip_error (*module_get_function)(hip_function *, hip_module, const char *);
	hip_error (*module_unload)(hip_module);
	const char *(*get_error_name)(hip_error);
} hip;

static const char *error_name(hip_error e)
{
	const char *name = hip.get_error_name ? hip.get_error_name(e) : NULL;
	return name ? name : "unknown HIP error";
}

/* A HIP call failed: "HIP runtime: CALL: NAME (N)". */
static int hip_fail(int code, const char *call, hip_error e)
{
	return gpucc_error_set(code, "HIP runtime: %s: %s (%d)", call, error_name(e), e);
}

static const gpucc_library_symbol symbols[] = {
	{"hipGetDeviceCount", &hip.get_device_count, NULL, false},
	{"hipGetDeviceProperties", &hip.get_device_properties, NULL, false},
	{"hipSetDevice", &hip.set_device, NULL, false},
	{"hipGetDevice", &hip.get_device, NULL, false},
	{"hipDriverGetVersion", &hip.driver_get_version, NULL, false},
	{"hipModuleLoadData", &hip.module_load_data, NULL, false},
	{"hipModuleGetFunction", &hip.module_get_function, NULL, false},
	{"hipModuleUnload", &hip.module_unload, NULL, false},
	{"hipGetErrorName", &hip.get_error_name, NULL, false},
	{NULL, NULL, NULL, false},
};

static int load(gpucc_library *lib, void *unused)
{
	(void)unused;
	static const char *const names[] = {"libamdhip64.so.5", NULL};
	/* ROCm sees AMD GPUs only through the amdgpu driver's /dev/kfd.
	 * Without it no GPU can be there, and loading HIP would only cost the
	 * process its start-up: HIP pulls in ROCm's comgr and a whole LLVM
	 * (30-45 ms on the H200 machine, whose Ubuntu has HIP installed beside
	 * the CUDA driver).  A library the config names (GPUCC_HIP_LIBRARY)
	 * is loaded regardless. */
	const char *named = gpucc_config_current()->hip_library;
	if ((!named || !*named) && access("/dev/kfd", F_OK) != 0)
		return gpucc_library_fail(lib, GPUCC_EUNAVAILABLE,
		                          "HIP runtime: no device: /dev/kfd is absent (no amdgpu driver), "
		                          "so HIP was not loaded");
	int rc = gpucc_runtime_library_open(lib, "HIP runtime", named, "GPUCC_HIP_LIBRARY",
	                                    names);
	if (rc)
		return rc;
	const char *missing;
	if (gpucc_library_resolve(lib, symbols, &missing) != 0)
		return gpucc_library_fail(lib, GPUCC_EUNAVAILABLE,
		                          "HIP runtime: no symbol '%s' in the library", missing);
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

static int hip_device_count(int *count)
{
	*count = 0;
	int rc = open_library();
	if (rc)
		return rc;
	hip_error e = hip.get_device_count(count);
	if (e != HIP_SUCCESS) {
		*count = 0;
		return gpucc_error_set(GPUCC_EUNAVAILABLE,
		                       "HIP runtime: no device: hipGetDeviceCount returned %s (%d)",
		                       error_name(e), e);
	}
	if (*count == 0)
		return gpucc_error_set(GPUCC_EUNAVAILABLE, "HIP runtime: no device (count 0)");
	return 0;
}

static void copy_string(char *dst, size_t size, const unsigned char *src)
{
	size_t n = strnlen((const char *)src, HIP_PROPS_STRING_SIZE);
	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static int hip_device_describe(int ordinal, gpucc_device *out)
{
	int rc = open_library();
	if (rc)
		return rc;
	_Alignas(16) unsigned char props[HIP_PROPS_SIZE * 2];
	memset(props, 0, sizeof props);
	hip_error e = hip.get_device_properties(props, ordinal);
	if (e != HIP_SUCCESS)
		return hip_fail(GPUCC_EUNAVAILABLE, "hipGetDeviceProperties", e);
	out->ordinal = ordinal;
	copy_string(out->name, sizeof out->name, props + HIP_PROPS_NAME_OFFSET);
	copy_string(out->arch, sizeof out->arch, props + HIP_PROPS_ARCH_OFFSET);
	int version = 0;
	if (hip.driver_get_version(&version) == HIP_SUCCESS)
		out->driver_version = version;
	out->target_known = gpucc_target_from_hip_arch(&out->target, out->arch) == 0;
	out->target.code_object_max = gpucc_hip_max_code_object(out->driver_version);
	return 0;
}

/* Make ordinal the current device, remembering the caller's in *previous
 * (-1: none could be read, nothing to give back). */
static hip_error enter_device(int ordinal, int *previous)
{
	if (hip.get_device(previous) != HIP_SUCCESS)
		*previous = -1;
	if (*previous == ordinal)
		return HIP_SUCCESS;
	return hip.set_device(ordinal);
}

static void leave_device(int ordinal, int previous)
{
	if (previous >= 0 && previous != ordinal)
		hip.set_device(previous);
}

/* A call about a device failed with e.  Without a GPU, HIP 5.2 answers
 * hipSetDevice and hipModuleLoadData with hipErrorInvalidDevice (101), which
 * reads as a wrong ordinal: ask hipGetDeviceCount, and when it sees no
 * device say so with its error (hipErrorNoDevice), as gpucc_devices_list
 * does.  Otherwise the call's own error. */
static int hip_fail_device(int code, const char *call, hip_error e)
{
	int count = 0;
	hip_error counted = hip.get_device_count(&count);
	if (counted != HIP_SUCCESS)
		return gpucc_error_set(GPUCC_EUNAVAILABLE,
		                       "HIP runtime: no device: hipGetDeviceCount returned %s (%d)",
		                       error_name(counted), counted);
	if (count == 0)
		return gpucc_error_set(GPUCC_EUNAVAILABLE, "HIP runtime: no device (count 0)");
	return hip_fail(code, call, e);
}

static int hip_module_load(runtime_loaded *out, int ordinal, const void *code, size_t size,
                           gpucc_part part)
{
	memset(out, 0, sizeof *out);
	int rc = open_library();
	if (rc)
		return rc;
	if (part != GPUCC_PART_HSACO)
		return gpucc_error_set(GPUCC_EINVALID, "HIP runtime: cannot load a %s payload",
		                       gpucc_part_name(part));
	int previous;
	hip_error e = enter_device(ordinal, &previous);
	if (e != HIP_SUCCESS) {
		leave_device(ordinal, previous);
		return hip_fail_device(GPUCC_EUNAVAILABLE, "hipSetDevice", e);
	}
	hip_module module = NULL;
	e = hip.module_load_data(&module, code);
	leave_device(ordinal, previous);
	if (e == HIP_ERROR_NO_DEVICE || e == HIP_ERROR_INVALID_DEVICE)
		return hip_fail_device(e == HIP_ERROR_NO_DEVICE ? GPUCC_EUNAVAILABLE : GPUCC_ERROR,
		                       "hipModuleLoadData", e);
	if (e != HIP_SUCCESS)
		return hip_fail(GPUCC_ERROR, "hipModuleLoadData", e);
	out->module = module;
	out->ordinal = ordinal;
	return 0;
}

static int hip_module_function(void **out, const runtime_loaded *m, const char *kernel)
{
	hip_function f = NULL;
	int previous;
	hip_error e = enter_device(m->ordinal, &previous);
	if (e == HIP_SUCCESS)
		e = hip.module_get_function(&f, m->module, kernel);
	leave_device(m->ordinal, previous);
	if (e != HIP_SUCCESS)
		return gpucc_error_set(e == HIP_ERROR_NOT_FOUND ? GPUCC_ENOTFOUND : GPUCC_ERROR,
		                       "HIP runtime: hipModuleGetFunction '%s': %s (%d)", kernel,
		                       error_name(e), e);
	*out = f;
	return 0;
}

static void hip_module_unload(runtime_loaded *m)
{
	if (m->module && hip.module_unload) {
		int previous;
		if (enter_device(m->ordinal, &previous) == HIP_SUCCESS)
			hip.module_unload(m->module);
		leave_device(m->ordinal, previous);
	}
	m->module = NULL;
}

const runtime_driver gpucc_runtime_hip_driver = {
	.kind = GPUCC_RUNTIME_HIP,
	.name = "HIP runtime",
	.device_count = hip_device_count,
	.device_describe = hip_device_describe,
	.module_load = hip_module_load,
	.module_function = hip_module_function,
	.module_unload = hip_module_unload,
};
