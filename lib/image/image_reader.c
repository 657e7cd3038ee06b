/*
 * lib/image/image_reader.c -- opening and closing images (formats/image.md): the
 * limits a read is held to, the libarchive source that feeds the cursor,
 * the checks of each member's header, and reading the format member, the
 * index and the manifest, directly from an uncompressed image's ustar
 * headers or through libarchive.  lib/image/image_reader_internal.h describes
 * the reader as a whole and what its other files do.
 */
#include "image_reader_internal.h"

#include "cache_layout.h"

#include "errors.h"
#include "input_file.h"
#include "json_reader.h" /* gpucc_json_utf8_sequence */
#include "snapshot_format.h" /* to tell a snapshot given as an image */
#include "ustar.h"

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

#define FORMAT_MEMBER_MAX 64

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
static int check_manifest_size(const gpucc_image *img, uint64_t size)
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
static bool says_truncated(const char *why)
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

/* Read the whole data of the current member (its size already checked)
 * into a new NUL-terminated buffer.  The buffer grows with the bytes that
 * arrive, not with the size the header claims. */
static int read_member_data(gpucc_image *img, struct archive_entry *e, char **out,
                            size_t *out_size)
{
	la_int64_t claimed = GPUCC_LA->entry_size(e);
	size_t size = claimed > 0 ? (size_t)claimed : 0, got = 0, capacity = 0;
	char *buf = NULL;
	for (;;) {
		if (got == capacity) {
			capacity = capacity ? 2 * capacity : READ_CHUNK;
			if (capacity > size)
				capacity = size;
			char *grown = realloc(buf, capacity + 1);
			if (!grown) {
				free(buf);
				return gpucc_error_oom();
			}
			buf = grown;
		}
		if (got == size)
			break;
		la_ssize_t n = gpucc_image_cursor_read_data(img, buf + got, capacity - got);
		if (n < 0) {
			free(buf);
			return gpucc_image_archive_failure(img, "reading the manifest");
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (got != size) {
		free(buf);
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': truncated image: member '%s' is cut short",
		                       img->name, GPUCC_LA->entry_pathname(e));
	}
	buf[got] = '\0';
	*out = buf;
	*out_size = got;
	return 0;
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

/* ---- member checks -------------------------------------------------------- */

/* Room for a member name as messages show it. */
#define SHOWN_NAME_BYTES 200

/* name as messages show it: on one line, and unable to drive a terminal --
 * control characters and bytes that are not UTF-8 as \xNN, a backslash as
 * \\ -- and cut after about SHOWN_NAME_BYTES bytes with "...". */
const char *gpucc_image_shown_name(char out[SHOWN_NAME_SIZE], const char *name)
{
	const unsigned char *p = (const unsigned char *)(name ? name : "");
	size_t used = 0, left = strlen((const char *)p);
	while (*p && used < SHOWN_NAME_BYTES) {
		size_t n = *p < 0x20 || *p == 0x7f ? 0 : gpucc_json_utf8_sequence(p, left);
		if (n == 0)
			used += (size_t)snprintf(out + used, SHOWN_NAME_SIZE - used, "\\x%02x", *p);
		else if (*p == '\\')
			used += (size_t)snprintf(out + used, SHOWN_NAME_SIZE - used, "\\\\");
		else {
			memcpy(out + used, p, n);
			used += n;
		}
		n = n ? n : 1;
		p += n;
		left -= n;
	}
	snprintf(out + used, SHOWN_NAME_SIZE - used, "%s", *p ? "..." : "");
	return out;
}

static bool path_is_unsafe(const char *path)
{
	if (path[0] == '/')
		return true;
	for (const char *p = path; *p;) {
		size_t len = strcspn(p, "/");
		if (len == 2 && p[0] == '.' && p[1] == '.')
			return true;
		p += len;
		while (*p == '/')
			p++;
	}
	return false;
}

/* A member's name must be there and stay inside the directory it is
 * extracted to. */
int gpucc_image_check_path(const gpucc_image *img, const char *path)
{
	char shown[SHOWN_NAME_SIZE];
	if (!path || !*path)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': a member has no name", img->name);
	if (path_is_unsafe(path))
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s': member '%s' has an unsafe path (absolute or with '..')",
		                       img->name, gpucc_image_shown_name(shown, path));
	return 0;
}

/* Check that header e is an acceptable member at all: a regular file with a
 * safe relative path. */
int gpucc_image_check_member_kind(const gpucc_image *img, struct archive_entry *e)
{
	const char *path = GPUCC_LA->entry_pathname(e);
	char shown[SHOWN_NAME_SIZE];
	int rc = gpucc_image_check_path(img, path);
	if (rc)
		return rc;
	if (GPUCC_LA->entry_filetype(e) == AE_IFLNK || GPUCC_LA->entry_hardlink(e))
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': member '%s' is a link, not a file",
		                       img->name, gpucc_image_shown_name(shown, path));
	if (GPUCC_LA->entry_filetype(e) != AE_IFREG)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': member '%s' is not a regular file",
		                       img->name, gpucc_image_shown_name(shown, path));
	/* libarchive presents GNU sparse members (typeflag 'S', pax
	 * GNU.sparse.*) as regular files whose holes read as zeros: a few
	 * bytes of archive could claim gigabytes of data. */
	if (GPUCC_LA->entry_sparse_count(e) > 0)
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s': member '%s' is sparse, not a regular file", img->name,
		                       gpucc_image_shown_name(shown, path));
	return 0;
}

