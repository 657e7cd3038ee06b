/*
 * lib/tests/test_runtime_load.c -- loading without a GPU, and what a
 * program pays before it asks for one: images opened by mapping and from
 * memory, the HIP runtime mapped only when devices are asked for, the
 * documented error (hipErrorNoDevice) quickly, and clear errors for a
 * corrupt payload, a missing kernel and a device nothing fits.
 *
 * On a machine with a GPU the no-device cases skip themselves.
 *
 * Run as `test_runtime_load hip` with GPUCC_HIP_LIBRARY naming HIP 5.2's
 * own library, HIP is loaded and asked even without /dev/kfd, and answers
 * hipErrorNoDevice.
 *
 * Run as `test_runtime_load stub`, with GPUCC_HIP_LIBRARY and
 * GPUCC_CUDA_LIBRARY naming lib/tests/stub_runtimes.c's library (meson's
 * runtime_stub test), it loads modules on stand-in devices instead and
 * checks that the caller's current HIP device and CUDA context are as the
 * caller left them after every call.
 */
#include "check.h"

#include <gpucc.h>

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* One name per run: meson runs the plain and the stub run in parallel in
 * one directory, and each removes its image when done. */
static const char *image_path = "test_runtime_load.gpucc";
#define IMAGE_PATH image_path
static const char hsaco_bytes[] = "fake gfx90a code object: not loadable";
static const char ptx_bytes[] = "// fake PTX\n.version 7.8\n.target sm_90\n";

/* The "hip" run (meson's runtime_load_hip) names HIP 5.2's library in
 * GPUCC_HIP_LIBRARY, so that it is loaded even without /dev/kfd. */
#define REAL_HIP "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5"
static bool real_hip_named(void)
{
	const char *named = getenv("GPUCC_HIP_LIBRARY");
	return named && strcmp(named, REAL_HIP) == 0 && access(REAL_HIP, F_OK) == 0;
}

static bool mapped(const char *library)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return false;
	char line[1024];
	bool found = false;
	while (!found && fgets(line, sizeof line, f))
		found = strstr(line, library) != NULL;
	fclose(f);
	return found;
}

static double seconds_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct test_entry {
	gpucc_entry e;
	char target[GPUCC_TARGET_NAME_SIZE];
	gpucc_kernel kernel;
} test_entry;

static void add_entry(gpucc_image_writer *w, const char *target, const char *kernel,
                      gpucc_part part, const char *bytes)
{
	test_entry t;
	memset(&t, 0, sizeof t);
	gpucc_target parsed;
	CHECK_INT(gpucc_target_parse(&parsed, target), 0);
	gpucc_target_format(t.target, &parsed);
	t.kernel = (gpucc_kernel){kernel, -1, -1, -1};
	t.e.key_schema = 1;
	t.e.module = "saxpy.ll";
	gpucc_digest_buffer(&t.e.module_sha256, target, strlen(target));
	t.e.target = t.target;
	t.e.triple = gpucc_target_triple(&parsed);
	t.e.gpucc_version = gpucc_version();
	t.e.llvm_version = "19.1.7";
	t.e.kernel_count = 1;
	t.e.kernels = &t.kernel;
	CHECK_INT(gpucc_entry_compute_key(&t.e.key, &t.e), 0);
	gpucc_payload_source src = {part, NULL, bytes, strlen(bytes)};
	CHECK_INT(gpucc_image_writer_add(w, &t.e, &src, 1), 0);
}

static void write_test_image(void)
{
	gpucc_image_writer *w = NULL;
	gpucc_write_options opts = GPUCC_WRITE_OPTIONS_INIT;
	CHECK_INT(gpucc_image_writer_new(&w, IMAGE_PATH, &opts), 0);
	add_entry(w, "gfx90a", "saxpy", GPUCC_PART_HSACO, hsaco_bytes);
	add_entry(w, "sm_90:ptx78", "saxpy", GPUCC_PART_PTX, ptx_bytes);
	CHECK_INT(gpucc_image_writer_commit(w), 0);
	gpucc_image_writer_free(w);
}

