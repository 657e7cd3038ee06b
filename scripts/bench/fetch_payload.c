/*
 * scripts/bench/fetch_payload.c -- the runtime API side of the
 * scripts/bench/runtime benchmark: what `tar -xOf IMAGE MEMBER` does,
 * through libgpucc.  MEMBER (payloads/<sha256>.<ext>) names the digest and
 * kind; gpucc_image_fetch_payload finds the member by bisection, checks
 * its SHA-256 and returns it; this writes it to standard output.
 *
 *   fetch_payload IMAGE MEMBER          one fetch
 *   fetch_payload IMAGE MEMBER REPEAT   REPEAT fetches, each a whole call
 *                                       (open, find with pread, hash, close);
 *                                       prints the mean in ms on stderr
 */
#define _POSIX_C_SOURCE 200809L
#include <gpucc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4)
		return 2;
	const char *hex = strrchr(argv[2], '/');
	hex = hex ? hex + 1 : argv[2];
	char digest_hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest digest;
	gpucc_part part = GPUCC_PART_COUNT;
	for (int p = 0; p < GPUCC_PART_COUNT; p++)
		if (strlen(hex) > 64 && strcmp(hex + 64, gpucc_part_extension((gpucc_part)p)) == 0)
			part = (gpucc_part)p;
	memcpy(digest_hex, hex, 64);
	digest_hex[64] = '\0';
	if (part == GPUCC_PART_COUNT || gpucc_digest_from_hex(&digest, digest_hex) != 0)
		return 2;
	long repeat = argc == 4 ? atol(argv[3]) : 1;
	void *data = NULL;
	size_t size = 0;
	double start = now_ms();
	for (long i = 0; i < repeat; i++) {
		gpucc_free(data);
		if (gpucc_image_fetch_payload(&data, &size, argv[1], &digest, part) != 0) {
			fprintf(stderr, "%s\n", gpucc_error_last()->message);
			return 1;
		}
	}
	if (argc == 4)
		fprintf(stderr, "%.4f\n", (now_ms() - start) / (double)repeat);
	int rc = fwrite(data, 1, size, stdout) == size ? 0 : 1;
	gpucc_free(data);
	return rc;
}
