/*
 * lib/image/image_writer.c -- the streaming image writer (formats/image.md).
 *
 * Adding an entry records its metadata (copied into the writer's arena) and
 * where each payload's bytes will come from; nothing is written until
 * commit.  Commit sorts entries by key, writes the format member, the
 * canonical manifest and the distinct payloads in archive order, copying
 * each from its source through a bounded buffer and checking its digest
 * again, into a temporary file that replaces the target only when all of it
 * is written, checked and flushed.  An uncompressed image whose members
 * all fit ustar headers and whose image payloads can be read at computed
 * offsets is written by lib/image/image_writer_plain.c, copying on several
 * threads; anything else through libarchive here, where payloads copied
 * from images are hashed on a second thread (payload_checker.h) when there
 * are enough of them to pay for it.  Either way every check is done before
 * anything is published, and the bytes depend only on the set of entries
 * and the write options: fixed member order, mode 0644, uid/gid 0, no owner
 * names, one mtime for every member.
 */
#include "image_writer_impl.h"

#include "arena.h"
#include "atomic_file.h"
#include "config_internal.h"
#include "entry.h"
#include "errors.h"
#include "image_index.h"
#include "libarchive_loader.h"
#include "manifest.h"
#include "parallel.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One entry to write.  Entries added from an open image are borrowed from
 * it (it stays open until commit anyway), so a merge of 50,000 entries
 * holds each entry's metadata once, not twice. */
typedef struct writer_entry {
	const gpucc_entry *entry; /* borrowed from image, or an arena copy */
	gpucc_image *image;       /* the source of every payload, or NULL and ... */
	payload_source *sources;  /* ... per payload (arena), parallel to entry->payloads */
	bool removed;
} writer_entry;

struct gpucc_image_writer {
	char *path;
	gpucc_write_options options;
	bool no_sync;  /* options.no_sync */
	bool no_sweep; /* gpucc_image_writer_leave_leftovers */
	int (*before_publish)(void *ctx); /* gpucc_image_writer_before_publish */
	void *before_publish_ctx;
	gpucc_arena *arena;
	writer_entry *entries;
	size_t count, capacity, live;
	/* Open-addressing index from key to entries[] position + 1. */
	size_t *slots;
	size_t slot_count;
};

/* ---- the key index -------------------------------------------------------- */

static size_t slot_of(const gpucc_digest *key, size_t slot_count)
{
	size_t h;
	memcpy(&h, key->bytes, sizeof h); /* keys are uniformly distributed */
	return h & (slot_count - 1);
}

static int index_grow(gpucc_image_writer *w)
{
	size_t count = w->slot_count ? w->slot_count * 2 : 1024;
	size_t *slots = calloc(count, sizeof *slots);
	if (!slots)
		return gpucc_error_oom();
	for (size_t i = 0; i < w->count; i++) {
		size_t s = slot_of(&w->entries[i].entry->key, count);
		while (slots[s])
			s = (s + 1) & (count - 1);
		slots[s] = i + 1;
	}
	free(w->slots);
	w->slots = slots;
	w->slot_count = count;
	return 0;
}

/* Position in entries[] of key (removed or not), or -1. */
static ptrdiff_t index_find(const gpucc_image_writer *w, const gpucc_digest *key)
{
	if (!w->slot_count)
		return -1;
	for (size_t s = slot_of(key, w->slot_count); w->slots[s]; s = (s + 1) & (w->slot_count - 1))
		if (gpucc_digest_compare(&w->entries[w->slots[s] - 1].entry->key, key) == 0)
			return (ptrdiff_t)(w->slots[s] - 1);
	return -1;
}

/* ---- setup ------------------------------------------------------------------ */

void gpucc_write_options_init(gpucc_write_options *opts)
{
	GPUCC_REQUIRE_VOID(opts);
	*opts = (gpucc_write_options)GPUCC_WRITE_OPTIONS_INIT;
}

