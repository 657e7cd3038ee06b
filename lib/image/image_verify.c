/*
 * lib/image/image_verify.c -- verifying an open image (gpucc_image_verify): every
 * member against the manifest, by a walk through its ustar headers or,
 * where that cannot tell, through libarchive, and what follows its
 * end-of-archive marker; the same without the payloads' bytes
 * (gpucc_image_verify_structure); and whether an image is whole
 * (gpucc_image_check_whole).
 */
#include "image_reader_impl.h"

#include "errors.h"
#include "ustar.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	int rc = gpucc_image_source_open(img, &s->raw, READ_AS_RAW);
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
		ssize_t n = gpucc_image_read_at(s->img, offset, s->buffer, sizeof s->buffer);
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
	if ((r != ARCHIVE_OK && r != ARCHIVE_WARN) || gpucc_image_over_limits(s->img, s->raw)) {
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
		return gpucc_image_limit_error(s->img);
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

/* Whether index (size bytes) is the index img's manifest gives, byte for
 * byte (formats/image.md, "The index"): 0, or GPUCC_ECORRUPT naming the
 * first byte that differs. */
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
	int rc = gpucc_image_check_index_size(img, size);
	if (rc)
		return rc;
	unsigned char *data = malloc(size ? (size_t)size : 1);
	if (!data)
		return gpucc_error_oom();
	ssize_t n = walk_read(s, offset, data, (size_t)size);
	if (n < 0)
		rc = (int)n;
	else if ((uint64_t)n != size)
		rc = gpucc_image_digest_mismatch(img, GPUCC_IMAGE_INDEX_MEMBER, GPUCC_TRUNCATED_MEMBER);
	else
		rc = check_index(img, data, size);
	free(data);
	return rc;
}

/* The members of the walk, from its beginning: every member in order,
 * named, sized and (with payloads) hashed as the manifest says, then the
 * end-of-archive marker, whose end goes to *end.  Without payloads their
 * data is stepped over: an uncompressed image's is never read.  1 when a
 * header is not a plain ustar one (a link, a pax header, damage). */
static int walk_members(walk_source *s, gpucc_sha256 *md, bool payloads, uint64_t *end)
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
		int rc = gpucc_image_check_path(img, h.name);
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
			return gpucc_image_unexpected_name(img, h.name, expected[0] ? expected : NULL);
		if (member == 1 && head == 3 && (rc = walk_index(s, at + BLOCK, h.size)))
			return rc;
		if (member >= head) {
			size_t i = member - head;
			if (h.size != img->payloads[i].size)
				return gpucc_image_digest_mismatch(img, expected,
				                                   "its size differs from the manifest's");
		}
		if (member >= head && payloads) {
			size_t i = member - head;
			gpucc_sha256_init(md);
			if ((rc = walk_hash(s, at + BLOCK, h.size, md)) == 1)
				return gpucc_image_digest_mismatch(img, expected, GPUCC_TRUNCATED_MEMBER);
			if (rc || (rc = gpucc_image_check_digest(img, i, md)))
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
static int verify_directly(gpucc_image *img, gpucc_sha256 *md, bool payloads)
{
	walk_source s;
	uint64_t end = 0;
	int rc = walk_open(&s, img);
	if (rc == 0 && (rc = walk_members(&s, md, payloads, &end)) == 0)
		rc = walk_tail(&s, end);
	else if (rc != 0 && s.raw)
		rc = img->limit_hit ? gpucc_image_limit_error(img) : 1;
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
		while ((n = gpucc_image_cursor_read_data(img, buffer, READ_CHUNK)) > 0)
			;
		if (n < 0)
			return gpucc_image_archive_failure(img, "reading the last member");
		la_int64_t last_end = GPUCC_LA->filter_bytes(img->cursor, 0);
		struct archive_entry *e;
		int rc, r = gpucc_image_cursor_next_header(img, &e);
		if ((r == ARCHIVE_OK || r == ARCHIVE_WARN) && others_pass)
			continue;
		if (r == ARCHIVE_OK || r == ARCHIVE_WARN) {
			rc = gpucc_image_check_member_kind(img, e);
			return rc ? rc : gpucc_image_unexpected_name(img, GPUCC_LA->entry_pathname(e), NULL);
		}
		if (r != ARCHIVE_EOF)
			return gpucc_image_archive_failure(img, "reading past the last payload");
		if (GPUCC_LA->filter_bytes(img->cursor, 0) == last_end)
			return gpucc_error_set(GPUCC_ECORRUPT,
			                       "'%s': truncated image: it ends before its last member's end "
			                       "marker",
			                       img->name);
		return 0;
	}
}

