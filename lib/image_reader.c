/*
 * lib/image_reader.c -- opening, querying, reading and verifying images
 * (formats/image.md).
 *
 * Opening reads two members: the format member, checked before anything
 * else, and the manifest.  Payloads are read on demand and always verified
 * against their size and SHA-256 before the caller may trust them.
 *
 * Two ways to reach a payload:
 *  - random access, for uncompressed images in a file or in memory: every
 *    member header of a v1 image is one 512-byte ustar block, so the offset
 *    of each payload follows from the sizes in the manifest; the header found
 *    there is checked (name, size, type) before its data are used, and any
 *    disagreement falls back to ...
 *  - the sequential cursor: a libarchive reader that walks the members in
 *    archive order and checks each against the manifest.  Reads in archive
 *    order cost one pass; reading backwards reopens the archive.
 * verify walks the ustar headers itself, of a compressed image over its
 * decompressed bytes, so that it reads an image once, what follows the
 * end-of-archive marker included (walk_source).
 *
 * A file may be cut short in place while it is read (cp rewrites its
 * target so).  Its headers and payloads are read with pread, which then
 * comes up short; its manifest is parsed in place from a mapping (a copy
 * of a large manifest would cost more than the whole parse), under a
 * SIGBUS guard (lib/sigbus_guard.h) that turns the pages the cut took away
 * into zeros and says so.  Either way the image is reported truncated,
 * where an unguarded mapping would have ended the process.
 *
 * Threads (gpucc/image.h): once open, a handle is read from any number of
 * threads at once.  What the manifest gave is never written again.  The
 * payload list is built once, under lock, and published through the
 * atomic payloads_ready.  Random access needs no shared state beyond the
 * read-ahead window, which a read borrows when no other thread holds it
 * (window_busy) and otherwise does without: one thread reading in archive
 * order keeps its read-ahead, several threads each pread what they need.
 * The sequential cursor -- libarchive's reader and its source position,
 * the decompressor of a compressed image -- is one per handle and used
 * under lock, so compressed images are read one payload at a time.
 * Parked images (gpucc_image_park) are read on one thread.
 */
#include "image_internal.h"

#include "cache_internal.h" /* gpucc_cache_layout_at */

#include "errors.h"
#include "image_index.h"
#include "input_file.h"
#include "json_reader.h" /* gpucc_json_utf8_sequence */
#include "key.h"
#include "libarchive_loader.h"
#include "manifest.h"
#include "read_window.h"
#include "sigbus_guard.h"
#include "snapshot_format.h" /* to tell a snapshot given as an image */
#include "ustar.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>

#include "sha256.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h> /* strncasecmp */
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK 512
#define READ_CHUNK ((size_t)1 << 16)
/* Payloads streamed in archive order are read this much at a time
 * (read_window.h). */
#define WINDOW_SIZE ((size_t)256 << 10)
#define FORMAT_MEMBER_MAX 64

/* Limits (gpucc/image.h, formats/image.md "Limits").  Compressed input is
 * handed to libarchive in COMPRESSED_CHUNK pieces, and expansion is checked
 * between pieces and after every header and data read: zstd expands a byte
 * at most 32,768-fold (a 4-byte RLE block gives 128 KiB), so a check is
 * never more than 512 MiB of expansion late. */
#define RATIO_FLOOR ((uint64_t)16 << 20)
#define COMPRESSED_CHUNK ((size_t)1 << 14)

/* An entry found through the index of an image opened for lookups: the
 * manifest of that one entry, parsed from its object, and where the index
 * says its payload members are. */
typedef struct indexed_entry {
	gpucc_manifest manifest;
	uint64_t offsets[GPUCC_PART_COUNT];
	struct indexed_entry *next;
} indexed_entry;

/* Which limit stopped a read (gpucc_image.limit_hit). */
enum { WITHIN_LIMITS, OVER_EXPANDED_SIZE, OVER_EXPANSION_RATIO };

struct gpucc_image {
	char *name;
	int fd;                 /* -1 for memory images */
	bool seekable;          /* fd is a regular file */
	const unsigned char *data; /* memory images */
	size_t size;
	bool compressed;
	gpucc_image_limits limits;
	/* The limits came from the caller (gpucc_image_open_limited), not
	 * from GPUCC_IMAGE_LIMITS: messages do not send the user there. */
	bool limits_given;
	int limit_hit;          /* WITHIN_LIMITS, or the limit that stopped the cursor
	                         * (cursor state: under lock) */

	gpucc_manifest manifest;
	/* The data sizes of the format member and the manifest, for the
	 * length an uncompressed image must have (gpucc_image_check_whole). */
	uint64_t format_size, manifest_size;
	/* The format's minor version: 1 and up, the image has an index
	 * member (formats/image.md, "The index") of index_size bytes: at
	 * index_offset in an image read at offsets (0: not known), and in
	 * index_data when it was read through libarchive (for verify). */
	unsigned format_minor;
	uint64_t index_offset, index_size;
	unsigned char *index_data;
	/* Where the manifest's data are in an image read at offsets (0: not
	 * known). */
	uint64_t manifest_offset;

	/* Opened for lookups (gpucc_image_open_for_lookup) and read at
	 * offsets with an index: by_index, and the manifest is parsed on the
	 * first use of all of it (ensure_manifest: once, under lock,
	 * published through manifest_ready).  Until then lookups read the
	 * index and parse only the entries they find, kept in the list
	 * indexed (added to under lock, never changed once added). */
	bool want_index; /* asked for at open */
	bool by_index;
	gpucc_index_reader index;
	atomic_bool manifest_ready;
	int manifest_rc;
	char *manifest_error;
	indexed_entry *indexed;
	gpucc_payload *payloads; /* distinct, in archive order */
	size_t payload_count;

	/* The payload list is built on first use (list and show never need
	 * it), under lock; payloads_rc remembers a failure to build it.  Once
	 * payloads_ready is true, the list and the fields from here to the
	 * window never change again. */
	atomic_bool payloads_ready;
	int payloads_rc;
	char *payloads_error; /* its message */

	/* Random access (uncompressed only): where the first payload header
	 * must be (0: unknown), and the header offset of each payload. */
	uint64_t payload_base;
	bool offsets_known;
	uint64_t *header_offsets;

	/* Read-ahead for payloads streamed in archive order from a file
	 * (stream_at_offset), used by one read at a time: the one that set
	 * window_busy. */
	gpucc_read_window window;
	atomic_flag window_busy;

	/* Held while the payload list is built, and while the cursor is used:
	 * the fields from here to park_path, and limit_hit. */
	pthread_mutex_t lock;

	/* The sequential cursor. */
	struct archive *cursor;
	size_t cursor_next;   /* index of the payload the next member should be */
	/* The cursor stands just after the manifest's data, no header read
	 * since: verify continues from there (a pipe cannot be reopened). */
	bool cursor_after_head;
	uint64_t fd_position; /* read position of the cursor in fd (or in data) */
	unsigned char *fd_buffer;

	/* A parked image (gpucc_image_park) holds no descriptor between
	 * reads: each reopens this path and checks it is still the file,
	 * unchanged (device, inode, size and modification time). */
	char *park_path;
	dev_t park_dev;
	ino_t park_ino;
	off_t park_size;
	struct timespec park_mtime;

	/* Called last by gpucc_image_free (gpucc_image_on_free). */
	void (*on_free)(void *ctx);
	void *on_free_ctx;
};

/* Tests read images through libarchive only, to compare the two readers
 * (a test hook: meson option test_hooks). */
#ifdef GPUCC_TEST_HOOKS
static bool force_libarchive;
#else
enum { force_libarchive = 0 };
#endif

/* ---- limits (lib/image_limits.c) ---------------------------------------- */

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
static bool over_limits(gpucc_image *img, struct archive *a)
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
static int limit_error(const gpucc_image *img)
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
 * form under the manifest limit too. */
static int parse_manifest(gpucc_image *img, const char *json, size_t size)
{
	char limit[32], how[96], hint[160];
	snprintf(hint, sizeof hint, "(the manifest limit, %s; %s)",
	         size_text(limit, img->limits.manifest_size), limit_hint(how, img, "manifest=SIZE"));
	return gpucc_manifest_parse_limited(&img->manifest, json, size, img->name,
	                                    img->limits.manifest_size, hint);
}

/* libarchive calls that check the limits after reading: a header, or data. */
static int cursor_next_header(gpucc_image *img, struct archive_entry **e)
{
	img->cursor_after_head = false;
	int r = GPUCC_LA->read_next_header(img->cursor, e);
	return over_limits(img, img->cursor) ? ARCHIVE_FATAL : r;
}

