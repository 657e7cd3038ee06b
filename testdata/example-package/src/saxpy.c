/*
 * src/saxpy.c -- the example library's start-up: open the image linked into
 * the binary (saxpy_kernels_image, from `gpucc embed`) and resolve its
 * kernel for the device present, or compile it at start-up for comparison.
 */
#include "saxpy.h"
#include "saxpy_kernels_image.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(saxpy_kernels *k, int status)
{
	snprintf(k->message, sizeof k->message, "%s", gpucc_error_last()->message);
	return status;
}

int saxpy_kernels_init(saxpy_kernels *k, const char *target)
{
	memset(k, 0, sizeof *k);
	if (gpucc_image_open_memory(&k->image, saxpy_kernels_image, (size_t)saxpy_kernels_image_size,
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

int saxpy_kernels_compile_at_startup(saxpy_kernels *k, const char *target)
{
	memset(k, 0, sizeof *k);
	gpucc_compile_options o;
	gpucc_compile_options_init(&o);
	o.jobs = 1;
	gpucc_compile *c = NULL;
	if (gpucc_compile_new(&c, &o) != 0)
		return fail(k, SAXPY_ERROR);
	bool nvidia = strncmp(target, "sm_", 3) == 0;
	int rc = gpucc_compile_add_target(c, target);
	if (rc == 0)
		rc = gpucc_compile_add_file(c, nvidia ? SAXPY_KERNEL_DIR "/saxpy.nvptx.ll"
		                                      : SAXPY_KERNEL_DIR "/saxpy.amdgpu.ll");
	if (rc == 0)
		rc = gpucc_compile_run(c);
	if (rc != 0) {
		fail(k, SAXPY_ERROR);
		gpucc_compile_free(c);
		return SAXPY_ERROR;
	}
	snprintf(k->message, sizeof k->message, "saxpy compiled at start-up for %s", target);
	gpucc_compile_free(c);
	return SAXPY_READY;
}

void saxpy_kernels_release(saxpy_kernels *k)
{
	gpucc_module_free(k->module);
	gpucc_free(k->code);
	gpucc_image_free(k->image);
	memset(k, 0, sizeof *k);
}