/* Opening and choosing touch no GPU runtime. */
static void test_open_and_select_map_no_runtime(void)
{
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_mapped(&img, IMAGE_PATH), 0);
	if (!img)
		return;
	CHECK_INT(gpucc_image_entry_count(img), 2);
	gpucc_target device;
	CHECK_INT(gpucc_target_from_hip_arch(&device, "gfx90a:sramecc+:xnack-"), 0);
	gpucc_selection s;
	CHECK_INT(gpucc_image_select(&s, img, "saxpy", &device), 0);
	CHECK_INT(s.part, GPUCC_PART_HSACO);
	void *data = NULL;
	size_t size = 0;
	CHECK_INT(gpucc_image_read_payload(&data, &size, img, s.payload), 0);
	CHECK(size == strlen(hsaco_bytes) && memcmp(data, hsaco_bytes, size) == 0);
	gpucc_free(data);
	gpucc_image_free(img);
	CHECK(!mapped("libamdhip64"));
	CHECK(!mapped("libcuda"));
	CHECK_INT(gpucc_image_open_mapped(&img, "no-such.gpucc"), GPUCC_ENOTFOUND);
	CHECK_ERROR_HAS("no-such.gpucc");
}

/* No device: the documented error, quickly; the runtime is loaded now. */
static void test_no_device(void)
{
	gpucc_device *devices = NULL;
	size_t count = 0;
	double start = seconds_now();
	int rc = gpucc_devices_list(&devices, &count);
	double took = seconds_now() - start;
	if (rc == 0) {
		gpucc_free(devices);
		skip("this machine has a GPU");
	}
	CHECK_INT(rc, GPUCC_EUNAVAILABLE);
	CHECK_ERROR_HAS("no GPU found");
	if (real_hip_named()) {
		CHECK_ERROR_HAS("HIP runtime: no device: hipGetDeviceCount returned hipErrorNoDevice (100)");
		CHECK(mapped("libamdhip64"));
	} else if (!getenv("GPUCC_HIP_LIBRARY") && access("/dev/kfd", F_OK) != 0) {
		/* No amdgpu driver: HIP is not even loaded. */
		CHECK_ERROR_HAS("HIP runtime: no device: /dev/kfd is absent (no amdgpu driver), so HIP was not loaded");
		CHECK(!mapped("libamdhip64"));
	}
	CHECK(took < 5.0);
	fprintf(stderr, "  gpucc_devices_list without a GPU: %.1f ms\n", took * 1e3);

	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_mapped(&img, IMAGE_PATH), 0);
	gpucc_module *m = NULL;
	start = seconds_now();
	CHECK_INT(gpucc_module_load(&m, img, "saxpy", NULL), GPUCC_EUNAVAILABLE);
	CHECK(seconds_now() - start < 5.0);
	CHECK(m == NULL);
	CHECK_ERROR_HAS("no GPU found");
	gpucc_module_free(NULL);
	gpucc_image_free(img);
}

/* A device named by the caller: selection errors come before any driver
 * call, and a driver that cannot load says so without crashing. */
static void test_named_device_errors(void)
{
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_mapped(&img, IMAGE_PATH), 0);
	gpucc_device dev = {.runtime = GPUCC_RUNTIME_HIP, .ordinal = 0, .name = "fake", .arch = "gfx942"};
	dev.target_known = gpucc_target_from_hip_arch(&dev.target, "gfx942:sramecc+:xnack-") == 0;
	gpucc_module *m = NULL;
	CHECK_INT(gpucc_module_load(&m, img, "saxpy", &dev), GPUCC_ENOTFOUND);
	/* The image's AMD code only: its sm_90 entry is no answer for an AMD GPU. */
	CHECK_ERROR_HAS("runs on gfx942:sramecc+:xnack-: the image has AMD code for gfx90a (hsaco)");
	CHECK(strstr(gpucc_error_last()->message, "sm_90") == NULL);
	CHECK_INT(gpucc_module_load(&m, img, "nope", &dev), GPUCC_ENOTFOUND);
	CHECK_ERROR_HAS("kernel 'nope' is not in");
	CHECK_ERROR_HAS("its kernels: saxpy");

	dev.target_known = gpucc_target_from_hip_arch(&dev.target, "gfx90a:sramecc+:xnack-") == 0;
	int rc = gpucc_module_load(&m, img, "saxpy", &dev);
	if (rc == 0) {
		gpucc_module_free(m); /* a GPU took the fake code object?  Not expected. */
		CHECK(false);
	} else {
		CHECK(rc == GPUCC_EUNAVAILABLE || rc == GPUCC_ERROR);
		CHECK_ERROR_HAS("HIP runtime");
	}
	/* HIP 5.2 installed, no GPU: the load says so as the device list does
	 * (hipSetDevice's own answer is hipErrorInvalidDevice). */
	char message[512];
	snprintf(message, sizeof message, "%s", gpucc_error_last()->message);
	gpucc_device *devices = NULL;
	size_t count = 0;
	if (real_hip_named() && gpucc_devices_list(&devices, &count) != 0 &&
	    strstr(gpucc_error_last()->message, "hipErrorNoDevice")) {
		CHECK_INT(rc, GPUCC_EUNAVAILABLE);
		CHECK(strstr(message, "HIP runtime: no device: hipGetDeviceCount returned "
		                      "hipErrorNoDevice (100)") != NULL ||
		      (fprintf(stderr, "  message was: %s\n", message), 0));
	}
	gpucc_free(devices);
	gpucc_image_free(img);
}