static la_ssize_t cursor_read_data(gpucc_image *img, void *buf, size_t size)
{
	la_ssize_t n = GPUCC_LA->read_data(img->cursor, buf, size);
	return over_limits(img, img->cursor) ? -1 : n;
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
	if (!over_limits(img, a))
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

enum { READ_AS_TAR, READ_AS_RAW };

/* A new libarchive reader of the image from its beginning, through the
 * callbacks above (so under the limits), reading it as a tar archive or
 * as raw bytes (both after zstd), not yet opened. */
static int source_open(gpucc_image *img, struct archive **out, int format)
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
static int cursor_open(gpucc_image *img)
{
	if (img->cursor) {
		GPUCC_LA->read_free(img->cursor);
		img->cursor = NULL;
	}
	if (img->fd >= 0 && !img->seekable && img->fd_position != 0)
		return gpucc_error_set(GPUCC_ERROR, "'%s': cannot read backwards in a pipe", img->name);
	struct archive *a = NULL;
	int rc = source_open(img, &a, READ_AS_TAR);
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

static int archive_failure(gpucc_image *img, const char *doing)
{
	if (img->limit_hit)
		return limit_error(img);
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
		la_ssize_t n = cursor_read_data(img, buf + got, capacity - got);
		if (n < 0) {
			free(buf);
			return archive_failure(img, "reading the manifest");
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
static ssize_t read_at(gpucc_image *img, uint64_t offset, void *buf, size_t len)
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

static bool ustar_header_is(gpucc_image *img, uint64_t offset, const char *name, uint64_t size)
{
	unsigned char block[BLOCK];
	return read_at(img, offset, block, BLOCK) == BLOCK && gpucc_ustar_is_member(block, name, size);
}

/* Where the bytes of the manifest are while it is parsed (manifest_open):
 * in an image in memory, in place; from a regular file, in a read-only
 * mapping of it under a SIGBUS guard (lib/sigbus_guard.h: the file may be
 * cut short meanwhile), or, where no guard can be had, read into memory. */
typedef struct manifest_view {
	const char *json;
	void *map;  /* the mapping (map_size bytes), guarded, or NULL */
	size_t map_size;
	gpucc_sigbus_guard guard;
	char *copy; /* the bytes read, or NULL */
} manifest_view;

/* The manifest's size bytes, whose (already checked) header is at offset,
 * in *v: 0, or 1 when they cannot all be had (out of memory, or a file
 * shorter than its header says); the caller then reads through
 * libarchive, which names the defect. */
static int manifest_open(gpucc_image *img, uint64_t offset, uint64_t size, manifest_view *v)
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
	void *m = mmap(NULL, map_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, img->fd, (off_t)start);
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
static bool manifest_close(manifest_view *v)
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
#define SHOWN_NAME_SIZE 256
#define SHOWN_NAME_BYTES 200

/* name as messages show it: on one line, and unable to drive a terminal --
 * control characters and bytes that are not UTF-8 as \xNN, a backslash as
 * \\ -- and cut after about SHOWN_NAME_BYTES bytes with "...". */
static const char *shown_name(char out[SHOWN_NAME_SIZE], const char *name)
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
static int check_path(const gpucc_image *img, const char *path)
{
	char shown[SHOWN_NAME_SIZE];
	if (!path || !*path)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': a member has no name", img->name);
	if (path_is_unsafe(path))
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s': member '%s' has an unsafe path (absolute or with '..')",
		                       img->name, shown_name(shown, path));
	return 0;
}

/* Check that header e is an acceptable member at all: a regular file with a
 * safe relative path. */
static int check_member_kind(const gpucc_image *img, struct archive_entry *e)
{
	const char *path = GPUCC_LA->entry_pathname(e);
	char shown[SHOWN_NAME_SIZE];
	int rc = check_path(img, path);
	if (rc)
		return rc;
	if (GPUCC_LA->entry_filetype(e) == AE_IFLNK || GPUCC_LA->entry_hardlink(e))
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': member '%s' is a link, not a file",
		                       img->name, shown_name(shown, path));
	if (GPUCC_LA->entry_filetype(e) != AE_IFREG)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': member '%s' is not a regular file",
		                       img->name, shown_name(shown, path));
	/* libarchive presents GNU sparse members (typeflag 'S', pax
	 * GNU.sparse.*) as regular files whose holes read as zeros: a few
	 * bytes of archive could claim gigabytes of data. */
	if (GPUCC_LA->entry_sparse_count(e) > 0)
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s': member '%s' is sparse, not a regular file", img->name,
		                       shown_name(shown, path));
	return 0;
}

static int compare_payloads(const void *a, const void *b)
{
	return gpucc_payload_archive_compare(a, b);
}

int gpucc_payload_archive_compare(const gpucc_payload *a, const gpucc_payload *b)
{
	int c = gpucc_digest_compare(&a->sha256, &b->sha256);
	if (c)
		return c;
	return strcmp(gpucc_part_extension(a->part), gpucc_part_extension(b->part));
}

/* The distinct payloads of the manifest, in archive order.  One payload
 * (digest and kind) listed with two sizes is a corrupt manifest. */
static int collect_payloads(gpucc_image *img)
{
	size_t total = 0;
	for (size_t i = 0; i < img->manifest.entry_count; i++)
		total += img->manifest.entries[i].payload_count;
	gpucc_payload *list = malloc((total ? total : 1) * sizeof *list);
	if (!list)
		return gpucc_error_oom();
	size_t n = 0;
	for (size_t i = 0; i < img->manifest.entry_count; i++)
		for (size_t j = 0; j < img->manifest.entries[i].payload_count; j++)
			list[n++] = img->manifest.entries[i].payloads[j];
	qsort(list, n, sizeof *list, compare_payloads);
	size_t unique = 0;
	for (size_t i = 0; i < n; i++) {
		if (unique && gpucc_payload_archive_compare(&list[unique - 1], &list[i]) == 0) {
			if (list[unique - 1].size != list[i].size) {
				free(list);
				return gpucc_error_set(GPUCC_ECORRUPT,
				                       "'%s': corrupt manifest: one payload listed with two sizes",
				                       img->name);
			}
			continue;
		}
		list[unique++] = list[i];
	}
	img->payloads = list;
	img->payload_count = unique;
	return 0;
}

/* The offsets every payload header must have if all headers are single
 * ustar blocks, given where the first payload's header is. */
static int compute_offsets(gpucc_image *img, uint64_t first)
{
	img->header_offsets = malloc((img->payload_count + 1) * sizeof *img->header_offsets);
	if (!img->header_offsets)
		return gpucc_error_oom();
	uint64_t at = first;
	for (size_t i = 0; i < img->payload_count; i++) {
		img->header_offsets[i] = at;
		at += BLOCK + (img->payloads[i].size + BLOCK - 1) / BLOCK * BLOCK;
	}
	img->header_offsets[img->payload_count] = at;
	img->offsets_known = true;
	return 0;
}

static int check_format_text(gpucc_image *img, const char *text, size_t size);

static int read_format_member(gpucc_image *img)
{
	struct archive_entry *e;
	int r = cursor_next_header(img, &e);
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
		                       img->name, shown_name(shown, path), GPUCC_IMAGE_FORMAT_MEMBER);
	int rc = check_member_kind(img, e);
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
static int check_index_size(const gpucc_image *img, uint64_t size)
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
static int read_index_member(gpucc_image *img)
{
	struct archive_entry *e;
	int r = cursor_next_header(img, &e);
	if (r == ARCHIVE_EOF)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': truncated image: no index", img->name);
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
		return archive_failure(img, "reading the index header");
	const char *path = GPUCC_LA->entry_pathname(e);
	char shown[SHOWN_NAME_SIZE];
	if (!path || strcmp(path, GPUCC_IMAGE_INDEX_MEMBER) != 0)
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s': corrupt image: second member is '%s', expected '%s'",
		                       img->name, shown_name(shown, path), GPUCC_IMAGE_INDEX_MEMBER);
	int rc = check_member_kind(img, e);
	if (rc)
		return rc;
	la_int64_t claimed = GPUCC_LA->entry_size(e);
	if (claimed < 0)
		claimed = 0;
	if ((rc = check_index_size(img, (uint64_t)claimed)))
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
	int r = cursor_next_header(img, &e);
	if (r == ARCHIVE_EOF)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': truncated image: no manifest", img->name);
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
		return archive_failure(img, "reading the manifest header");
	const char *path = GPUCC_LA->entry_pathname(e);
	char shown[SHOWN_NAME_SIZE];
	if (!path || strcmp(path, GPUCC_IMAGE_MANIFEST_MEMBER) != 0)
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s': corrupt image: %s member is '%s', expected '%s'",
		                       img->name, img->format_minor ? "third" : "second",
		                       shown_name(shown, path), GPUCC_IMAGE_MANIFEST_MEMBER);
	int rc = check_member_kind(img, e);
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
	rc = parse_manifest(img, json, size);
	free(json);
	return rc;
}

/* Skip the format member, the index and the manifest of a freshly opened
 * cursor. */
