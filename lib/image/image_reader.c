/*
 * lib/image/image_reader.c -- what reading an image stands on (formats/image.md):
 * the limits a read is held to, the libarchive source that feeds the
 * cursor, the cursor itself, reads at an offset without it, and the
 * manifest's bytes, mapped under a SIGBUS guard or read.  Opening and
 * closing an image: lib/image/image_open.c.  lib/image/image_reader_impl.h
 * describes the reader as a whole and what its other files do.
 */
#include "image_reader_impl.h"

#include "errors.h"
#include "input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h> /* strncasecmp */
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Limits (gpucc/image.h, formats/image.md "Limits").  Compressed input is
 * handed to libarchive in COMPRESSED_CHUNK pieces, and expansion is checked
 * between pieces and after every header and data read: zstd expands a byte
 * at most 32,768-fold (a 4-byte RLE block gives 128 KiB), so a check is
 * never more than 512 MiB of expansion late. */
#define RATIO_FLOOR ((uint64_t)16 << 20)
#define COMPRESSED_CHUNK ((size_t)1 << 14)

/* ---- limits (lib/image/image_limits.c) ---------------------------------------- */

/* "16 GiB", "200 MiB" or "1234 bytes", for messages. */
static const char *size_text(char out[32], uint64_t size)
{
	static const char *const units[] = {"TiB", "GiB", "MiB", "KiB"};
	for (int i = 0; i < 4; i++) {
		unsigned shift = 40 - 10 * (unsigned)i;
		if (size >= ((uint64_t)1 << shift) && size % ((uint64_t)1 << shift) == 0) {
			snprintf(out, 32, "%" PRIu64 " %s", size >> shift, units[i]);
			return out;
		}
	}
	snprintf(out, 32, "%" PRIu64 " bytes", size);
	return out;
}

/* Whether the cursor of a compressed image has expanded past a limit;
 * remembers which in img->limit_hit.  Expanded bytes are what libarchive's
 * tar reader has consumed, compressed ones what its decompressor has. */
bool gpucc_image_over_limits(gpucc_image *img, struct archive *a)
{
	if (img->limit_hit)
		return true;
	if (GPUCC_LA->filter_count(a) < 2)
		return false;
	la_int64_t out = GPUCC_LA->filter_bytes(a, 0), in = GPUCC_LA->filter_bytes(a, -1);
	uint64_t expanded = out > 0 ? (uint64_t)out : 0, compressed = in > 0 ? (uint64_t)in : 0;
	if (expanded > img->limits.expanded_size)
		img->limit_hit = OVER_EXPANDED_SIZE;
	else if (expanded > RATIO_FLOOR && img->limits.expansion_ratio != UINT64_MAX &&
	         expanded / img->limits.expansion_ratio > compressed)
		img->limit_hit = OVER_EXPANSION_RATIO;
	return img->limit_hit != WITHIN_LIMITS;
}

/* How the user may raise a limit, for its messages: setting (e.g.
 * "ratio=N") where the program said its user sets the limits
 * (gpucc_image_set_default_limits), unless the caller set them. */
static const char *limit_hint(char out[96], const gpucc_image *img, const char *setting)
{
	const char *where = gpucc_image_limits_setting_name();
	if (img->limits_given)
		snprintf(out, 96, "a limit the caller set");
	else if (where)
		snprintf(out, 96, "raise the limit with %s=%s", where, setting);
	else
		snprintf(out, 96, "raise the image limit %s", setting);
	return out;
}

/* The error for the limit that stopped the cursor. */
int gpucc_image_limit_error(const gpucc_image *img)
{
	char size[32], hint[96];
	if (img->limit_hit == OVER_EXPANDED_SIZE)
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s': refused: it would expand to more than %s when decompressed "
		                       "(%s)",
		                       img->name, size_text(size, img->limits.expanded_size),
		                       limit_hint(hint, img, "expanded=SIZE"));
	return gpucc_error_set(GPUCC_ECORRUPT,
	                       "'%s': refused: it would expand more than %" PRIu64 "-fold when "
	                       "decompressed, like a compression bomb (%s)",
	                       img->name, img->limits.expansion_ratio,
	                       limit_hint(hint, img, "ratio=N"));
}

