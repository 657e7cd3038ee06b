/*
 * lib/image/image_writer_plain.c -- writing an uncompressed image without
 * libarchive, copying payloads on several threads (image_writer_impl.h).
 *
 * An uncompressed v1 image is a run of members, each a 512-byte ustar header,
 * the data and zero padding to a whole block, then two zero blocks
 * (formats/image.md).  The writer knows every member's size before it writes
 * a byte, so it knows where every member goes, and threads can fill disjoint
 * ranges of the file at once.  A merge of a gigabyte is mostly reading,
 * hashing (every payload copied is verified, docs/design.md invariant 5) and
 * writing payloads; here that work is spread over the cores.
 *
 * The payloads are cut into chunks of consecutive members.  Workers, and
 * the main thread once it has written the format member, the manifest and
 * the payloads that come from memory or files, take chunks in archive order.
 * For each payload a worker reads the member from its source image through a
 * read-ahead window (read_window.h), checks that the header is the member's
 * own, hashes the data, and appends header, data and padding to its output
 * buffer, which it writes with pwrite at the member's offset.  A payload
 * whose header is not where the layout says is left to the main thread,
 * which streams it through the image reader after the workers are done (the
 * reader then finds what is wrong, as for any other write).
 *
 * Of several failures, the one reported is the first in the file, as one
 * thread writing front to back would have met it; workers take no chunk
 * that starts after a failure.  The bytes are those the libarchive writer
 * produces (lib/tests/test_image_writer_plain.c compares them).
 */
#include "image_writer_impl.h"

#include "errors.h"
#include "image_index.h"
#include "manifest.h"
#include "parallel.h"
#include "read_window.h"
#include "sha256.h"
#include "ustar.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK GPUCC_USTAR_BLOCK
#define OUT_BUFFER ((size_t)1 << 20)
#define WRITEBACK_STEP ((uint64_t)32 << 20)
/* Copying less than this from images is not worth a thread. */
#define PARALLEL_MIN_BYTES ((uint64_t)4 << 20)
#define WORKERS_MAX 8
/* Each thread's read-ahead windows, one per source file up to WINDOW_SLOTS
 * (files beyond share them), hold WINDOW_BUDGET in all, and all threads'
 * together WINDOWS_TOTAL: with 8 threads at 4 MiB each, a 50,000-entry
 * merge peaked at 76 MiB on 16 cores, past the 64 MiB it is held to. */
#define WINDOW_BUDGET ((size_t)4 << 20)
#define WINDOWS_TOTAL ((size_t)12 << 20)
#define WINDOW_SLOTS 128
#define WINDOW_MIN ((size_t)32 << 10)
#define WINDOW_MAX ((size_t)256 << 10)
#define NO_FAILURE SIZE_MAX

/* Atomic: processes write images on several threads at once (a cache
 * insert per thread), and a counter is no reason for a data race. */
_Atomic unsigned long gpucc_plain_images_written;
_Atomic unsigned long gpucc_plain_workers_started;
static size_t threads_override;

void gpucc_plain_writer_threads(size_t threads)
{
	threads_override = threads;
}

/* ---- writing at offsets through a buffer --------------------------------- */

typedef struct plain_out {
	int fd;
	const char *path;
	bool no_sync;
	unsigned char *buf; /* capacity bytes */
	size_t capacity, used;
	uint64_t at;        /* the file offset of buf[0] */
	uint64_t unsynced;  /* bytes written since writeback was last started */
} plain_out;