static int cursor_skip_head(gpucc_image *img)
{
	struct archive_entry *e;
	for (int i = 0; i < (img->format_minor ? 3 : 2); i++) {
		int r = cursor_next_header(img, &e);
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
			return archive_failure(img, "reopening");
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
	ssize_t n = read_at(img, img->index_offset + offset, buf, len);
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
	if (read_at(img, 0, block, BLOCK) != BLOCK || !gpucc_ustar_parse(block, &h) ||
	    !gpucc_ustar_is_regular(&h) || strcmp(h.name, GPUCC_IMAGE_FORMAT_MEMBER) != 0 ||
	    h.size > FORMAT_MEMBER_MAX)
		return 1;
	char text[FORMAT_MEMBER_MAX + 1];
	if (read_at(img, BLOCK, text, (size_t)h.size) != (ssize_t)h.size)
		return 1;
	text[h.size] = '\0';
	int rc = check_format_text(img, text, (size_t)h.size);
	if (rc)
		return rc;
	img->format_size = h.size;
	uint64_t at = BLOCK + gpucc_ustar_padded(h.size);
	if (img->format_minor) {
		if (read_at(img, at, block, BLOCK) != BLOCK || !gpucc_ustar_parse(block, &h) ||
		    !gpucc_ustar_is_regular(&h) || strcmp(h.name, GPUCC_IMAGE_INDEX_MEMBER) != 0)
			return 1;
		if ((rc = check_index_size(img, h.size)))
			return rc;
		img->index_offset = at + BLOCK;
		img->index_size = h.size;
		at += BLOCK + gpucc_ustar_padded(h.size);
	}
	if (read_at(img, at, block, BLOCK) != BLOCK || !gpucc_ustar_parse(block, &h) ||
	    !gpucc_ustar_is_regular(&h) || strcmp(h.name, GPUCC_IMAGE_MANIFEST_MEMBER) != 0 ||
	    h.size == 0)
		return 1;
	if ((rc = check_manifest_size(img, h.size)))
		return rc;
	if (img->want_index && img->index_offset)
		return open_index(img, at, h.size);
	manifest_view view;
	if (manifest_open(img, at, h.size, &view) != 0)
		return 1;
	rc = parse_manifest(img, view.json, (size_t)h.size);
	if (manifest_close(&view)) {
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
		return gpucc_error_set(GPUCC_EINVALID,
		                       "'%s' is a gpucc snapshot, not an image ('gpucc snapshot --show' "
		                       "prints it; delta takes it as --since)",
		                       img->name);
	if ((img->fd < 0 || img->seekable) && !force_libarchive) {
		int direct = open_head_directly(img);
		if (direct != 1)
			return direct;
	}
	int rc = cursor_open(img);
	if (rc)
		return rc;
	img->compressed = GPUCC_LA->filter_count(img->cursor) > 1;
	if ((rc = read_format_member(img)) ||
	    (img->format_minor && (rc = read_index_member(img))) || (rc = read_manifest_member(img)))
		return rc;
	/* The cursor stands after the manifest, where sequential reads of
	 * payloads begin. */
	img->cursor_next = 0;
	img->cursor_after_head = true;
	return 0;
}

/* Build the payload list and, for uncompressed images whose manifest
 * header was a single ustar block, the offsets of all payload headers
 * (the first follows the manifest's data; a wrong guess is caught by the
 * header check before any byte is used).  Once, for all threads: the
 * first caller builds them under lock, any other waits for it. */
static int build_payloads(gpucc_image *img);

static int ensure_manifest(gpucc_image *img);

static int ensure_payloads(gpucc_image *img)
{
	/* Every payload read and accessor comes here: the built list costs
	 * one load. */
	if (atomic_load_explicit(&img->payloads_ready, memory_order_acquire) && img->payloads_rc == 0)
		return 0;
	int rc = ensure_manifest(img);
	return rc ? rc : build_payloads(img);
}

/* ensure_payloads, the first time (or after a failure). */
static int build_payloads(gpucc_image *img)
{
	if (!atomic_load_explicit(&img->payloads_ready, memory_order_acquire)) {
		pthread_mutex_lock(&img->lock);
		int rc = 0;
		bool built = false;
		if (!atomic_load_explicit(&img->payloads_ready, memory_order_relaxed)) {
			rc = collect_payloads(img);
			if (rc == 0 && img->payload_base && img->payload_count > 0)
				rc = compute_offsets(img, img->payload_base);
			if (rc)
				img->payloads_error = strdup(gpucc_error_last()->message);
			img->payloads_rc = rc;
			atomic_store_explicit(&img->payloads_ready, true, memory_order_release);
			built = true;
		}
		pthread_mutex_unlock(&img->lock);
		if (built)
			return rc; /* its error is set on this thread */
	}
	/* The failure again, with its message: the first may have been on
	 * another thread. */
	if (img->payloads_rc && img->payloads_error)
		return gpucc_error_set(img->payloads_rc, "%s", img->payloads_error);
	return img->payloads_rc;
}

void gpucc_image_prepare_payloads(gpucc_image *img)
{
	ensure_payloads(img);
}

/* ---- the manifest of an image opened for lookups ------------------------------ */

/* Whether img's whole manifest is parsed (at open, or since).  While it
 * is not -- or its parse failed -- lookups go through the index. */
static bool manifest_loaded(const gpucc_image *img)
{
	return !img->by_index ||
	       (atomic_load_explicit(&((gpucc_image *)img)->manifest_ready, memory_order_acquire) &&
	        img->manifest_rc == 0);
}

/* Parse the whole manifest of an image opened by its index. */
static int load_manifest(gpucc_image *img)
{
	manifest_view view;
	if (manifest_open(img, img->manifest_offset - BLOCK, img->manifest_size, &view) != 0)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': truncated image: it ends inside its "
		                       "manifest", img->name);
	int rc = parse_manifest(img, view.json, (size_t)img->manifest_size);
	if (manifest_close(&view)) {
		gpucc_manifest_release(&img->manifest);
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': truncated image: it was cut short while "
		                       "its manifest was read", img->name);
	}
	return rc;
}

/* The whole manifest, parsed at open or now: once, for all threads (a
 * failure is remembered and reported again with its message). */
static int ensure_manifest(gpucc_image *img)
{
	if (!manifest_loaded(img)) {
		pthread_mutex_lock(&img->lock);
		int rc = 0;
		bool loaded = false;
		if (!atomic_load_explicit(&img->manifest_ready, memory_order_relaxed)) {
			rc = load_manifest(img);
			if (rc)
				img->manifest_error = strdup(gpucc_error_last()->message);
			img->manifest_rc = rc;
			atomic_store_explicit(&img->manifest_ready, true, memory_order_release);
			loaded = true;
		}
		pthread_mutex_unlock(&img->lock);
		if (loaded)
			return rc;
	}
	if (img->manifest_rc && img->manifest_error)
		return gpucc_error_set(img->manifest_rc, "%s", img->manifest_error);
	return img->manifest_rc;
}

bool gpucc_image_reads_by_index(const gpucc_image *img)
{
	return !manifest_loaded(img);
}

int gpucc_image_load_manifest(const gpucc_image *img)
{
	GPUCC_REQUIRE(img);
	return ensure_manifest((gpucc_image *)img);
}

/* The entry of index record i, parsed from its object in the manifest and
 * checked: its key is the record's and the one its components give, its
 * payloads as many as the record's references.  Borrowed from img. */
static int indexed_entry_at(gpucc_image *img, uint32_t i, const indexed_entry **out)
{
	gpucc_index_record rec;
	*out = NULL;
	int rc = gpucc_index_record_at(&img->index, i, &rec);
	if (rc)
		return rc;
	pthread_mutex_lock(&img->lock);
	for (const indexed_entry *x = img->indexed; x; x = x->next)
		if (gpucc_digest_compare(&x->manifest.entries[0].key, &rec.key) == 0)
			*out = x;
	pthread_mutex_unlock(&img->lock);
	if (*out)
		return 0;

	indexed_entry *x = calloc(1, sizeof *x);
	char *json = malloc(rec.object_length);
	if (!x || !json) {
		free(x);
		free(json);
		return gpucc_error_oom();
	}
	ssize_t n = read_at(img, img->manifest_offset + rec.object_offset, json, rec.object_length);
	if (n < 0)
		rc = gpucc_error_set_errno("cannot read '%s'", img->name);
	else if ((size_t)n != rec.object_length)
		rc = gpucc_error_set(GPUCC_ECORRUPT, "'%s': truncated image: it ends inside its manifest",
		                     img->name);
	else
		rc = gpucc_manifest_parse_entry(&x->manifest, json, rec.object_length, img->name, i);
	free(json);
	char hex[GPUCC_DIGEST_HEX_SIZE], found[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &rec.key);
	const gpucc_entry *e = rc == 0 ? &x->manifest.entries[0] : NULL;
	if (e && gpucc_digest_compare(&e->key, &rec.key) != 0) {
		gpucc_digest_to_hex(found, &e->key);
		rc = gpucc_error_set(GPUCC_ECORRUPT,
		                     "'%s': corrupt index: the record of key %.12s points to the entry "
		                     "of key %.12s",
		                     img->name, hex, found);
	}
	gpucc_digest computed;
	if (e && rc == 0 && (rc = gpucc_key_compute(&computed, e)) != 0) {
		char why[512];
		snprintf(why, sizeof why, "%s", gpucc_error_last()->message);
		rc = gpucc_error_set(rc == GPUCC_EVERSION ? rc : GPUCC_ECORRUPT,
		                     "'%s': corrupt manifest: entry %.12s: %s", img->name, hex, why);
	} else if (e && rc == 0 && gpucc_digest_compare(&computed, &e->key) != 0) {
		rc = gpucc_error_set(GPUCC_ECORRUPT,
		                     "'%s': corrupt manifest: entry %.12s: its key does not match the "
		                     "entry's key components",
		                     img->name, hex);
	}
	if (e && rc == 0 && rec.payload_count != e->payload_count)
		rc = gpucc_error_set(GPUCC_ECORRUPT,
		                     "'%s': corrupt index: the record of key %.12s has %u payloads, the "
		                     "entry %zu",
		                     img->name, hex, rec.payload_count, e->payload_count);
	if (rc == 0)
		rc = gpucc_index_payload_offsets(&img->index, &rec, x->offsets);
	if (rc) {
		gpucc_manifest_release(&x->manifest);
		free(x);
		return rc;
	}
	/* Another thread may have added it meanwhile: keep the first. */
	pthread_mutex_lock(&img->lock);
	for (const indexed_entry *y = img->indexed; y && !*out; y = y->next)
		if (gpucc_digest_compare(&y->manifest.entries[0].key, &rec.key) == 0)
			*out = y;
	if (!*out) {
		x->next = img->indexed;
		img->indexed = x;
		*out = x;
		x = NULL;
	}
	pthread_mutex_unlock(&img->lock);
	if (x) {
		gpucc_manifest_release(&x->manifest);
		free(x);
	}
	return 0;
}

/* gpucc_image_lookup through the index: prefix is lowercase hex. */
static int lookup_by_index(const gpucc_entry **out, gpucc_image *img, const char *prefix,
                           const char *given)
{
	uint32_t first, count;
	int rc = gpucc_index_find_prefix(&img->index, prefix, &first, &count);
	if (rc)
		return rc;
	if (count == 0)
		return gpucc_error_set(GPUCC_ENOTFOUND, "'%s': no entry with key '%s'", img->name, given);
	if (count > 1) {
		char candidates[512] = "";
		size_t used = 0;
		for (uint32_t i = 0; i < count && i < 8; i++) {
			gpucc_index_record rec;
			char hex[GPUCC_DIGEST_HEX_SIZE];
			if ((rc = gpucc_index_record_at(&img->index, first + i, &rec)))
				return rc;
			gpucc_digest_to_hex(hex, &rec.key);
			used += (size_t)snprintf(candidates + used, sizeof candidates - used, "%s%.16s",
			                         i ? ", " : "", hex);
		}
		return gpucc_error_set(GPUCC_EAMBIGUOUS, "'%s': key prefix '%s' is ambiguous: %u entries "
		                       "match (%s%s)",
		                       img->name, given, count, candidates, count > 8 ? ", ..." : "");
	}
	const indexed_entry *x = NULL;
	if ((rc = indexed_entry_at(img, first, &x)))
		return rc;
	*out = &x->manifest.entries[0];
	return 0;
}