static int check_format_text(gpucc_image *img, const char *text, size_t size);

int gpucc_image_read_format_member(gpucc_image *img)
{
	struct archive_entry *e;
	int r = gpucc_image_cursor_next_header(img, &e);
	if (r == ARCHIVE_EOF)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': not a gpucc image (an empty archive)",
		                       img->name);
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
		const char *why = GPUCC_LA->error_string(img->cursor);
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': %s (%s)", img->name,
		                       says_truncated(why) ? "truncated image" : "not a gpucc image",
		                       why ? why : "not a tar archive");
	}
	const char *path = GPUCC_LA->entry_pathname(e);
	char shown[SHOWN_NAME_SIZE];
	if (!path || strcmp(path, GPUCC_IMAGE_FORMAT_MEMBER) != 0)
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s': not a gpucc image (first member is '%s', expected '%s')",
		                       img->name, gpucc_image_shown_name(shown, path),
		                       GPUCC_IMAGE_FORMAT_MEMBER);
	int rc = gpucc_image_check_member_kind(img, e);
	if (rc)
		return rc;
	char *text;
	size_t size;
	la_int64_t claimed = GPUCC_LA->entry_size(e);
	if (claimed < 0 || claimed > FORMAT_MEMBER_MAX)
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s': not a gpucc image (member '%s' has an absurd size, %lld "
		                       "bytes)",
		                       img->name, GPUCC_IMAGE_FORMAT_MEMBER, (long long)claimed);
	rc = read_member_data(img, e, &text, &size);
	if (rc)
		return rc;
	rc = check_format_text(img, text, size);
	free(text);
	img->format_size = size;
	return rc;
}

/* The number of decimal digits at text (avail bytes), 0 when there is
 * none or a leading zero begins several. */
static size_t version_digits(const char *text, size_t avail)
{
	size_t digits = 0;
	while (digits < avail && text[digits] >= '0' && text[digits] <= '9')
		digits++;
	return digits > 1 && text[0] == '0' ? 0 : digits;
}

/* The format member's size bytes: exactly "gpucc-image N\n" or
 * "gpucc-image N.M\n", N and M decimal digits without sign or leading
 * zero, the newline its last byte; N must be the version we read and M at
 * most the minor version we know (sets img->format_minor).  Numbers are
 * compared as text, so no value overflows. */
