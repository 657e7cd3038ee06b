/*
 * formats/digest.c -- SHA-256 digests of buffers (formats/sha256.h), their
 * hex spelling (formats/hex.h) and their order.
 */
#include "errors.h"
#include "hex.h"
#include "sha256.h"

#include <stdbool.h>
#include <string.h>

void gpucc_digest_buffer(gpucc_digest *out, const void *data, size_t size)
{
	GPUCC_REQUIRE_VOID(out);
	if (size != 0)
		GPUCC_REQUIRE_VOID(data);
	gpucc_sha256_buffer(data, size, out->bytes);
}

void gpucc_digest_to_hex(char out[GPUCC_DIGEST_HEX_SIZE], const gpucc_digest *d)
{
	GPUCC_REQUIRE_VOID(out);
	out[0] = '\0'; /* not a digest: nothing for a caller to print */
	GPUCC_REQUIRE_VOID(d);
	gpucc_hex_encode(out, d->bytes, GPUCC_DIGEST_SIZE);
	out[2 * GPUCC_DIGEST_SIZE] = '\0';
}

int gpucc_digest_from_hex(gpucc_digest *out, const char *hex)
{
	GPUCC_REQUIRE(out);
	const unsigned char *h = (const unsigned char *)hex;
	size_t n = 0;
	if (h)
		while (n < 2 * GPUCC_DIGEST_SIZE && gpucc_hex_digit(h[n]) >= 0)
			n++;
	if (n != 2 * GPUCC_DIGEST_SIZE || h[n] != '\0')
		return gpucc_error_set(GPUCC_EINVALID, "'%s' is not a SHA-256 digest (64 hex digits)",
		                       hex ? hex : "");
	gpucc_hex_decode(out->bytes, hex, GPUCC_DIGEST_SIZE, false); /* 64 digits, checked */
	return 0;
}

int gpucc_digest_compare(const gpucc_digest *a, const gpucc_digest *b)
{
	/* An order, not a status: NULL comes before every digest. */
	if (!a || !b) {
		gpucc_error_null_argument(__func__, !a ? "a" : "b");
		return (a != NULL) - (b != NULL);
	}
	return memcmp(a->bytes, b->bytes, GPUCC_DIGEST_SIZE);
}
