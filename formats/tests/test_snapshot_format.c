/*
 * formats/tests/test_snapshot_format.c -- snapshot format v1: the header
 * and size rules, the checksum, the key order, and that every defect is
 * refused with the right code and a message naming the file.
 */
#include "check.h"

#include "snapshot_format.h"

#include <gpucc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A valid snapshot of n items with keys 0, 1, 2, ... (last byte). */
static unsigned char *make(size_t n, size_t *size)
{
	*size = (size_t)gpucc_snapshot_format_size(n);
	unsigned char *buf = calloc(1, *size);
	gpucc_snapshot_format_header(buf, n);
	for (size_t i = 0; i < n; i++) {
		unsigned char *item = buf + GPUCC_SNAPSHOT_HEADER_SIZE + i * GPUCC_SNAPSHOT_ITEM_SIZE;
		item[30] = (unsigned char)(i >> 8);
		item[31] = (unsigned char)i;
		memset(item + 32, 0xab, 32);
	}
	gpucc_snapshot_format_trailer(buf + *size - GPUCC_SNAPSHOT_TRAILER_SIZE, buf,
	                              buf + GPUCC_SNAPSHOT_HEADER_SIZE, n);
	return buf;
}

static void reseal(unsigned char *buf, size_t size)
{
	uint64_t n = (size - GPUCC_SNAPSHOT_HEADER_SIZE - GPUCC_SNAPSHOT_TRAILER_SIZE) /
	             GPUCC_SNAPSHOT_ITEM_SIZE;
	gpucc_snapshot_format_trailer(buf + size - GPUCC_SNAPSHOT_TRAILER_SIZE, buf,
	                              buf + GPUCC_SNAPSHOT_HEADER_SIZE, n);
}

static void test_round_trip(void)
{
	size_t size;
	unsigned char *buf = make(300, &size);
	CHECK_INT(size, 32 + 300 * 64 + 32);
	const unsigned char *items;
	uint64_t count;
	CHECK_INT(gpucc_snapshot_format_decode(&items, &count, buf, size, "s.snap"), 0);
	CHECK_INT(count, 300);
	CHECK(items == buf + 32);
	CHECK(gpucc_snapshot_format_is_snapshot(buf, size));
	CHECK(!gpucc_snapshot_format_is_snapshot("ustar", 5));
	CHECK(gpucc_snapshot_format_is_snapshot(buf, 7)); /* cut inside the magic */
	CHECK(!gpucc_snapshot_format_is_snapshot(buf, 0));
	free(buf);

	buf = make(0, &size);
	CHECK_INT(size, 64);
	CHECK_INT(gpucc_snapshot_format_decode(&items, &count, buf, size, "e.snap"), 0);
	CHECK_INT(count, 0);
	free(buf);
}

