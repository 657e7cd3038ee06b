/*
 * lib/image_fetch.c -- one payload by its digest, without the manifest
 * (gpucc/runtime.h: gpucc_image_fetch_payload).
 *
 * Opening an image parses its whole manifest: about a millisecond per
 * thousand entries.  A loader that recorded at build time which payload it
 * needs can skip that.  In an uncompressed v1 image every member header is
 * one 512-byte ustar block and the payload members follow the manifest
 * sorted by name (formats/image.md), so the member is found by bisection
 * over the payload region: probe the middle, step forward to the next block
 * that parses as a payload header, compare names, halve.
 *
 * Payload data may contain blocks that look like headers (a payload can be
 * a tar file itself).  A probe takes a block for a header only when the
 * block where the next header must then be is a header too, or the end of
 * the archive; a forged block that passes can still only send the
 * bisection the wrong way, never make it return wrong bytes: what is found
 * is hashed and returned only when it matches the digest asked for.  When
 * the bisection misses, or finds bytes that do not match, a walk of the
 * header chain from the first payload, which no payload data can fool,
 * decides.  Images that
 * are not plain (compressed, pax headers, another writer's layout) go
 * through the full reader instead.
 */
#include "errors.h"
#include "image_internal.h"
#include "input_file.h"
#include "gpucc/runtime.h"
#include "manifest.h"
#include "ustar.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK GPUCC_USTAR_BLOCK

typedef struct plain_image {
	const unsigned char *data;
	uint64_t size;  /* rounded down to whole blocks */
	uint64_t first; /* offset of the first payload header */
} plain_image;

/* The payload header at off, if the block there is one whose data fit. */
static bool payload_header_at(const plain_image *img, uint64_t off, gpucc_ustar_header *h)
{
	return off + BLOCK <= img->size && gpucc_ustar_parse(img->data + off, h) &&
	       gpucc_ustar_is_regular(h) && strncmp(h->name, "payloads/", 9) == 0 &&
	       h->size <= img->size - off - BLOCK &&
	       gpucc_ustar_padded(h->size) <= img->size - off - BLOCK;
}

/* Whether data holds a v1 image whose first two members are plain ustar
 * members; sets where the payloads begin. */
static bool plain_head(plain_image *img, const void *data, uint64_t size)
{
	static const char format_text[] = "gpucc-image 1\n";
	img->data = data;
	img->size = size - size % BLOCK;
	gpucc_ustar_header h;
	if (img->size < 2 * BLOCK || !gpucc_ustar_parse(img->data, &h) || !gpucc_ustar_is_regular(&h) ||
	    strcmp(h.name, GPUCC_IMAGE_FORMAT_MEMBER) != 0 || h.size != sizeof format_text - 1 ||
	    memcmp(img->data + BLOCK, format_text, sizeof format_text - 1) != 0)
		return false;
	uint64_t manifest = BLOCK + gpucc_ustar_padded(h.size);
	if (manifest + BLOCK > img->size || !gpucc_ustar_parse(img->data + manifest, &h) ||
	    !gpucc_ustar_is_regular(&h) || strcmp(h.name, GPUCC_IMAGE_MANIFEST_MEMBER) != 0 ||
	    h.size > img->size - manifest - BLOCK)
		return false;
	img->first = manifest + BLOCK + gpucc_ustar_padded(h.size);
	return img->first <= img->size;
}

/* Tests count the walks (image_internal.h); atomic, as fetches may run on
 * several threads at once. */
_Atomic unsigned long gpucc_image_fetch_walks;

/* A payload header at off whose successor is a payload header too, or the
 * end-of-archive block. */
static bool chained_header_at(const plain_image *img, uint64_t off, gpucc_ustar_header *h)
{
	if (!payload_header_at(img, off, h))
		return false;
	uint64_t next = off + BLOCK + gpucc_ustar_padded(h->size);
	gpucc_ustar_header unused;
	return next + BLOCK <= img->size &&
	       (gpucc_ustar_is_zero(img->data + next) || payload_header_at(img, next, &unused));
}

/* Bisection: the offset of the header named want, or UINT64_MAX. */
static uint64_t bisect(const plain_image *img, const char *want)
{
	uint64_t lo = img->first, hi = img->size;
	gpucc_ustar_header h;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		mid -= mid % BLOCK; /* lo and hi are whole blocks: lo <= mid < hi */
		uint64_t at = mid;
		while (at < hi && !chained_header_at(img, at, &h))
			at += BLOCK;
		if (at >= hi) {
			hi = mid; /* [mid, hi) is data of a member that starts before mid */
			continue;
		}
		int cmp = strcmp(h.name, want);
		if (cmp == 0)
			return at;
		if (cmp < 0)
			lo = at + BLOCK + gpucc_ustar_padded(h.size);
		else
			hi = mid; /* the first header at or after mid is past want */
	}
	return UINT64_MAX;
}

/* The walk of the header chain: the offset of want, or UINT64_MAX. */
static uint64_t walk(const plain_image *img, const char *want)
{
	gpucc_ustar_header h;
	for (uint64_t at = img->first; payload_header_at(img, at, &h);
	     at += BLOCK + gpucc_ustar_padded(h.size))
		if (strcmp(h.name, want) == 0)
			return at;
	return UINT64_MAX;
}