int gpucc_image_kernel_candidates(const gpucc_entry ***out, size_t *out_count,
                                  const gpucc_image *image, const char *kernel)
{
	gpucc_image *img = (gpucc_image *)image;
	*out = NULL;
	*out_count = 0;
	if (manifest_loaded(img))
		return 1;
	uint32_t *list;
	size_t count;
	int rc = gpucc_index_kernel_entries(&img->index, kernel, &list, &count);
	if (rc)
		return rc;
	const gpucc_entry **entries = malloc((count ? count : 1) * sizeof *entries);
	if (!entries) {
		free(list);
		return gpucc_error_oom();
	}
	size_t n = 0;
	for (size_t i = 0; i < count && rc == 0; i++) {
		const indexed_entry *x = NULL;
		if ((rc = indexed_entry_at(img, list[i], &x)))
			break;
		/* A record that names an entry without the kernel is a lie
		 * the index tells: the entry is not a candidate. */
		const gpucc_entry *e = &x->manifest.entries[0];
		for (size_t k = 0; k < e->kernel_count; k++)
			if (strcmp(e->kernels[k].name, kernel) == 0) {
				entries[n++] = e;
				break;
			}
	}
	free(list);
	if (rc) {
		free(entries);
		return rc;
	}
	*out = entries;
	*out_count = n;
	return 0;
}

/* The header offset the index gives for payload p of an entry found
 * through it: 0 and *offset, or 1 when no such entry holds p. */