int gpucc_image_writer_new(gpucc_image_writer **out, const char *path,
                           const gpucc_write_options *opts)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(path);
	if (!*path) /* refused now, not at commit after all the adding */
		return gpucc_error_set(GPUCC_EINVALID, "an empty string is not a file name");
	if (opts && gpucc_options_version_check("write options", opts->version,
	                                        GPUCC_WRITE_OPTIONS_VERSION) != 0)
		return GPUCC_EINVALID;
	gpucc_image_writer *w = calloc(1, sizeof *w);
	if (!w || !(w->path = strdup(path)) || !(w->arena = gpucc_arena_new())) {
		gpucc_image_writer_free(w);
		return gpucc_error_oom();
	}
	if (opts)
		w->options = *opts;
	w->no_sync = w->options.no_sync;
	if (w->options.zstd_level < 0 || w->options.zstd_level > 22) {
		gpucc_image_writer_free(w);
		return gpucc_error_set(GPUCC_EINVALID, "zstd level %d is out of range (1 to 22)",
		                       opts->zstd_level);
	}
	if (!w->options.use_mtime) {
		const gpucc_config *cfg = gpucc_config_current();
		w->options.mtime = cfg->source_date_epoch_set ? cfg->source_date_epoch : 0;
	}
	*out = w;
	return 0;
}

void gpucc_image_writer_free(gpucc_image_writer *w)
{
	if (!w)
		return;
	gpucc_arena_free(w->arena);
	free(w->entries);
	free(w->slots);
	free(w->path);
	free(w);
}

const char *gpucc_image_writer_path(const gpucc_image_writer *w)
{
	return w->path;
}

size_t gpucc_image_writer_entry_count(const gpucc_image_writer *w)
{
	GPUCC_REQUIRE_OR(w, 0);
	return w->live;
}

const gpucc_entry *gpucc_image_writer_find(const gpucc_image_writer *w, const gpucc_digest *key)
{
	GPUCC_REQUIRE_OR(w, NULL);
	GPUCC_REQUIRE_OR(key, NULL);
	ptrdiff_t i = index_find(w, key);
	return i >= 0 && !w->entries[i].removed ? w->entries[i].entry : NULL;
}

int gpucc_image_writer_remove(gpucc_image_writer *w, const gpucc_digest *key)
{
	GPUCC_REQUIRE(w);
	GPUCC_REQUIRE(key);
	ptrdiff_t i = index_find(w, key);
	if (i < 0 || w->entries[i].removed)
		return gpucc_error_set(GPUCC_ENOTFOUND, "no such entry in the image being written");
	w->entries[i].removed = true;
	w->live--;
	return 0;
}

/* ---- adding ----------------------------------------------------------------- */

static int conflict(const gpucc_image_writer *w, const gpucc_entry *e)
{
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &e->key);
	return gpucc_error_set(GPUCC_ECONFLICT,
	                       "conflict: key %s is already in '%s' with different contents", hex,
	                       w->path);
}

/* Record e (complete with payloads): from an open image (image non-NULL,
 * e borrowed from it), or with per-payload sources (e and sources copied).
 * Identical duplicates keep the smaller module name, so that the result does
 * not depend on the order of adding. */
