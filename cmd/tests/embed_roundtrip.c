/*
 * cmd/tests/embed_roundtrip.c -- compiled by embed_roundtrip.sh at test time
 * and linked with an object from `gpucc embed`: opens the image from the
 * symbol, writes its bytes to argv[1] and prints "KEY TARGET KERNELS" per
 * entry, for the script to compare with the image file and `gpucc list`.
 */
#include "embedded.h"

#include <gpucc.h>

#include <stdint.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	if (((uintptr_t)embedded_image & 63) != 0) {
		fprintf(stderr, "embedded_image is not 64-byte aligned\n");
		return 1;
	}
	FILE *f = fopen(argv[1], "wb");
	if (!f || fwrite(embedded_image, 1, (size_t)embedded_image_size, f) != embedded_image_size ||
	    fclose(f) != 0)
		return 1;
	gpucc_image *img = NULL;
	if (gpucc_image_open_memory(&img, embedded_image, (size_t)embedded_image_size, "embedded") != 0) {
		fprintf(stderr, "%s\n", gpucc_error_last()->message);
		return 1;
	}
	for (size_t i = 0; i < gpucc_image_entry_count(img); i++) {
		const gpucc_entry *e = gpucc_image_entry(img, i);
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &e->key);
		printf("%s %s", hex, e->target);
		for (size_t k = 0; k < e->kernel_count; k++)
			printf("%s%s", k ? "," : " ", e->kernels[k].name);
		printf("\n");
	}
	int rc = gpucc_image_verify(img);
	if (rc)
		fprintf(stderr, "%s\n", gpucc_error_last()->message);
	gpucc_image_free(img);
	return rc ? 1 : 0;
}
