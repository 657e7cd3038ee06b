/*
 * lib/image/image_payload.c -- reading an open image's payloads: at computed
 * offsets where the image allows (formats/image.md, "Random access"), else
 * through the sequential cursor, each verified against its size and
 * SHA-256; and parking, for images held open without a descriptor.
 */
#include "image_reader_impl.h"

#include "errors.h"
#include "hex.h"
#include "ustar.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int gpucc_image_digest_mismatch(const gpucc_image *img, const char *member, const char *what)
{
	return gpucc_image_member_error(img->name, member, what);
}

static bool ustar_header_is(gpucc_image *img, uint64_t offset, const char *name, uint64_t size)
{
	unsigned char block[BLOCK];
	return gpucc_image_read_at(img, offset, block, BLOCK) == BLOCK &&
	       gpucc_ustar_is_member(block, name, size);
}

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

/* The random-access path: GPUCC_OTHER_PATH when the header at the computed
 * offset is not what it must be (the caller then uses the cursor; nothing was hashed or
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
			return GPUCC_OTHER_PATH;
		while (done < size) {
			size_t want = size - done < READ_CHUNK ? (size_t)(size - done) : READ_CHUNK;
			if (offset + BLOCK + done + want > img->size)
				return gpucc_image_digest_mismatch(img, member, GPUCC_TRUNCATED_MEMBER);
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
			rc = GPUCC_OTHER_PATH;
		else if ((size_t)n != BLOCK + size)
			rc = gpucc_image_digest_mismatch(img, member, GPUCC_TRUNCATED_MEMBER);
		else
			rc = hand_out(h, member_bytes + BLOCK, (size_t)size, sink, ctx);
		window_give_back(img);
		return rc;
	}
	/* A member that fits in the room is read with its header in one go. */
	size_t room_size;
	unsigned char *room = hash_room(h, BLOCK + size, &room_size);
	if (room_size == BLOCK + size) {
		ssize_t n = gpucc_image_read_at(img, offset, room, room_size);
		if (n < 0)
			return gpucc_error_set_errno("cannot read '%s'", img->name);
		if (n < BLOCK || !gpucc_ustar_is_member(room, member, size))
			return GPUCC_OTHER_PATH;
		if ((size_t)n != room_size)
			return gpucc_image_digest_mismatch(img, member, GPUCC_TRUNCATED_MEMBER);
		hash_update(h, room + BLOCK, (size_t)size);
		return size ? sink(ctx, room + BLOCK, (size_t)size) : 0;
	}
	if (!ustar_header_is(img, offset, member, size))
		return GPUCC_OTHER_PATH;
	while (done < size) {
		size_t want;
		unsigned char *buffer = hash_room(h, size - done, &want);
		ssize_t n = gpucc_image_read_at(img, offset + BLOCK + done, buffer, want);
		if (n < 0)
			return gpucc_error_set_errno("cannot read '%s'", img->name);
		if ((size_t)n != want)
			return gpucc_image_digest_mismatch(img, member, GPUCC_TRUNCATED_MEMBER);
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
	    gpucc_hex_span(path + n, true) < 64)
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
int gpucc_image_unexpected_name(const gpucc_image *img, const char *path, const char *expected)
{
	char shown[SHOWN_NAME_SIZE];
	size_t at = listed_payload_index(img, path);
	size_t want = expected ? listed_payload_index(img, expected) : img->payload_count;
	if (strcmp(path, GPUCC_IMAGE_FORMAT_MEMBER) == 0 ||
	    strcmp(path, GPUCC_IMAGE_MANIFEST_MEMBER) == 0 || (at < img->payload_count && at < want))
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': member '%s' appears more than once",
		                       img->name, gpucc_image_shown_name(shown, path));
	if (expected && at < img->payload_count)
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s': the manifest lists member '%s' but the image has no such "
		                       "member",
		                       img->name, expected);
	return gpucc_error_set(GPUCC_ECORRUPT, "'%s': member '%s' is not listed in the manifest",
	                       img->name, gpucc_image_shown_name(shown, path));
}

/* Describe why the member under the cursor is not the expected one: an
 * unsafe or non-regular member, or a wrongly named one. */
static int unexpected_member(gpucc_image *img, struct archive_entry *e, const char *expected)
{
	int rc = gpucc_image_check_member_kind(img, e);
	if (rc)
		return rc;
	return gpucc_image_unexpected_name(img, GPUCC_LA->entry_pathname(e), expected);
}