static int add_entry(gpucc_image_writer *w, const gpucc_entry *e, gpucc_image *image,
                     const payload_source *sources)
{
	int rc = gpucc_entry_validate(e);
	if (rc && image) {
		/* The defect is the source image's: name it, not the output. */
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &e->key);
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': corrupt manifest: entry %.12s: %s",
		                       gpucc_image_name(image), hex, gpucc_error_last()->message);
	}
	if (rc)
		return gpucc_error_prefix("cannot add entry to '%s'", w->path);
	ptrdiff_t existing = index_find(w, &e->key);
	if (existing >= 0 && !w->entries[existing].removed) {
		/* Contents are compared only for keys added twice: a merge of
		 * 50,000 entries need not serialise and hash each one before
		 * the first payload is copied. */
		writer_entry *we = &w->entries[existing];
		gpucc_digest old_content, content;
		if ((rc = gpucc_entry_content_digest(&old_content, we->entry)) ||
		    (rc = gpucc_entry_content_digest(&content, e)))
			return rc;
		if (gpucc_digest_compare(&old_content, &content) != 0)
			return conflict(w, e);
		if (e->module && strcmp(e->module, we->entry->module) < 0) {
			gpucc_entry *renamed = gpucc_arena_alloc(w->arena, sizeof *renamed);
			const char *name = gpucc_arena_strdup(w->arena, e->module);
			if (!renamed || !name)
				return gpucc_error_oom();
			*renamed = *we->entry;
			renamed->module = name;
			we->entry = renamed;
		}
		return 0;
	}
	writer_entry *slot;
	if (existing >= 0) {
		slot = &w->entries[existing]; /* re-adding a removed key */
	} else {
		if (w->count == w->capacity) {
			size_t capacity = w->capacity ? w->capacity * 2 : 64;
			writer_entry *grown = realloc(w->entries, capacity * sizeof *grown);
			if (!grown)
				return gpucc_error_oom();
			w->entries = grown;
			w->capacity = capacity;
		}
		if ((w->count + 1) * 2 > w->slot_count && (rc = index_grow(w)))
			return rc;
		slot = &w->entries[w->count];
	}
	memset(slot, 0, sizeof *slot);
	if (image) {
		slot->entry = e;
		slot->image = image;
	} else {
		gpucc_entry *copy = gpucc_arena_alloc(w->arena, sizeof *copy);
		payload_source *own = gpucc_arena_alloc(w->arena, (e->payload_count + 1) * sizeof *own);
		if (!copy || !own || (rc = gpucc_entry_copy(w->arena, copy, e)))
			return rc ? rc : gpucc_error_oom();
		memcpy(own, sources, e->payload_count * sizeof *own);
		for (size_t i = 0; i < e->payload_count; i++)
			if (sources[i].kind == SOURCE_FILE &&
			    !(own[i].path = gpucc_arena_strdup(w->arena, sources[i].path)))
				return gpucc_error_oom();
		slot->entry = copy;
		slot->sources = own;
	}
	if (existing < 0) {
		size_t s = slot_of(&e->key, w->slot_count);
		while (w->slots[s])
			s = (s + 1) & (w->slot_count - 1);
		w->slots[s] = w->count + 1;
		w->count++;
	}
	w->live++;
	return 0;
}

int gpucc_image_writer_add(gpucc_image_writer *w, const gpucc_entry *e,
                           const gpucc_payload_source *sources, size_t source_count)
{
	GPUCC_REQUIRE(w);
	GPUCC_REQUIRE(e);
	if (source_count != 0)
		GPUCC_REQUIRE(sources);
	if (source_count > GPUCC_PART_COUNT)
		return gpucc_error_set(GPUCC_EINVALID, "more payloads than payload kinds");
	gpucc_payload payloads[GPUCC_PART_COUNT];
	payload_source kinds[GPUCC_PART_COUNT];
	/* Sort the sources by part (insertion sort of at most four). */
	const gpucc_payload_source *order[GPUCC_PART_COUNT];
	for (size_t i = 0; i < source_count; i++) {
		size_t j = i;
		while (j > 0 && order[j - 1]->part > sources[i].part) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = &sources[i];
	}
	for (size_t i = 0; i < source_count; i++) {
		const gpucc_payload_source *s = order[i];
		if ((unsigned)s->part >= GPUCC_PART_COUNT)
			return gpucc_error_set(GPUCC_EINVALID, "unknown payload kind %d", (int)s->part);
		if (i && order[i - 1]->part == s->part)
			return gpucc_error_set(GPUCC_EINVALID, "two %s payloads for one entry",
			                       gpucc_part_name(s->part));
		payloads[i].part = s->part;
		memset(&kinds[i], 0, sizeof kinds[i]);
		if (s->path) {
			/* A FIFO or a device is refused, not waited on or read
			 * forever (gpucc_digest_file). */
			int rc = gpucc_digest_file(&payloads[i].sha256, &payloads[i].size, s->path);
			if (rc)
				return rc;
			kinds[i].kind = SOURCE_FILE;
			kinds[i].path = s->path;
		} else {
			if (!s->data && s->size)
				return gpucc_error_set(GPUCC_EINVALID, "a %s payload has no data",
				                       gpucc_part_name(s->part));
			gpucc_digest_buffer(&payloads[i].sha256, s->data ? s->data : "", s->size);
			payloads[i].size = s->size;
			kinds[i].kind = SOURCE_MEMORY;
			kinds[i].data = s->data;
		}
	}
	gpucc_entry copy = *e;
	copy.payloads = payloads;
	copy.payload_count = source_count;
	return add_entry(w, &copy, NULL, kinds);
}