static int out_flush(plain_out *o)
{
	size_t done = 0;
	while (done < o->used) {
		ssize_t n = pwrite(o->fd, o->buf + done, o->used - done, (off_t)(o->at + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return gpucc_error_set_errno("cannot write '%s'", o->path);
		}
		done += (size_t)n;
	}
	o->at += o->used;
	o->unsynced += o->used;
	o->used = 0;
	if (o->unsynced >= WRITEBACK_STEP && !o->no_sync) {
		/* Start writing back, so that the fsync before the rename finds
		 * little left to do. */
		sync_file_range(o->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
		o->unsynced = 0;
	}
	return 0;
}

/* Go on writing at offset. */
static int out_seek(plain_out *o, uint64_t offset)
{
	if (o->at + o->used == offset)
		return 0;
	int rc = out_flush(o);
	o->at = offset;
	return rc;
}

/* Free room at the end of the buffer: *size >= 1 bytes at *room. */
static int out_room(plain_out *o, unsigned char **room, size_t *size)
{
	int rc = o->used == o->capacity ? out_flush(o) : 0;
	*room = o->buf + o->used;
	*size = o->capacity - o->used;
	return rc;
}

/* Append size bytes of data, or zeros when data is NULL. */
static int out_put(plain_out *o, const void *data, size_t size)
{
	const unsigned char *p = data;
	while (size > 0) {
		unsigned char *room;
		size_t n;
		int rc = out_room(o, &room, &n);
		if (rc)
			return rc;
		if (n > size)
			n = size;
		if (p) {
			memcpy(room, p, n);
			p += n;
		} else {
			memset(room, 0, n);
		}
		o->used += n;
		size -= n;
	}
	return 0;
}

static int out_sink(void *ctx, const void *data, size_t size)
{
	return out_put(ctx, data, size);
}

/* A member's header; its data follows. */
static int out_header(plain_out *o, const char *name, uint64_t size, int64_t mtime)
{
	unsigned char header[BLOCK];
	if (!gpucc_ustar_format(header, name, size, mtime)) /* checked by the layout */
		return gpucc_error_set(GPUCC_ERROR, "internal error: '%s' needs a pax header", name);
	return out_put(o, header, BLOCK);
}

static int out_padding(plain_out *o, uint64_t size)
{
	return out_put(o, NULL, (size_t)(gpucc_ustar_padded(size) - size));
}

/* ---- the layout --------------------------------------------------------- */

typedef struct plain_item {
	const output_payload *o;
	uint64_t offset;             /* of its header */
	bool parallel;               /* from an image: any thread copies it, through ... */
	gpucc_payload_location loc;  /* ... this */
	bool deferred;               /* its header was elsewhere: the main thread streams it */
} plain_item;

typedef struct plain_job {
	const gpucc_plain_image *image;
	plain_item *items;
	size_t item_count;
	size_t *chunks;              /* chunk i is items [chunks[i], chunks[i + 1]) */
	size_t chunk_count;
	atomic_size_t next_chunk;
	size_t window_size;

	/* The first failure in the file: its position (0 for the format
	 * member and the manifest, i + 1 for items[i], item_count + 1 for the
	 * end), code and message. */
	pthread_mutex_t lock;
	atomic_size_t failed_at;
	int failure_code;
	int failure_errno; /* gpucc_error_last_errno: a full disk or not, for the cache */
	char failure[1024];
} plain_job;

/* Record the calling thread's last error as the failure at position, if it
 * comes before any recorded. */
static void record_failure(plain_job *job, size_t position)
{
	const gpucc_error *e = gpucc_error_last();
	pthread_mutex_lock(&job->lock);
	if (position < atomic_load(&job->failed_at)) {
		job->failure_code = e->code ? e->code : GPUCC_ERROR;
		job->failure_errno = gpucc_error_last_errno();
		snprintf(job->failure, sizeof job->failure, "%s", e->message);
		atomic_store(&job->failed_at, position);
	}
	pthread_mutex_unlock(&job->lock);
}

static bool failed_before(plain_job *job, size_t position)
{
	return atomic_load(&job->failed_at) < position;
}

/* Where every member goes; GPUCC_OTHER_PATH when some member needs more
 * than a ustar block or some payload cannot be located in its image. */
static int lay_out(plain_job *job, uint64_t *end, uint64_t *parallel_bytes)
{
	const gpucc_plain_image *image = job->image;
	char format[GPUCC_FORMAT_TEXT_SIZE];
	size_t format_size = gpucc_image_format_text(format, image->index != NULL);
	if (!gpucc_ustar_fits(GPUCC_IMAGE_FORMAT_MEMBER, format_size, image->mtime) ||
	    !gpucc_ustar_fits(GPUCC_IMAGE_MANIFEST_MEMBER, image->manifest_size, image->mtime) ||
	    (image->index &&
	     !gpucc_ustar_fits(GPUCC_IMAGE_INDEX_MEMBER, image->index_size, image->mtime)))
		return GPUCC_OTHER_PATH;
	uint64_t offset = BLOCK + gpucc_ustar_padded(format_size) + BLOCK +
	                  gpucc_ustar_padded(image->manifest_size);
	if (image->index)
		offset += BLOCK + gpucc_ustar_padded(image->index_size);
	*parallel_bytes = 0;
	for (size_t i = 0; i < job->item_count; i++) {
		plain_item *it = &job->items[i];
		it->o = &image->payloads[i];
		char name[GPUCC_PAYLOAD_MEMBER_SIZE];
		gpucc_payload_member_name(name, &it->o->payload);
		if (!gpucc_ustar_fits(name, it->o->payload.size, image->mtime))
			return GPUCC_OTHER_PATH;
		it->offset = offset;
		offset += BLOCK + gpucc_ustar_padded(it->o->payload.size);
		if (it->o->image) {
			int rc = gpucc_image_payload_location(it->o->image, &it->o->payload, &it->loc);
			if (rc)
				return rc;
			it->parallel = true;
			*parallel_bytes += it->o->payload.size;
		}
	}
	*end = offset;
	return 0;
}

/* Chunks of about target bytes of payloads each. */
static int cut_chunks(plain_job *job, uint64_t target)
{
	job->chunks = malloc((job->item_count + 1) * sizeof *job->chunks);
	if (!job->chunks)
		return gpucc_error_oom();
	uint64_t bytes = target;
	for (size_t i = 0; i < job->item_count; i++) {
		if (bytes >= target) {
			job->chunks[job->chunk_count++] = i;
			bytes = 0;
		}
		bytes += BLOCK + job->items[i].o->payload.size;
	}
	job->chunks[job->chunk_count] = job->item_count;
	return 0;
}

/* ---- copying payloads ----------------------------------------------------- */

typedef struct plain_worker {
	plain_job *job;
	plain_out out;
	gpucc_read_window windows[WINDOW_SLOTS]; /* their bytes allocated on use */
} plain_worker;

/* A thread's output buffer and windows; the buffer no larger than the
 * image (end bytes), which for a cache entry is a few KiB. */
static int worker_init(plain_worker *wk, plain_job *job, uint64_t end)
{
	const gpucc_plain_image *image = job->image;
	*wk = (plain_worker){.job = job,
	                     .out = {.fd = image->fd, .path = image->path, .no_sync = image->no_sync}};
	wk->out.capacity = end < OUT_BUFFER ? (size_t)end : OUT_BUFFER;
	if (!(wk->out.buf = malloc(wk->out.capacity)))
		return gpucc_error_oom();
	for (size_t i = 0; i < WINDOW_SLOTS; i++)
		gpucc_read_window_init(&wk->windows[i], job->window_size);
	return 0;
}

static void worker_release(plain_worker *wk)
{
	for (size_t i = 0; i < WINDOW_SLOTS; i++)
		gpucc_read_window_release(&wk->windows[i]);
	free(wk->out.buf);
}

/* The first len bytes of the member of item it (fewer at the end of the
 * image), or -1 with errno set. */
static ssize_t member_bytes(plain_worker *wk, const plain_item *it, size_t len,
                            const unsigned char **at)
{
	const gpucc_payload_location *loc = &it->loc;
	if (loc->data) {
		if (loc->header_offset >= loc->image_size)
			return 0;
		uint64_t left = loc->image_size - loc->header_offset;
		*at = loc->data + loc->header_offset;
		return (ssize_t)(left < len ? left : len);
	}
	gpucc_read_window *w = &wk->windows[(size_t)loc->fd % WINDOW_SLOTS];
	return gpucc_read_window_get(w, loc->fd, loc->header_offset, len, at);
}

/* The rest of a payload too large for a window, read straight into the
 * output buffer behind its header. */
static int copy_large(plain_worker *wk, const plain_item *it, const char *image_name,
                      const char *member, gpucc_sha256 *md)
{
	uint64_t size = it->o->payload.size, done = 0;
	while (done < size) {
		unsigned char *room;
		size_t want;
		int rc = out_room(&wk->out, &room, &want);
		if (rc)
			return rc;
		if (want > size - done)
			want = (size_t)(size - done);
		ssize_t n = gpucc_pread_full(it->loc.fd, room, want, it->loc.header_offset + BLOCK + done);
		if (n < 0)
			return gpucc_error_set_errno("cannot read '%s'", image_name);
		if ((size_t)n != want)
			return gpucc_image_member_error(image_name, member, GPUCC_TRUNCATED_MEMBER);
		gpucc_sha256_update(md, room, want);
		wk->out.used += want;
		done += want;
	}
	return 0;
}

/* Copy one payload from its image, verified; *defer when its header is not
 * where the layout says. */
static int copy_item(plain_worker *wk, const plain_item *it, bool *defer)
{
	const gpucc_payload *p = &it->o->payload;
	const char *image_name = gpucc_image_name(it->o->image);
	char member[GPUCC_PAYLOAD_MEMBER_SIZE];
	gpucc_payload_member_name(member, p);
	bool whole = it->loc.data || BLOCK + p->size <= wk->job->window_size;
	const unsigned char *bytes;
	ssize_t n = member_bytes(wk, it, whole ? BLOCK + (size_t)p->size : BLOCK, &bytes);
	if (n < 0)
		return gpucc_error_set_errno("cannot read '%s'", image_name);
	if (n < BLOCK || !gpucc_ustar_is_member(bytes, member, p->size)) {
		*defer = true;
		return 0;
	}
	if (whole && (uint64_t)n != BLOCK + p->size)
		return gpucc_image_member_error(image_name, member, GPUCC_TRUNCATED_MEMBER);

	gpucc_sha256 md;
	gpucc_sha256_init(&md);
	int rc = out_seek(&wk->out, it->offset);
	if (rc == 0)
		rc = out_header(&wk->out, member, p->size, wk->job->image->mtime);
	if (rc == 0 && whole) {
		gpucc_sha256_update(&md, bytes + BLOCK, (size_t)p->size);
		rc = out_put(&wk->out, bytes + BLOCK, (size_t)p->size);
	} else if (rc == 0) {
		rc = copy_large(wk, it, image_name, member, &md);
	}
	if (rc == 0)
		rc = out_padding(&wk->out, p->size);
	if (rc)
		return rc;
	gpucc_digest got;
	gpucc_sha256_final(&md, got.bytes);
	if (gpucc_digest_compare(&got, &p->sha256) != 0)
		return gpucc_image_member_error(image_name, member, GPUCC_DIGEST_MISMATCH);
	return 0;
}

/* Take chunks until none is left (or every one left starts after a
 * failure), then write out what is buffered. */
static void run_chunks(plain_worker *wk)
{
	plain_job *job = wk->job;
	size_t last = 0;
	for (;;) {
		size_t c = atomic_fetch_add(&job->next_chunk, 1);
		if (c >= job->chunk_count || failed_before(job, job->chunks[c] + 1))
			break;
		for (size_t i = job->chunks[c]; i < job->chunks[c + 1]; i++) {
			plain_item *it = &job->items[i];
			if (!it->parallel)
				continue;
			int rc = copy_item(wk, it, &it->deferred);
			if (rc) {
				record_failure(job, i + 1);
				break;
			}
			last = i;
		}
	}
	if (out_flush(&wk->out))
		record_failure(job, last + 1);
}

/* A thread of the pool: workers[index]'s share of the chunks. */
static int worker_main(void *workers, size_t index)
{
	run_chunks(&((plain_worker *)workers)[index]);
	return 0; /* failures are the job's (record_failure) */
}

/* ---- the main thread -------------------------------------------------- */

/* Write one payload the reader streams (from memory, a file, or an image
 * whose header was not in its place). */
static int stream_item(plain_out *o, const plain_item *it, int64_t mtime)
{
	char member[GPUCC_PAYLOAD_MEMBER_SIZE];
	gpucc_payload_member_name(member, &it->o->payload);
	int rc = out_seek(o, it->offset);
	if (rc == 0)
		rc = out_header(o, member, it->o->payload.size, mtime);
	if (rc == 0)
		rc = gpucc_output_payload_copy(it->o, out_sink, o, NULL);
	if (rc == 0)
		rc = out_padding(o, it->o->payload.size);
	return rc;
}

/* The format member, the index and the manifest, from offset 0. */
static int write_head(plain_out *o, const gpucc_plain_image *image)
{
	char format[GPUCC_FORMAT_TEXT_SIZE];
	size_t format_size = gpucc_image_format_text(format, image->index != NULL);
	int rc = out_header(o, GPUCC_IMAGE_FORMAT_MEMBER, format_size, image->mtime);
	if (rc == 0)
		rc = out_put(o, format, format_size);
	if (rc == 0)
		rc = out_padding(o, format_size);
	if (rc == 0 && image->index) {
		rc = out_header(o, GPUCC_IMAGE_INDEX_MEMBER, image->index_size, image->mtime);
		if (rc == 0)
			rc = out_put(o, image->index, image->index_size);
		if (rc == 0)
			rc = out_padding(o, image->index_size);
	}
	if (rc == 0)
		rc = out_header(o, GPUCC_IMAGE_MANIFEST_MEMBER, image->manifest_size, image->mtime);
	if (rc == 0)
		rc = gpucc_manifest_write_to(out_sink, o, image->entries, image->entry_count);
	if (rc == 0)
		rc = out_padding(o, image->manifest_size);
	return rc;
}

/* The size of the read-ahead windows: a thread's budget over the window
 * slots the items' source files use (a thread's window for file descriptor
 * fd is slot fd % WINDOW_SLOTS). */
static void size_windows(plain_job *job, size_t threads)
{
	size_t budget = WINDOWS_TOTAL / threads < WINDOW_BUDGET ? WINDOWS_TOTAL / threads : WINDOW_BUDGET;
	size_t used = 0;
	bool seen[WINDOW_SLOTS] = {false};
	for (size_t i = 0; i < job->item_count; i++) {
		int fd = job->items[i].loc.fd;
		if (job->items[i].parallel && fd >= 0 && !seen[(size_t)fd % WINDOW_SLOTS]) {
			seen[(size_t)fd % WINDOW_SLOTS] = true;
			used++;
		}
	}
	size_t size = budget / (used ? used : 1);
	size = size < WINDOW_MIN ? WINDOW_MIN : size > WINDOW_MAX ? WINDOW_MAX : size;
	job->window_size = size & ~(size_t)4095;
}

static int write_image(plain_job *job, uint64_t end, uint64_t parallel_bytes)
{
	const gpucc_plain_image *image = job->image;
	size_t workers_wanted = 0;
	if (threads_override) {
		workers_wanted = (threads_override < WORKERS_MAX ? threads_override : WORKERS_MAX) - 1;
	} else if (parallel_bytes >= PARALLEL_MIN_BYTES) {
		size_t cpus = gpucc_cpu_count();
		workers_wanted = (cpus < WORKERS_MAX ? cpus : WORKERS_MAX) - 1;
	}
	uint64_t target = parallel_bytes / ((workers_wanted + 1) * 8);
	target = target < ((uint64_t)1 << 20) ? (uint64_t)1 << 20
	         : target > ((uint64_t)32 << 20) ? (uint64_t)32 << 20
	                                          : target;
	size_windows(job, workers_wanted + 1);
	int rc = cut_chunks(job, target);
	if (rc)
		return rc;

	plain_worker main_worker;
	plain_worker workers[WORKERS_MAX];
	if ((rc = worker_init(&main_worker, job, end)))
		return rc;
	/* Fewer threads than wanted is slower, not wrong. */
	size_t ready = 0;
	while (ready < workers_wanted && worker_init(&workers[ready], job, end) == 0)
		ready++;
	gpucc_pool pool;
	size_t started = gpucc_pool_start(&pool, ready, 0, worker_main, workers);
	for (size_t i = started; i < ready; i++)
		worker_release(&workers[i]);

	plain_out *o = &main_worker.out;
	if ((rc = write_head(o, image)))
		record_failure(job, 0);
	for (size_t i = 0; i < job->item_count && !failed_before(job, i + 1); i++)
		if (!job->items[i].parallel && stream_item(o, &job->items[i], image->mtime))
			record_failure(job, i + 1);
	run_chunks(&main_worker);
	gpucc_pool_join(&pool);
	for (size_t i = 0; i < started; i++)
		worker_release(&workers[i]);
	for (size_t i = 0; i < job->item_count && !failed_before(job, i + 1); i++)
		if (job->items[i].deferred && stream_item(o, &job->items[i], image->mtime))
			record_failure(job, i + 1);
	if (!failed_before(job, job->item_count + 1) &&
	    (out_seek(o, end) || out_put(o, NULL, 2 * BLOCK) || out_flush(o)))
		record_failure(job, job->item_count + 1);
	worker_release(&main_worker);

	gpucc_plain_workers_started += started;
	if (atomic_load(&job->failed_at) == NO_FAILURE) {
		gpucc_plain_images_written++;
		return 0;
	}
	int code = gpucc_error_set(job->failure_code, "%s", job->failure);
	gpucc_error_keep_errno(job->failure_errno);
	return code;
}

int gpucc_plain_image_write(const gpucc_plain_image *image)
{
	plain_job job = {.image = image, .item_count = image->payload_count};
	atomic_init(&job.next_chunk, 0);
	atomic_init(&job.failed_at, NO_FAILURE);
	job.items = calloc(image->payload_count + 1, sizeof *job.items);
	if (!job.items)
		return gpucc_error_oom();
	uint64_t end = 0, parallel_bytes = 0;
	int rc = lay_out(&job, &end, &parallel_bytes);
	if (rc == 0) {
		pthread_mutex_init(&job.lock, NULL);
		rc = write_image(&job, end, parallel_bytes);
		pthread_mutex_destroy(&job.lock);
	}
	free(job.chunks);
	free(job.items);
	return rc;
}
