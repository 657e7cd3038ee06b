/*
 * formats/sha256.h -- the SHA-256 (FIPS 180-4) every digest in gpucc uses,
 * gpucc's own: with the x86 SHA extensions where the processor has them
 * (Intel since Goldmont and Ice Lake, AMD since Zen), else in portable C.
 *
 * Not libcrypto's: loading libcrypto costs every process about 3 ms of
 * page faults and relocations before main, more than a whole cache hit
 * spends on hashing, for one algorithm of its hundreds.
 */
#ifndef GPUCC_FORMATS_SHA256_H
#define GPUCC_FORMATS_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct gpucc_sha256 {
	uint32_t state[8];
	uint64_t length;           /* bytes hashed so far */
	unsigned char block[64];   /* the partial block, length % 64 bytes of it */
} gpucc_sha256;

void gpucc_sha256_init(gpucc_sha256 *s);
void gpucc_sha256_update(gpucc_sha256 *s, const void *data, size_t size);
void gpucc_sha256_final(gpucc_sha256 *s, unsigned char out[32]);
/* One buffer's digest. */
void gpucc_sha256_buffer(const void *data, size_t size, unsigned char out[32]);

/* For the tests: the implementations this machine has ("shani", then
 * "portable"), and choosing one by name (0, or -1 when this machine lacks
 * it).  Every process starts with the fastest. */
const char *gpucc_sha256_implementation(void);
int gpucc_sha256_use(const char *name);

#endif
