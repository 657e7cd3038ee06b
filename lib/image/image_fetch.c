/*
 * lib/image/image_fetch.c -- one payload by its digest, without the manifest
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
 *
 * A file is read with pread, a few blocks at a time, never mapped: a file
 * cut short in place while it is read (cp rewrites its target so) gives
 * short reads, reported as a truncated image, where a mapping would give
 * the process SIGBUS.  Each call has its own state: calls on any number of
 * threads at once are independent.
 */
#include "errors.h"
#include "image_index.h"
#include "image_internal.h"
#include "input_file.h"
#include "gpucc/runtime.h"
#include "manifest.h"
#include "read_window.h"
#include "ustar.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK GPUCC_USTAR_BLOCK
/* A file is read in aligned pieces of this size, two of them kept: a
 * probe and the block its header chains to, or the steps of a probe
 * forward through payload data, mostly find their blocks at hand.  The
 * piece size is a multiple of BLOCK, so no block straddles two pieces. */
#define PIECE_SIZE ((size_t)8 << 10)
#define PIECES 2

/* One piece of the file at hand. */
typedef struct file_piece {
	uint64_t offset; /* where it starts, a multiple of PIECE_SIZE */
	size_t len;      /* 0: empty */
	unsigned used;   /* when it was last used (plain_image.clock) */
	unsigned char bytes[PIECE_SIZE];
} file_piece;

typedef struct plain_image {
	const unsigned char *data; /* the image in memory, or NULL and ... */
	int fd;                    /* ... the file, read in pieces */
	uint64_t size;  /* rounded down to whole blocks */
	uint64_t first; /* offset of the first payload header */
	/* Reading the file: it ended before size (it was cut short while it
	 * was read), or a read failed (read_errno). */
	bool cut_short;
	int read_errno;
	unsigned clock;
	file_piece pieces[PIECES];
} plain_image;

/* The block at off (a multiple of BLOCK), or NULL when the image does not
 * hold it whole: past size, or a file that ends sooner than it did when
 * it was opened (noted in img). */
static const unsigned char *block_at(plain_image *img, uint64_t off)
{
	if (off > img->size || img->size - off < BLOCK)
		return NULL;
	if (img->data)
		return img->data + off;
	uint64_t start = off - off % PIECE_SIZE;
	file_piece *piece = &img->pieces[0];
	for (size_t i = 0; i < PIECES; i++) {
		file_piece *p = &img->pieces[i];
		if (p->len && p->offset == start) {
			piece = p;
			goto found;
		}
		if (p->used < piece->used)
			piece = p;
	}
	size_t want = img->size - start < PIECE_SIZE ? (size_t)(img->size - start) : PIECE_SIZE;
	ssize_t n = gpucc_pread_full(img->fd, piece->bytes, want, start);
	if (n < 0) {
		img->read_errno = errno;
		n = 0;
	} else if ((size_t)n < want) {
		img->cut_short = true;
	}
	piece->offset = start;
	piece->len = (size_t)n;
found:
	piece->used = ++img->clock;
	return off - start + BLOCK <= piece->len ? piece->bytes + (off - start) : NULL;
}

/* The payload header at off, if the block there is one whose data fit. */
static bool payload_header_at(plain_image *img, uint64_t off, gpucc_ustar_header *h)
{
	const unsigned char *block = block_at(img, off);
	return block && gpucc_ustar_parse(block, h) && gpucc_ustar_is_regular(h) &&
	       strncmp(h->name, "payloads/", 9) == 0 && h->size <= img->size - off - BLOCK &&
	       gpucc_ustar_padded(h->size) <= img->size - off - BLOCK;
}

/* Whether img (data or fd set, size bytes) holds a v1 image whose first two
 * members are plain ustar members; sets the rest of img, and where the
 * payloads begin. */