/* A corrupt embedded image: damaged bytes are refused at open or when the
 * payload is read, never loaded. */
static void test_corrupt_memory_image(void)
{
	size_t size = 0;
	unsigned char *data = check_read_file(IMAGE_PATH, &size);
	CHECK(data != NULL);
	if (!data)
		return;
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_memory(&img, data, size / 3, "truncated"), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("truncated");

	/* Flip one byte of the code object's bytes: opens, fails verification. */
	unsigned char *hit = memmem(data, size, hsaco_bytes, strlen(hsaco_bytes));
	CHECK(hit != NULL);
	if (hit)
		hit[3] ^= 0x20;
	CHECK_INT(gpucc_image_open_memory(&img, data, size, "embedded"), 0);
	if (img) {
		gpucc_device dev = {.runtime = GPUCC_RUNTIME_HIP, .name = "fake", .arch = "gfx90a"};
		dev.target_known = gpucc_target_from_hip_arch(&dev.target, "gfx90a:sramecc+:xnack-") == 0;
		gpucc_module *m = NULL;
		CHECK_INT(gpucc_module_load(&m, img, "saxpy", &dev), GPUCC_ECORRUPT);
		CHECK_ERROR_HAS("embedded");
		gpucc_image_free(img);
	}
	memset(data, 0x5a, 512);
	CHECK(gpucc_image_open_memory(&img, data, size, "garbage") != 0);
	free(data);
}

/* ---- stand-in runtimes (the "stub" run) ------------------------------------ */

