/*
 * scripts/device_load.c -- scripts/device-check's program: loads a kernel
 * from an image through the runtime API on each GPU present and, when
 * built with cuda.h (-DWITH_CUDA_H), checks what gpucc.h promises of the
 * CUDA driver on a real one.
 *
 *   device_load IMAGE KERNEL
 *   device_load --each IMAGE        every kernel of IMAGE, loaded
 *   device_load --math IMAGE        math.ll's kernels run and checked
 *   device_load --driver-start      (START_NS: see driver_start)
 *
 * For every device: the best fit, then (NVIDIA) the entry an sm_80 device
 * with a CUDA 11.0 driver would get (sm_80:ptx70 PTX, JIT-compiled by this
 * driver).  With cuda.h: the calling thread's current context is the same
 * after gpucc_module_load, _function and _free as before (none, then a
 * context of the caller's own), and saxpy, launched once, computes
 * y = 2x + y.  Prints a line per check; exits 1 when any failed.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <gpucc.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef WITH_CUDA_H
#include <cuda.h>
#endif

static int failures;

#ifdef WITH_CUDA_H
static void check(int ok, const char *what)
{
	printf("  %s: %s\n", what, ok ? "ok" : "FAILED");
	failures += !ok;
}

static CUcontext current(void)
{
	CUcontext c = NULL;
	return cuCtxGetCurrent(&c) == CUDA_SUCCESS ? c : (CUcontext)-1;
}

/* Device ordinal's primary context, retained and made current; undone by
 * leave_primary. */
static CUresult enter_primary(int ordinal, CUdevice *dev)
{
	CUcontext ctx;
	CUresult r = cuDeviceGet(dev, ordinal);
	if (r == CUDA_SUCCESS)
		r = cuDevicePrimaryCtxRetain(&ctx, *dev);
	if (r == CUDA_SUCCESS && (r = cuCtxPushCurrent(ctx)) != CUDA_SUCCESS)
		cuDevicePrimaryCtxRelease(*dev);
	return r;
}

static void leave_primary(CUdevice dev)
{
	cuCtxPopCurrent(NULL);
	cuDevicePrimaryCtxRelease(dev);
}

static const char *error_name(CUresult r)
{
	const char *name = "?";
	cuGetErrorName(r, &name);
	return name;
}

/* y = 2x + y on 1024 floats through the driver API, in the device's
 * primary context; saxpy(i32 n, float a, float *x, float *y), as in
 * testdata/example/saxpy.nvptx.ll. */
