/*
 * lib/tests/test_image_threads.c -- one image handle read from many threads
 * at once (gpucc/image.h, "Threads"): 8 threads, started together on a
 * fresh handle (so that they race to build its payload list), read
 * payloads in random order and in runs of archive order, copy them to
 * files, look entries up, select, and verify, and every call must succeed
 * and return the right bytes (compared with what was written, and hashed
 * here again).  Each kind of handle: uncompressed and zstd, opened from a
 * file, from memory and by mapping, and an uncompressed file read through
 * its archive headers (one cursor, under lock).  And a handle opened for
 * lookup, read through its index: threads look entries up, read their
 * payloads and select by kernel while some parse the whole manifest.
 *
 * In the 'threads' suite, which scripts/test also runs under
 * ThreadSanitizer (build-tsan): a race the checks below cannot see is
 * reported there.
 */
#include "check.h"
#include "check_image.h"

#include <gpucc.h>

#include "image_internal.h"
#include "check_hooks.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define THREADS 8
#define ENTRIES 48
/* Calls per thread: an uncompressed image read at computed offsets, and
 * one read through the cursor (whose out-of-order reads decompress, or
 * walk, from the start each time). */
#define CALLS_RANDOM_ACCESS 400
#define CALLS_CURSOR 24

/* What was written: payload i's bytes and digest. */
static unsigned char *written[ENTRIES];
static size_t written_size[ENTRIES];
static gpucc_digest written_digest[ENTRIES];

/* Payload i's size: mostly a few KiB; two larger than the reader's
 * read-ahead window (256 KiB), two between its stack buffer (64 KiB) and
 * the window; one empty. */
static size_t payload_size(size_t i)
{
	if (i == 7 || i == 30)
		return 300000;
	if (i == 11 || i == 40)
		return 100000;
	if (i == 20)
		return 0;
	return 100 + (i * 7919) % 6000;
}

static void make_payloads(void)
{
	for (size_t i = 0; i < ENTRIES; i++) {
		size_t size = payload_size(i);
		written[i] = malloc(size ? size : 1);
		uint32_t x = (uint32_t)(i * 2654435761u + 1);
		for (size_t k = 0; k < size; k++) {
			x = x * 1103515245u + 12345u;
			written[i][k] = (unsigned char)(x >> 16);
		}
		if (size >= 8)
			memcpy(written[i], &i, sizeof i); /* distinct contents */
		written_size[i] = size;
		gpucc_digest_buffer(&written_digest[i], written[i], size);
	}
	/* The empty payload is the only one of its digest. */
}

/* Entry i: target gfx90a, kernel "k<i>", payload i as its code object. */
static int add_entry(gpucc_image_writer *w, size_t i)
{
	char module[32], kernel[16], target[GPUCC_TARGET_NAME_SIZE];
	gpucc_target parsed;
	if (gpucc_target_parse(&parsed, "gfx90a") != 0)
		return -1;
	gpucc_target_format(target, &parsed);
	snprintf(module, sizeof module, "module %zu", i);
	snprintf(kernel, sizeof kernel, "k%zu", i);
	gpucc_kernel k = {kernel, -1, -1, -1};
	gpucc_entry e = {0};
	e.key_schema = 1;
	e.module = "module.ll";
	gpucc_digest_buffer(&e.module_sha256, module, strlen(module));
	e.target = target;
	e.triple = gpucc_target_triple(&parsed);
	e.gpucc_version = gpucc_version();
	e.llvm_version = "19.1.7";
	e.kernel_count = 1;
	e.kernels = &k;
	if (gpucc_entry_compute_key(&e.key, &e) != 0)
		return -1;
	gpucc_payload_source src = {GPUCC_PART_HSACO, NULL, written[i], written_size[i]};
	return gpucc_image_writer_add(w, &e, &src, 1);
}

static int write_image(const char *path, int zstd)
{
	return check_write_image(path, zstd, ENTRIES, add_entry);
}

/* ---- the threads ------------------------------------------------------------ */

typedef struct shared_run {
	gpucc_image *img;
	int calls;
	bool by_index; /* lookups only (lookup_work) */
	pthread_barrier_t start;
} shared_run;

typedef struct worker {
	shared_run *run;
	unsigned id;
	int failures;
	char first[512]; /* the first failure, for the report */
} worker;