static int check_format_text(gpucc_image *img, const char *text, size_t size)
{
	static const char prefix[] = "gpucc-image ";
	size_t n = sizeof prefix - 1;
	size_t digits = 0, minor_digits = 0;
	if (size > n && memcmp(text, prefix, n) == 0)
		digits = version_digits(text + n, size - n);
	bool dotted = digits && n + digits < size && text[n + digits] == '.';
	if (dotted)
		minor_digits = version_digits(text + n + digits + 1, size - n - digits - 1);
	size_t length = n + digits + (dotted ? 1 + minor_digits : 0) + 1;
	if (digits == 0 || (dotted && minor_digits == 0) || length != size || text[size - 1] != '\n')
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': not a gpucc image (bad format member)",
		                       img->name);
	char expected[16];
	snprintf(expected, sizeof expected, "%d", GPUCC_IMAGE_FORMAT_VERSION);
	const char *minor = text + n + digits + 1;
	bool known_minor = !dotted || (minor_digits == 1 && minor[0] - '0' <= GPUCC_IMAGE_FORMAT_MINOR);
	if (digits != strlen(expected) || memcmp(text + n, expected, digits) != 0 || !known_minor)
		return gpucc_error_set(GPUCC_EVERSION,
		                       "'%s': image format version %.*s is not supported (this gpucc "
		                       "reads version %d, up to %d.%d)",
		                       img->name, (int)(size - n - 1), text + n,
		                       GPUCC_IMAGE_FORMAT_VERSION, GPUCC_IMAGE_FORMAT_VERSION,
		                       GPUCC_IMAGE_FORMAT_MINOR);
	img->format_minor = dotted ? (unsigned)(minor[0] - '0') : 0;
	return 0;
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

/* The index member, which follows the format member of an image of minor
 * version 1 and up, read through the cursor into img->index_data. */
int gpucc_image_read_index_member(gpucc_image *img)
{
	struct archive_entry *e;
	int r = gpucc_image_cursor_next_header(img, &e);
	if (r == ARCHIVE_EOF)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': truncated image: no index", img->name);
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
		return gpucc_image_archive_failure(img, "reading the index header");
	const char *path = GPUCC_LA->entry_pathname(e);
	char shown[SHOWN_NAME_SIZE];
	if (!path || strcmp(path, GPUCC_IMAGE_INDEX_MEMBER) != 0)
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s': corrupt image: second member is '%s', expected '%s'",
		                       img->name, gpucc_image_shown_name(shown, path),
		                       GPUCC_IMAGE_INDEX_MEMBER);
	int rc = gpucc_image_check_member_kind(img, e);
	if (rc)
		return rc;
	la_int64_t claimed = GPUCC_LA->entry_size(e);
	if (claimed < 0)
		claimed = 0;
	if ((rc = gpucc_image_check_index_size(img, (uint64_t)claimed)))
		return rc;
	char *data;
	size_t size;
	if ((rc = read_member_data(img, e, &data, &size)))
		return rc;
	free(img->index_data);
	img->index_data = (unsigned char *)data;
	img->index_size = size;
	return 0;
}

static int read_manifest_member(gpucc_image *img)
{
	struct archive_entry *e;
	int r = gpucc_image_cursor_next_header(img, &e);
	if (r == ARCHIVE_EOF)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': truncated image: no manifest", img->name);
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
		return gpucc_image_archive_failure(img, "reading the manifest header");
	const char *path = GPUCC_LA->entry_pathname(e);
	char shown[SHOWN_NAME_SIZE];
	if (!path || strcmp(path, GPUCC_IMAGE_MANIFEST_MEMBER) != 0)
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s': corrupt image: %s member is '%s', expected '%s'",
		                       img->name, img->format_minor ? "third" : "second",
		                       gpucc_image_shown_name(shown, path), GPUCC_IMAGE_MANIFEST_MEMBER);
	int rc = gpucc_image_check_member_kind(img, e);
	if (rc)
		return rc;
	char *json;
	size_t size;
	la_int64_t claimed = GPUCC_LA->entry_size(e);
	if (claimed <= 0)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': corrupt manifest: member '%s' is empty",
		                       img->name, GPUCC_IMAGE_MANIFEST_MEMBER);
	if ((rc = check_manifest_size(img, (uint64_t)claimed)))
		return rc;
	rc = read_member_data(img, e, &json, &size);
	if (rc)
		return rc;
	img->manifest_size = size;
	rc = gpucc_image_parse_manifest(img, json, size);
	free(json);
	return rc;
}

/* Skip the format member, the index and the manifest of a freshly opened
 * cursor. */