/* Whether the member at header offset at holds exactly the payload; on
 * true, *size is its size. */
static bool member_matches(const plain_image *img, uint64_t at, const gpucc_digest *sha256,
                           uint64_t *size)
{
	gpucc_ustar_header h;
	if (at == UINT64_MAX || !payload_header_at(img, at, &h))
		return false;
	gpucc_digest got;
	gpucc_digest_buffer(&got, img->data + at + BLOCK, (size_t)h.size);
	*size = h.size;
	return gpucc_digest_compare(&got, sha256) == 0;
}

/* 1: found and copied; 0: not in this plain image; < 0: an error. */
static int fetch_plain(void **out, size_t *out_size, const plain_image *img, const char *member,
                       const gpucc_digest *sha256, const char *name)
{
	uint64_t at = bisect(img, member), size = 0;
	if (!member_matches(img, at, sha256, &size)) {
		gpucc_image_fetch_walks++;
		uint64_t walked = walk(img, member);
		if (walked == UINT64_MAX)
			return 0;
		if (!member_matches(img, walked, sha256, &size))
			return gpucc_error_set(GPUCC_ECORRUPT, "'%s': %s does not match its digest", name,
			                       member);
		at = walked;
	}
	void *copy = malloc(size ? (size_t)size : 1);
	if (!copy)
		return gpucc_error_oom();
	memcpy(copy, img->data + at + BLOCK, (size_t)size);
	*out = copy;
	*out_size = (size_t)size;
	return 1;
}

/* Through the full reader: open, find the payload in the manifest, read. */
static int fetch_opened(void **out, size_t *out_size, gpucc_image *img, const gpucc_payload *want,
                        const char *member)
{
	size_t count;
	int rc = gpucc_image_count_payloads(&count, img);
	if (rc)
		return rc;
	for (size_t i = 0; i < count; i++) {
		const gpucc_payload *p = gpucc_image_payload(img, i);
		if (p->part == want->part && gpucc_digest_compare(&p->sha256, &want->sha256) == 0)
			return gpucc_image_read_payload(out, out_size, img, p);
	}
	return gpucc_error_set(GPUCC_ENOTFOUND, "'%s' has no payload %s", gpucc_image_name(img), member);
}

/* From data (size bytes) when it is a plain image; otherwise through the
 * full reader, on fd when it is not -1 (the file data was mapped from, or
 * one that could not be mapped), else on data. */
static int fetch(void **out, size_t *out_size, const void *data, uint64_t size, int fd,
                 const char *name, const gpucc_digest *sha256, gpucc_part part)
{
	*out = NULL;
	*out_size = 0;
	if ((unsigned)part >= GPUCC_PART_COUNT)
		return gpucc_error_set(GPUCC_EINVALID, "unknown payload kind %d", (int)part);
	gpucc_payload want = {.part = part, .sha256 = *sha256};
	char member[GPUCC_PAYLOAD_MEMBER_SIZE];
	gpucc_payload_member_name(member, &want);
	plain_image img;
	if (data && plain_head(&img, data, size)) {
		int rc = fetch_plain(out, out_size, &img, member, sha256, name);
		if (rc < 0)
			return rc;
		if (rc == 1)
			return 0;
		return gpucc_error_set(GPUCC_ENOTFOUND, "'%s' has no payload %s", name, member);
	}
	gpucc_image *opened = NULL;
	int rc = fd >= 0 ? gpucc_image_open_fd(&opened, fd, name)
	                 : gpucc_image_open_memory(&opened, data, (size_t)size, name);
	if (rc == 0)
		rc = fetch_opened(out, out_size, opened, &want, member);
	gpucc_image_free(opened);
	return rc;
}

int gpucc_image_fetch_payload_memory(void **out, size_t *out_size, const void *data, size_t size,
                                     const char *name, const gpucc_digest *sha256, gpucc_part part)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(out_size);
	*out_size = 0;
	if (size != 0)
		GPUCC_REQUIRE(data);
	GPUCC_REQUIRE(sha256);
	return fetch(out, out_size, data, size, -1, name ? name : "image in memory", sha256, part);
}

int gpucc_image_fetch_payload(void **out, size_t *out_size, const char *path,
                              const gpucc_digest *sha256, gpucc_part part)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(out_size);
	*out_size = 0;
	GPUCC_REQUIRE(path);
	GPUCC_REQUIRE(sha256);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gpucc_error_set_open(NULL, path); /* as gpucc_image_open words it */
	struct stat st;
	void *map = NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (uint64_t)st.st_size <= SIZE_MAX) {
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED)
			map = NULL;
	}
	/* Without a mapping (a FIFO, an empty file), the full reader decides,
	 * on this descriptor: opening the name again would wait for a second
	 * writer of a FIFO, after this one's data were dropped. */
	int rc = fetch(out, out_size, map, map ? (uint64_t)st.st_size : 0, fd, path, sha256, part);
	close(fd);
	if (map)
		munmap(map, (size_t)st.st_size);
	return rc;
}