static int indexed_payload_offset(gpucc_image *img, const gpucc_payload *p, uint64_t *offset)
{
	int rc = 1;
	pthread_mutex_lock(&img->lock);
	for (const indexed_entry *x = img->indexed; x && rc; x = x->next) {
		const gpucc_entry *e = &x->manifest.entries[0];
		for (size_t j = 0; j < e->payload_count; j++)
			if (gpucc_payload_archive_compare(&e->payloads[j], p) == 0 &&
			    e->payloads[j].size == p->size) {
				*offset = x->offsets[j];
				rc = 0;
				break;
			}
	}
	pthread_mutex_unlock(&img->lock);
	return rc;
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
			return gpucc_error_set(GPUCC_EINVALID,
			                       "'%s' is a gpucc cache, not an image ('gpucc cache verify "
			                       "--cache DIR' checks it; snapshot, delta and merge take it as "
			                       "a source)",
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

/* ---- queries -------------------------------------------------------------- */

const char *gpucc_image_name(const gpucc_image *img)
{
	GPUCC_REQUIRE_OR(img, NULL);
	return img->name;
}

bool gpucc_image_is_compressed(const gpucc_image *img)
{
	GPUCC_REQUIRE_OR(img, false);
	return img->compressed;
}

bool gpucc_image_has_random_access(const gpucc_image *img)
{
	ensure_payloads((gpucc_image *)img);
	return img->offsets_known;
}

size_t gpucc_image_entry_count(const gpucc_image *img)
{
	GPUCC_REQUIRE_OR(img, 0);
	if (ensure_manifest((gpucc_image *)img) != 0)
		return 0;
	return img->manifest.entry_count;
}

const gpucc_entry *gpucc_image_entry(const gpucc_image *img, size_t index)
{
	GPUCC_REQUIRE_OR(img, NULL);
	if (ensure_manifest((gpucc_image *)img) != 0)
		return NULL;
	return index < img->manifest.entry_count ? &img->manifest.entries[index] : NULL;
}

/* The payload accessors are logically const: they may build the list. */
int gpucc_image_count_payloads(size_t *out, const gpucc_image *img)
{
	GPUCC_REQUIRE(out);
	GPUCC_REQUIRE(img);
	int rc = ensure_payloads((gpucc_image *)img);
	if (rc == 0)
		*out = img->payload_count;
	return rc;
}

const gpucc_payload *gpucc_image_payload(const gpucc_image *img, size_t index)
{
	GPUCC_REQUIRE_OR(img, NULL);
	if (ensure_payloads((gpucc_image *)img) != 0)
		return NULL;
	return index < img->payload_count ? &img->payloads[index] : NULL;
}

const gpucc_entry *gpucc_image_find(const gpucc_image *img, const gpucc_digest *key)
{
	GPUCC_REQUIRE_OR(img, NULL);
	GPUCC_REQUIRE_OR(key, NULL);
	if (!manifest_loaded(img)) {
		char hex[GPUCC_DIGEST_HEX_SIZE];
		const gpucc_entry *e = NULL;
		gpucc_digest_to_hex(hex, key);
		return lookup_by_index(&e, (gpucc_image *)img, hex, hex) == 0 ? e : NULL;
	}
	size_t lo = 0, hi = img->manifest.entry_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = gpucc_digest_compare(&img->manifest.entries[mid].key, key);
		if (c == 0)
			return &img->manifest.entries[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int gpucc_image_lookup(const gpucc_entry **out, const gpucc_image *img, const char *prefix)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(img);
	size_t len = prefix ? strlen(prefix) : 0;
	if (len == 0 || len > 2 * GPUCC_DIGEST_SIZE || strspn(prefix, "0123456789abcdefABCDEF") != len)
		return gpucc_error_set(GPUCC_EINVALID, "'%s' is not a key or key prefix (1 to 64 hex digits)",
		                       prefix ? prefix : "");
	char lower[GPUCC_DIGEST_HEX_SIZE];
	for (size_t i = 0; i <= len; i++)
		lower[i] = (char)(prefix[i] >= 'A' && prefix[i] <= 'F' ? prefix[i] - 'A' + 'a' : prefix[i]);
	if (!manifest_loaded(img))
		return lookup_by_index(out, (gpucc_image *)img, lower, prefix);

	/* Keys are sorted, so matches are contiguous: find the first key whose
	 * hex is >= the prefix by binary search, then scan. */
	size_t lo = 0, hi = img->manifest.entry_count;
	char hex[GPUCC_DIGEST_HEX_SIZE];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		gpucc_digest_to_hex(hex, &img->manifest.entries[mid].key);
		if (strncmp(hex, lower, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t matches = 0;
	char candidates[512] = "";
	size_t used = 0;
	for (size_t i = lo; i < img->manifest.entry_count; i++) {
		gpucc_digest_to_hex(hex, &img->manifest.entries[i].key);
		if (strncmp(hex, lower, len) != 0)
			break;
		if (matches < 8 && used < sizeof candidates - 32)
			used += (size_t)snprintf(candidates + used, sizeof candidates - used, "%s%.16s",
			                         matches ? ", " : "", hex);
		if (matches == 0)
			*out = &img->manifest.entries[i];
		matches++;
	}
	if (matches == 0)
		return gpucc_error_set(GPUCC_ENOTFOUND, "'%s': no entry with key '%s'", img->name, prefix);
	if (matches > 1) {
		*out = NULL;
		return gpucc_error_set(GPUCC_EAMBIGUOUS, "'%s': key prefix '%s' is ambiguous: %zu entries "
		                       "match (%s%s)",
		                       img->name, prefix, matches, candidates, matches > 8 ? ", ..." : "");
	}
	return 0;
}

/* ---- reading payloads ----------------------------------------------------- */

/* Index of p among the image's payloads, or payload_count. */
static size_t payload_index(const gpucc_image *img, const gpucc_payload *p)
{
	size_t lo = 0, hi = img->payload_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = gpucc_payload_archive_compare(&img->payloads[mid], p);
		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return img->payload_count;
}

static int digest_mismatch(const gpucc_image *img, const char *member, const char *what)
{
	return gpucc_image_member_error(img->name, member, what);
}

/* Where the bytes of the payload being streamed are hashed: here, into
 * md, or on a checker's thread (gpucc_image_stream_payload_checked). */
typedef struct payload_hash {
	gpucc_sha256 md;
	gpucc_payload_checker *checker;
	unsigned char *local; /* READ_CHUNK bytes to read into without a checker */
} payload_hash;

/* Room to read up to want (> 0) bytes into: *size bytes, at least
 * min(want, READ_CHUNK), at most want. */
static unsigned char *hash_room(payload_hash *h, uint64_t want, size_t *size)
{
	size_t min = want < READ_CHUNK ? (size_t)want : READ_CHUNK;
	unsigned char *room = h->local;
	*size = READ_CHUNK;
	if (h->checker)
		room = gpucc_payload_checker_room(h->checker, min, size);
	if (*size > want)
		*size = (size_t)want;
	return room;
}

/* Hash size bytes: read into the room just obtained, or in a memory image. */
static void hash_update(payload_hash *h, const void *data, size_t size)
{
	if (h->checker)
		gpucc_payload_checker_data(h->checker, data, size);
	else
		gpucc_sha256_update(&h->md, data, size);
}

/* Hash and hand size bytes at data (valid for this call) to sink; through
 * checker rooms when there is a checker, whose thread reads them later. */
static int hand_out(payload_hash *h, const unsigned char *data, size_t size,
                    gpucc_payload_sink sink, void *ctx)
{
	if (!h->checker) {
		gpucc_sha256_update(&h->md, data, size);
		return size ? sink(ctx, data, size) : 0;
	}
	size_t done = 0;
	while (done < size) {
		size_t n;
		unsigned char *room = hash_room(h, size - done, &n);
		memcpy(room, data + done, n);
		hash_update(h, room, n);
		int rc = sink(ctx, room, n);
		if (rc)
			return rc;
		done += n;
	}
	return 0;
}

/* Whether this read may use img's read-ahead window: true when no other
 * thread holds it, which it then holds until window_give_back. */
static bool window_take(gpucc_image *img)
{
	return !atomic_flag_test_and_set_explicit(&img->window_busy, memory_order_acquire);
}

static void window_give_back(gpucc_image *img)
{
	atomic_flag_clear_explicit(&img->window_busy, memory_order_release);
}

/* The random-access path: 1 when the header at the computed offset is not
 * what it must be (the caller then uses the cursor; nothing was hashed or
 * handed to sink), else 0 or an error. */
static int stream_at_offset(gpucc_image *img, const gpucc_payload *p, uint64_t offset,
                            gpucc_payload_sink sink, void *ctx, payload_hash *h)
{
	char member[GPUCC_PAYLOAD_MEMBER_SIZE];
	gpucc_payload_member_name(member, p);
	uint64_t size = p->size;
	uint64_t done = 0;
	if (img->fd < 0) {
		/* Memory images: hand out the mapped bytes directly. */
		if (!ustar_header_is(img, offset, member, size))
			return 1;
		while (done < size) {
			size_t want = size - done < READ_CHUNK ? (size_t)(size - done) : READ_CHUNK;
			if (offset + BLOCK + done + want > img->size)
				return digest_mismatch(img, member, GPUCC_TRUNCATED_MEMBER);
			const void *at = img->data + offset + BLOCK + done;
			hash_update(h, at, want);
			int rc = sink(ctx, at, want);
			if (rc)
				return rc;
			done += want;
		}
		return 0;
	}
	/* Through the read-ahead window, when it is free: no other thread is
	 * reading through it. */
	if (BLOCK + size <= WINDOW_SIZE && window_take(img)) {
		const unsigned char *member_bytes = NULL;
		ssize_t n = gpucc_read_window_get(&img->window, img->fd, offset, BLOCK + (size_t)size,
		                                  &member_bytes);
		int rc;
		if (n < 0)
			rc = gpucc_error_set_errno("cannot read '%s'", img->name);
		else if (n < BLOCK || !gpucc_ustar_is_member(member_bytes, member, size))
			rc = 1;
		else if ((size_t)n != BLOCK + size)
			rc = digest_mismatch(img, member, GPUCC_TRUNCATED_MEMBER);
		else
			rc = hand_out(h, member_bytes + BLOCK, (size_t)size, sink, ctx);
		window_give_back(img);
		return rc;
	}
	/* A member that fits in the room is read with its header in one go. */
	size_t room_size;
	unsigned char *room = hash_room(h, BLOCK + size, &room_size);
	if (room_size == BLOCK + size) {
		ssize_t n = read_at(img, offset, room, room_size);
		if (n < 0)
			return gpucc_error_set_errno("cannot read '%s'", img->name);
		if (n < BLOCK || !gpucc_ustar_is_member(room, member, size))
			return 1;
		if ((size_t)n != room_size)
			return digest_mismatch(img, member, GPUCC_TRUNCATED_MEMBER);
		hash_update(h, room + BLOCK, (size_t)size);
		return size ? sink(ctx, room + BLOCK, (size_t)size) : 0;
	}
	if (!ustar_header_is(img, offset, member, size))
		return 1;
	while (done < size) {
		size_t want;
		unsigned char *buffer = hash_room(h, size - done, &want);
		ssize_t n = read_at(img, offset + BLOCK + done, buffer, want);
		if (n < 0)
			return gpucc_error_set_errno("cannot read '%s'", img->name);
		if ((size_t)n != want)
			return digest_mismatch(img, member, GPUCC_TRUNCATED_MEMBER);
		hash_update(h, buffer, want);
		int rc = sink(ctx, buffer, want);
		if (rc)
			return rc;
		done += want;
	}
	return 0;
}

/* The index of the payload that path names, or payload_count when it
 * names none. */
static size_t listed_payload_index(const gpucc_image *img, const char *path)
{
	static const char prefix[] = "payloads/";
	size_t n = sizeof prefix - 1;
	/* Member names spell digests in lowercase only (image.md): another
	 * spelling names no listed payload. */
	if (strncmp(path, prefix, n) != 0 || strlen(path) < n + 64 ||
	    strspn(path + n, "0123456789abcdef") < 64)
		return img->payload_count;
	char hex[GPUCC_DIGEST_HEX_SIZE];
	memcpy(hex, path + n, 64);
	hex[64] = '\0';
	gpucc_payload p;
	if (gpucc_digest_from_hex(&p.sha256, hex) != 0) {
		gpucc_error_clear();
		return img->payload_count;
	}
	for (int part = 0; part < GPUCC_PART_COUNT; part++) {
		p.part = (gpucc_part)part;
		if (strcmp(path + n + 64, gpucc_part_extension(p.part)) == 0)
			return payload_index(img, &p);
	}
	return img->payload_count;
}

/* Why a member named path stands where the payload member expected (NULL:
 * nothing) should: it repeats a member already read (the format member,
 * the manifest or an earlier payload); it is a later listed payload, so
 * the expected one is missing; or it is not listed at all. */
static int unexpected_name(const gpucc_image *img, const char *path, const char *expected)
{
	char shown[SHOWN_NAME_SIZE];
	size_t at = listed_payload_index(img, path);
	size_t want = expected ? listed_payload_index(img, expected) : img->payload_count;
	if (strcmp(path, GPUCC_IMAGE_FORMAT_MEMBER) == 0 ||
	    strcmp(path, GPUCC_IMAGE_MANIFEST_MEMBER) == 0 || (at < img->payload_count && at < want))
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': member '%s' appears more than once",
		                       img->name, shown_name(shown, path));
	if (expected && at < img->payload_count)
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s': the manifest lists member '%s' but the image has no such "
		                       "member",
		                       img->name, expected);
	return gpucc_error_set(GPUCC_ECORRUPT, "'%s': member '%s' is not listed in the manifest",
	                       img->name, shown_name(shown, path));
}

/* Describe why the member under the cursor is not the expected one: an
 * unsafe or non-regular member, or a wrongly named one. */
static int unexpected_member(gpucc_image *img, struct archive_entry *e, const char *expected)
{
	int rc = check_member_kind(img, e);
	if (rc)
		return rc;
	return unexpected_name(img, GPUCC_LA->entry_pathname(e), expected);
}

/* Move the cursor to the header of payload index. */
static int cursor_seek(gpucc_image *img, size_t index)
{
	int rc;
	if (!img->cursor || img->cursor_next > index) {
		if ((rc = cursor_open(img)) || (rc = cursor_skip_head(img)))
			return rc;
	}
	for (;;) {
		struct archive_entry *e;
		const gpucc_payload *want = &img->payloads[img->cursor_next];
		char member[GPUCC_PAYLOAD_MEMBER_SIZE];
		gpucc_payload_member_name(member, want);
		int r = cursor_next_header(img, &e);
		if (r == ARCHIVE_EOF)
			return gpucc_error_set(GPUCC_ECORRUPT,
			                       "'%s': the manifest lists member '%s' but the image has no "
			                       "such member",
			                       img->name, member);
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
			return archive_failure(img, "reading a member header");
		const char *path = GPUCC_LA->entry_pathname(e);
		if (!path || strcmp(path, member) != 0 || check_member_kind(img, e) != 0)
			return unexpected_member(img, e, member);
		if (GPUCC_LA->entry_size(e) != (la_int64_t)want->size)
			return digest_mismatch(img, member, "its size differs from the manifest's");
		if (img->cursor_next == index) {
			img->cursor_next++;
			return 0;
		}
		img->cursor_next++; /* libarchive skips the unread data */
	}
}

static int stream_with_cursor(gpucc_image *img, size_t index, gpucc_payload_sink sink, void *ctx,
                              payload_hash *h)
{
	int rc = cursor_seek(img, index);
	if (rc)
		return rc;
	char member[GPUCC_PAYLOAD_MEMBER_SIZE];
	gpucc_payload_member_name(member, &img->payloads[index]);
	uint64_t size = img->payloads[index].size;
	uint64_t done = 0;
	for (;;) {
		/* Room for the rest, or one byte to see the end. */
		size_t want;
		unsigned char *buffer = hash_room(h, done < size ? size - done : 1, &want);
		la_ssize_t n = cursor_read_data(img, buffer, want);
		if (n < 0) {
			/* The cursor is unusable after a data error. */
			rc = archive_failure(img, "reading a payload");
			GPUCC_LA->read_free(img->cursor);
			img->cursor = NULL;
			return rc;
		}
		if (n == 0)
			break;
		done += (uint64_t)n;
		hash_update(h, buffer, (size_t)n);
		if ((rc = sink(ctx, buffer, (size_t)n)))
			return rc;
	}
	if (done != size)
		return digest_mismatch(img, member, "truncated: fewer bytes than the manifest lists");
	return 0;
}

/* Finish md and compare it with payload i's digest. */
static int check_digest(gpucc_image *img, size_t i, gpucc_sha256 *md)
{
	gpucc_digest got;
	gpucc_sha256_final(md, got.bytes);
	if (gpucc_digest_compare(&got, &img->payloads[i].sha256) == 0)
		return 0;
	char member[GPUCC_PAYLOAD_MEMBER_SIZE];
	gpucc_payload_member_name(member, &img->payloads[i]);
	return digest_mismatch(img, member, GPUCC_DIGEST_MISMATCH);
}

/* Stream payload p into sink; its digest is compared here, or queued on
 * checker. */
/* ---- parking ------------------------------------------------------------------ */

static int repark(gpucc_image *img, int rc);
static int replaced(const gpucc_image *img);
static int stream_unparked(gpucc_image *img, const gpucc_payload *p, gpucc_payload_sink sink,
                           void *ctx, gpucc_payload_checker *checker);

int gpucc_image_park(gpucc_image *img, const char *path)
{
	if (img->fd < 0 || !img->seekable || img->park_path)
		return 0; /* stays as it is */
	struct stat st;
	if (fstat(img->fd, &st) != 0)
		return gpucc_error_set_errno("cannot read '%s'", img->name);
	if ((uint64_t)st.st_size != (uint64_t)img->size)
		return replaced(img);
	if (!(img->park_path = strdup(path)))
		return gpucc_error_oom();
	img->park_dev = st.st_dev;
	img->park_ino = st.st_ino;
	img->park_size = st.st_size;
	img->park_mtime = st.st_mtim;
	return repark(img, 0);
}

bool gpucc_image_is_parked(const gpucc_image *img)
{
	return img->park_path != NULL;
}

static int replaced(const gpucc_image *img)
{
	return gpucc_error_set(GPUCC_ERROR,
	                       "'%s' was removed, replaced or changed while it was being read",
	                       img->name);
}

/* Reopen a parked image for a read; a no-op for any other image.  The file
 * must be the one first opened, as it was: the same device and inode, size
 * and modification time (its payloads' digests are checked anyway, but the
 * offsets and the manifest are those of the file first read). */
static int unpark(gpucc_image *img)
{
	if (!img->park_path || img->fd >= 0)
		return 0;
	/* O_NONBLOCK: a FIFO put in its place must not be waited on. */
	int fd = open(img->park_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno != ENOENT)
		return gpucc_error_set_errno("cannot reopen '%s'", img->name);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || st.st_dev != img->park_dev ||
	    st.st_ino != img->park_ino || st.st_size != img->park_size ||
	    st.st_mtim.tv_sec != img->park_mtime.tv_sec ||
	    st.st_mtim.tv_nsec != img->park_mtime.tv_nsec) {
		if (fd >= 0)
			close(fd);
		return replaced(img);
	}
	img->fd = fd;
	return 0;
}

/* Close a parked image's descriptor again after a read that returned rc.
 * A compressed image keeps its cursor, the decompressor where it stood
 * (its reads go through fd_position, not the descriptor's offset): the
 * next read reopens the file and goes on, so that reading the payloads in
 * archive order stays one pass of the decompressor.  Everything else read
 * ahead goes: a merge may park 100,000 images. */
static int repark(gpucc_image *img, int rc)
{
	if (!img->park_path || img->fd < 0)
		return rc;
	close(img->fd);
	img->fd = -1;
	gpucc_read_window_release(&img->window);
	gpucc_read_window_init(&img->window, WINDOW_SIZE);
	if (img->compressed && img->cursor)
		return rc; /* libarchive may still hold fd_buffer's bytes */
	if (img->cursor) {
		GPUCC_LA->read_free(img->cursor);
		img->cursor = NULL;
		img->cursor_after_head = false;
	}
	free(img->fd_buffer);
	img->fd_buffer = NULL;
	return rc;
}

static int stream_payload(gpucc_image *img, const gpucc_payload *p, gpucc_payload_sink sink,
                          void *ctx, gpucc_payload_checker *checker)
{
	int rc = unpark(img);
	if (rc)
		return rc;
	return repark(img, stream_unparked(img, p, sink, ctx, checker));
}

/* A payload of an entry found through the index of an image whose
 * manifest is not parsed, at the offset the index gives: 1 when that is
 * not where its member is (the caller then parses the manifest and reads
 * as for any image), else 0 or an error. */
static int stream_by_index(gpucc_image *img, const gpucc_payload *p, gpucc_payload_sink sink,
                           void *ctx, gpucc_payload_checker *checker)
{
	uint64_t offset;
	/* Writers hash on a checker's thread: they read whole images, whose
	 * manifests they parse anyway. */
	if (checker || manifest_loaded(img) || indexed_payload_offset(img, p, &offset) != 0)
		return 1;
	/* Members begin on block boundaries, inside the image. */
	if (offset % BLOCK != 0 || img->size < BLOCK || offset > img->size - BLOCK)
		return 1;
	unsigned char local[READ_CHUNK];
	payload_hash h = {.local = local};
	gpucc_sha256_init(&h.md);
	int rc = stream_at_offset(img, p, offset, sink, ctx, &h);
	if (rc == 0) {
		gpucc_digest got;
		gpucc_sha256_final(&h.md, got.bytes);
		if (gpucc_digest_compare(&got, &p->sha256) != 0) {
			char member[GPUCC_PAYLOAD_MEMBER_SIZE];
			gpucc_payload_member_name(member, p);
			rc = digest_mismatch(img, member, GPUCC_DIGEST_MISMATCH);
		}
	}
	return rc;
}

static int stream_unparked(gpucc_image *img, const gpucc_payload *p, gpucc_payload_sink sink,
                           void *ctx, gpucc_payload_checker *checker)
{
	int by_index = stream_by_index(img, p, sink, ctx, checker);
	if (by_index != 1)
		return by_index;
	int ready = ensure_payloads(img);
	if (ready)
		return ready;
	size_t index = payload_index(img, p);
	if (index == img->payload_count)
		return gpucc_error_set(GPUCC_ENOTFOUND, "'%s': no such payload in the image", img->name);
	unsigned char local[READ_CHUNK];
	payload_hash h = {.checker = checker, .local = local};
	if (checker)
		gpucc_payload_checker_begin(checker, img->name, p);
	else
		gpucc_sha256_init(&h.md);
	int rc = 1;
	if (img->offsets_known)
		rc = stream_at_offset(img, p, img->header_offsets[index], sink, ctx, &h);
	if (rc == 1) {
		pthread_mutex_lock(&img->lock);
		rc = stream_with_cursor(img, index, sink, ctx, &h);
		pthread_mutex_unlock(&img->lock);
	}
	/* Nothing follows the last payload to read ahead: its window goes, so
	 * that a merge holding thousands of open cache entries (one payload
	 * each) holds no window for any of them once it is read.  (A window
	 * another thread is using stays: that thread may still need it.) */
	if (index + 1 == img->payload_count && window_take(img)) {
		gpucc_read_window_release(&img->window);
		window_give_back(img);
	}
	if (rc == 0 && checker) {
		gpucc_payload_checker_end(checker);
	} else if (rc == 0) {
		rc = check_digest(img, index, &h.md);
	}
	return rc;
}

int gpucc_image_payload_location(gpucc_image *img, const gpucc_payload *p,
                                 gpucc_payload_location *out)
{
	int ready = ensure_payloads(img);
	if (ready)
		return ready;
	size_t index = payload_index(img, p);
	if (index == img->payload_count)
		return gpucc_error_set(GPUCC_ENOTFOUND, "'%s': no such payload in the image", img->name);
	if (!img->offsets_known || img->park_path)
		return 1; /* a parked image is read through gpucc_image_stream_payload */
	out->fd = img->fd;
	out->data = img->fd < 0 ? img->data : NULL;
	out->image_size = img->size;
	out->header_offset = img->header_offsets[index];
	return 0;
}

int gpucc_image_stream_payload(gpucc_image *img, const gpucc_payload *p, gpucc_payload_sink sink,
                               void *ctx)
{
	return stream_payload(img, p, sink, ctx, NULL);
}

int gpucc_image_stream_payload_checked(gpucc_image *img, const gpucc_payload *p,
                                       gpucc_payload_sink sink, void *ctx,
                                       gpucc_payload_checker *checker)
{
	return stream_payload(img, p, sink, ctx, checker);
}

typedef struct memory_sink {
	unsigned char *data;
	size_t used, capacity, size;
} memory_sink;

/* Append to a buffer that grows with the bytes that arrive (up to the
 * size the manifest lists), not with the size it claims. */
static int to_memory(void *ctx, const void *data, size_t size)
{
	memory_sink *m = ctx;
	if (size > m->size - m->used)
		return gpucc_error_set(GPUCC_ECORRUPT, "payload is larger than the manifest lists");
	if (size > m->capacity - m->used) {
		size_t capacity = m->capacity ? m->capacity : READ_CHUNK;
		/* The first chunk no larger than the payload: a 4 KiB kernel read
		 * by a package is held in 4 KiB, not 64. */
		if (capacity > m->size)
			capacity = m->size;
		while (capacity - m->used < size)
			capacity = capacity > m->size / 2 ? m->size : 2 * capacity;
		unsigned char *grown = realloc(m->data, capacity + 1);
		if (!grown)
			return gpucc_error_oom();
		m->data = grown;
		m->capacity = capacity;
	}
	memcpy(m->data + m->used, data, size);
	m->used += size;
	return 0;
}

int gpucc_image_read_payload(void **out, size_t *out_size, gpucc_image *img,
                             const gpucc_payload *payload)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(out_size);
	*out_size = 0;
	GPUCC_REQUIRE(img);
	GPUCC_REQUIRE(payload);
	if (payload->size > SIZE_MAX - 1)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': payload too large for memory", img->name);
	memory_sink m = {malloc(1), 0, 0, (size_t)payload->size};
	if (!m.data)
		return gpucc_error_oom();
	int rc = gpucc_image_stream_payload(img, payload, to_memory, &m);
	if (rc) {
		free(m.data);
		return rc;
	}
	*out = m.data;
	*out_size = m.used;
	return 0;
}

static int to_fd(void *ctx, const void *data, size_t size)
{
	int fd = *(int *)ctx;
	const char *p = data;
	while (size > 0) {
		ssize_t n = write(fd, p, size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return gpucc_error_set_errno("cannot write payload");
		p += n;
		size -= (size_t)n;
	}
	return 0;
}

int gpucc_image_copy_payload(gpucc_image *img, const gpucc_payload *payload, int fd)
{
	GPUCC_REQUIRE(img);
	GPUCC_REQUIRE(payload);
	return gpucc_image_stream_payload(img, payload, to_fd, &fd);
}

/* ---- verify --------------------------------------------------------------- */

static int discard(void *ctx, const void *data, size_t size)
{
	(void)ctx;
	(void)data;
	(void)size;
	return 0;
}


/* ---- verify's walk through the ustar headers ------------------------------ */

/* Where verify's direct walk reads the image: an uncompressed image's own
 * bytes (in place in memory, a piece at a time from a regular file), or a
 * compressed image's decompressed bytes, in order, from one libarchive
 * reader of the raw format.  So verify decompresses an image once: the
 * members and what follows their end-of-archive marker come from the same
 * pass.  (libarchive's tar reader cannot give both: it stops at the marker,
 * and no public call of libarchive hands out the decompressed bytes past
 * what the format reader consumed.)  Reads go forward only: each offset
 * asked for is at or after the previous one. */
typedef struct walk_source {
	gpucc_image *img;
	struct archive *raw;        /* compressed: the raw reader; else NULL */
	const unsigned char *piece; /* the bytes at hand: piece_size of them */
	size_t piece_size;
	uint64_t piece_offset;      /* where piece starts in the (decompressed) image */
	bool failed;                /* raw: the decompressor failed, or a limit stopped it */
	unsigned char buffer[READ_CHUNK]; /* a regular file's piece */
} walk_source;

/* Start a walk from the beginning of img.  A failure to open the raw
 * reader is not an error here: the walk then finds no bytes (failed). */
static int walk_open(walk_source *s, gpucc_image *img)
{
	s->img = img;
	s->raw = NULL;
	s->piece = img->fd < 0 ? img->data : NULL;
	s->piece_size = img->fd < 0 ? img->size : 0;
	s->piece_offset = 0;
	s->failed = false;
	if (!img->compressed)
		return 0;
	if (img->cursor) {
		/* The raw reader takes over the source's position. */
		GPUCC_LA->read_free(img->cursor);
		img->cursor = NULL;
	}
	int rc = source_open(img, &s->raw, READ_AS_RAW);
	if (rc)
		return rc;
	s->piece = NULL;
	s->piece_size = 0;
	/* One zstd stream under the bytes, as opening checked. */
	struct archive_entry *e;
	s->failed = GPUCC_LA->read_open1(s->raw) != ARCHIVE_OK ||
	            GPUCC_LA->filter_count(s->raw) > 2 ||
	            GPUCC_LA->read_next_header(s->raw, &e) != ARCHIVE_OK;
	return 0;
}

static void walk_close(walk_source *s)
{
	if (s->raw)
		GPUCC_LA->read_free(s->raw);
	s->raw = NULL;
}

/* The next piece of the image for offset: 1, 0 at the end of the image
 * (for a compressed one also when the decompressor failed or a limit
 * stopped it, s->failed), or an error code. */
static int walk_next_piece(walk_source *s, uint64_t offset)
{
	if (!s->raw) {
		if (s->img->fd < 0)
			return 0; /* a memory image is one piece */
		ssize_t n = read_at(s->img, offset, s->buffer, sizeof s->buffer);
		if (n < 0)
			return gpucc_error_set_errno("cannot read '%s'", s->img->name);
		s->piece = s->buffer;
		s->piece_size = (size_t)n;
		s->piece_offset = offset;
		return n > 0;
	}
	if (s->failed)
		return 0;
	const void *block;
	size_t size;
	la_int64_t block_offset;
	int r = GPUCC_LA->read_data_block(s->raw, &block, &size, &block_offset);
	if (r == ARCHIVE_EOF)
		return 0;
	if ((r != ARCHIVE_OK && r != ARCHIVE_WARN) || over_limits(s->img, s->raw)) {
		s->failed = true;
		return 0;
	}
	s->piece_offset += s->piece_size;
	s->piece = block;
	s->piece_size = size;
	return 1;
}

/* The bytes at offset: *out points at them and the count that follow in
 * one piece is returned; 0 at the end of the image; or an error code. */
static ssize_t walk_at(walk_source *s, uint64_t offset, const unsigned char **out)
{
	while (offset < s->piece_offset || offset - s->piece_offset >= s->piece_size) {
		int rc = walk_next_piece(s, offset);
		if (rc <= 0)
			return rc;
	}
	size_t skip = (size_t)(offset - s->piece_offset);
	*out = s->piece + skip;
	return (ssize_t)(s->piece_size - skip);
}

/* Copy len bytes at offset into buf: the count copied (short at the end of
 * the image), or an error code. */
static ssize_t walk_read(walk_source *s, uint64_t offset, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		const unsigned char *p;
		ssize_t n = walk_at(s, offset + got, &p);
		if (n <= 0)
			return n < 0 ? n : (ssize_t)got;
		size_t take = (size_t)n < len - got ? (size_t)n : len - got;
		memcpy((unsigned char *)buf + got, p, take);
		got += take;
	}
	return (ssize_t)got;
}

/* Hash size bytes at offset into md: 0, 1 when the image ends first, or
 * an error code. */
static int walk_hash(walk_source *s, uint64_t offset, uint64_t size, gpucc_sha256 *md)
{
	while (size > 0) {
		const unsigned char *p;
		ssize_t n = walk_at(s, offset, &p);
		if (n <= 0)
			return n < 0 ? (int)n : 1;
		size_t take = (uint64_t)n < size ? (size_t)n : (size_t)size;
		gpucc_sha256_update(md, p, take);
		offset += take;
		size -= take;
	}
	return 0;
}

/* ---- what follows the end-of-archive marker ------------------------------ */

/* Only zero bytes may follow the end-of-archive marker (formats/image.md,
 * "Reading"): the padding to a whole record that tar writers add.  Any
 * other byte is data a tar reader never sees -- a second image appended
 * to the first, the rest of another download -- so verify refuses it. */
static int data_after_end(const gpucc_image *img, uint64_t offset)
{
	return gpucc_error_set(GPUCC_ECORRUPT,
	                       "'%s': data after the end of the archive, at offset %" PRIu64
	                       "%s (only zero bytes may follow its end-of-archive marker)",
	                       img->name, offset,
	                       img->compressed ? " of its decompressed bytes" : "");
}

/* The index of the first byte of data[0..size) that is not zero, or size. */
static size_t first_nonzero(const unsigned char *data, size_t size)
{
	size_t i = 0;
	while (i < size && data[i] == 0)
		i++;
	return i;
}

/* The walk's bytes from offset (the end of the marker) to the end of the
 * image.  A compressed image's stream must also end cleanly: the
 * decompressor refuses input after the last zstd frame that is not a
 * frame.  A second frame is part of the stream (zstd decompresses
 * concatenated frames as one), so what it holds counts as bytes after the
 * marker. */
static int walk_tail(walk_source *s, uint64_t offset)
{
	for (;;) {
		const unsigned char *p;
		ssize_t n = walk_at(s, offset, &p);
		if (n < 0)
			return (int)n;
		if (n == 0)
			break;
		size_t at = first_nonzero(p, (size_t)n);
		if (at < (size_t)n)
			return data_after_end(s->img, offset + at);
		offset += (uint64_t)n;
	}
	/* (Limits stop decompressors only: an uncompressed walk, which may
	 * run beside a cursor's, does not look at them.) */
	if (s->raw && s->img->limit_hit)
		return limit_error(s->img);
	if (s->failed)
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s': damaged data after the end of the archive (%s)",
		                       s->img->name,
		                       GPUCC_LA->error_string(s->raw) ? GPUCC_LA->error_string(s->raw)
		                                                    : "unexpected end of data");
	return 0;
}