static void launch_saxpy(void *fn, int ordinal)
{
	enum { N = 1024 };
	static float x[N], y[N];
	for (int i = 0; i < N; i++) {
		x[i] = (float)i;
		y[i] = 1.0f;
	}
	CUdevice dev;
	CUdeviceptr dx = 0, dy = 0;
	float a = 2.0f;
	int n = N;
	if (enter_primary(ordinal, &dev) != CUDA_SUCCESS) {
		check(0, "primary context for the launch");
		return;
	}
	CUresult r = cuMemAlloc(&dx, sizeof x);
	if (r == CUDA_SUCCESS)
		r = cuMemAlloc(&dy, sizeof y);
	if (r == CUDA_SUCCESS)
		r = cuMemcpyHtoD(dx, x, sizeof x);
	if (r == CUDA_SUCCESS)
		r = cuMemcpyHtoD(dy, y, sizeof y);
	void *params[] = {&n, &a, &dx, &dy};
	if (r == CUDA_SUCCESS)
		r = cuLaunchKernel((CUfunction)fn, (N + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL);
	if (r == CUDA_SUCCESS)
		r = cuCtxSynchronize();
	if (r == CUDA_SUCCESS)
		r = cuMemcpyDtoH(y, dy, sizeof y);
	int wrong = 0;
	for (int i = 0; i < N; i++)
		wrong += y[i] != 2.0f * (float)i + 1.0f;
	printf("  launch: %s, %d of %d values wrong\n", error_name(r), wrong, N);
	check(r == CUDA_SUCCESS && wrong == 0, "saxpy computes y = 2x + y");
	cuMemFree(dx);
	cuMemFree(dy);
	leave_primary(dev);
}
#endif

static void load_on(gpucc_image *img, const char *kernel, const gpucc_device *dev, int ordinal)
{
	gpucc_module *m = NULL;
	void *fn = NULL;
#ifdef WITH_CUDA_H
	CUcontext before = current();
#endif
	int rc = gpucc_module_load(&m, img, kernel, dev);
	if (rc == GPUCC_ENOTFOUND && dev->target.sm == 80) {
		printf("  (the image has nothing for such a device: %s)\n", gpucc_error_last()->message);
		return;
	}
	if (rc != 0 || gpucc_module_function(&fn, m, kernel) != 0) {
		printf("  load FAILED: %s\n", gpucc_error_last()->message);
		failures++;
		gpucc_module_free(m);
		return;
	}
	const gpucc_selection *s = gpucc_module_selection(m);
	printf("  loaded %s %s (%s): function %p\n", s->entry->target, gpucc_part_name(s->part),
	       s->exact ? "exact" : "fallback", fn);
#ifdef WITH_CUDA_H
	check(current() == before, "the current context is as it was after load and function");
	if (strcmp(kernel, "saxpy") == 0 && dev->runtime == GPUCC_RUNTIME_CUDA)
		launch_saxpy(fn, ordinal);
#else
	(void)ordinal;
#endif
	gpucc_module_free(m);
#ifdef WITH_CUDA_H
	check(current() == before, "the current context is as it was after free");
#endif
}

#ifdef WITH_CUDA_H
/* What every program that uses the GPU pays before it loads anything: the
 * driver's start and device 0's primary context made current, in
 * milliseconds from START_NS (CLOCK_REALTIME nanoseconds at process start,
 * as example-saxpy's SAXPY_START_NS). */
static int driver_start(void)
{
	CUdevice dev;
	if (cuInit(0) != CUDA_SUCCESS || enter_primary(0, &dev) != CUDA_SUCCESS) {
		printf("the CUDA driver did not start\n");
		return 1;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	const char *start = getenv("START_NS");
	double ms = ((double)ts.tv_sec * 1e9 + (double)ts.tv_nsec - (start ? strtod(start, NULL) : 0)) / 1e6;
	printf("driver ready in %.2f ms from process start\n", ms);
	leave_primary(dev);
	return 0;
}
#endif

/* Every kernel of every entry loaded (and resolved) on the first device,
 * through the usual selection. */
static int load_each(const char *path)
{
	gpucc_image *img = NULL;
	if (gpucc_image_open_mapped(&img, path) != 0) {
		printf("open: %s\n", gpucc_error_last()->message);
		return 1;
	}
	size_t loaded = 0, failed = 0;
	for (size_t i = 0; i < gpucc_image_entry_count(img); i++) {
		const gpucc_entry *e = gpucc_image_entry(img, i);
		for (size_t k = 0; k < e->kernel_count; k++) {
			gpucc_module *m = NULL;
			void *fn = NULL;
			if (gpucc_module_load(&m, img, e->kernels[k].name, NULL) == 0 &&
			    gpucc_module_function(&fn, m, e->kernels[k].name) == 0) {
				loaded++;
			} else {
				printf("  %s: %s FAILED: %s\n", e->target, e->kernels[k].name, gpucc_error_last()->message);
				failed++;
			}
			gpucc_module_free(m);
		}
	}
	printf("  %s: %zu kernels loaded, %zu failed\n", path, loaded, failed);
	gpucc_image_free(img);
	return failed ? 1 : 0;
}

#ifdef WITH_CUDA_H
/* testdata/kernels/nvptx/math.ll's sin_exp and power, launched on 256
 * threads and checked against the host's libm: libdevice, linked and
 * internalised by compile, computes what it should. */
static int run_math(const char *path)
{
	enum { N = 256 };
	static float in[N], out[N];
	for (int i = 0; i < N; i++)
		in[i] = (float)i / 32.0f + 0.01f;
	gpucc_image *img = NULL;
	if (gpucc_image_open_mapped(&img, path) != 0) {
		printf("open: %s\n", gpucc_error_last()->message);
		return 1;
	}
	const char *kernels[] = {"sin_exp", "power"};
	for (int k = 0; k < 2; k++) {
		gpucc_module *m = NULL;
		void *fn = NULL;
		if (gpucc_module_load(&m, img, kernels[k], NULL) != 0 ||
		    gpucc_module_function(&fn, m, kernels[k]) != 0) {
			printf("  %s: load FAILED: %s\n", kernels[k], gpucc_error_last()->message);
			failures++;
			gpucc_module_free(m);
			continue;
		}
		CUdevice dev;
		CUdeviceptr din = 0, dout = 0;
		float p = 2.5f;
		CUresult r = enter_primary(gpucc_module_device(m)->ordinal, &dev);
		bool entered = r == CUDA_SUCCESS;
		if (r == CUDA_SUCCESS)
			r = cuMemAlloc(&din, sizeof in);
		if (r == CUDA_SUCCESS)
			r = cuMemAlloc(&dout, sizeof out);
		if (r == CUDA_SUCCESS)
			r = cuMemcpyHtoD(din, in, sizeof in);
		void *params[] = {&dout, &din, &p};
		if (r == CUDA_SUCCESS)
			r = cuLaunchKernel((CUfunction)fn, 1, 1, 1, N, 1, 1, 0, NULL, params, NULL);
		if (r == CUDA_SUCCESS)
			r = cuCtxSynchronize();
		if (r == CUDA_SUCCESS)
			r = cuMemcpyDtoH(out, dout, sizeof out);
		double worst = 0;
		for (int i = 0; i < N && r == CUDA_SUCCESS; i++) {
			double want = k == 0 ? exp(sin((double)in[i])) : pow((double)in[i], (double)p);
			double err = fabs(out[i] - want) / fabs(want);
			worst = err > worst ? err : worst;
		}
		printf("  %s: %s, worst relative error %.2g against the host's double precision\n", kernels[k],
		       error_name(r), worst);
		/* libdevice's sinf, expf and powf are within a few ulp: 1e-6 is 8. */
		check(r == CUDA_SUCCESS && worst < 1e-6, kernels[k]);
		cuMemFree(din);
		cuMemFree(dout);
		if (entered)
			leave_primary(dev);
		gpucc_module_free(m);
	}
	gpucc_image_free(img);
	return failures ? 1 : 0;
}
#endif

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--each") == 0)
		return load_each(argv[2]);
#ifdef WITH_CUDA_H
	if (argc == 2 && strcmp(argv[1], "--driver-start") == 0)
		return driver_start();
	if (argc == 3 && strcmp(argv[1], "--math") == 0)
		return run_math(argv[2]);
#endif
	if (argc != 3) {
		fprintf(stderr, "usage: device_load IMAGE KERNEL | --each IMAGE | --math IMAGE | --driver-start\n");
		return 2;
	}
	gpucc_image *img = NULL;
	const char *kernel = argv[2];
	if (gpucc_image_open_mapped(&img, argv[1]) != 0) {
		printf("open: %s\n", gpucc_error_last()->message);
		return 1;
	}
#ifdef WITH_CUDA_H
	check(cuInit(0) == CUDA_SUCCESS && current() == NULL, "cuInit, and no context is current");
#endif
	gpucc_device *devs = NULL;
	size_t n = 0;
	if (gpucc_devices_list(&devs, &n) != 0) {
		printf("devices: %s\n", gpucc_error_last()->message);
		gpucc_image_free(img);
		return 1;
	}
	for (size_t d = 0; d < n; d++) {
		printf("device %s:%d %s arch %s driver %d\n",
		       devs[d].runtime == GPUCC_RUNTIME_CUDA ? "cuda" : "hip", devs[d].ordinal, devs[d].name,
		       devs[d].arch, devs[d].driver_version);
		load_on(img, kernel, &devs[d], devs[d].ordinal);
		if (devs[d].target.vendor == GPUCC_VENDOR_NVIDIA) {
			gpucc_device old = devs[d];
			old.target.sm = 80;
			old.target.ptx_isa = 70;
			printf(" as an sm_80 device with a CUDA 11.0 driver would choose:\n");
			load_on(img, kernel, &old, devs[d].ordinal);
		}
#ifdef WITH_CUDA_H
		if (devs[d].runtime == GPUCC_RUNTIME_CUDA) {
			/* A context of the caller's own is current: it stays so. */
			CUdevice cu;
			CUcontext mine = NULL;
			if (cuDeviceGet(&cu, devs[d].ordinal) == CUDA_SUCCESS &&
			    cuCtxCreate(&mine, NULL, 0, cu) == CUDA_SUCCESS) {
				printf(" with a context of the caller's own current:\n");
				load_on(img, kernel, &devs[d], devs[d].ordinal);
				check(current() == mine, "the caller's context is still current");
				cuCtxDestroy(mine);
			}
		}
#endif
	}
	gpucc_free(devs);
	gpucc_image_free(img);
	return failures ? 1 : 0;
}