int gpucc_image_writer_add_from(gpucc_image_writer *w, gpucc_image *src, const gpucc_entry *e)
{
	GPUCC_REQUIRE(w);
	GPUCC_REQUIRE(src);
	GPUCC_REQUIRE(e);
	if (e->payload_count > GPUCC_PART_COUNT)
		return gpucc_error_set(GPUCC_EINVALID, "more payloads than payload kinds");
	return add_entry(w, e, src, NULL);
}

/* ---- commit ------------------------------------------------------------------ */

static int compare_output(const void *a, const void *b)
{
	return gpucc_payload_archive_compare(&((const output_payload *)a)->payload,
	                                     &((const output_payload *)b)->payload);
}

/* One payload (digest and kind) with two sizes: an image whose manifest
 * lies about it, which the error names. */
static int two_sizes(const output_payload *a, const output_payload *b)
{
	char member[GPUCC_PAYLOAD_MEMBER_SIZE];
	gpucc_payload_member_name(member, &a->payload);
	const output_payload *liar = b->image ? b : a, *other = liar == b ? a : b;
	return gpucc_error_set(GPUCC_ECORRUPT,
	                       "'%s': corrupt manifest: payload '%s' is listed with %" PRIu64
	                       " bytes, but %" PRIu64 " in %s%s%s",
	                       liar->image ? gpucc_image_name(liar->image) : "(a new entry)", member,
	                       liar->payload.size, other->payload.size, other->image ? "'" : "",
	                       other->image ? gpucc_image_name(other->image) : "a new entry",
	                       other->image ? "'" : "");
}

static int compare_entries(const void *a, const void *b)
{
	return gpucc_digest_compare(&(*(const gpucc_entry *const *)a)->key,
	                            &(*(const gpucc_entry *const *)b)->key);
}

#define WRITEBACK_STEP ((uint64_t)32 << 20)

typedef struct commit_ctx {
	gpucc_image_writer *w;
	struct archive *archive;
	int fd;            /* the temporary file */
	uint64_t unsynced; /* bytes written since writeback was last started */
	gpucc_payload_checker *checker; /* for payloads from images, or NULL */
} commit_ctx;

static int archive_write_failed(commit_ctx *c)
{
	const char *why = GPUCC_LA->error_string(c->archive);
	int err = GPUCC_LA->errno_(c->archive);
	if (err > 0)
		errno = err;
	/* The system's words for a failed write ("Input/output error"), not
	 * libarchive's ("Write error"). */
	if (err == EFBIG || err == ENOSPC || err == EDQUOT || err == EIO || err == EROFS)
		return gpucc_error_set_errno("cannot write '%s'", c->w->path);
	return gpucc_error_set(GPUCC_ERROR, "cannot write '%s': %s", c->w->path,
	                       why ? why : "write error");
}

