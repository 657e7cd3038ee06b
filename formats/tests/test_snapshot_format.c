/*
 * formats/tests/test_snapshot_format.c -- snapshot format v1: the header
 * and size rules, the checksum, the key order, and that every defect is
 * refused with the right code and a message naming the file.
 */
#include "check.h"

#include "snapshot_format.h"

#include <gpucc.h>

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

int main(void)
{
	RUN(test_round_trip);
	RUN(test_defects);
	return CHECK_DONE();
}
