/*
 * formats/snapshot_format.c -- encoding and checking snapshot format v1
 * (formats/snapshot.md).  Pure functions over buffers: reading, writing and
 * publishing files is lib/algebra/snapshot.c's job.  A snapshot is untrusted input,
 * so decoding checks size, checksum and order before anyone uses an item.
 */
#include "snapshot_format.h"

#include "errors.h"

#include "sha256.h"
#include <string.h>

#define OFFSET_VERSION 16
#define OFFSET_FLAGS 20
#define OFFSET_COUNT 24

static void put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t get_u64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

uint64_t gpucc_snapshot_format_size(uint64_t count)
{
	return GPUCC_SNAPSHOT_HEADER_SIZE + count * GPUCC_SNAPSHOT_ITEM_SIZE +
	       GPUCC_SNAPSHOT_TRAILER_SIZE;
}

void gpucc_snapshot_format_header(unsigned char out[GPUCC_SNAPSHOT_HEADER_SIZE], uint64_t count)
{
	memcpy(out, GPUCC_SNAPSHOT_MAGIC, GPUCC_SNAPSHOT_MAGIC_SIZE);
	put_u32(out + OFFSET_VERSION, GPUCC_SNAPSHOT_VERSION);
	put_u32(out + OFFSET_FLAGS, 0);
	put_u64(out + OFFSET_COUNT, count);
}

bool gpucc_snapshot_format_is_snapshot(const void *data, size_t size)
{
	/* Fewer bytes than the magic: a snapshot cut short, if they begin it. */
	size_t n = size < GPUCC_SNAPSHOT_MAGIC_SIZE ? size : GPUCC_SNAPSHOT_MAGIC_SIZE;
	return n > 0 && memcmp(data, GPUCC_SNAPSHOT_MAGIC, n) == 0;
}

int gpucc_snapshot_format_check_header(uint64_t *count, const unsigned char *header,
                                       uint64_t file_size, const char *name)
{
	if (file_size < GPUCC_SNAPSHOT_HEADER_SIZE + GPUCC_SNAPSHOT_TRAILER_SIZE) {
		if (gpucc_snapshot_format_is_snapshot(header, (size_t)file_size))
			return gpucc_error_set(GPUCC_ECORRUPT,
			                       "'%s': truncated snapshot (%llu bytes, at least %d needed)",
			                       name, (unsigned long long)file_size,
			                       GPUCC_SNAPSHOT_HEADER_SIZE + GPUCC_SNAPSHOT_TRAILER_SIZE);
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': not a gpucc snapshot (too short)", name);
	}
	if (!gpucc_snapshot_format_is_snapshot(header, GPUCC_SNAPSHOT_MAGIC_SIZE))
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': not a gpucc snapshot (bad magic)", name);
	uint32_t version = get_u32(header + OFFSET_VERSION);
	if (version != GPUCC_SNAPSHOT_VERSION)
		return gpucc_error_set(GPUCC_EVERSION,
		                       "'%s': snapshot format version %u, this gpucc reads version %d",
		                       name, version, GPUCC_SNAPSHOT_VERSION);
	uint32_t flags = get_u32(header + OFFSET_FLAGS);
	if (flags != 0)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': snapshot header has unknown flags 0x%x",
		                       name, flags);
	uint64_t n = get_u64(header + OFFSET_COUNT);
	if (n > GPUCC_SNAPSHOT_MAX_COUNT)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': snapshot claims an absurd %llu keys", name,
		                       (unsigned long long)n);
	uint64_t want = gpucc_snapshot_format_size(n);
	if (file_size != want)
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s': snapshot of %llu keys must be %llu bytes, not %llu (%s)",
		                       name, (unsigned long long)n, (unsigned long long)want,
		                       (unsigned long long)file_size,
		                       file_size < want ? "truncated" : "trailing bytes");
	*count = n;
	return 0;
}

void gpucc_snapshot_format_trailer(unsigned char out[GPUCC_SNAPSHOT_TRAILER_SIZE],
                                   const unsigned char header[GPUCC_SNAPSHOT_HEADER_SIZE],
                                   const unsigned char *items, uint64_t count)
{
	gpucc_sha256 ctx;
	gpucc_sha256_init(&ctx);
	gpucc_sha256_update(&ctx, header, GPUCC_SNAPSHOT_HEADER_SIZE);
	if (count)
		gpucc_sha256_update(&ctx, items, (size_t)count * GPUCC_SNAPSHOT_ITEM_SIZE);
	gpucc_sha256_final(&ctx, out);
}

int gpucc_snapshot_format_decode(const unsigned char **items, uint64_t *count,
                                 const unsigned char *data, size_t size, const char *name)
{
	uint64_t n;
	int rc = gpucc_snapshot_format_check_header(&n, data, size, name);
	if (rc)
		return rc;
	const unsigned char *first = data + GPUCC_SNAPSHOT_HEADER_SIZE;
	unsigned char sum[GPUCC_SNAPSHOT_TRAILER_SIZE];
	gpucc_snapshot_format_trailer(sum, data, first, n);
	if (memcmp(sum, data + size - GPUCC_SNAPSHOT_TRAILER_SIZE, sizeof sum) != 0)
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s': snapshot checksum mismatch (corrupt or modified)", name);
	for (uint64_t i = 1; i < n; i++) {
		const unsigned char *prev = first + (i - 1) * GPUCC_SNAPSHOT_ITEM_SIZE;
		if (memcmp(prev, prev + GPUCC_SNAPSHOT_ITEM_SIZE, GPUCC_DIGEST_SIZE) >= 0)
			return gpucc_error_set(GPUCC_ECORRUPT,
			                       "'%s': snapshot keys out of order or repeated at item %llu",
			                       name, (unsigned long long)i);
	}
	*items = first;
	*count = n;
	return 0;
}