/* What follows the end-of-archive marker, which ends at offset (of the
 * decompressed bytes, for a compressed image), after libarchive's walk:
 * a second pass over a compressed image.  An image read from a pipe is
 * checked up to its marker only: what a tar reader has taken from the
 * pipe past it cannot be told apart from what it used. */
static int check_tail(gpucc_image *img, uint64_t offset)
{
	if (img->fd >= 0 && !img->seekable)
		return 0;
	walk_source s;
	int rc = walk_open(&s, img);
	if (rc == 0)
		rc = walk_tail(&s, offset);
	walk_close(&s);
	return rc;
}

/* Whether index (size bytes) is the index img's manifest gives, byte for
 * byte (formats/image.md, "The index"): 0, or GPUCC_ECORRUPT naming the
 * first byte that differs. */
/* An index held in memory, for gpucc_index_open. */
typedef struct index_bytes {
	const unsigned char *data;
	uint64_t size;
} index_bytes;

static int index_bytes_read(void *ctx, uint64_t offset, void *buf, size_t len)
{
	const index_bytes *b = ctx;
	if (offset > b->size || len > b->size - offset)
		return gpucc_error_set(GPUCC_ECORRUPT, "a read past the end of the index");
	memcpy(buf, b->data + offset, len);
	return 0;
}

