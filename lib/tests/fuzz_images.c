/*
 * lib/tests/fuzz_images.c -- small valid images, written by libgpucc, for
 * the fuzz targets that read images (fuzz_image.c's seeds, fuzz_key_prefix.c's
 * image to look keys up in).
 */
#include "fuzz_images.h"

#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

unsigned char *fuzz_make_image(size_t *size, size_t entries, int zstd_level)
{
	char path[128];
	static unsigned serial;
	snprintf(path, sizeof path, "%s/made-%u.gpucc", fuzz_scratch_dir(), serial++);
	gpucc_image_writer *w;
	gpucc_write_options opts = {.version = GPUCC_WRITE_OPTIONS_VERSION, .zstd_level = zstd_level};
	if (gpucc_image_writer_new(&w, path, &opts) != 0)
		fuzz_fail("cannot start an image");
	/* The writer borrows payload bytes until it commits. */
	static const char *const sources[5] = {"kernel source 0", "kernel source 1", "kernel source 2",
	                                       "kernel source 3", "kernel source 4"};
	for (size_t i = 0; i < entries; i++) {
		char module[32];
		const char *source = sources[i % 5];
		snprintf(module, sizeof module, "m%zu.ll", i);
		bool amd = i % 3 == 1;
		gpucc_entry e = {0};
		gpucc_kernel k = {"kernel", 8, 0, -1};
		gpucc_option o = {"opt-level", "2"};
		e.key_schema = 1;
		e.module = module;
		gpucc_digest_buffer(&e.module_sha256, module, strlen(module));
		e.target = amd ? "gfx90a" : "sm_90:ptx78";
		e.triple = amd ? "amdgcn-amd-amdhsa" : "nvptx64-nvidia-cuda";
		e.gpucc_version = "0.1.0";
		e.llvm_version = "19.1.7";
		e.option_count = 1;
		e.options = &o;
		e.kernel_count = 1;
		e.kernels = &k;
		if (gpucc_entry_compute_key(&e.key, &e) != 0)
			fuzz_fail("cannot compute a key");
		/* Payloads shared between entries (i % 5) and one shared by all. */
		gpucc_payload_source src[2] = {
			{amd ? GPUCC_PART_HSACO : GPUCC_PART_PTX, NULL, source, strlen(source)},
			{GPUCC_PART_BITCODE, NULL, "shared bitcode bytes", 20},
		};
		if (gpucc_image_writer_add(w, &e, src, 2) != 0)
			fuzz_fail("cannot add an entry");
	}
	if (gpucc_image_writer_commit(w) != 0)
		fuzz_fail("cannot write an image");
	gpucc_image_writer_free(w);
	FILE *f = fopen(path, "rb");
	unsigned char *bytes = malloc(1 << 20);
	*size = f && bytes ? fread(bytes, 1, 1 << 20, f) : 0;
	if (!f || !bytes || *size == 0 || *size == 1 << 20)
		fuzz_fail("cannot read back an image");
	fclose(f);
	unlink(path);
	return bytes;
}
