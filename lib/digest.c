/*
 * lib/digest.c -- SHA-256 (libcrypto's EVP interface) and its hex spelling.
 */
#include "errors.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <string.h>
#include <unistd.h>

void gpucc_digest_buffer(gpucc_digest *out, const void *data, size_t size)
{
	unsigned int len = 0;
	EVP_Digest(data, size, out->bytes, &len, EVP_sha256(), NULL);
}

int gpucc_digest_file(gpucc_digest *out, uint64_t *out_size, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gpucc_error_set_errno("cannot open '%s'", path);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (!ctx) {
		close(fd);
		return gpucc_error_oom();
	}
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	unsigned char buffer[1 << 16];
	uint64_t total = 0;
	int rc = 0;
	for (;;) {
		ssize_t n = read(fd, buffer, sizeof buffer);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = gpucc_error_set_errno("cannot read '%s'", path);
			break;
		}
		if (n == 0)
			break;
		EVP_DigestUpdate(ctx, buffer, (size_t)n);
		total += (uint64_t)n;
	}
	unsigned int len = 0;
	if (rc == 0) {
		EVP_DigestFinal_ex(ctx, out->bytes, &len);
		if (out_size)
			*out_size = total;
	}
	EVP_MD_CTX_free(ctx);
	close(fd);
	return rc;
}

void gpucc_digest_to_hex(char out[GPUCC_DIGEST_HEX_SIZE], const gpucc_digest *d)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < GPUCC_DIGEST_SIZE; i++) {
		out[2 * i] = digits[d->bytes[i] >> 4];
		out[2 * i + 1] = digits[d->bytes[i] & 15];
	}
	out[2 * GPUCC_DIGEST_SIZE] = '\0';
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int gpucc_digest_from_hex(gpucc_digest *out, const char *hex)
{
	if (!hex || strlen(hex) != 2 * GPUCC_DIGEST_SIZE)
		return gpucc_error_set(GPUCC_EINVALID, "'%s' is not a SHA-256 digest (64 hex digits)",
		                       hex ? hex : "");
	for (size_t i = 0; i < GPUCC_DIGEST_SIZE; i++) {
		int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return gpucc_error_set(GPUCC_EINVALID,
			                       "'%s' is not a SHA-256 digest (64 hex digits)", hex);
		out->bytes[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

int gpucc_digest_compare(const gpucc_digest *a, const gpucc_digest *b)
{
	return memcmp(a->bytes, b->bytes, GPUCC_DIGEST_SIZE);
}