static int check_index(gpucc_image *img, const unsigned char *index, uint64_t size)
{
	/* A header that lookups would refuse is named as they name it. */
	index_bytes bytes = {index, size};
	gpucc_index_reader reader = {.read = index_bytes_read, .ctx = &bytes, .name = img->name,
	                             .size = size};
	int rc = gpucc_index_open(&reader, img->manifest_size);
	if (rc)
		return rc;
	size_t count = img->manifest.entry_count;
	const gpucc_entry **list = malloc((count ? count : 1) * sizeof *list);
	if (!list)
		return gpucc_error_oom();
	for (size_t i = 0; i < count; i++)
		list[i] = &img->manifest.entries[i];
	uint64_t head = BLOCK + gpucc_ustar_padded(img->format_size) + BLOCK +
	                gpucc_ustar_padded(img->manifest_size);
	unsigned char *want = NULL;
	size_t want_size = 0;
	rc = gpucc_index_build(&want, &want_size, list, count, img->manifest.spans,
	                           img->manifest_size, head);
	free(list);
	if (rc)
		return rc;
	uint64_t at = 0;
	while (at < size && at < want_size && index[at] == want[at])
		at++;
	free(want);
	if (at == size && size == want_size)
		return 0;
	char what[160];
	if (size != want_size)
		snprintf(what, sizeof what,
		         "it disagrees with the manifest (%" PRIu64 " bytes where the manifest gives "
		         "%zu; the first difference at byte %" PRIu64 ")",
		         size, want_size, at);
	else
		snprintf(what, sizeof what, "it disagrees with the manifest (at byte %" PRIu64 ")", at);
	return gpucc_image_member_error(img->name, GPUCC_IMAGE_INDEX_MEMBER, what);
}

/* The walk's index member, size bytes of data at offset, against the
 * manifest. */
static int walk_index(walk_source *s, uint64_t offset, uint64_t size)
{
	gpucc_image *img = s->img;
	int rc = check_index_size(img, size);
	if (rc)
		return rc;
	unsigned char *data = malloc(size ? (size_t)size : 1);
	if (!data)
		return gpucc_error_oom();
	ssize_t n = walk_read(s, offset, data, (size_t)size);
	if (n < 0)
		rc = (int)n;
	else if ((uint64_t)n != size)
		rc = digest_mismatch(img, GPUCC_IMAGE_INDEX_MEMBER, GPUCC_TRUNCATED_MEMBER);
	else
		rc = check_index(img, data, size);
	free(data);
	return rc;
}

/* The members of the walk, from its beginning: every member in order,
 * named, sized and hashed as the manifest says, then the end-of-archive
 * marker, whose end goes to *end.  1 when a header is not a plain ustar
 * one (a link, a pax header, damage). */