/* A function of the stub library, which gpucc has opened by now. */
static void *stub_symbol(const char *name)
{
	void *library = dlopen(getenv("GPUCC_HIP_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
	void *symbol = library ? dlsym(library, name) : NULL;
	if (!symbol)
		skip("the stub runtime library is not loaded");
	if (library)
		dlclose(library);
	return symbol;
}

/* The device of runtime kind that gpucc_devices_list reports at ordinal. */
static bool stub_device(gpucc_device *out, gpucc_runtime_kind kind, int ordinal)
{
	gpucc_device *devices = NULL;
	size_t count = 0;
	CHECK_INT(gpucc_devices_list(&devices, &count), 0);
	bool found = false;
	for (size_t i = 0; i < count && !found; i++)
		if (devices[i].runtime == kind && devices[i].ordinal == ordinal) {
			*out = devices[i];
			found = true;
		}
	gpucc_free(devices);
	CHECK(found);
	return found;
}

/* HIP: the caller works on device 1; a module loaded on device 0 leaves
 * device 1 current after loading, looking up a kernel, and unloading. */
static void test_stub_hip_keeps_current_device(void)
{
	gpucc_device dev;
	if (!stub_device(&dev, GPUCC_RUNTIME_HIP, 0))
		return;
	int (*set_device)(int);
	int (*get_device)(int *);
	void *set = stub_symbol("hipSetDevice"), *get = stub_symbol("hipGetDevice");
	memcpy(&set_device, &set, sizeof set);
	memcpy(&get_device, &get, sizeof get);
	CHECK_INT(set_device(1), 0);
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_mapped(&img, IMAGE_PATH), 0);
	gpucc_module *m = NULL;
	CHECK_INT(gpucc_module_load(&m, img, "saxpy", &dev), 0);
	int current = -1;
	CHECK_INT(get_device(&current), 0);
	CHECK_INT(current, 1);
	void *function = NULL;
	CHECK_INT(gpucc_module_function(&function, m, "saxpy"), 0);
	CHECK(function != NULL);
	CHECK_INT(get_device(&current), 0);
	CHECK_INT(current, 1);
	/* A NULL kernel is refused before the runtime is asked
	 * (lib/tests/test_null_args.c has no module to ask with). */
	CHECK_INT(gpucc_module_function(&function, m, NULL), GPUCC_EINVALID);
	CHECK(function == NULL);
	CHECK_STR(gpucc_error_last()->message, "gpucc_module_function: 'kernel' is NULL");
	gpucc_module_free(m);
	CHECK_INT(get_device(&current), 0);
	CHECK_INT(current, 1);
	gpucc_image_free(img);
}

/* CUDA: the caller's own context stays current through loading, looking
 * up a kernel and unloading, and the primary context is released. */
static void test_stub_cuda_keeps_current_context(void)
{
	gpucc_device dev;
	if (!stub_device(&dev, GPUCC_RUNTIME_CUDA, 0))
		return;
	int (*set_current)(void *);
	int (*get_current)(void **);
	int (*retained)(void);
	void *set = stub_symbol("cuCtxSetCurrent"), *get = stub_symbol("cuCtxGetCurrent"),
	     *count = stub_symbol("stub_cuda_primary_retained");
	memcpy(&set_current, &set, sizeof set);
	memcpy(&get_current, &get, sizeof get);
	memcpy(&retained, &count, sizeof count);
	static int callers_context;
	CHECK_INT(set_current(&callers_context), 0);
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_mapped(&img, IMAGE_PATH), 0);
	gpucc_module *m = NULL;
	CHECK_INT(gpucc_module_load(&m, img, "saxpy", &dev), 0);
	CHECK_INT(gpucc_module_selection(m)->part, GPUCC_PART_PTX);
	void *current = NULL;
	CHECK_INT(get_current(&current), 0);
	CHECK(current == &callers_context);
	void *function = NULL;
	CHECK_INT(gpucc_module_function(&function, m, "saxpy"), 0);
	CHECK_INT(get_current(&current), 0);
	CHECK(current == &callers_context);
	gpucc_module_free(m);
	CHECK_INT(get_current(&current), 0);
	CHECK(current == &callers_context);
	CHECK_INT(retained(), 0);
	/* No context of the caller's: none is left current either. */
	CHECK_INT(set_current(NULL), 0);
	CHECK_INT(gpucc_module_load(&m, img, "saxpy", &dev), 0);
	CHECK_INT(get_current(&current), 0);
	CHECK(current == NULL);
	gpucc_module_free(m);
	gpucc_image_free(img);
}

/* HIP without a GPU (HIP 5.2's answers: hipGetDeviceCount hipErrorNoDevice,
 * hipSetDevice hipErrorInvalidDevice): a load on a device the caller names
 * says there is no device, with hipErrorNoDevice, not a bare invalid device. */
static void test_stub_hip_no_device(void)
{
	gpucc_device dev;
	if (!stub_device(&dev, GPUCC_RUNTIME_HIP, 0))
		return;
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_mapped(&img, IMAGE_PATH), 0);
	setenv("STUB_HIP_DEVICES", "0", 1);
	gpucc_module *m = NULL;
	CHECK_INT(gpucc_module_load(&m, img, "saxpy", &dev), GPUCC_EUNAVAILABLE);
	CHECK(m == NULL);
	CHECK_ERROR_HAS("HIP runtime: no device: hipGetDeviceCount returned hipErrorNoDevice (100)");
	gpucc_device *devices = NULL;
	size_t count = 0;
	CHECK_INT(gpucc_devices_list(&devices, &count), 0); /* the CUDA stub's */
	CHECK_INT(count, 1);
	gpucc_free(devices);
	unsetenv("STUB_HIP_DEVICES");
	gpucc_image_free(img);
}

/* The runtime refuses the code: its error and the JIT log are named, the
 * primary context is released, and the caller's device and context are
 * current again. */