#define WORKER_CHECK(wk, cond, ...)                                                          \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			if ((wk)->failures++ == 0)                                               \
				snprintf((wk)->first, sizeof (wk)->first, __VA_ARGS__);          \
		}                                                                            \
	} while (0)

/* Which payload written has digest d: its index, or ENTRIES. */
static size_t written_index(const gpucc_digest *d)
{
	for (size_t i = 0; i < ENTRIES; i++)
		if (gpucc_digest_compare(&written_digest[i], d) == 0)
			return i;
	return ENTRIES;
}

/* The bytes read for payload p must be those written, and hash to p's
 * digest. */
static void check_bytes(worker *wk, const gpucc_payload *p, const void *data, size_t size,
                        const char *how)
{
	size_t i = written_index(&p->sha256);
	gpucc_digest got;
	gpucc_digest_buffer(&got, data, size);
	WORKER_CHECK(wk,
	             i < ENTRIES && size == written_size[i] && size == p->size &&
	                     memcmp(data, written[i], size) == 0 &&
	                     gpucc_digest_compare(&got, &p->sha256) == 0,
	             "thread %u: %s returned other bytes (%zu of them)", wk->id, how, size);
}

static void read_one(worker *wk, gpucc_image *img, const gpucc_payload *p)
{
	void *data = NULL;
	size_t size = 0;
	int rc = gpucc_image_read_payload(&data, &size, img, p);
	WORKER_CHECK(wk, rc == 0, "thread %u: gpucc_image_read_payload: %d %s", wk->id, rc,
	             gpucc_error_last()->message);
	if (rc == 0)
		check_bytes(wk, p, data, size, "gpucc_image_read_payload");
	gpucc_free(data);
}

/* Copy p to a file of this thread's and read it back. */
static void copy_one(worker *wk, gpucc_image *img, const gpucc_payload *p, int fd)
{
	if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) {
		WORKER_CHECK(wk, false, "thread %u: cannot reset its file", wk->id);
		return;
	}
	int rc = gpucc_image_copy_payload(img, p, fd);
	WORKER_CHECK(wk, rc == 0, "thread %u: gpucc_image_copy_payload: %d %s", wk->id, rc,
	             gpucc_error_last()->message);
	unsigned char *back = malloc(p->size + 1);
	ssize_t n = back ? pread(fd, back, p->size + 1, 0) : -1;
	if (rc == 0 && n >= 0)
		check_bytes(wk, p, back, (size_t)n, "gpucc_image_copy_payload");
	free(back);
}

/* The queries: entries by key and by key prefix, and selection. */
static void query_one(worker *wk, gpucc_image *img, size_t index)
{
	size_t count = gpucc_image_entry_count(img);
	WORKER_CHECK(wk, count == ENTRIES, "thread %u: %zu entries", wk->id, count);
	const gpucc_entry *e = gpucc_image_entry(img, index % count);
	if (!e)
		return;
	WORKER_CHECK(wk, gpucc_image_find(img, &e->key) == e, "thread %u: find", wk->id);
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &e->key);
	hex[16] = '\0';
	const gpucc_entry *found = NULL;
	WORKER_CHECK(wk, gpucc_image_lookup(&found, img, hex) == 0 && found == e,
	             "thread %u: lookup %s: %s", wk->id, hex, gpucc_error_last()->message);
	gpucc_target device;
	gpucc_selection sel;
	WORKER_CHECK(wk, gpucc_target_from_hip_arch(&device, "gfx90a:sramecc+:xnack-") == 0,
	             "thread %u: target", wk->id);
	int rc = gpucc_image_select(&sel, img, e->kernels[0].name, &device);
	WORKER_CHECK(wk, rc == 0 && sel.entry == e && sel.part == GPUCC_PART_HSACO,
	             "thread %u: select %s: %d %s", wk->id, e->kernels[0].name, rc,
	             gpucc_error_last()->message);
}

/* The key of the entry that holds payload i (from a full open). */
static gpucc_digest entry_key[ENTRIES];

/* Entry i by its key, through the index while the manifest is not parsed:
 * the entry asked for, its payload's bytes, and selection by its kernel. */
