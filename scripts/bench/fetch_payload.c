/*
 * scripts/bench/fetch_payload.c -- the runtime API side of the
 * scripts/bench/runtime benchmark: map IMAGE, find the payload whose member
 * is MEMBER (payloads/<sha256>.<ext>), read and verify it, write it to
 * standard output -- what `tar -xOf IMAGE MEMBER` does, through libgpucc.
 */
#include <gpucc.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	const char *hex = strrchr(argv[2], '/');
	hex = hex ? hex + 1 : argv[2];
	gpucc_image *img = NULL;
	if (gpucc_image_open_mapped(&img, argv[1]) != 0) {
		fprintf(stderr, "%s\n", gpucc_error_last()->message);
		return 1;
	}
	int rc = 1;
	for (size_t i = 0; i < gpucc_image_payload_count(img); i++) {
		const gpucc_payload *p = gpucc_image_payload(img, i);
		char digest[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(digest, &p->sha256);
		if (strncmp(digest, hex, 64) != 0 || strcmp(hex + 64, gpucc_part_extension(p->part)) != 0)
			continue;
		void *data = NULL;
		size_t size = 0;
		if (gpucc_image_read_payload(&data, &size, img, p) == 0 &&
		    fwrite(data, 1, size, stdout) == size)
			rc = 0;
		else
			fprintf(stderr, "%s\n", gpucc_error_last()->message);
		gpucc_free(data);
		break;
	}
	gpucc_image_free(img);
	return rc;
}