static void test_stub_load_refused(void)
{
	gpucc_device hip_dev, cuda_dev;
	if (!stub_device(&hip_dev, GPUCC_RUNTIME_HIP, 0) || !stub_device(&cuda_dev, GPUCC_RUNTIME_CUDA, 0))
		return;
	int (*set_device)(int), (*get_device)(int *), (*set_current)(void *), (*get_current)(void **);
	int (*retained)(void);
	void *f[] = {stub_symbol("hipSetDevice"), stub_symbol("hipGetDevice"),
	             stub_symbol("cuCtxSetCurrent"), stub_symbol("cuCtxGetCurrent"),
	             stub_symbol("stub_cuda_primary_retained")};
	memcpy(&set_device, &f[0], sizeof f[0]);
	memcpy(&get_device, &f[1], sizeof f[1]);
	memcpy(&set_current, &f[2], sizeof f[2]);
	memcpy(&get_current, &f[3], sizeof f[3]);
	memcpy(&retained, &f[4], sizeof f[4]);
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_mapped(&img, IMAGE_PATH), 0);
	gpucc_module *m = NULL;

	CHECK_INT(set_device(1), 0);
	setenv("STUB_FAIL", "hipModuleLoadData", 1);
	CHECK_INT(gpucc_module_load(&m, img, "saxpy", &hip_dev), GPUCC_ERROR);
	CHECK(m == NULL);
	CHECK_ERROR_HAS("HIP runtime: hipModuleLoadData: hipErrorInvalidImage (200)");
	int current = -1;
	CHECK_INT(get_device(&current), 0);
	CHECK_INT(current, 1);

	static int callers_context;
	CHECK_INT(set_current(&callers_context), 0);
	setenv("STUB_FAIL", "cuModuleLoadDataEx", 1);
	CHECK_INT(gpucc_module_load(&m, img, "saxpy", &cuda_dev), GPUCC_ERROR);
	CHECK(m == NULL);
	CHECK_ERROR_HAS("cuModuleLoadDataEx (ptx): CUDA_ERROR_INVALID_PTX (218): ptxas fatal");
	CHECK_ERROR_HAS("stub refuses this PTX");
	CHECK_INT(retained(), 0);
	void *context = NULL;
	CHECK_INT(get_current(&context), 0);
	CHECK(context == &callers_context);

	/* Lazy loading: the driver takes the code and refuses it only when the
	 * kernel is looked up (the H200's driver 13.0 did so for a relocatable
	 * cubin).  The load still fails, and unloads what it loaded. */
	setenv("STUB_FAIL", "cuModuleGetFunction", 1);
	CHECK_INT(gpucc_module_load(&m, img, "saxpy", &cuda_dev), GPUCC_ERROR);
	CHECK(m == NULL);
	CHECK_ERROR_HAS("CUDA driver: cuModuleGetFunction 'saxpy': ");
	CHECK_ERROR_HAS(" (200)");
	CHECK_INT(retained(), 0);
	CHECK_INT(get_current(&context), 0);
	CHECK(context == &callers_context);
	/* Code without the kernel its entry lists: the image is corrupt. */
	setenv("STUB_FAIL", "hipModuleGetFunction", 1);
	CHECK_INT(gpucc_module_load(&m, img, "saxpy", &hip_dev), GPUCC_ECORRUPT);
	CHECK(m == NULL);
	CHECK_ERROR_HAS("lists kernel 'saxpy', which its hsaco lacks");
	CHECK_INT(get_device(&current), 0);
	CHECK_INT(current, 1);

	/* The primary context cannot be made current: nothing is loaded, and
	 * the message names the call that failed. */
	setenv("STUB_FAIL", "cuCtxPushCurrent_v2", 1);
	CHECK_INT(gpucc_module_load(&m, img, "saxpy", &cuda_dev), GPUCC_ERROR);
	CHECK_ERROR_HAS("cuCtxPushCurrent");
	CHECK_INT(retained(), 0);
	unsetenv("STUB_FAIL");
	CHECK_INT(gpucc_module_load(&m, img, "saxpy", &cuda_dev), 0);
	setenv("STUB_FAIL", "cuCtxPushCurrent_v2", 1);
	void *function = NULL;
	CHECK(gpucc_module_function(&function, m, "saxpy") != 0);
	CHECK_ERROR_HAS("CUDA driver: cuCtxPushCurrent");
	CHECK(function == NULL);
	unsetenv("STUB_FAIL");
	gpucc_module_free(m);
	CHECK_INT(retained(), 0);
	CHECK_INT(get_current(&context), 0);
	CHECK(context == &callers_context);
	CHECK_INT(set_current(NULL), 0);
	CHECK_INT(set_device(0), 0);
	gpucc_image_free(img);
}

