/*
 * formats/tests/test_sha256.c -- gpucc's SHA-256: FIPS 180-4's examples
 * and the million-'a' message in every implementation this machine has,
 * and the implementations agreeing on every length up to a few blocks fed
 * in pieces of every size (the partial-block paths of update and final).
 */
#include "check.h"

#include "sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void hex(char out[65], const unsigned char d[32])
{
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void check_vector(const char *message, size_t repeat, const char *want)
{
	gpucc_sha256 s;
	unsigned char d[32];
	char got[65];
	gpucc_sha256_init(&s);
	for (size_t i = 0; i < repeat; i++)
		gpucc_sha256_update(&s, message, strlen(message));
	gpucc_sha256_final(&s, d);
	hex(got, d);
	if (strcmp(got, want) != 0)
		fprintf(stderr, "%s: '%.20s' x%zu: got %s, want %s\n", gpucc_sha256_implementation(),
		        message, repeat, got, want);
	CHECK(strcmp(got, want) == 0);
}

static void check_vectors(void)
{
	check_vector("", 1, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	check_vector("abc", 1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	check_vector("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1,
	             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	check_vector("a", 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	check_vector("aaaaaaaaaa", 100000,
	             "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void test_vectors(void)
{
	const char *fastest = gpucc_sha256_implementation();
	printf("implementation: %s\n", fastest);
	check_vectors();
	CHECK_INT(gpucc_sha256_use("portable"), 0);
	CHECK(strcmp(gpucc_sha256_implementation(), "portable") == 0);
	check_vectors();
	CHECK_INT(gpucc_sha256_use("no-such"), -1);
	CHECK_INT(gpucc_sha256_use(fastest), 0);
}

/* Digest of data[0..size) fed in pieces of step bytes. */
static void digest_in_pieces(const unsigned char *data, size_t size, size_t step,
                             unsigned char out[32])
{
	gpucc_sha256 s;
	gpucc_sha256_init(&s);
	for (size_t at = 0; at < size; at += step)
		gpucc_sha256_update(&s, data + at, size - at < step ? size - at : step);
	gpucc_sha256_final(&s, out);
}

static void test_lengths_and_pieces(void)
{
	enum { MAX = 300 };
	unsigned char data[MAX];
	uint32_t x = 12345;
	for (size_t i = 0; i < MAX; i++) {
		x = x * 1103515245u + 12345u;
		data[i] = (unsigned char)(x >> 16);
	}
	const char *fastest = gpucc_sha256_implementation();
	int mismatches = 0;
	for (size_t size = 0; size <= MAX; size++) {
		unsigned char whole[32], piece[32], portable[32];
		CHECK_INT(gpucc_sha256_use("portable"), 0);
		gpucc_sha256_buffer(data, size, portable);
		CHECK_INT(gpucc_sha256_use(fastest), 0);
		gpucc_sha256_buffer(data, size, whole);
		mismatches += memcmp(whole, portable, 32) != 0;
		for (size_t step = 1; step <= 130; step += step < 8 ? 1 : 13) {
			digest_in_pieces(data, size, step, piece);
			mismatches += memcmp(piece, whole, 32) != 0;
		}
	}
	CHECK_INT(mismatches, 0);
}

int main(void)
{
	RUN(test_vectors);
	RUN(test_lengths_and_pieces);
	return CHECK_DONE();
}