/* Move the cursor to the header of payload index. */
int gpucc_image_cursor_seek(gpucc_image *img, size_t index)
{
	int rc;
	if (!img->cursor || img->cursor_next > index) {
		if ((rc = gpucc_image_cursor_open(img)) || (rc = gpucc_image_cursor_skip_head(img)))
			return rc;
	}
	for (;;) {
		struct archive_entry *e;
		const gpucc_payload *want = &img->payloads[img->cursor_next];
		char member[GPUCC_PAYLOAD_MEMBER_SIZE];
		gpucc_payload_member_name(member, want);
		int r = gpucc_image_cursor_next_header(img, &e);
		if (r == ARCHIVE_EOF)
			return gpucc_error_set(GPUCC_ECORRUPT,
			                       "'%s': the manifest lists member '%s' but the image has no "
			                       "such member",
			                       img->name, member);
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
			return gpucc_image_archive_failure(img, "reading a member header");
		const char *path = GPUCC_LA->entry_pathname(e);
		if (!path || strcmp(path, member) != 0 || gpucc_image_check_member_kind(img, e) != 0)
			return unexpected_member(img, e, member);
		if (GPUCC_LA->entry_size(e) != (la_int64_t)want->size)
			return gpucc_image_digest_mismatch(img, member, "its size differs from the manifest's");
		if (img->cursor_next == index) {
			img->cursor_next++;
			return 0;
		}
		img->cursor_next++; /* libarchive skips the unread data */
	}
}

int gpucc_image_stream_with_cursor(gpucc_image *img, size_t index, gpucc_payload_sink sink,
                                   void *ctx, payload_hash *h)
{
	int rc = gpucc_image_cursor_seek(img, index);
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
		la_ssize_t n = gpucc_image_cursor_read_data(img, buffer, want);
		if (n < 0) {
			/* The cursor is unusable after a data error. */
			rc = gpucc_image_archive_failure(img, "reading a payload");
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
		return gpucc_image_digest_mismatch(img, member,
		                                   "truncated: fewer bytes than the manifest lists");
	return 0;
}

/* Finish md and compare it with payload i's digest. */
int gpucc_image_check_digest(gpucc_image *img, size_t i, gpucc_sha256 *md)
{
	gpucc_digest got;
	gpucc_sha256_final(md, got.bytes);
	if (gpucc_digest_compare(&got, &img->payloads[i].sha256) == 0)
		return 0;
	char member[GPUCC_PAYLOAD_MEMBER_SIZE];
	gpucc_payload_member_name(member, &img->payloads[i]);
	return gpucc_image_digest_mismatch(img, member, GPUCC_DIGEST_MISMATCH);
}

/* ---- parking ------------------------------------------------------------------ */

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
	return gpucc_image_repark(img, 0);
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
int gpucc_image_unpark(gpucc_image *img)
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
int gpucc_image_repark(gpucc_image *img, int rc)
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

/* Stream payload p into sink; its digest is compared here, or queued on
 * checker. */
static int stream_payload(gpucc_image *img, const gpucc_payload *p, gpucc_payload_sink sink,
                          void *ctx, gpucc_payload_checker *checker)
{
	int rc = gpucc_image_unpark(img);
	if (rc)
		return rc;
	return gpucc_image_repark(img, stream_unparked(img, p, sink, ctx, checker));
}

/* A payload of an entry found through the index of an image whose
 * manifest is not parsed, at the offset the index gives: GPUCC_OTHER_PATH
 * when that is not where its member is (the caller then parses the manifest and reads
 * as for any image), else 0 or an error. */
static int stream_by_index(gpucc_image *img, const gpucc_payload *p, gpucc_payload_sink sink,
                           void *ctx, gpucc_payload_checker *checker)
{
	uint64_t offset;
	/* Writers hash on a checker's thread: they read whole images, whose
	 * manifests they parse anyway. */
	if (checker || gpucc_image_manifest_loaded(img) ||
	    gpucc_image_indexed_payload_offset(img, p, &offset) != 0)
		return GPUCC_OTHER_PATH;
	/* Members begin on block boundaries, inside the image. */
	if (offset % BLOCK != 0 || img->size < BLOCK || offset > img->size - BLOCK)
		return GPUCC_OTHER_PATH;
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
			rc = gpucc_image_digest_mismatch(img, member, GPUCC_DIGEST_MISMATCH);
		}
	}
	return rc;
}

static int stream_unparked(gpucc_image *img, const gpucc_payload *p, gpucc_payload_sink sink,
                           void *ctx, gpucc_payload_checker *checker)
{
	int by_index = stream_by_index(img, p, sink, ctx, checker);
	if (by_index != GPUCC_OTHER_PATH)
		return by_index;
	int ready = gpucc_image_ensure_payloads(img);
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
	int rc = GPUCC_OTHER_PATH;
	if (img->offsets_known)
		rc = stream_at_offset(img, p, img->header_offsets[index], sink, ctx, &h);
	if (rc == GPUCC_OTHER_PATH) {
		pthread_mutex_lock(&img->lock);
		rc = gpucc_image_stream_with_cursor(img, index, sink, ctx, &h);
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
		rc = gpucc_image_check_digest(img, index, &h.md);
	}
	return rc;
}

int gpucc_image_payload_location(gpucc_image *img, const gpucc_payload *p,
                                 gpucc_payload_location *out)
{
	int ready = gpucc_image_ensure_payloads(img);
	if (ready)
		return ready;
	size_t index = payload_index(img, p);
	if (index == img->payload_count)
		return gpucc_error_set(GPUCC_ENOTFOUND, "'%s': no such payload in the image", img->name);
	if (!img->offsets_known || img->park_path)
		return GPUCC_OTHER_PATH; /* a parked image is read through gpucc_image_stream_payload */
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