/* The manifest member's size against the limit. */
int check_manifest_size(const gpucc_image *img, uint64_t size)
{
	if (size <= img->limits.manifest_size)
		return 0;
	char limit[32], hint[96];
	return gpucc_error_set(GPUCC_ECORRUPT,
	                       "'%s': refused: member '%s' is %" PRIu64 " bytes, more than the limit "
	                       "of %s (%s)",
	                       img->name, GPUCC_IMAGE_MANIFEST_MEMBER, size,
	                       size_text(limit, img->limits.manifest_size),
	                       limit_hint(hint, img, "manifest=SIZE"));
}

/* The index member's size against the limit the manifest's sets: at most
 * 4 times it and 2080 bytes, more than the index of any manifest within
 * it takes (an entry record of 48 bytes is made of 300 bytes of JSON or
 * more, a kernel record of 40 of 13 or more: formats/image.md, "Limits").
 * It is held in memory when read through libarchive, and by verify. */
int gpucc_image_check_index_size(const gpucc_image *img, uint64_t size)
{
	uint64_t bound = 4 * img->limits.manifest_size + gpucc_index_size(0, 0, 0);
	if (size <= bound)
		return 0;
	char limit[32], hint[96];
	return gpucc_error_set(GPUCC_ECORRUPT,
	                       "'%s': refused: member '%s' is %" PRIu64 " bytes, more than 4 times "
	                       "the manifest limit of %s, and 2080 bytes (%s)",
	                       img->name, GPUCC_IMAGE_INDEX_MEMBER, size,
	                       size_text(limit, img->limits.manifest_size),
	                       limit_hint(hint, img, "manifest=SIZE"));
}

/* Parse the manifest's size bytes at json into img->manifest, its parsed
 * form under the manifest limit too; an indexed image's laid out one entry
 * per line. */
int gpucc_image_parse_manifest(gpucc_image *img, const char *json, size_t size)
{
	char limit[32], how[96], hint[160];
	snprintf(hint, sizeof hint, "(the manifest limit, %s; %s)",
	         size_text(limit, img->limits.manifest_size), limit_hint(how, img, "manifest=SIZE"));
	int rc = gpucc_manifest_parse_limited(&img->manifest, json, size, img->name,
	                                      img->limits.manifest_size, hint);
	/* An index's lookups take an entry from the line it stands on: the
	 * manifest they read must be laid out so (formats/image.md). */
	if (rc == 0 && img->format_minor &&
	    (rc = gpucc_manifest_check_layout(&img->manifest, json, size, img->name)) != 0)
		gpucc_manifest_release(&img->manifest);
	return rc;
}

/* libarchive calls that check the limits after reading: a header, or data. */
int gpucc_image_cursor_next_header(gpucc_image *img, struct archive_entry **e)
{
	img->cursor_after_head = false;
	int r = GPUCC_LA->read_next_header(img->cursor, e);
	return gpucc_image_over_limits(img, img->cursor) ? ARCHIVE_FATAL : r;
}

la_ssize_t gpucc_image_cursor_read_data(gpucc_image *img, void *buf, size_t size)
{
	la_ssize_t n = GPUCC_LA->read_data(img->cursor, buf, size);
	return gpucc_image_over_limits(img, img->cursor) ? -1 : n;
}

/* ---- the libarchive source ---------------------------------------------- */

/* How much to hand libarchive at a time: less once it is decompressing,
 * so that the limits are checked often enough. */
static size_t source_chunk(struct archive *a)
{
	return GPUCC_LA->filter_count(a) > 1 ? COMPRESSED_CHUNK : READ_CHUNK;
}

/* Refuse more input once a limit is passed. */
static bool source_refuses(gpucc_image *img, struct archive *a)
{
	if (!gpucc_image_over_limits(img, a))
		return false;
	GPUCC_LA->set_error(a, EFBIG, "over a limit");
	return true;
}