int gpucc_image_cursor_skip_head(gpucc_image *img)
{
	struct archive_entry *e;
	for (int i = 0; i < (img->format_minor ? 3 : 2); i++) {
		int r = gpucc_image_cursor_next_header(img, &e);
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
			return gpucc_image_archive_failure(img, "reopening");
	}
	img->cursor_after_head = true;
	return 0;
}

static int index_read(void *ctx, uint64_t offset, void *buf, size_t len)
{
	gpucc_image *img = ctx;
	if (offset > img->index_size || len > img->index_size - offset)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': corrupt index: a read past its end",
		                       img->name);
	ssize_t n = gpucc_image_read_at(img, img->index_offset + offset, buf, len);
	if (n < 0)
		return gpucc_error_set_errno("cannot read '%s'", img->name);
	if ((size_t)n != len)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': truncated image: it ends inside its index",
		                       img->name);
	return 0;
}

/* Finish opening an image for lookups through its index, the manifest's
 * (checked) header at manifest_header: the manifest stays unparsed. */
static int open_index(gpucc_image *img, uint64_t manifest_header, uint64_t manifest_size)
{
	img->manifest_offset = manifest_header + BLOCK;
	img->manifest_size = manifest_size;
	img->payload_base = img->manifest_offset + gpucc_ustar_padded(manifest_size);
	if (img->payload_base > img->size)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': truncated image: it ends inside its "
		                       "manifest", img->name);
	img->index = (gpucc_index_reader){.read = index_read, .ctx = img, .name = img->name,
	                                  .size = img->index_size};
	int rc = gpucc_index_open(&img->index, manifest_size);
	if (rc == 0)
		img->by_index = true;
	return rc;
}

/* Open an uncompressed image without libarchive: its first two headers are
 * single ustar blocks (as every v1 writer makes them), so the format member
 * and the manifest are read where they must be.  1 when the image is not
 * like that (compressed, pax headers, damage): the caller then reads it
 * through libarchive, which names any defect. */
static int open_head_directly(gpucc_image *img)
{
	unsigned char block[BLOCK];
	gpucc_ustar_header h;
	if (gpucc_image_read_at(img, 0, block, BLOCK) != BLOCK || !gpucc_ustar_parse(block, &h) ||
	    !gpucc_ustar_is_regular(&h) || strcmp(h.name, GPUCC_IMAGE_FORMAT_MEMBER) != 0 ||
	    h.size > FORMAT_MEMBER_MAX)
		return 1;
	char text[FORMAT_MEMBER_MAX + 1];
	if (gpucc_image_read_at(img, BLOCK, text, (size_t)h.size) != (ssize_t)h.size)
		return 1;
	text[h.size] = '\0';
	int rc = check_format_text(img, text, (size_t)h.size);
	if (rc)
		return rc;
	img->format_size = h.size;
	uint64_t at = BLOCK + gpucc_ustar_padded(h.size);
	if (img->format_minor) {
		if (gpucc_image_read_at(img, at, block, BLOCK) != BLOCK || !gpucc_ustar_parse(block, &h) ||
		    !gpucc_ustar_is_regular(&h) || strcmp(h.name, GPUCC_IMAGE_INDEX_MEMBER) != 0)
			return 1;
		if ((rc = gpucc_image_check_index_size(img, h.size)))
			return rc;
		img->index_offset = at + BLOCK;
		img->index_size = h.size;
		at += BLOCK + gpucc_ustar_padded(h.size);
	}
	if (gpucc_image_read_at(img, at, block, BLOCK) != BLOCK || !gpucc_ustar_parse(block, &h) ||
	    !gpucc_ustar_is_regular(&h) || strcmp(h.name, GPUCC_IMAGE_MANIFEST_MEMBER) != 0 ||
	    h.size == 0)
		return 1;
	if ((rc = check_manifest_size(img, h.size)))
		return rc;
	if (img->want_index && img->index_offset)
		return open_index(img, at, h.size);
	manifest_view view;
	if (gpucc_image_manifest_open(img, at, h.size, &view) != 0)
		return 1;
	rc = gpucc_image_parse_manifest(img, view.json, (size_t)h.size);
	if (gpucc_image_manifest_close(&view)) {
		/* Cut short while it was parsed: whatever the parse made of
		 * the zeros it read goes, and libarchive reads what is left. */
		gpucc_manifest_release(&img->manifest);
		gpucc_error_clear();
		return 1;
	}
	img->payload_base = at + BLOCK + gpucc_ustar_padded(h.size);
	img->manifest_offset = at + BLOCK;
	img->manifest_size = h.size;
	return rc;
}