static void test_defects(void)
{
	size_t size;
	const unsigned char *items;
	uint64_t count;
	unsigned char *buf = make(10, &size);

	/* one flipped bit anywhere is caught */
	for (size_t at = 0; at < size; at += 7) {
		buf[at] ^= 0x10;
		CHECK(gpucc_snapshot_format_decode(&items, &count, buf, size, "s.snap") != 0);
		buf[at] ^= 0x10;
	}
	CHECK_INT(gpucc_snapshot_format_decode(&items, &count, buf, size, "s.snap"), 0);

	CHECK_INT(gpucc_snapshot_format_decode(&items, &count, buf, size - 1, "s.snap"), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("truncated");
	CHECK_ERROR_HAS("s.snap");
	CHECK_INT(gpucc_snapshot_format_decode(&items, &count, buf, 20, "s.snap"), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("truncated");

	buf[0] = 'x';
	CHECK_INT(gpucc_snapshot_format_decode(&items, &count, buf, size, "s.snap"), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("not a gpucc snapshot");
	buf[0] = 0x89;

	buf[16] = 2; /* version 2 */
	CHECK_INT(gpucc_snapshot_format_decode(&items, &count, buf, size, "s.snap"), GPUCC_EVERSION);
	CHECK_ERROR_HAS("version 2");
	buf[16] = 1;

	buf[20] = 1; /* flags */
	reseal(buf, size);
	CHECK_INT(gpucc_snapshot_format_decode(&items, &count, buf, size, "s.snap"), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("flags");
	buf[20] = 0;

	buf[24] = 11; /* count disagrees with size */
	CHECK_INT(gpucc_snapshot_format_decode(&items, &count, buf, size, "s.snap"), GPUCC_ECORRUPT);
	buf[24] = 10;

	/* keys out of order, checksum right */
	unsigned char tmp[64];
	memcpy(tmp, buf + 32, 64);
	memcpy(buf + 32, buf + 96, 64);
	memcpy(buf + 96, tmp, 64);
	reseal(buf, size);
	CHECK_INT(gpucc_snapshot_format_decode(&items, &count, buf, size, "s.snap"), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("out of order");

	/* a repeated key */
	memcpy(buf + 96, buf + 32, 64);
	reseal(buf, size);
	CHECK_INT(gpucc_snapshot_format_decode(&items, &count, buf, size, "s.snap"), GPUCC_ECORRUPT);

	/* an absurd count */
	memset(buf + 24, 0xff, 8);
	CHECK_INT(gpucc_snapshot_format_decode(&items, &count, buf, size, "s.snap"), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("absurd");
	free(buf);
}

/* Counts whose item bytes overflow 64 bits, or land on the file's size
 * modulo 2^64, are refused before any size is computed from them. */
static void test_count_overflow(void)
{
	size_t size;
	const unsigned char *items;
	uint64_t count;
	unsigned char *buf = make(0, &size);
	static const uint64_t counts[] = {
		((uint64_t)1 << 32) + 1, /* the first past the limit */
		(uint64_t)1 << 58,       /* 64 * count wraps to 0: a 64-byte file "fits" */
		((uint64_t)1 << 58) + 1, /* wraps to 64 */
		UINT64_MAX,
	};
	for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
		for (int b = 0; b < 8; b++)
			buf[24 + b] = (unsigned char)(counts[i] >> (8 * b));
		reseal(buf, size);
		CHECK_INT(gpucc_snapshot_format_decode(&items, &count, buf, size, "o.snap"), GPUCC_ECORRUPT);
		CHECK_ERROR_HAS("absurd");
		CHECK_INT(gpucc_snapshot_format_check_header(&count, buf, size + 64, "o.snap"),
		          GPUCC_ECORRUPT);
	}
	free(buf);
}

static void hex_of(char *out, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", p[i]);
}

/* The examples in formats/snapshot.md, byte for byte. */
static void test_spec_examples(void)
{
	size_t size;
	char hex[2 * 128 + 1];
	unsigned char *buf = make(0, &size);
	hex_of(hex, buf, size);
	CHECK_STR(hex, "8967707563632d736e617073686f740a"
	               "0100000000000000"
	               "0000000000000000"
	               "165331b70edcb0793f726dda6d6e79bd6962202e608df88c0346557b67f2115a");
	free(buf);

	unsigned char one[32 + 64 + 32];
	gpucc_snapshot_format_header(one, 1);
	for (int i = 0; i < 64; i++)
		one[32 + i] = (unsigned char)i; /* key 00..1f, content 20..3f */
	gpucc_snapshot_format_trailer(one + 96, one, one + 32, 1);
	hex_of(hex, one + 96, 32);
	CHECK_STR(hex, "7c5f93378181199364af454922b3d4ab4cd7c606118f36566ae06e66ed7d4168");
	const unsigned char *items;
	uint64_t count;
	CHECK_INT(gpucc_snapshot_format_decode(&items, &count, one, sizeof one, "one.snap"), 0);
	CHECK_INT(count, 1);
}

int main(void)
{
	RUN(test_round_trip);
	RUN(test_defects);
	RUN(test_count_overflow);
	RUN(test_spec_examples);
	return CHECK_DONE();
}