static int walk_members(walk_source *s, gpucc_sha256 *md, uint64_t *end)
{
	gpucc_image *img = s->img;
	uint64_t at = 0;
	/* The format member, the index (minor version 1 and up), the manifest. */
	size_t head = img->format_minor ? 3 : 2;
	size_t member = 0, members = head + img->payload_count;
	for (;; member++) {
		unsigned char block[BLOCK];
		gpucc_ustar_header h;
		char expected[GPUCC_PAYLOAD_MEMBER_SIZE] = "";
		ssize_t n = walk_read(s, at, block, BLOCK);
		if (n < 0)
			return (int)n;
		if (n != BLOCK)
			return gpucc_error_set(GPUCC_ECORRUPT,
			                       "'%s': truncated image: it ends before its last member%s",
			                       img->name, member < members ? "" : "'s end marker");
		if (gpucc_ustar_is_zero(block)) {
			at += BLOCK;
			break;
		}
		if (!gpucc_ustar_parse(block, &h) || !gpucc_ustar_is_regular(&h))
			return 1;
		int rc = check_path(img, h.name);
		if (rc)
			return rc;
		if (member == 0)
			snprintf(expected, sizeof expected, "%s", GPUCC_IMAGE_FORMAT_MEMBER);
		else if (member == 1 && head == 3)
			snprintf(expected, sizeof expected, "%s", GPUCC_IMAGE_INDEX_MEMBER);
		else if (member == head - 1)
			snprintf(expected, sizeof expected, "%s", GPUCC_IMAGE_MANIFEST_MEMBER);
		else if (member < members)
			gpucc_payload_member_name(expected, &img->payloads[member - head]);
		if (!expected[0] || strcmp(h.name, expected) != 0)
			return unexpected_name(img, h.name, expected[0] ? expected : NULL);
		if (member == 1 && head == 3 && (rc = walk_index(s, at + BLOCK, h.size)))
			return rc;
		if (member >= head) {
			size_t i = member - head;
			if (h.size != img->payloads[i].size)
				return digest_mismatch(img, expected, "its size differs from the manifest's");
			gpucc_sha256_init(md);
			if ((rc = walk_hash(s, at + BLOCK, h.size, md)) == 1)
				return digest_mismatch(img, expected, GPUCC_TRUNCATED_MEMBER);
			if (rc || (rc = check_digest(img, i, md)))
				return rc;
		}
		at += BLOCK + gpucc_ustar_padded(h.size);
	}
	if (member < members) {
		char missing[GPUCC_PAYLOAD_MEMBER_SIZE];
		if (member < head)
			return gpucc_error_set(GPUCC_ECORRUPT, "'%s': truncated image: no manifest",
			                       img->name);
		gpucc_payload_member_name(missing, &img->payloads[member - head]);
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s': the manifest lists member '%s' but the image has no such "
		                       "member",
		                       img->name, missing);
	}
	*end = at;
	return 0;
}

/* verify's walk through the ustar headers, for an image in memory or a
 * regular file: its members, then what follows their end-of-archive
 * marker, in one pass (decompressing a compressed image once).  1 when
 * libarchive's walk should look instead and name the defect: a header
 * that is not a plain ustar one (a link, a pax header, damage); and, in a
 * compressed image, any defect before the marker, since libarchive's walk
 * has always described those (a damaged stream in its own words) and a
 * sound image never needs it.  A limit that stopped the decompressor is
 * reported here: libarchive's walk would only reach it again. */
static int verify_directly(gpucc_image *img, gpucc_sha256 *md)
{
	walk_source s;
	uint64_t end = 0;
	int rc = walk_open(&s, img);
	if (rc == 0 && (rc = walk_members(&s, md, &end)) == 0)
		rc = walk_tail(&s, end);
	else if (rc != 0 && s.raw)
		rc = img->limit_hit ? limit_error(img) : 1;
	walk_close(&s);
	return rc;
}

/* With the cursor in the last member (the manifest, in an image without
 * payloads), the rest of the archive: its end-of-archive marker, and no
 * further member unless others_pass (then they are skipped, their data
 * decompressed, and the marker must follow them).  libarchive takes the
 * end of the data for the end of the archive when the end-of-archive
 * blocks are missing; the direct walk does not.  So read the last member
 * to its end (the padding included), note where the tar reader stands,
 * and see whether reaching the end consumed any zero block.  buffer: room
 * to read into. */
static int cursor_check_end(gpucc_image *img, unsigned char buffer[READ_CHUNK], bool others_pass)
{
	for (;;) {
		la_ssize_t n;
		while ((n = cursor_read_data(img, buffer, READ_CHUNK)) > 0)
			;
		if (n < 0)
			return archive_failure(img, "reading the last member");
		la_int64_t last_end = GPUCC_LA->filter_bytes(img->cursor, 0);
		struct archive_entry *e;
		int rc, r = cursor_next_header(img, &e);
		if ((r == ARCHIVE_OK || r == ARCHIVE_WARN) && others_pass)
			continue;
		if (r == ARCHIVE_OK || r == ARCHIVE_WARN) {
			rc = check_member_kind(img, e);
			return rc ? rc : unexpected_name(img, GPUCC_LA->entry_pathname(e), NULL);
		}
		if (r != ARCHIVE_EOF)
			return archive_failure(img, "reading past the last payload");
		if (GPUCC_LA->filter_bytes(img->cursor, 0) == last_end)
			return gpucc_error_set(GPUCC_ECORRUPT,
			                       "'%s': truncated image: it ends before its last member's end "
			                       "marker",
			                       img->name);
		return 0;
	}
}

/* verify's walk through libarchive: what a tar reader sees. */
static int verify_with_libarchive(gpucc_image *img)
{
	int rc = 0;
	struct archive_entry *e;
	int r;
	/* Opening through libarchive (a pipe, a compressed image) leaves the
	 * cursor after the manifest: continue there.  Otherwise walk from the
	 * start. */
	if (!img->cursor || !img->cursor_after_head || img->cursor_next != 0) {
		if ((rc = cursor_open(img)) || (rc = read_format_member(img)) ||
		    (img->format_minor && (rc = read_index_member(img))))
			return rc;
		r = cursor_next_header(img, &e);
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
			return archive_failure(img, "reading the manifest header");
	}
	if (img->format_minor && (rc = check_index(img, img->index_data, img->index_size)))
		return rc;
	unsigned char local[READ_CHUNK];
	payload_hash h = {.local = local};
	for (size_t i = 0; i < img->payload_count && rc == 0; i++) {
		gpucc_sha256_init(&h.md);
		rc = stream_with_cursor(img, i, discard, NULL, &h);
		if (rc == 0)
			rc = check_digest(img, i, &h.md);
	}
	if (rc)
		return rc;
	rc = cursor_check_end(img, local, false);
	la_int64_t end = GPUCC_LA->filter_bytes(img->cursor, 0);
	/* Leave no half-used cursor behind. */
	GPUCC_LA->read_free(img->cursor);
	img->cursor = NULL;
	return rc ? rc : check_tail(img, end > 0 ? (uint64_t)end : 0);
}

static int verify_unparked(gpucc_image *img);

int gpucc_image_verify(gpucc_image *img)
{
	GPUCC_REQUIRE(img);
	int rc = unpark(img);
	return rc ? rc : repark(img, verify_unparked(img));
}

/* An uncompressed image in memory or a file is walked without the
 * cursor, by any number of threads at once; the cursor's walks (a
 * compressed image's decompressor, libarchive's reader) hold the lock. */
static int verify_unparked(gpucc_image *img)
{
	int rc;
	if ((rc = ensure_payloads(img)) || (rc = gpucc_manifest_check_keys(&img->manifest, img->name)))
		return rc;
	gpucc_sha256 hash;
	rc = 1;
	bool direct = (img->fd < 0 || img->seekable) && !force_libarchive;
	if (direct && !img->compressed)
		rc = verify_directly(img, &hash);
	if (rc != 1)
		return rc;
	pthread_mutex_lock(&img->lock);
	if (direct && img->compressed)
		rc = verify_directly(img, &hash);
	if (rc == 1)
		rc = verify_with_libarchive(img);
	pthread_mutex_unlock(&img->lock);
	return rc;
}

/* ---- whether an image is whole ------------------------------------------------ */

/* The fewest bytes an uncompressed image of img's members can have: each
 * member a one-block header and its data padded to whole blocks, then one
 * zero block (formats/image.md, "Reading": one is enough).  Headers of any
 * other form (pax) only take more. */
static uint64_t least_length(const gpucc_image *img)
{
	uint64_t n = 3 * BLOCK + gpucc_ustar_padded(img->format_size) +
	             gpucc_ustar_padded(img->manifest_size);
	if (img->format_minor)
		n += BLOCK + gpucc_ustar_padded(img->index_size);
	for (size_t i = 0; i < img->payload_count; i++)
		n += BLOCK + gpucc_ustar_padded(img->payloads[i].size);
	return n;
}

/* A compressed image read on from where its cursor stands (its payloads
 * read so far in archive order) through the members not read yet (their
 * data decompressed and skipped) to the end-of-archive marker.  Members
 * after the last payload are verify's to refuse: an uncompressed image is
 * only measured. */
static int check_whole_compressed(gpucc_image *img)
{
	int rc = 0;
	if (!img->cursor && ((rc = cursor_open(img)) || (rc = cursor_skip_head(img))))
		return rc;
	if (img->cursor_next < img->payload_count)
		rc = cursor_seek(img, img->payload_count - 1);
	unsigned char buffer[READ_CHUNK];
	if (rc == 0)
		rc = cursor_check_end(img, buffer, true);
	/* At the end (or broken): a later read starts again. */
	if (img->cursor)
		GPUCC_LA->read_free(img->cursor);
	img->cursor = NULL;
	img->cursor_after_head = false;
	return rc;
}

int gpucc_image_check_whole(gpucc_image *img)
{
	int rc = ensure_payloads(img);
	if (rc)
		return rc;
	if (!img->compressed) {
		if (!img->seekable && !img->data)
			return 0; /* a pipe: its length is not known */
		uint64_t least = least_length(img);
		if ((uint64_t)img->size >= least)
			return 0;
		/* Too short to be whole: verify names the defect (a member cut
		 * short, a link whose data is elsewhere), as a read of it would. */
		if ((rc = gpucc_image_verify(img)) != 0)
			return rc;
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s': truncated image: %" PRIu64 " bytes, but the members its "
		                       "manifest lists take at least %" PRIu64,
		                       img->name, (uint64_t)img->size, least);
	}
	if ((rc = unpark(img)))
		return rc;
	pthread_mutex_lock(&img->lock);
	rc = check_whole_compressed(img);
	pthread_mutex_unlock(&img->lock);
	return repark(img, rc);
}

#ifdef GPUCC_TEST_HOOKS
void gpucc_image_force_libarchive(bool force)
{
	force_libarchive = force;
}
#endif