/* Whether the image begins as a snapshot does (where that can be seen
 * without consuming a pipe): given where an image is expected, it gets an
 * error that says what it is. */
static bool is_snapshot(const gpucc_image *img)
{
	/* The whole magic: a few bytes that begin it are no verdict here. */
	unsigned char head[GPUCC_SNAPSHOT_MAGIC_SIZE];
	if (img->fd < 0)
		return img->size >= sizeof head && gpucc_snapshot_format_is_snapshot(img->data, sizeof head);
	return img->seekable && pread(img->fd, head, sizeof head, 0) == (ssize_t)sizeof head &&
	       gpucc_snapshot_format_is_snapshot(head, sizeof head);
}

static int open_common(gpucc_image *img)
{
	if (is_snapshot(img))
		return gpucc_error_set(GPUCC_EINVALID, "'%s' is a gpucc snapshot, not an image",
		                       img->name);
	if ((img->fd < 0 || img->seekable) && !gpucc_image_libarchive_only) {
		int direct = open_head_directly(img);
		if (direct != 1)
			return direct;
	}
	int rc = gpucc_image_cursor_open(img);
	if (rc)
		return rc;
	img->compressed = GPUCC_LA->filter_count(img->cursor) > 1;
	if ((rc = gpucc_image_read_format_member(img)) ||
	    (img->format_minor && (rc = gpucc_image_read_index_member(img))) ||
	    (rc = read_manifest_member(img)))
		return rc;
	/* The cursor stands after the manifest, where sequential reads of
	 * payloads begin. */
	img->cursor_next = 0;
	img->cursor_after_head = true;
	return 0;
}

/* A new image handle reading under limits (already completed). */
static gpucc_image *image_new(const char *name, const gpucc_image_limits *limits)
{
	gpucc_image *img = calloc(1, sizeof *img);
	if (!img)
		return NULL;
	img->fd = -1;
	gpucc_read_window_init(&img->window, WINDOW_SIZE);
	atomic_flag_clear(&img->window_busy);
	atomic_init(&img->payloads_ready, false);
	atomic_init(&img->manifest_ready, false);
	if (pthread_mutex_init(&img->lock, NULL) != 0) {
		free(img);
		return NULL;
	}
	img->limits = *limits;
	img->name = strdup(name ? name : "(image)");
	if (!img->name) {
		pthread_mutex_destroy(&img->lock);
		free(img);
		return NULL;
	}
	return img;
}

static int finish_open(gpucc_image **out, gpucc_image *img)
{
	int rc = open_common(img);
	if (rc) {
		gpucc_image_free(img);
		return rc;
	}
	*out = img;
	return 0;
}

/* The limits given (their 0 fields completed), or the defaults. */
static int resolve_limits(gpucc_image_limits *out, const gpucc_image_limits *given)
{
	if (!given)
		return gpucc_image_default_limits(out);
	*out = *given;
	gpucc_image_limits_complete(out);
	return 0;
}

static int open_on_fd(gpucc_image **out, int fd, const char *name,
                      const gpucc_image_limits *given, bool for_lookup)
{
	struct stat st;
	gpucc_image_limits limits;
	int rc = resolve_limits(&limits, given);
	if (rc) {
		close(fd);
		return rc;
	}
	if (fstat(fd, &st) != 0) {
		rc = gpucc_error_set_errno("cannot read '%s'", name);
		close(fd);
		return rc;
	}
	if (S_ISDIR(st.st_mode)) {
		/* A cache is the directory people most often point at. */
		bool cache = gpucc_cache_layout_at(fd);
		close(fd);
		if (cache)
			return gpucc_error_set(GPUCC_EINVALID, "'%s' is a gpucc cache, not an image",
			                       name);
		return gpucc_error_set(GPUCC_EINVALID, "'%s' is a directory, not an image", name);
	}
	if (S_ISREG(st.st_mode) && st.st_size == 0) {
		close(fd);
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': not a gpucc image (empty file)", name);
	}
	gpucc_image *img = image_new(name, &limits);
	if (!img) {
		close(fd);
		return gpucc_error_oom();
	}
	img->fd = fd;
	img->seekable = S_ISREG(st.st_mode);
	img->size = S_ISREG(st.st_mode) ? (size_t)st.st_size : 0;
	img->limits_given = given != NULL;
	img->want_index = for_lookup;
	return finish_open(out, img);
}

