/*
 * lib/algebra/snapshot_sort.c -- putting a snapshot's items in key order and
 * collapsing repeats (lib/algebra/snapshot_impl.h).  Keys are SHA-256 digests,
 * so their first two bytes spread them evenly over 65,536 buckets: one
 * counting pass and one scatter place every item in its bucket, each
 * bucket then being a few items to sort.  Large sets are counted, scattered
 * and sorted on several threads, each pass split so no two threads write
 * the same item.
 */
#include "snapshot_impl.h"

#include "errors.h"
#include "parallel.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BUCKETS 65536
#define BUCKET_GROUP 256          /* buckets a thread takes at a time when sorting them */
#define SMALL_SORT 4096           /* fewer items: one qsort, no buckets */
#define PARALLEL_MIN 65536        /* fewer items: one thread */
#define THREADS_MAX 8
#define HUGE_PAGE ((size_t)2 << 20)

void *gpucc_snapshot_alloc(size_t size)
{
	void *p = malloc(size ? size : 1);
#ifdef MADV_HUGEPAGE
	/* Large pages for a large array: its first touch then faults once per
	 * 2 MiB, not per 4 KiB.  Only a hint; refused, it costs nothing. */
	uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
	uintptr_t hi = ((uintptr_t)p + size) & ~(uintptr_t)(HUGE_PAGE - 1);
	if (p && hi > lo)
		madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#endif
	return p;
}

gpucc_snapshot_item *gpucc_snapshot_items_alloc(size_t count)
{
	if (count > SIZE_MAX / sizeof(gpucc_snapshot_item))
		return NULL;
	return gpucc_snapshot_alloc((count ? count : 1) * sizeof(gpucc_snapshot_item));
}

static int item_compare(const void *a, const void *b)
{
	return memcmp(a, b, GPUCC_DIGEST_SIZE);
}

/* A bucket's few items by insertion; many (a skewed key set) by qsort. */
static void sort_bucket(gpucc_snapshot_item *items, size_t n)
{
	if (n > 32) {
		qsort(items, n, sizeof *items, item_compare);
		return;
	}
	for (size_t i = 1; i < n; i++) {
		gpucc_snapshot_item it = items[i];
		size_t j = i;
		for (; j > 0 && memcmp(&items[j - 1].key, &it.key, GPUCC_DIGEST_SIZE) > 0; j--)
			items[j] = items[j - 1];
		items[j] = it;
	}
}

typedef struct sort_job {
	const gpucc_snapshot_item *from;
	gpucc_snapshot_item *to;
	size_t count, threads;
	size_t *next;  /* [threads][BUCKETS]: a chunk's counts, then where it writes next */
	size_t *start; /* [BUCKETS + 1]: where each bucket begins in to */
} sort_job;

static size_t bucket_of(const gpucc_snapshot_item *it)
{
	return (size_t)it->key.bytes[0] << 8 | it->key.bytes[1];
}

static void count_chunk(void *ctx, size_t c)
{
	sort_job *j = ctx;
	size_t *next = j->next + c * BUCKETS;
	for (size_t i = j->count * c / j->threads; i < j->count * (c + 1) / j->threads; i++)
		next[bucket_of(&j->from[i])]++;
}

static void scatter_chunk(void *ctx, size_t c)
{
	sort_job *j = ctx;
	size_t *next = j->next + c * BUCKETS;
	for (size_t i = j->count * c / j->threads; i < j->count * (c + 1) / j->threads; i++)
		j->to[next[bucket_of(&j->from[i])]++] = j->from[i];
}

static void sort_group(void *ctx, size_t g)
{
	sort_job *j = ctx;
	for (size_t b = g * BUCKET_GROUP; b < (g + 1) * BUCKET_GROUP; b++)
		sort_bucket(j->to + j->start[b], j->start[b + 1] - j->start[b]);
}

/* Turn each chunk's counts into where its first item of each bucket goes:
 * bucket by bucket, chunk by chunk, so equal keys keep their order. */
static void place_chunks(sort_job *j)
{
	size_t at = 0;
	for (size_t b = 0; b < BUCKETS; b++) {
		j->start[b] = at;
		for (size_t c = 0; c < j->threads; c++) {
			size_t n = j->next[c * BUCKETS + b];
			j->next[c * BUCKETS + b] = at;
			at += n;
		}
	}
	j->start[BUCKETS] = at;
}

/* Sort *items (count of them, malloc'd) by key; the sorted array may be a
 * new one, the old then freed. */
static int sort_items(gpucc_snapshot_item **items, size_t count)
{
	if (count < SMALL_SORT) {
		if (count > 1) /* an empty set may have no array */
			qsort(*items, count, sizeof **items, item_compare);
		return 0;
	}
	size_t cpus = gpucc_cpu_count();
	sort_job j = {.from = *items, .count = count, .threads = 1};
	if (count >= PARALLEL_MIN)
		j.threads = cpus < THREADS_MAX ? cpus : THREADS_MAX;
	j.to = gpucc_snapshot_items_alloc(count);
	j.next = calloc(j.threads * BUCKETS, sizeof *j.next);
	j.start = malloc((BUCKETS + 1) * sizeof *j.start);
	if (!j.to || !j.next || !j.start) {
		free(j.to);
		free(j.next);
		free(j.start);
		return gpucc_error_oom();
	}
	gpucc_parallel_for(j.threads, j.threads, count_chunk, &j);
	place_chunks(&j);
	gpucc_parallel_for(j.threads, j.threads, scatter_chunk, &j);
	gpucc_parallel_for(BUCKETS / BUCKET_GROUP, j.threads, sort_group, &j);
	free(j.next);
	free(j.start);
	free(*items);
	*items = j.to;
	return 0;
}

int gpucc_snapshot_items_normalise(gpucc_snapshot_item **items, size_t *count, const char *what)
{
	int rc = sort_items(items, *count);
	if (rc)
		return rc;
	gpucc_snapshot_item *it = *items;
	size_t out = 0;
	for (size_t i = 0; i < *count; i++) {
		if (out > 0 && memcmp(&it[out - 1].key, &it[i].key, GPUCC_DIGEST_SIZE) == 0) {
			if (memcmp(&it[out - 1].content, &it[i].content, GPUCC_DIGEST_SIZE) != 0) {
				char hex[GPUCC_DIGEST_HEX_SIZE];
				gpucc_digest_to_hex(hex, &it[i].key);
				return gpucc_error_set(GPUCC_ECONFLICT,
				                       "conflict: key %s appears twice with different contents in %s",
				                       hex, what);
			}
			continue;
		}
		if (out != i)
			it[out] = it[i];
		out++;
	}
	*count = out;
	return 0;
}
