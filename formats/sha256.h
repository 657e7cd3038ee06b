/*
 * formats/sha256.h -- the SHA-256 implementation every digest in gpucc uses.
 *
 * OpenSSL 3 looks an algorithm up (under a lock) on every EVP_DigestInit_ex
 * given EVP_sha256(); fetching it once and reusing it keeps hashing tens of
 * thousands of small records (manifest keys) cheap.
 */
#ifndef GPUCC_FORMATS_SHA256_H
#define GPUCC_FORMATS_SHA256_H

#include <openssl/evp.h>

/* The fetched SHA-256 algorithm, shared by all threads; never NULL (falls back
 * to EVP_sha256() when fetching fails). */
const EVP_MD *gpucc_sha256_md(void);

#endif
