/*
 * src/saxpy.c -- the example library's start-up: open the image linked into
 * the binary (saxpy_kernels_image, from `gpucc embed`) and resolve its
 * kernel for the device present, or compile it at start-up for comparison.
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp */

#include "saxpy.h"
#include "saxpy_kernels_image.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(saxpy_kernels *k, int status)
{
	snprintf(k->message, sizeof k->message, "%s", gpucc_error_last()->message);
	return status;
}

int saxpy_kernels_init(saxpy_kernels *k, const char *target)
{
	memset(k, 0, sizeof *k);
	/* For lookup: a kernel's entry is found through the image's index,
	 * without parsing the whole manifest. */
	if (gpucc_image_open_memory_for_lookup(&k->image, saxpy_kernels_image,
	                                       (size_t)saxpy_kernels_image_size,
	                                       "saxpy_kernels_image") != 0)
		return fail(k, SAXPY_ERROR);
	if (!target) {
		int rc = gpucc_module_load(&k->module, k->image, "saxpy", NULL);
		if (rc == GPUCC_EUNAVAILABLE)
			return fail(k, SAXPY_NO_GPU);
		if (rc != 0 || gpucc_module_function(&k->function, k->module, "saxpy") != 0)
			return fail(k, SAXPY_ERROR);
		const gpucc_selection *s = gpucc_module_selection(k->module);
		k->entry = s->entry;
		k->part = s->part;
		snprintf(k->message, sizeof k->message, "saxpy loaded on %s (%s) from %s %s",
		         gpucc_module_device(k->module)->name, gpucc_module_device(k->module)->arch,
		         s->entry->target, gpucc_part_name(s->part));
		return SAXPY_READY;
	}
	gpucc_target device;
	if (gpucc_target_parse(&device, target) != 0)
		return fail(k, SAXPY_ERROR);
	if (device.vendor == GPUCC_VENDOR_NVIDIA)
		device.ptx_isa = gpucc_cuda_max_ptx_isa(12040); /* a CUDA 12.4 driver */
	gpucc_selection s;
	if (gpucc_image_select(&s, k->image, "saxpy", &device) != 0 ||
	    gpucc_image_read_payload(&k->code, &k->code_size, k->image, s.payload) != 0)
		return fail(k, SAXPY_ERROR);
	k->entry = s.entry;
	k->part = s.part;
	snprintf(k->message, sizeof k->message, "saxpy for %s: %s %s, %zu bytes", target,
	         s.entry->target, gpucc_part_name(s.part), k->code_size);
	return SAXPY_READY;
}

/* The GPU present and its target's spelling, for compiling at start-up:
 * the first device whose architecture gpucc knows. */
static int device_present(saxpy_kernels *k, gpucc_device *dev, char target[GPUCC_TARGET_NAME_SIZE])
{
	gpucc_device *devices = NULL;
	size_t count = 0;
	int rc = gpucc_devices_list(&devices, &count);
	if (rc != 0)
		return fail(k, rc == GPUCC_EUNAVAILABLE ? SAXPY_NO_GPU : SAXPY_ERROR);
	size_t i = 0;
	while (i < count && !devices[i].target_known)
		i++;
	if (i == count) {
		snprintf(k->message, sizeof k->message, "gpucc knows the architecture of none of the %zu GPUs present",
		         count);
		gpucc_free(devices);
		return SAXPY_NO_GPU;
	}
	*dev = devices[i];
	gpucc_free(devices);
	gpucc_target_format(target, &dev->target);
	return SAXPY_READY;
}

int saxpy_kernels_compile_at_startup(saxpy_kernels *k, const char *target)
{
	memset(k, 0, sizeof *k);
	/* "device": compile for the GPU present, into a temporary image, and
	 * load that as saxpy_kernels_init loads the embedded one. */
	bool load = strcmp(target, "device") == 0;
	gpucc_device dev;
	char device_target[GPUCC_TARGET_NAME_SIZE];
	if (load) {
		int rc = device_present(k, &dev, device_target);
		if (rc != SAXPY_READY)
			return rc;
		target = device_target;
	}
	char image_path[] = "/tmp/saxpy-startup-XXXXXX";
	gpucc_image_writer *w = NULL;
	if (load) {
		int fd = mkstemp(image_path);
		if (fd < 0) {
			snprintf(k->message, sizeof k->message, "%s: %s", image_path, strerror(errno));
			return SAXPY_ERROR;
		}
		close(fd);
		if (gpucc_image_writer_new(&w, image_path, NULL) != 0) {
			unlink(image_path);
			return fail(k, SAXPY_ERROR);
		}
	}
	gpucc_compile_options o;
	gpucc_compile_options_init(&o);
	o.jobs = 1;
	o.writer = w;
	gpucc_compile *c = NULL;
	int rc = gpucc_compile_new(&c, &o);
	bool nvidia = strncmp(target, "sm_", 3) == 0;
	if (rc == 0)
		rc = gpucc_compile_add_target(c, target);
	if (rc == 0)
		rc = gpucc_compile_add_file(c, nvidia ? SAXPY_KERNEL_DIR "/saxpy.nvptx.ll"
		                                      : SAXPY_KERNEL_DIR "/saxpy.amdgpu.ll");
	if (rc == 0)
		rc = gpucc_compile_run(c);
	if (rc == 0 && w)
		rc = gpucc_image_writer_commit(w);
	if (rc == 0 && load)
		rc = gpucc_image_open_mapped(&k->image, image_path);
	if (rc != 0)
		fail(k, SAXPY_ERROR);
	gpucc_image_writer_free(w);
	gpucc_compile_free(c);
	if (load)
		unlink(image_path); /* the mapping stays */
	if (rc != 0)
		return SAXPY_ERROR;
	if (!load) {
		snprintf(k->message, sizeof k->message, "saxpy compiled at start-up for %s", target);
		return SAXPY_READY;
	}
	if (gpucc_module_load(&k->module, k->image, "saxpy", &dev) != 0 ||
	    gpucc_module_function(&k->function, k->module, "saxpy") != 0)
		return fail(k, SAXPY_ERROR);
	const gpucc_selection *s = gpucc_module_selection(k->module);
	snprintf(k->message, sizeof k->message, "saxpy compiled at start-up and loaded on %s (%s) from %s %s",
	         dev.name, dev.arch, s->entry->target, gpucc_part_name(s->part));
	return SAXPY_READY;
}

void saxpy_kernels_release(saxpy_kernels *k)
{
	gpucc_module_free(k->module);
	gpucc_free(k->code);
	gpucc_image_free(k->image);
	memset(k, 0, sizeof *k);
}