static void lookup_one(worker *wk, gpucc_image *img, size_t i)
{
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &entry_key[i]);
	const gpucc_entry *e = NULL;
	int rc = gpucc_image_lookup(&e, img, hex);
	WORKER_CHECK(wk, rc == 0 && e && gpucc_digest_compare(&e->key, &entry_key[i]) == 0,
	             "thread %u: lookup %s: %d %s", wk->id, hex, rc, gpucc_error_last()->message);
	if (!e)
		return;
	read_one(wk, img, &e->payloads[0]);
	gpucc_target device;
	gpucc_selection sel;
	gpucc_target_from_hip_arch(&device, "gfx90a:sramecc+:xnack-");
	rc = gpucc_image_select(&sel, img, e->kernels[0].name, &device);
	WORKER_CHECK(wk, rc == 0 && gpucc_digest_compare(&sel.entry->key, &entry_key[i]) == 0,
	             "thread %u: select %s: %d %s", wk->id, e->kernels[0].name, rc,
	             gpucc_error_last()->message);
}

static void *lookup_work(worker *wk)
{
	gpucc_image *img = wk->run->img;
	pthread_barrier_wait(&wk->run->start);
	uint32_t x = 0x85ebca6bu * (wk->id + 1);
	for (int call = 0; call < wk->run->calls; call++) {
		x = x * 1664525u + 1013904223u;
		if (call == wk->run->calls / 2 && wk->id % 4 == 1) {
			size_t count = gpucc_image_entry_count(img); /* parses the manifest */
			WORKER_CHECK(wk, count == ENTRIES, "thread %u: %zu entries", wk->id, count);
		} else {
			lookup_one(wk, img, (x >> 8) % ENTRIES);
		}
	}
	return NULL;
}

