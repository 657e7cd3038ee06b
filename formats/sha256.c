/*
 * formats/sha256.c -- SHA-256 through libcrypto's low-level interface
 * (formats/sha256.h says why not EVP).
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "sha256.h"

void gpucc_sha256_init(gpucc_sha256 *s)
{
	SHA256_Init(&s->ctx);
}

void gpucc_sha256_update(gpucc_sha256 *s, const void *data, size_t size)
{
	SHA256_Update(&s->ctx, data, size);
}

void gpucc_sha256_final(gpucc_sha256 *s, unsigned char out[32])
{
	SHA256_Final(out, &s->ctx);
}

void gpucc_sha256_buffer(const void *data, size_t size, unsigned char out[32])
{
	gpucc_sha256 s;
	gpucc_sha256_init(&s);
	gpucc_sha256_update(&s, data, size);
	gpucc_sha256_final(&s, out);
}
