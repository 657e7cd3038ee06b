/*
 * lib/image/image_open.c -- opening and closing images (formats/image.md): the
 * checks of each member's header, reading the format member, the index and
 * the manifest, directly from an uncompressed image's ustar headers or
 * through the cursor (lib/image/image_reader.c), and the handle made, given
 * its limits, and freed.  lib/image/image_reader_impl.h describes the
 * reader as a whole and what its other files do.
 */
#include "image_reader_impl.h"

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
#include <sys/stat.h>
#include <unistd.h>

#define FORMAT_MEMBER_MAX 64

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
