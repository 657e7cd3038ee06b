/*
 * formats/digest.c -- SHA-256 digests of buffers (formats/sha256.h), their
 * hex spelling and their order.
 */
#include "errors.h"
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
	static const char digits[] = "0123456789abcdef";
	GPUCC_REQUIRE_VOID(out);
	out[0] = '\0'; /* not a digest: nothing for a caller to print */
	GPUCC_REQUIRE_VOID(d);
	for (size_t i = 0; i < GPUCC_DIGEST_SIZE; i++) {
		out[2 * i] = digits[d->bytes[i] >> 4];
		out[2 * i + 1] = digits[d->bytes[i] & 15];
	}
	out[2 * GPUCC_DIGEST_SIZE] = '\0';
}

/* Hex digit values, 16 for "not a digit": decoding is on the path of every
 * manifest read, three digests an entry. */
static const unsigned char hex_values[256] = {
	['0'] = 0, ['1'] = 1, ['2'] = 2, ['3'] = 3, ['4'] = 4, ['5'] = 5, ['6'] = 6, ['7'] = 7,
	['8'] = 8, ['9'] = 9, ['a'] = 10, ['b'] = 11, ['c'] = 12, ['d'] = 13, ['e'] = 14,
	['f'] = 15, ['A'] = 10, ['B'] = 11, ['C'] = 12, ['D'] = 13, ['E'] = 14, ['F'] = 15,
};

static bool is_hex(unsigned char c)
{
	return hex_values[c] != 0 || c == '0';
}

int gpucc_digest_from_hex(gpucc_digest *out, const char *hex)
{
	GPUCC_REQUIRE(out);
	const unsigned char *h = (const unsigned char *)hex;
	size_t n = 0;
	if (h)
		while (n < 2 * GPUCC_DIGEST_SIZE && is_hex(h[n]))
			n++;
	if (n != 2 * GPUCC_DIGEST_SIZE || h[n] != '\0')
		return gpucc_error_set(GPUCC_EINVALID, "'%s' is not a SHA-256 digest (64 hex digits)",
		                       hex ? hex : "");
	for (size_t i = 0; i < GPUCC_DIGEST_SIZE; i++)
		out->bytes[i] = (unsigned char)(hex_values[h[2 * i]] << 4 | hex_values[h[2 * i + 1]]);
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