int gpucc_image_open(gpucc_image **out, const char *path)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(path);
	return gpucc_image_open_limited(out, path, NULL);
}

int gpucc_image_open_limited(gpucc_image **out, const char *path, const gpucc_image_limits *limits)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(path);
	if (limits && gpucc_options_version_check("image limits", limits->version,
	                                          GPUCC_IMAGE_LIMITS_VERSION) != 0)
		return GPUCC_EINVALID; /* before the file is opened */
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gpucc_error_set_open(NULL, path);
	return open_on_fd(out, fd, path, limits, false);
}

int gpucc_image_open_for_lookup(gpucc_image **out, const char *path)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gpucc_error_set_open(NULL, path);
	return open_on_fd(out, fd, path, NULL, true);
}

int gpucc_image_open_fd(gpucc_image **out, int fd, const char *name)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (copy < 0)
		return gpucc_error_set_errno("cannot use the descriptor of '%s'", name ? name : "(fd)");
	return open_on_fd(out, copy, name ? name : "(fd)", NULL, false);
}

/* The public functions check their arguments, so that messages name them. */
static int open_memory(gpucc_image **out, const void *data, size_t size, const char *name,
                       bool for_lookup)
{
	if (!data || size == 0)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': not a gpucc image (empty)",
		                       name ? name : "(memory)");
	gpucc_image_limits limits;
	int rc = gpucc_image_default_limits(&limits);
	if (rc)
		return rc;
	gpucc_image *img = image_new(name ? name : "(memory)", &limits);
	if (!img)
		return gpucc_error_oom();
	img->data = data;
	img->size = size;
	img->want_index = for_lookup;
	return finish_open(out, img);
}

int gpucc_image_open_memory(gpucc_image **out, const void *data, size_t size, const char *name)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	if (size != 0)
		GPUCC_REQUIRE(data);
	return open_memory(out, data, size, name, false);
}

int gpucc_image_open_memory_for_lookup(gpucc_image **out, const void *data, size_t size,
                                       const char *name)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	if (size != 0)
		GPUCC_REQUIRE(data);
	return open_memory(out, data, size, name, true);
}

void gpucc_image_free(gpucc_image *img)
{
	if (!img)
		return;
	if (img->cursor)
		GPUCC_LA->read_free(img->cursor);
	if (img->fd >= 0)
		close(img->fd);
	gpucc_manifest_release(&img->manifest);
	while (img->indexed) {
		indexed_entry *next = img->indexed->next;
		gpucc_manifest_release(&img->indexed->manifest);
		free(img->indexed);
		img->indexed = next;
	}
	free(img->manifest_error);
	free(img->index_data);
	free(img->payloads);
	free(img->header_offsets);
	free(img->fd_buffer);
	gpucc_read_window_release(&img->window);
	free(img->payloads_error);
	free(img->park_path);
	free(img->name);
	pthread_mutex_destroy(&img->lock);
	void (*on_free)(void *) = img->on_free;
	void *on_free_ctx = img->on_free_ctx;
	free(img);
	if (on_free)
		on_free(on_free_ctx);
}

void gpucc_image_on_free(gpucc_image *img, void (*fn)(void *ctx), void *ctx)
{
	img->on_free = fn;
	img->on_free_ctx = ctx;
}

#ifdef GPUCC_TEST_HOOKS
bool gpucc_image_libarchive_only;

void gpucc_image_force_libarchive(bool force)
{
	gpucc_image_libarchive_only = force;
}
#endif