static bool plain_head(plain_image *img, uint64_t size)
{
	static const char format_text[] = "gpucc-image 1\n";
	static const char indexed_text[] = "gpucc-image 1.1\n";
	img->size = size - size % BLOCK;
	img->cut_short = false;
	img->read_errno = 0;
	img->clock = 0;
	for (size_t i = 0; i < PIECES; i++)
		img->pieces[i].len = img->pieces[i].used = 0;
	gpucc_ustar_header h;
	const unsigned char *block = block_at(img, 0);
	if (!block || !gpucc_ustar_parse(block, &h) || !gpucc_ustar_is_regular(&h) ||
	    strcmp(h.name, GPUCC_IMAGE_FORMAT_MEMBER) != 0 || !(block = block_at(img, BLOCK)))
		return false;
	bool indexed = h.size == sizeof indexed_text - 1 &&
	               memcmp(block, indexed_text, sizeof indexed_text - 1) == 0;
	if (!indexed &&
	    (h.size != sizeof format_text - 1 || memcmp(block, format_text, sizeof format_text - 1) != 0))
		return false;
	uint64_t manifest = BLOCK + gpucc_ustar_padded(h.size);
	if (indexed) {
		/* The index member comes between: step over it. */
		if (!(block = block_at(img, manifest)) || !gpucc_ustar_parse(block, &h) ||
		    !gpucc_ustar_is_regular(&h) || strcmp(h.name, GPUCC_IMAGE_INDEX_MEMBER) != 0 ||
		    h.size > img->size - manifest - BLOCK)
			return false;
		manifest += BLOCK + gpucc_ustar_padded(h.size);
	}
	if (!(block = block_at(img, manifest)) || !gpucc_ustar_parse(block, &h) ||
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
static bool chained_header_at(plain_image *img, uint64_t off, gpucc_ustar_header *h)
{
	if (!payload_header_at(img, off, h))
		return false;
	uint64_t next = off + BLOCK + gpucc_ustar_padded(h->size);
	gpucc_ustar_header unused;
	const unsigned char *block = block_at(img, next);
	return block && (gpucc_ustar_is_zero(block) || payload_header_at(img, next, &unused));
}

/* Bisection: the offset of the header named want, or UINT64_MAX. */
static uint64_t bisect(plain_image *img, const char *want)
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
static uint64_t walk(plain_image *img, const char *want)
{
	gpucc_ustar_header h;
	for (uint64_t at = img->first; payload_header_at(img, at, &h);
	     at += BLOCK + gpucc_ustar_padded(h.size))
		if (strcmp(h.name, want) == 0)
			return at;
	return UINT64_MAX;
}

/* The data of the member whose header is at at (UINT64_MAX: none), when
 * they are exactly the payload: 1 with them in *out (malloc'd, *size
 * bytes); 0 when they are not, or cannot be read (noted in img); or an
 * error (memory). */
static int member_read(plain_image *img, uint64_t at, const gpucc_digest *sha256, void **out,
                       uint64_t *size)
{
	gpucc_ustar_header h;
	if (at == UINT64_MAX || !payload_header_at(img, at, &h) || h.size >= SIZE_MAX)
		return 0;
	unsigned char *bytes = malloc(h.size ? (size_t)h.size : 1);
	if (!bytes)
		return gpucc_error_oom();
	if (img->data) {
		memcpy(bytes, img->data + at + BLOCK, (size_t)h.size);
	} else {
		ssize_t n = gpucc_pread_full(img->fd, bytes, (size_t)h.size, at + BLOCK);
		if (n < 0 || (uint64_t)n != h.size) {
			if (n < 0)
				img->read_errno = errno;
			else
				img->cut_short = true;
			free(bytes);
			return 0;
		}
	}
	gpucc_digest got;
	gpucc_digest_buffer(&got, bytes, (size_t)h.size);
	if (gpucc_digest_compare(&got, sha256) != 0) {
		free(bytes);
		return 0;
	}
	*out = bytes;
	*size = h.size;
	return 1;
}

/* 1: found, and *out holds it; 0: not in this plain image (or the file
 * could not be read whole: noted in img); < 0: an error. */
static int fetch_plain(void **out, size_t *out_size, plain_image *img, const char *member,
                       const gpucc_digest *sha256, const char *name)
{
	uint64_t size = 0;
	int rc = member_read(img, bisect(img, member), sha256, out, &size);
	if (rc == 0) {
		gpucc_image_fetch_walks++;
		uint64_t walked = walk(img, member);
		if (walked == UINT64_MAX)
			return 0;
		rc = member_read(img, walked, sha256, out, &size);
		if (rc == 0 && !img->cut_short && !img->read_errno)
			return gpucc_error_set(GPUCC_ECORRUPT, "'%s': %s does not match its digest", name,
			                       member);
	}
	if (rc == 1)
		*out_size = (size_t)size;
	return rc;
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

/* From img (its data or fd set; size bytes, 0 for a file that is not
 * regular or is empty) when it is a plain image; otherwise through the
 * full reader, on the same bytes or descriptor. */
static int fetch(void **out, size_t *out_size, plain_image *img, uint64_t size, const char *name,
                 const gpucc_digest *sha256, gpucc_part part)
{
	*out = NULL;
	*out_size = 0;
	if ((unsigned)part >= GPUCC_PART_COUNT)
		return gpucc_error_set(GPUCC_EINVALID, "unknown payload kind %d", (int)part);
	gpucc_payload want = {.part = part, .sha256 = *sha256};
	char member[GPUCC_PAYLOAD_MEMBER_SIZE];
	gpucc_payload_member_name(member, &want);
	if (size > 0 && plain_head(img, size)) {
		int rc = fetch_plain(out, out_size, img, member, sha256, name);
		if (rc < 0)
			return rc;
		if (rc == 1)
			return 0;
		if (img->read_errno) {
			errno = img->read_errno;
			return gpucc_error_set_errno("cannot read '%s'", name);
		}
		if (img->cut_short)
			return gpucc_error_set(GPUCC_ECORRUPT,
			                       "'%s': truncated image: the file was cut short while it was "
			                       "read (it had %" PRIu64 " bytes)",
			                       name, size);
		return gpucc_error_set(GPUCC_ENOTFOUND, "'%s' has no payload %s", name, member);
	}
	gpucc_image *opened = NULL;
	int rc = img->fd >= 0 ? gpucc_image_open_fd(&opened, img->fd, name)
	                      : gpucc_image_open_memory(&opened, img->data, (size_t)size, name);
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
	plain_image img = {.data = data, .fd = -1};
	return fetch(out, out_size, &img, data ? size : 0, name ? name : "image in memory", sha256,
	             part);
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
	uint64_t size = 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		size = (uint64_t)st.st_size;
	/* Another kind of file (a FIFO, an empty file): the full reader
	 * decides, on this descriptor: opening the name again would wait for
	 * a second writer of a FIFO, after this one's data were dropped. */
	plain_image img = {.fd = fd};
	int rc = fetch(out, out_size, &img, size, path, sha256, part);
	close(fd);
	return rc;
}
