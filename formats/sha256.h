/*
 * formats/sha256.h -- the SHA-256 every digest in gpucc uses: libcrypto's
 * implementation, through its low-level interface.
 *
 * OpenSSL 3's EVP interface initialises its provider machinery (cipher and
 * digest tables) on first use: 0.8 ms of every process, a quarter of a
 * cache hit, for one algorithm that the low-level SHA256_* functions reach
 * directly.  Those are marked deprecated in 3.0 but are the same code; this
 * file is the one place that calls them, so moving back to EVP is a local
 * change if a future libcrypto drops them.
 */
#ifndef GPUCC_FORMATS_SHA256_H
#define GPUCC_FORMATS_SHA256_H

#include <openssl/sha.h>
#include <stddef.h>

typedef struct gpucc_sha256 {
	SHA256_CTX ctx;
} gpucc_sha256;

void gpucc_sha256_init(gpucc_sha256 *s);
void gpucc_sha256_update(gpucc_sha256 *s, const void *data, size_t size);
void gpucc_sha256_final(gpucc_sha256 *s, unsigned char out[32]);
/* One buffer's digest. */
void gpucc_sha256_buffer(const void *data, size_t size, unsigned char out[32]);

#endif