static int to_archive(void *ctx, const void *data, size_t size)
{
	commit_ctx *c = ctx;
	const char *p = data;
	while (size > 0) {
		la_ssize_t n = GPUCC_LA->write_data(c->archive, p, size);
		if (n <= 0)
			return archive_write_failed(c);
		p += n;
		size -= (size_t)n;
	}
	c->unsynced += (uint64_t)(p - (const char *)data);
	if (c->unsynced >= WRITEBACK_STEP && !c->w->no_sync) {
		/* Start writing back what is written so far, so that the fsync
		 * before the rename finds little left to do: the disk works
		 * while the next payloads are read and hashed. */
		sync_file_range(c->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
		c->unsynced = 0;
	}
	return 0;
}

static int write_header(commit_ctx *c, const char *name, uint64_t size)
{
	struct archive_entry *e = GPUCC_LA->entry_new();
	if (!e)
		return gpucc_error_oom();
	GPUCC_LA->entry_set_pathname(e, name);
	GPUCC_LA->entry_set_filetype(e, AE_IFREG);
	GPUCC_LA->entry_set_perm(e, 0644);
	GPUCC_LA->entry_set_size(e, (la_int64_t)size);
	GPUCC_LA->entry_set_uid(e, 0);
	GPUCC_LA->entry_set_gid(e, 0);
	GPUCC_LA->entry_set_uname(e, "");
	GPUCC_LA->entry_set_gname(e, "");
	GPUCC_LA->entry_set_mtime(e, (time_t)c->w->options.mtime, 0);
	int r = GPUCC_LA->write_header(c->archive, e);
	GPUCC_LA->entry_free(e);
	return r == ARCHIVE_OK ? 0 : archive_write_failed(c);
}

static int write_small_member(commit_ctx *c, const char *name, const void *data, size_t size)
{
	int rc = write_header(c, name, size);
	if (rc == 0 && size)
		rc = to_archive(c, data, size);
	return rc;
}

static int write_payload(commit_ctx *c, const output_payload *o)
{
	char name[GPUCC_PAYLOAD_MEMBER_SIZE];
	gpucc_payload_member_name(name, &o->payload);
	int rc = write_header(c, name, o->payload.size);
	return rc ? rc : gpucc_output_payload_copy(o, to_archive, c, c->checker);
}

/* The sorted live entries and the distinct payloads in archive order, and
 * how many bytes of those come from images. */
static int plan(gpucc_image_writer *w, const gpucc_entry ***out_entries, output_payload **out_payloads,
                size_t *out_payload_count, uint64_t *out_image_bytes)
{
	const gpucc_entry **entries = malloc((w->live + 1) * sizeof *entries);
	size_t total = 0;
	for (size_t i = 0; i < w->count; i++)
		if (!w->entries[i].removed)
			total += w->entries[i].entry->payload_count;
	output_payload *payloads = malloc((total + 1) * sizeof *payloads);
	if (!entries || !payloads) {
		free(entries);
		free(payloads);
		return gpucc_error_oom();
	}
	size_t n = 0, p = 0;
	for (size_t i = 0; i < w->count; i++) {
		const writer_entry *we = &w->entries[i];
		if (we->removed)
			continue;
		entries[n++] = we->entry;
		for (size_t j = 0; j < we->entry->payload_count; j++) {
			payloads[p].payload = we->entry->payloads[j];
			payloads[p].image = we->image;
			payloads[p].source = we->sources ? &we->sources[j] : NULL;
			p++;
		}
	}
	qsort(entries, n, sizeof *entries, compare_entries);
	qsort(payloads, p, sizeof *payloads, compare_output);
	size_t unique = 0;
	for (size_t i = 0; i < p; i++) {
		if (unique && compare_output(&payloads[unique - 1], &payloads[i]) == 0) {
			if (payloads[unique - 1].payload.size != payloads[i].payload.size) {
				int rc = two_sizes(&payloads[unique - 1], &payloads[i]);
				free(entries);
				free(payloads);
				return rc;
			}
			continue;
		}
		payloads[unique++] = payloads[i];
	}
	*out_image_bytes = 0;
	for (size_t i = 0; i < unique; i++)
		if (payloads[i].image)
			*out_image_bytes += payloads[i].payload.size;
	*out_entries = entries;
	*out_payloads = payloads;
	*out_payload_count = unique;
	return 0;
}

/* After a failure, freeing the archive would finish it, padding the member
 * being written to its full size -- which an image may claim to be a
 * terabyte -- into a temporary file that is discarded anyway.  So the
 * temporary file's descriptor is made to refuse writes (it is only closed
 * after this), and finishing stops at the first one.  Failing that,
 * libarchive is told to skip finishing, at the cost of the buffers it then
 * leaks. */
static void abandon_archive(struct archive *a, int fd)
{
	int refusing = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (refusing >= 0 && dup3(refusing, fd, O_CLOEXEC) >= 0) {
		close(refusing);
		return;
	}
	if (refusing >= 0)
		close(refusing);
	GPUCC_LA->write_fail(a);
}

/* zstd compresses on at most this many threads: at level 19 each holds
 * about 100 MiB of tables. */
#define ZSTD_WORKERS_MAX 4
#ifdef GPUCC_TEST_HOOKS /* tests set the number of workers */
static size_t zstd_workers_override;

void gpucc_image_writer_zstd_workers(size_t workers)
{
	zstd_workers_override = workers;
}
#else
enum { zstd_workers_override = 0 };
#endif

static int archive_to_fd(struct archive *a, int fd, int zstd_level)
{
	char level[16], workers[24];
	if (GPUCC_LA->write_set_format_pax_restricted(a) != ARCHIVE_OK)
		return -1;
	if (zstd_level > 0) {
		snprintf(level, sizeof level, "%d", zstd_level);
		if (GPUCC_LA->write_add_filter_zstd(a) != ARCHIVE_OK ||
		    GPUCC_LA->write_set_filter_option(a, "zstd", "compression-level", level) != ARCHIVE_OK)
			return -1;
		/* zstd's multi-threaded mode, even with one worker: its output
		 * is the same for any number of workers (though not the same as
		 * the single-threaded mode's), so the bytes do not depend on the
		 * machine's cores.  A libarchive that does not know the option
		 * compresses single-threaded (other bytes; Debian 12's knows). */
		size_t cpus = gpucc_cpu_count();
		size_t n = zstd_workers_override ? zstd_workers_override
		           : cpus < ZSTD_WORKERS_MAX ? cpus
		                                     : ZSTD_WORKERS_MAX;
		snprintf(workers, sizeof workers, "%zu", n);
		if (GPUCC_LA->write_set_filter_option(a, "zstd", "threads", workers) == ARCHIVE_FATAL)
			return -1;
	}
	/* Write in 1 MiB blocks (libarchive's 10 KiB default meant two writes
	 * per payload in a merge), but pad the last block only to the record
	 * size tar expects: the bytes written do not depend on the block size. */
	if (GPUCC_LA->write_set_bytes_per_block(a, 1 << 20) != ARCHIVE_OK)
		return -1;
	GPUCC_LA->write_set_bytes_in_last_block(a, 1);
	return GPUCC_LA->write_open_fd(a, fd) == ARCHIVE_OK ? 0 : -1;
}

void gpucc_image_writer_leave_leftovers(gpucc_image_writer *w)
{
	w->no_sweep = true;
}

void gpucc_image_writer_before_publish(gpucc_image_writer *w, int (*check)(void *ctx), void *ctx)
{
	w->before_publish = check;
	w->before_publish_ctx = ctx;
}

/* Copying at least this much from images hashes it on a second thread:
 * milliseconds of hashing against some microseconds to start a thread. */
#define CHECKER_MIN_BYTES ((uint64_t)4 << 20)

/* Tests write images as they were before the index, and through
 * libarchive only, to compare the two writers (test hooks: meson option
 * test_hooks). */
#ifdef GPUCC_TEST_HOOKS
static bool omit_index, force_libarchive;

void gpucc_image_writer_omit_index(bool omit)
{
	omit_index = omit;
}

void gpucc_image_writer_force_libarchive(bool force)
{
	force_libarchive = force;
}
#else
enum { omit_index = 0, force_libarchive = 0 };
#endif

/* The index member of an image of entries whose manifest has
 * manifest_size bytes (formats/image.md, "The index"). */
static int build_index(const gpucc_entry **entries, size_t count, uint64_t manifest_size,
                       unsigned char **out, size_t *out_size)
{
	char format[GPUCC_FORMAT_TEXT_SIZE];
	uint64_t format_size = gpucc_image_format_text(format, true);
	uint64_t head = 512 + (format_size + 511) / 512 * 512 + 512 + (manifest_size + 511) / 512 * 512;
	uint64_t *spans;
	int rc = gpucc_manifest_entry_spans(&spans, entries, count);
	if (rc)
		return rc;
	rc = gpucc_index_build(out, out_size, entries, count, spans, manifest_size, head);
	free(spans);
	return rc;
}

/* Write the image into file through libarchive: any compression, any
 * member. */
static int write_with_libarchive(gpucc_image_writer *w, gpucc_atomic_file *file,
                                 const gpucc_entry **entries, uint64_t manifest_size,
                                 const unsigned char *index, size_t index_size,
                                 const output_payload *payloads, size_t payload_count,
                                 uint64_t image_bytes)
{
	if (!gpucc_libarchive_load())
		return gpucc_error_prefix("cannot write '%s'", w->path);
	gpucc_payload_checker *checker = NULL;
	int rc = 0;
	if (image_bytes >= CHECKER_MIN_BYTES && (rc = gpucc_payload_checker_new(&checker)))
		return rc;
	commit_ctx c = {.w = w, .archive = GPUCC_LA->write_new(), .fd = file->fd, .checker = checker};
	if (!c.archive) {
		rc = gpucc_error_oom();
	} else if (archive_to_fd(c.archive, file->fd, w->options.zstd_level) != 0) {
		rc = archive_write_failed(&c);
	} else {
		char format[GPUCC_FORMAT_TEXT_SIZE];
		size_t n = gpucc_image_format_text(format, index != NULL);
		rc = write_small_member(&c, GPUCC_IMAGE_FORMAT_MEMBER, format, n);
		if (rc == 0 && index)
			rc = write_small_member(&c, GPUCC_IMAGE_INDEX_MEMBER, index, index_size);
		if (rc == 0)
			rc = write_header(&c, GPUCC_IMAGE_MANIFEST_MEMBER, manifest_size);
		if (rc == 0)
			rc = gpucc_manifest_write_to(to_archive, &c, entries, w->live);
		for (size_t i = 0; rc == 0 && i < payload_count; i++) {
			rc = write_payload(&c, &payloads[i]);
			if (rc == 0 && checker && gpucc_payload_checker_failed(checker))
				break; /* reported just below */
		}
		/* Every check is done before anything is published.  A mismatch
		 * is in a payload before any other failure, so it is the error
		 * one thread would have met first. */
		if (checker) {
			int late = gpucc_payload_checker_finish(checker);
			if (late)
				rc = late;
		}
		if (rc == 0 && GPUCC_LA->write_close(c.archive) != ARCHIVE_OK)
			rc = archive_write_failed(&c);
	}
	if (c.archive && rc != 0)
		abandon_archive(c.archive, file->fd);
	if (c.archive)
		GPUCC_LA->write_free(c.archive);
	gpucc_payload_checker_free(checker);
	return rc;
}

int gpucc_image_writer_commit(gpucc_image_writer *w)
{
	const gpucc_entry **entries = NULL;
	output_payload *payloads = NULL;
	unsigned char *index = NULL;
	size_t payload_count = 0, index_size = 0;
	uint64_t manifest_size = 0, image_bytes = 0;
	GPUCC_REQUIRE(w);
	int rc = plan(w, &entries, &payloads, &payload_count, &image_bytes);
	if (rc)
		return rc;
	/* The manifest is generated twice, once to size its tar header and
	 * once into the archive, rather than held whole in memory. */
	rc = gpucc_manifest_size(&manifest_size, entries, w->live);
	/* An image of one entry or none has no index (formats/image.md): its
	 * manifest is one object, and a cache of 100,000 such entries would
	 * carry 300 MiB of fan-out tables. */
	if (rc == 0 && !omit_index && w->live >= 2)
		rc = build_index(entries, w->live, manifest_size, &index, &index_size);
	if (rc)
		goto cleanup;

	gpucc_atomic_file file;
	if ((rc = gpucc_atomic_file_open(&file, w->path)))
		goto cleanup;
	file.no_sync = w->no_sync;
	file.no_sweep = w->no_sweep;
	rc = GPUCC_OTHER_PATH;
	if (w->options.zstd_level == 0 && !force_libarchive) {
		gpucc_plain_image plain = {
			.path = w->path, .fd = file.fd, .mtime = w->options.mtime, .no_sync = w->no_sync,
			.entries = entries, .entry_count = w->live, .manifest_size = manifest_size,
			.index = index, .index_size = index_size, .payloads = payloads,
			.payload_count = payload_count};
		rc = gpucc_plain_image_write(&plain);
	}
	if (rc == GPUCC_OTHER_PATH)
		rc = write_with_libarchive(w, &file, entries, manifest_size, index, index_size, payloads,
		                           payload_count, image_bytes);
	if (rc == 0 && w->before_publish)
		rc = w->before_publish(w->before_publish_ctx);
	if (rc == 0)
		rc = gpucc_atomic_file_commit(&file);
	else
		gpucc_atomic_file_abort(&file);

cleanup:
	free(entries);
	free(payloads);
	free(index);
	return rc;
}
