/*
 * formats/image_index.c -- building and reading the index member of an
 * image (formats/image_index.h, formats/image.md "The index").
 *
 * Every number is big-endian and every record fixed-width, so that a reader
 * finds record i by arithmetic and reads a few dozen bytes per lookup: the
 * fan-out entry of the key's first byte and the one before it bound the
 * records to bisect.  Nothing read here is trusted beyond its bounds: a
 * record's ranges are checked against the manifest's size and the payload
 * references before they are handed out, and the caller checks what they
 * point to.
 */
#include "image_index.h"

#include "errors.h"
#include "hex.h"
#include "sha256.h"

#include <stdlib.h>
#include <string.h>

#define FANOUT_ENTRIES 256

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static void put64(unsigned char *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static uint64_t get64(const unsigned char *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

uint64_t gpucc_index_size(uint64_t entries, uint64_t payload_refs, uint64_t kernel_records)
{
	return GPUCC_INDEX_HEADER_SIZE + 2 * (uint64_t)GPUCC_INDEX_FANOUT_SIZE +
	       entries * GPUCC_INDEX_ENTRY_SIZE + payload_refs * GPUCC_INDEX_PAYLOAD_SIZE +
	       kernel_records * GPUCC_INDEX_KERNEL_SIZE;
}

/* ---- building ------------------------------------------------------------- */

typedef struct kernel_record {
	unsigned char hash[32];
	uint32_t entry;
} kernel_record;

static int compare_kernel_records(const void *a, const void *b)
{
	const kernel_record *x = a, *y = b;
	int c = memcmp(x->hash, y->hash, sizeof x->hash);
	if (c)
		return c;
	return x->entry < y->entry ? -1 : x->entry > y->entry;
}

/* The distinct (kernel hash, entry) pairs of entries, sorted. */
static int kernel_records(const gpucc_entry *const *entries, size_t count, kernel_record **out,
                          size_t *out_count)
{
	size_t total = 0;
	for (size_t i = 0; i < count; i++)
		total += entries[i]->kernel_count;
	kernel_record *list = malloc((total ? total : 1) * sizeof *list);
	if (!list)
		return gpucc_error_oom();
	size_t n = 0;
	for (size_t i = 0; i < count; i++)
		for (size_t k = 0; k < entries[i]->kernel_count; k++) {
			const char *name = entries[i]->kernels[k].name;
			gpucc_sha256_buffer(name, strlen(name), list[n].hash);
			list[n++].entry = (uint32_t)i;
		}
	qsort(list, n, sizeof *list, compare_kernel_records);
	size_t unique = 0;
	for (size_t i = 0; i < n; i++)
		if (!unique || compare_kernel_records(&list[unique - 1], &list[i]) != 0)
			list[unique++] = list[i];
	*out = list;
	*out_count = unique;
	return 0;
}

static int compare_payloads(const void *a, const void *b)
{
	const gpucc_payload *x = a, *y = b;
	int c = gpucc_digest_compare(&x->sha256, &y->sha256);
	return c ? c : strcmp(gpucc_part_extension(x->part), gpucc_part_extension(y->part));
}

/* The distinct payloads of entries in archive order (sorted by digest,
 * then extension), with the header offset of each when every header is one
 * block and the first is at first. */
static int payload_layout(const gpucc_entry *const *entries, size_t count, uint64_t first,
                          gpucc_payload **out, uint64_t **out_offsets, size_t *out_count,
                          size_t *out_refs)
{
	size_t total = 0;
	for (size_t i = 0; i < count; i++)
		total += entries[i]->payload_count;
	gpucc_payload *list = malloc((total ? total : 1) * sizeof *list);
	uint64_t *offsets = malloc((total ? total : 1) * sizeof *offsets);
	if (!list || !offsets) {
		free(list);
		free(offsets);
		return gpucc_error_oom();
	}
	size_t n = 0;
	for (size_t i = 0; i < count; i++)
		for (size_t j = 0; j < entries[i]->payload_count; j++)
			list[n++] = entries[i]->payloads[j];
	qsort(list, n, sizeof *list, compare_payloads);
	size_t unique = 0;
	uint64_t at = first;
	for (size_t i = 0; i < n; i++) {
		if (unique && compare_payloads(&list[unique - 1], &list[i]) == 0)
			continue;
		offsets[unique] = at;
		at += 512 + (list[i].size + 511) / 512 * 512;
		list[unique++] = list[i];
	}
	*out = list;
	*out_offsets = offsets;
	*out_count = unique;
	*out_refs = total;
	return 0;
}

static uint64_t payload_offset(const gpucc_payload *list, const uint64_t *offsets, size_t count,
                               const gpucc_payload *p)
{
	size_t lo = 0, hi = count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = compare_payloads(&list[mid], p);
		if (c == 0)
			return offsets[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0; /* not reached: p is one of the list's */
}

int gpucc_index_build(unsigned char **out, size_t *out_size, const gpucc_entry *const *entries,
                      size_t count, const uint64_t *spans, uint64_t manifest_size,
                      uint64_t head_without_index)
{
	if (count > UINT32_MAX || manifest_size > UINT32_MAX)
		return gpucc_error_set(GPUCC_EINVALID, "too many entries for an image index");
	kernel_record *kernels = NULL;
	gpucc_payload *payloads = NULL;
	uint64_t *offsets = NULL;
	size_t kernel_count = 0, payload_count = 0, refs = 0;
	int rc = kernel_records(entries, count, &kernels, &kernel_count);
	if (rc)
		return rc;
	for (size_t i = 0; i < count; i++)
		refs += entries[i]->payload_count;
	uint64_t size = gpucc_index_size(count, refs, kernel_count);
	uint64_t first = head_without_index + 512 + (size + 511) / 512 * 512;
	if ((rc = payload_layout(entries, count, first, &payloads, &offsets, &payload_count, &refs))) {
		free(kernels);
		return rc;
	}
	unsigned char *b = size <= SIZE_MAX ? calloc(1, (size_t)size) : NULL;
	if (!b || refs > UINT32_MAX || kernel_count > UINT32_MAX) {
		free(b);
		free(kernels);
		free(payloads);
		free(offsets);
		return b ? gpucc_error_set(GPUCC_EINVALID, "too many records for an image index")
		         : gpucc_error_oom();
	}
	memcpy(b, GPUCC_INDEX_MAGIC, 8);
	put32(b + 8, (uint32_t)count);
	put32(b + 12, (uint32_t)refs);
	put32(b + 16, (uint32_t)kernel_count);
	put64(b + 24, manifest_size);

	unsigned char *fanout = b + GPUCC_INDEX_HEADER_SIZE;
	unsigned char *records = fanout + GPUCC_INDEX_FANOUT_SIZE;
	unsigned char *refs_at = records + count * GPUCC_INDEX_ENTRY_SIZE;
	unsigned char *kfanout = refs_at + refs * GPUCC_INDEX_PAYLOAD_SIZE;
	unsigned char *krecords = kfanout + GPUCC_INDEX_FANOUT_SIZE;

	uint32_t ref = 0;
	size_t e = 0;
	for (unsigned bucket = 0; bucket < FANOUT_ENTRIES; bucket++) {
		while (e < count && entries[e]->key.bytes[0] == bucket) {
			unsigned char *r = records + e * GPUCC_INDEX_ENTRY_SIZE;
			memcpy(r, entries[e]->key.bytes, GPUCC_DIGEST_SIZE);
			put32(r + 32, (uint32_t)spans[2 * e]);
			put32(r + 36, (uint32_t)spans[2 * e + 1]);
			put32(r + 40, ref);
			put32(r + 44, (uint32_t)entries[e]->payload_count);
			for (size_t j = 0; j < entries[e]->payload_count; j++, ref++)
				put64(refs_at + (size_t)ref * GPUCC_INDEX_PAYLOAD_SIZE,
				      payload_offset(payloads, offsets, payload_count,
				                     &entries[e]->payloads[j]));
			e++;
		}
		put32(fanout + 4 * bucket, (uint32_t)e);
	}
	size_t k = 0;
	for (unsigned bucket = 0; bucket < FANOUT_ENTRIES; bucket++) {
		while (k < kernel_count && kernels[k].hash[0] == bucket) {
			unsigned char *r = krecords + k * GPUCC_INDEX_KERNEL_SIZE;
			memcpy(r, kernels[k].hash, 32);
			put32(r + 32, kernels[k].entry);
			k++;
		}
		put32(kfanout + 4 * bucket, (uint32_t)k);
	}
	free(kernels);
	free(payloads);
	free(offsets);
	*out = b;
	*out_size = (size_t)size;
	return 0;
}

/* ---- reading -------------------------------------------------------------- */

static int corrupt(const gpucc_index_reader *r, const char *what)
{
	return gpucc_error_set(GPUCC_ECORRUPT, "'%s': corrupt index: %s", r->name, what);
}

static uint64_t records_at(void)
{
	return GPUCC_INDEX_HEADER_SIZE + GPUCC_INDEX_FANOUT_SIZE;
}

static uint64_t kernel_fanout_at(const gpucc_index_reader *r)
{
	return records_at() + (uint64_t)r->entry_count * GPUCC_INDEX_ENTRY_SIZE +
	       (uint64_t)r->payload_ref_count * GPUCC_INDEX_PAYLOAD_SIZE;
}

int gpucc_index_open(gpucc_index_reader *r, uint64_t manifest_size)
{
	unsigned char h[GPUCC_INDEX_HEADER_SIZE];
	if (r->size < gpucc_index_size(0, 0, 0))
		return corrupt(r, "shorter than its header and fan-out tables");
	int rc = r->read(r->ctx, 0, h, sizeof h);
	if (rc)
		return rc;
	if (memcmp(h, GPUCC_INDEX_MAGIC, 8) != 0)
		return corrupt(r, "bad magic number");
	r->entry_count = get32(h + 8);
	r->payload_ref_count = get32(h + 12);
	r->kernel_count = get32(h + 16);
	r->manifest_size = get64(h + 24);
	if (get32(h + 20) != 0)
		return corrupt(r, "reserved header bytes are not zero");
	if (gpucc_index_size(r->entry_count, r->payload_ref_count, r->kernel_count) != r->size)
		return corrupt(r, "its size does not match its record counts");
	if (r->manifest_size != manifest_size)
		return corrupt(r, "it names another manifest size than the manifest member's");
	return 0;
}

/* Fan-out value b of the table at table (b from -1, whose value is 0),
 * checked against total. */
static int fanout_value(const gpucc_index_reader *r, uint64_t table, int b, uint32_t total,
                        uint32_t *out)
{
	if (b < 0) {
		*out = 0;
		return 0;
	}
	unsigned char v[4];
	int rc = r->read(r->ctx, table + 4 * (uint64_t)b, v, 4);
	if (rc)
		return rc;
	*out = get32(v);
	if (*out > total)
		return corrupt(r, "a fan-out value exceeds the record count");
	return 0;
}

/* The records [*lo, *hi) of the buckets first..last of the table at table,
 * whose last value must be total. */
static int bucket_range(const gpucc_index_reader *r, uint64_t table, int first, int last,
                        uint32_t total, uint32_t *lo, uint32_t *hi)
{
	uint32_t end;
	int rc;
	if ((rc = fanout_value(r, table, first - 1, total, lo)) ||
	    (rc = fanout_value(r, table, last, total, hi)) ||
	    (rc = fanout_value(r, table, FANOUT_ENTRIES - 1, total, &end)))
		return rc;
	if (end != total)
		return corrupt(r, "the fan-out's last value is not the record count");
	if (*lo > *hi)
		return corrupt(r, "the fan-out decreases");
	return 0;
}

static int read_key(const gpucc_index_reader *r, uint32_t i, unsigned char key[32], int first,
                    int last)
{
	int rc = r->read(r->ctx, records_at() + (uint64_t)i * GPUCC_INDEX_ENTRY_SIZE, key, 32);
	if (rc)
		return rc;
	if (key[0] < first || key[0] > last)
		return corrupt(r, "a record lies outside its fan-out bucket");
	return 0;
}

/* The key's first len hex digits against prefix. */
static int compare_prefix(const unsigned char key[32], const char *prefix, size_t len)
{
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest d;
	memcpy(d.bytes, key, 32);
	gpucc_digest_to_hex(hex, &d);
	return strncmp(hex, prefix, len);
}

int gpucc_index_find_prefix(const gpucc_index_reader *r, const char *prefix, uint32_t *first,
                            uint32_t *count)
{
	size_t len = strlen(prefix);
	*first = 0;
	*count = 0;
	int high = len ? gpucc_hex_digit_lower((unsigned char)prefix[0]) : -1;
	int low = len > 1 ? gpucc_hex_digit_lower((unsigned char)prefix[1]) : 0;
	if (len == 0 || len > 64 || high < 0 || low < 0)
		return gpucc_error_set(GPUCC_EINVALID, "'%s' is not a key prefix", prefix);
	int b_first = high << 4, b_last = b_first | 0xf;
	if (len > 1)
		b_first = b_last = b_first | low;
	uint32_t lo, hi;
	int rc = bucket_range(r, GPUCC_INDEX_HEADER_SIZE, b_first, b_last, r->entry_count, &lo, &hi);
	if (rc)
		return rc;
	unsigned char key[32], previous[32];
	uint32_t end = hi;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if ((rc = read_key(r, mid, key, b_first, b_last)))
			return rc;
		if (compare_prefix(key, prefix, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = lo;
	for (uint32_t i = lo; i < end; i++) {
		if ((rc = read_key(r, i, key, b_first, b_last)))
			return rc;
		if (i > lo && memcmp(previous, key, 32) >= 0)
			return corrupt(r, "records are not in strictly increasing key order");
		if (compare_prefix(key, prefix, len) != 0)
			break;
		memcpy(previous, key, 32);
		(*count)++;
	}
	return 0;
}

int gpucc_index_record_at(const gpucc_index_reader *r, uint32_t i, gpucc_index_record *out)
{
	unsigned char b[GPUCC_INDEX_ENTRY_SIZE];
	if (i >= r->entry_count)
		return corrupt(r, "no such record");
	int rc = r->read(r->ctx, records_at() + (uint64_t)i * GPUCC_INDEX_ENTRY_SIZE, b, sizeof b);
	if (rc)
		return rc;
	memcpy(out->key.bytes, b, 32);
	out->object_offset = get32(b + 32);
	out->object_length = get32(b + 36);
	out->first_payload = get32(b + 40);
	out->payload_count = get32(b + 44);
	if (out->object_length < 2 || out->object_offset > r->manifest_size ||
	    out->object_length > r->manifest_size - out->object_offset)
		return corrupt(r, "an entry's range lies outside the manifest");
	if (out->payload_count > GPUCC_PART_COUNT || out->first_payload > r->payload_ref_count ||
	    out->payload_count > r->payload_ref_count - out->first_payload)
		return corrupt(r, "an entry's payload references lie outside the table");
	return 0;
}

int gpucc_index_payload_offsets(const gpucc_index_reader *r, const gpucc_index_record *rec,
                                uint64_t *out)
{
	unsigned char b[GPUCC_PART_COUNT * GPUCC_INDEX_PAYLOAD_SIZE];
	if (rec->payload_count == 0)
		return 0;
	int rc = r->read(r->ctx,
	                 records_at() + (uint64_t)r->entry_count * GPUCC_INDEX_ENTRY_SIZE +
	                     (uint64_t)rec->first_payload * GPUCC_INDEX_PAYLOAD_SIZE,
	                 b, rec->payload_count * GPUCC_INDEX_PAYLOAD_SIZE);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < rec->payload_count; i++)
		out[i] = get64(b + i * GPUCC_INDEX_PAYLOAD_SIZE);
	return 0;
}

int gpucc_index_kernel_entries(const gpucc_index_reader *r, const char *kernel, uint32_t **out,
                               size_t *count)
{
	*out = NULL;
	*count = 0;
	unsigned char want[32];
	gpucc_sha256_buffer(kernel, strlen(kernel), want);
	uint64_t table = kernel_fanout_at(r);
	uint64_t base = table + GPUCC_INDEX_FANOUT_SIZE;
	uint32_t lo, hi;
	int rc = bucket_range(r, table, want[0], want[0], r->kernel_count, &lo, &hi);
	if (rc)
		return rc;
	unsigned char rec[GPUCC_INDEX_KERNEL_SIZE];
	uint32_t end = hi;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if ((rc = r->read(r->ctx, base + (uint64_t)mid * GPUCC_INDEX_KERNEL_SIZE, rec, 32)))
			return rc;
		if (rec[0] != want[0])
			return corrupt(r, "a kernel record lies outside its fan-out bucket");
		if (memcmp(rec, want, 32) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint32_t *list = NULL;
	size_t n = 0, capacity = 0;
	for (uint32_t i = lo; i < end; i++) {
		if ((rc = r->read(r->ctx, base + (uint64_t)i * GPUCC_INDEX_KERNEL_SIZE, rec, sizeof rec)))
			break;
		if (memcmp(rec, want, 32) != 0)
			break;
		uint32_t entry = get32(rec + 32);
		if (entry >= r->entry_count || get32(rec + 36) != 0 || (n && entry <= list[n - 1])) {
			rc = corrupt(r, "a kernel record is out of order or out of range");
			break;
		}
		if (n == capacity) {
			capacity = capacity ? capacity * 2 : 8;
			uint32_t *grown = realloc(list, capacity * sizeof *list);
			if (!grown) {
				rc = gpucc_error_oom();
				break;
			}
			list = grown;
		}
		list[n++] = entry;
	}
	if (rc) {
		free(list);
		return rc;
	}
	*out = list;
	*count = n;
	return 0;
}