/* verify's walk through libarchive: what a tar reader sees.  Without
 * payloads their data is still read through (libarchive reads in order),
 * not checked. */
static int verify_with_libarchive(gpucc_image *img, bool payloads)
{
	int rc = 0;
	struct archive_entry *e;
	int r;
	/* Opening through libarchive (a pipe, a compressed image) leaves the
	 * cursor after the manifest: continue there.  Otherwise walk from the
	 * start. */
	if (!img->cursor || !img->cursor_after_head || img->cursor_next != 0) {
		if ((rc = gpucc_image_cursor_open(img)) || (rc = gpucc_image_read_format_member(img)) ||
		    (img->format_minor && (rc = gpucc_image_read_index_member(img))))
			return rc;
		r = gpucc_image_cursor_next_header(img, &e);
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
			return gpucc_image_archive_failure(img, "reading the manifest header");
	}
	if (img->format_minor && (rc = check_index(img, img->index_data, img->index_size)))
		return rc;
	unsigned char local[READ_CHUNK];
	payload_hash h = {.local = local};
	for (size_t i = 0; i < img->payload_count && rc == 0; i++) {
		gpucc_sha256_init(&h.md);
		rc = gpucc_image_stream_with_cursor(img, i, discard, NULL, &h);
		if (rc == 0 && payloads)
			rc = gpucc_image_check_digest(img, i, &h.md);
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

static int verify_unparked(gpucc_image *img, bool payloads);

int gpucc_image_verify(gpucc_image *img)
{
	GPUCC_REQUIRE(img);
	int rc = gpucc_image_unpark(img);
	return rc ? rc : gpucc_image_repark(img, verify_unparked(img, true));
}

int gpucc_image_verify_structure(gpucc_image *img)
{
	GPUCC_REQUIRE(img);
	int rc = gpucc_image_unpark(img);
	return rc ? rc : gpucc_image_repark(img, verify_unparked(img, false));
}

/* An uncompressed image in memory or a file is walked without the
 * cursor, by any number of threads at once; the cursor's walks (a
 * compressed image's decompressor, libarchive's reader) hold the lock. */
static int verify_unparked(gpucc_image *img, bool payloads)
{
	int rc;
	if ((rc = gpucc_image_ensure_payloads(img)) ||
	    (rc = gpucc_manifest_check_keys(&img->manifest, img->name)))
		return rc;
	gpucc_sha256 hash;
	rc = 1;
	bool direct = (img->fd < 0 || img->seekable) && !gpucc_image_libarchive_only;
	if (direct && !img->compressed)
		rc = verify_directly(img, &hash, payloads);
	if (rc != 1)
		return rc;
	pthread_mutex_lock(&img->lock);
	if (direct && img->compressed)
		rc = verify_directly(img, &hash, payloads);
	if (rc == 1)
		rc = verify_with_libarchive(img, payloads);
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
	if (!img->cursor &&
	    ((rc = gpucc_image_cursor_open(img)) || (rc = gpucc_image_cursor_skip_head(img))))
		return rc;
	if (img->cursor_next < img->payload_count)
		rc = gpucc_image_cursor_seek(img, img->payload_count - 1);
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
	int rc = gpucc_image_ensure_payloads(img);
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
	if ((rc = gpucc_image_unpark(img)))
		return rc;
	pthread_mutex_lock(&img->lock);
	rc = check_whole_compressed(img);
	pthread_mutex_unlock(&img->lock);
	return gpucc_image_repark(img, rc);
}
