/*
 * lib/tests/fuzz_image.c -- fuzz target: opening, querying, reading and
 * verifying an image held in memory (lib/image_reader.c, the manifest
 * parser, the ustar reader and, for compressed or unusual inputs,
 * libarchive).  Nothing may crash; a payload handed out must match its
 * digest; verify's verdict must not contradict a payload read.
 */
#include "fuzz.h"

#include <gpucc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gpucc_image *img;
	if (gpucc_image_open_memory(&img, data, size, "fuzz.gpucc") != 0) {
		if (!gpucc_error_last()->message[0])
			fuzz_fail("a refusal without a message");
		return 0;
	}
	bool all_read = true;
	for (size_t i = 0; i < gpucc_image_entry_count(img); i++) {
		const gpucc_entry *e = gpucc_image_entry(img, i), *found;
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &e->key);
		if (gpucc_image_lookup(&found, img, hex) != 0 || found != e)
			fuzz_fail("an entry is not found by its own key");
		for (size_t p = 0; p < e->payload_count; p++) {
			void *bytes;
			size_t n;
			if (gpucc_image_read_payload(&bytes, &n, img, &e->payloads[p]) != 0) {
				all_read = false;
				continue;
			}
			gpucc_digest d;
			gpucc_digest_buffer(&d, bytes, n);
			if (n != e->payloads[p].size || gpucc_digest_compare(&d, &e->payloads[p].sha256) != 0)
				fuzz_fail("a payload handed out does not match its digest");
			gpucc_free(bytes);
		}
	}
	if (gpucc_image_verify(img) == 0 && !all_read)
		fuzz_fail("verify passed an image whose payloads cannot all be read");
	gpucc_image_free(img);
	return 0;
}

/* An image of a few entries, written by libgpucc, as bytes. */
static void add_image(void (*add)(const void *, size_t), int zstd)
{
	char path[] = "/tmp/gpucc-fuzz-seed-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return;
	close(fd);
	gpucc_image_writer *w;
	gpucc_write_options opts = {.zstd_level = zstd};
	if (gpucc_image_writer_new(&w, path, &opts) != 0)
		return;
	static const char *const sources[] = {"alpha", "beta", "gamma"};
	for (int i = 0; i < 3; i++) {
		gpucc_entry e = {0};
		gpucc_kernel k = {"kernel", 8, 0, -1};
		gpucc_option o = {"opt-level", "2"};
		e.key_schema = 1;
		e.module = sources[i];
		gpucc_digest_buffer(&e.module_sha256, sources[i], strlen(sources[i]));
		e.target = i == 1 ? "gfx90a" : "sm_90:ptx78";
		e.triple = i == 1 ? "amdgcn-amd-amdhsa" : "nvptx64-nvidia-cuda";
		e.gpucc_version = "0.1.0";
		e.llvm_version = "19.1.7";
		e.option_count = 1;
		e.options = &o;
		e.kernel_count = 1;
		e.kernels = &k;
		gpucc_entry_compute_key(&e.key, &e);
		gpucc_payload_source src[2] = {
			{i == 1 ? GPUCC_PART_HSACO : GPUCC_PART_PTX, NULL, sources[i], strlen(sources[i])},
			{GPUCC_PART_BITCODE, NULL, "shared bitcode bytes", 20},
		};
		gpucc_image_writer_add(w, &e, src, 2);
	}
	if (gpucc_image_writer_commit(w) == 0) {
		FILE *f = fopen(path, "rb");
		if (f) {
			unsigned char buf[65536];
			size_t n = fread(buf, 1, sizeof buf, f);
			fclose(f);
			add(buf, n);
		}
	}
	gpucc_image_writer_free(w);
	unlink(path);
}

void fuzz_seeds(void (*add)(const void *data, size_t size))
{
	add_image(add, 0);
	add_image(add, 3);
}