static ssize_t memory_read(struct archive *a, void *ctx, const void **out)
{
	gpucc_image *img = ctx;
	if (source_refuses(img, a))
		return -1;
	size_t left = img->size - (size_t)img->fd_position, n = source_chunk(a);
	n = n < left ? n : left;
	*out = img->data + img->fd_position;
	img->fd_position += n;
	return (ssize_t)n;
}

static la_int64_t memory_skip(struct archive *a, void *ctx, la_int64_t request)
{
	(void)a;
	gpucc_image *img = ctx;
	uint64_t left = img->size - img->fd_position;
	uint64_t n = (uint64_t)request < left ? (uint64_t)request : left;
	img->fd_position += n;
	return (la_int64_t)n;
}

static ssize_t fd_read(struct archive *a, void *ctx, const void **out)
{
	gpucc_image *img = ctx;
	if (source_refuses(img, a))
		return -1;
	size_t chunk = source_chunk(a);
	/* Allocated on first use: images read by the plain reader never need
	 * it, and a merge may hold 100,000 of them open. */
	if (!img->fd_buffer && !(img->fd_buffer = malloc(READ_CHUNK))) {
		GPUCC_LA->set_error(a, ENOMEM, "out of memory");
		return -1;
	}
	for (;;) {
		ssize_t n = img->seekable ? pread(img->fd, img->fd_buffer, chunk, (off_t)img->fd_position)
		                          : read(img->fd, img->fd_buffer, chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			GPUCC_LA->set_error(a, errno, "read error");
			return -1;
		}
		img->fd_position += (uint64_t)n;
		*out = img->fd_buffer;
		return n;
	}
}

static la_int64_t fd_skip(struct archive *a, void *ctx, la_int64_t request)
{
	gpucc_image *img = ctx;
	if (!img->seekable)
		return 0; /* libarchive then reads through */
	img->fd_position += (uint64_t)request;
	return request;
}

/* A new libarchive reader of the image from its beginning, through the
 * callbacks above (so under the limits), reading it as a tar archive or
 * as raw bytes (both after zstd), not yet opened. */
int gpucc_image_source_open(gpucc_image *img, struct archive **out, int format)
{
	if (!gpucc_libarchive_load())
		return gpucc_error_prefix("'%s'", img->name);
	struct archive *a = GPUCC_LA->read_new();
	if (!a)
		return gpucc_error_oom();
	if (format == READ_AS_RAW)
		GPUCC_LA->read_support_format_raw(a);
	else
		GPUCC_LA->read_support_format_tar(a);
	GPUCC_LA->read_support_filter_zstd(a);
	img->fd_position = 0;
	img->limit_hit = WITHIN_LIMITS;
	GPUCC_LA->read_set_callback_data(a, img);
	GPUCC_LA->read_set_read_callback(a, img->fd >= 0 ? fd_read : memory_read);
	GPUCC_LA->read_set_skip_callback(a, img->fd >= 0 ? fd_skip : memory_skip);
	*out = a;
	return 0;
}

/* Whether libarchive's message why says the data ended early ("Truncated
 * zstd input", "Truncated tar archive"): a file cut short is a truncated
 * image, not some other kind of file. */
bool says_truncated(const char *why)
{
	return why && strncasecmp(why, "truncated", strlen("truncated")) == 0;
}

/* Start a fresh libarchive reader at the beginning of the image. */
int gpucc_image_cursor_open(gpucc_image *img)
{
	if (img->cursor) {
		GPUCC_LA->read_free(img->cursor);
		img->cursor = NULL;
	}
	if (img->fd >= 0 && !img->seekable && img->fd_position != 0)
		return gpucc_error_set(GPUCC_ERROR, "'%s': cannot read backwards in a pipe", img->name);
	struct archive *a = NULL;
	int rc = gpucc_image_source_open(img, &a, READ_AS_TAR);
	if (rc)
		return rc;
	int r = GPUCC_LA->read_open1(a);
	if (r != ARCHIVE_OK) {
		const char *why = GPUCC_LA->error_string(a);
		/* A stream that gave no byte (/dev/null, an empty pipe) is empty,
		 * as an empty file is, not of an unrecognised format. */
		if (img->fd >= 0 && img->fd_position == 0)
			rc = gpucc_error_set(GPUCC_ECORRUPT, "'%s': not a gpucc image (empty)", img->name);
		else
			rc = gpucc_error_set(GPUCC_ECORRUPT, "'%s': %s (%s)", img->name,
			                     says_truncated(why) ? "truncated image" : "not a gpucc image",
			                     why ? why : "unrecognised archive");
		GPUCC_LA->read_free(a);
		return rc;
	}
	/* Filters besides "none": one zstd stream, never zstd inside zstd
	 * (each layer would cost another decoder window). */
	if (GPUCC_LA->filter_count(a) > 2) {
		GPUCC_LA->read_free(a);
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s': not a gpucc image (compressed more than once)", img->name);
	}
	img->cursor = a;
	img->cursor_next = 0;
	img->cursor_after_head = false;
	return 0;
}