static void *work(void *arg)
{
	worker *wk = arg;
	if (wk->run->by_index)
		return lookup_work(wk);
	gpucc_image *img = wk->run->img;
	char name[32];
	snprintf(name, sizeof name, "copy-%u", wk->id);
	int fd = memfd_create(name, MFD_CLOEXEC);
	WORKER_CHECK(wk, fd >= 0, "thread %u: memfd_create", wk->id);
	pthread_barrier_wait(&wk->run->start);

	/* All at once on a fresh handle: the payload list is built once. */
	size_t count = 0;
	int rc = gpucc_image_count_payloads(&count, img);
	WORKER_CHECK(wk, rc == 0 && count == ENTRIES, "thread %u: count_payloads %d, %zu", wk->id,
	             rc, count);
	uint32_t x = 0x9e3779b9u * (wk->id + 1);
	for (int call = 0; call < wk->run->calls && count == ENTRIES && fd >= 0; call++) {
		x = x * 1664525u + 1013904223u;
		size_t index = (x >> 8) % count;
		unsigned what = (x >> 24) % 20;
		const gpucc_payload *p = gpucc_image_payload(img, index);
		WORKER_CHECK(wk, p != NULL, "thread %u: no payload %zu", wk->id, index);
		if (!p)
			break;
		if (call == wk->run->calls / 2 && wk->id % 4 == 0) {
			rc = gpucc_image_verify(img);
			WORKER_CHECK(wk, rc == 0, "thread %u: verify: %d %s", wk->id, rc,
			             gpucc_error_last()->message);
		} else if (what < 2) {
			/* A run in archive order, as extract and merge read. */
			for (size_t k = index; k < index + 4 && k < count; k++)
				read_one(wk, img, gpucc_image_payload(img, k));
		} else if (what < 4) {
			copy_one(wk, img, p, fd);
		} else if (what < 5) {
			query_one(wk, img, index);
		} else {
			read_one(wk, img, p);
		}
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* THREADS threads on img at once, calls each (lookups only when
 * by_index); img is freed here. */
static void hammer_how(gpucc_image *img, int calls, const char *what, bool by_index)
{
	if (!img)
		return;
	shared_run run = {.img = img, .calls = calls, .by_index = by_index};
	pthread_barrier_init(&run.start, NULL, THREADS);
	worker workers[THREADS];
	pthread_t threads[THREADS];
	size_t started = 0;
	for (unsigned i = 0; i < THREADS; i++) {
		workers[i] = (worker){.run = &run, .id = i};
		if (pthread_create(&threads[i], NULL, work, &workers[i]) != 0)
			break;
		started++;
	}
	CHECK_INT(started, THREADS);
	if (started != THREADS)
		exit(1); /* the others wait at the barrier forever */
	for (size_t i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	pthread_barrier_destroy(&run.start);
	for (size_t i = 0; i < started; i++) {
		if (workers[i].failures)
			fprintf(stderr, "%s: %d failure(s), the first: %s\n", what, workers[i].failures,
			        workers[i].first);
		CHECK_INT(workers[i].failures, 0);
	}
	gpucc_image_free(img);
}

static void hammer(gpucc_image *img, int calls, const char *what)
{
	hammer_how(img, calls, what, false);
}

static const char *plain_path, *zstd_path;

static gpucc_image *open_file(const char *path)
{
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open(&img, path), 0);
	return img;
}

static void test_file(void)
{
	gpucc_image *img = open_file(plain_path);
	CHECK(img && !gpucc_image_is_compressed(img));
	hammer(img, CALLS_RANDOM_ACCESS, "file");
}

static void test_file_zstd(void)
{
	gpucc_image *img = open_file(zstd_path);
	CHECK(img && gpucc_image_is_compressed(img));
	hammer(img, CALLS_CURSOR, "file, zstd");
}

/* From memory: the bytes stay until the handle is freed. */
static void hammer_memory(const char *path, int calls, const char *what)
{
	size_t size = 0;
	void *bytes = check_read_file(path, &size);
	CHECK(bytes != NULL);
	gpucc_image *img = NULL;
	if (bytes)
		CHECK_INT(gpucc_image_open_memory(&img, bytes, size, what), 0);
	hammer(img, calls, what);
	free(bytes);
}

static void test_memory(void)
{
	hammer_memory(plain_path, CALLS_RANDOM_ACCESS, "memory");
}

static void test_memory_zstd(void)
{
	hammer_memory(zstd_path, CALLS_CURSOR, "memory, zstd");
}

static void test_mapped(void)
{
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_mapped(&img, plain_path), 0);
	hammer(img, CALLS_RANDOM_ACCESS, "mapped");
}

/* An uncompressed file opened through libarchive has no computed offsets:
 * every read goes through the one cursor. */
static void test_file_through_headers(void)
{
	CHECK_NEEDS_HOOKS();
	gpucc_image_force_libarchive(true);
	gpucc_image *img = open_file(plain_path);
	gpucc_image_force_libarchive(false);
	CHECK(img && !gpucc_image_has_random_access(img));
	/* has_random_access built the list: the race to build it is the
	 * other tests'. */
	hammer(img, CALLS_CURSOR, "file, through its headers");
}

/* A handle opened for lookup: its index read by every thread at once,
 * its entries parsed as they are found, and the whole manifest once. */
static void test_lookup_handle(void)
{
	gpucc_image *full = open_file(plain_path);
	for (size_t i = 0; full && i < gpucc_image_entry_count(full); i++) {
		const gpucc_entry *e = gpucc_image_entry(full, i);
		size_t k = written_index(&e->payloads[0].sha256);
		if (k < ENTRIES)
			entry_key[k] = e->key;
	}
	gpucc_image_free(full);
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_for_lookup(&img, plain_path), 0);
	CHECK(img && gpucc_image_reads_by_index(img));
	hammer_how(img, CALLS_RANDOM_ACCESS, "file, for lookup", true);
}

int main(void)
{
	if (check_dir_create("image-threads") != 0)
		return 1;
	make_payloads();
	plain_path = strdup(path_in_dir("plain.gpucc"));
	zstd_path = strdup(path_in_dir("zstd.gpucc"));
	CHECK_INT(write_image(plain_path, 0), 0);
	CHECK_INT(write_image(zstd_path, 3), 0);
	RUN(test_file);
	RUN(test_file_zstd);
	RUN(test_memory);
	RUN(test_memory_zstd);
	RUN(test_mapped);
	RUN(test_file_through_headers);
	RUN(test_lookup_handle);
	for (size_t i = 0; i < ENTRIES; i++)
		free(written[i]);
	free((char *)plain_path);
	free((char *)zstd_path);
	check_dir_remove();
	return CHECK_DONE();
}