/* A device whose architecture gpucc does not know: listed, never chosen,
 * and it does not hide the selection's error for the devices it knows. */
static void test_stub_unknown_architecture(void)
{
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_mapped(&img, IMAGE_PATH), 0);
	setenv("STUB_HIP_ARCH", "gfx9999", 1);
	gpucc_device dev;
	if (stub_device(&dev, GPUCC_RUNTIME_HIP, 0)) {
		CHECK(!dev.target_known);
		CHECK_STR(dev.arch, "gfx9999");
	}
	gpucc_module *m = NULL;
	CHECK_INT(gpucc_module_load(&m, img, "saxpy", NULL), 0); /* on the CUDA stub */
	if (m) {
		CHECK_INT(gpucc_module_device(m)->runtime, GPUCC_RUNTIME_CUDA);
		gpucc_module_free(m);
	}
	CHECK_INT(gpucc_module_load(&m, img, "nope", NULL), GPUCC_ENOTFOUND);
	CHECK_ERROR_HAS("kernel 'nope' is not in");

	/* Neither known: that is the error. */
	setenv("STUB_CUDA_CC", "-1.0", 1);
	if (stub_device(&dev, GPUCC_RUNTIME_CUDA, 0)) {
		CHECK(!dev.target_known);
		CHECK_INT(dev.target.vendor, 0);
	}
	CHECK_INT(gpucc_module_load(&m, img, "saxpy", NULL), GPUCC_EUNAVAILABLE);
	CHECK_ERROR_HAS("an architecture gpucc does not know: 'gfx9999'");
	unsetenv("STUB_CUDA_CC");
	unsetenv("STUB_HIP_ARCH");
	gpucc_image_free(img);
}

/* Without a device, the first one the kernel fits is used: a HIP device
 * the image has no code for (gfx1030) does not stop the CUDA one from
 * loading it; when none fits, the error is the first known device's. */
static void test_stub_first_device_that_fits(void)
{
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_mapped(&img, IMAGE_PATH), 0);
	setenv("STUB_HIP_ARCH", "gfx1030", 1);
	gpucc_module *m = NULL;
	CHECK_INT(gpucc_module_load(&m, img, "saxpy", NULL), 0);
	if (m) {
		CHECK_INT(gpucc_module_device(m)->runtime, GPUCC_RUNTIME_CUDA);
		gpucc_module_free(m);
	}
	setenv("STUB_CUDA_CC", "7.5", 1);
	CHECK_INT(gpucc_module_load(&m, img, "saxpy", NULL), GPUCC_ENOTFOUND);
	CHECK_ERROR_HAS("runs on gfx1030");
	unsetenv("STUB_CUDA_CC");
	unsetenv("STUB_HIP_ARCH");
	gpucc_image_free(img);
}

int main(int argc, char **argv)
{
	bool stub = argc > 1 && strcmp(argv[1], "stub") == 0;
	/* Its settings from the environment meson gives it (GPUCC_HIP_LIBRARY, GPUCC_CUDA_LIBRARY), as the
	 * gpucc command takes them: libgpucc reads none unless asked. */
	gpucc_config *cfg = NULL;
	if (gpucc_config_from_env(&cfg) != 0 || gpucc_set_config(cfg) != 0)
		return 1;
	gpucc_config_free(cfg);
	if (stub)
		image_path = "test_runtime_load_stub.gpucc";
	else if (argc > 1 && strcmp(argv[1], "hip") == 0)
		image_path = "test_runtime_load_hip.gpucc";
	write_test_image();
	if (stub) {
		RUN(test_stub_hip_keeps_current_device);
		RUN(test_stub_cuda_keeps_current_context);
		RUN(test_stub_hip_no_device);
		RUN(test_stub_load_refused);
		RUN(test_stub_unknown_architecture);
		RUN(test_stub_first_device_that_fits);
		unlink(IMAGE_PATH);
		return CHECK_DONE();
	}
	RUN(test_open_and_select_map_no_runtime);
	RUN(test_named_device_errors);
	RUN(test_corrupt_memory_image);
	RUN(test_no_device);
	unlink(IMAGE_PATH);
	return CHECK_DONE();
}