int gpucc_image_archive_failure(gpucc_image *img, const char *doing)
{
	if (img->limit_hit)
		return gpucc_image_limit_error(img);
	const char *why = GPUCC_LA->error_string(img->cursor);
	return gpucc_error_set(GPUCC_ECORRUPT, "'%s': truncated or damaged image while %s (%s)",
	                       img->name, doing, why ? why : "unexpected end of data");
}

/* Read len bytes at offset of the image, without the cursor.  Returns the
 * byte count read (short at the end of the image) or -1. */
ssize_t gpucc_image_read_at(gpucc_image *img, uint64_t offset, void *buf, size_t len)
{
	if (img->fd < 0) {
		if (offset >= img->size)
			return 0;
		size_t n = img->size - offset < len ? (size_t)(img->size - offset) : len;
		memcpy(buf, img->data + offset, n);
		return (ssize_t)n;
	}
	return gpucc_pread_full(img->fd, buf, len, offset);
}

/* Where the bytes of the manifest are while it is parsed (gpucc_image_manifest_open):
 * in an image in memory, in place; from a regular file, in a read-only
 * mapping of it under a SIGBUS guard (lib/image/sigbus_guard.h: the file may be
 * cut short meanwhile), or, where guards are off or none can be had, read
 * into memory. */

/* The manifest's size bytes, whose (already checked) header is at offset,
 * in *v: 0, or 1 when they cannot all be had (out of memory, or a file
 * shorter than its header says); the caller then reads through
 * libarchive, which names the defect. */
int gpucc_image_manifest_open(gpucc_image *img, uint64_t offset, uint64_t size, manifest_view *v)
{
	memset(v, 0, sizeof *v);
	uint64_t data = offset + BLOCK;
	if (data > img->size || size > img->size - data)
		return 1;
	if (img->fd < 0) {
		v->json = (const char *)img->data + data;
		return 0;
	}
	long page = sysconf(_SC_PAGESIZE);
	uint64_t start = data - data % (uint64_t)(page > 0 ? page : 4096);
	size_t map_size = (size_t)(data + size - start);
	void *m = gpucc_sigbus_guard_enabled() ? mmap(NULL, map_size, PROT_READ,
	                                              MAP_PRIVATE | MAP_POPULATE, img->fd, (off_t)start)
	                                       : MAP_FAILED;
	if (m != MAP_FAILED && gpucc_sigbus_guard_begin(&v->guard, m, map_size) == 0) {
		v->map = m;
		v->map_size = map_size;
		v->json = (const char *)m + (data - start);
		return 0;
	}
	if (m != MAP_FAILED)
		munmap(m, map_size);
	v->copy = malloc((size_t)size);
	if (!v->copy || gpucc_pread_full(img->fd, v->copy, (size_t)size, data) != (ssize_t)size) {
		free(v->copy);
		v->copy = NULL;
		return 1;
	}
	v->json = v->copy;
	return 0;
}

/* Let go of the manifest's bytes: true when the file was cut short while
 * they were read from its mapping (what was parsed is not the file). */
bool gpucc_image_manifest_close(manifest_view *v)
{
	bool cut = false;
	if (v->map) {
		cut = gpucc_sigbus_guard_end(&v->guard);
		munmap(v->map, v->map_size);
	}
	free(v->copy);
	memset(v, 0, sizeof *v);
	return cut;
}

