/*
 * lib/image/image_lookup.c -- what an open image's manifest gives: the manifest
 * of an image opened for lookups (read through its index, its entries
 * parsed one at a time, until all of it is needed), the list of distinct
 * payloads in archive order and their offsets, and the queries of
 * gpucc/image.h (entries, payloads, lookups by key).
 */
#include "image_reader_impl.h"

#include "errors.h"
#include "hex.h"
#include "key.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the manifest of an image opened for lookups ------------------------------ */

/* Whether img's whole manifest is parsed (at open, or since).  While it
 * is not -- or its parse failed -- lookups go through the index. */
bool gpucc_image_manifest_loaded(const gpucc_image *img)
{
	return !img->by_index ||
	       (atomic_load_explicit(&((gpucc_image *)img)->manifest_ready, memory_order_acquire) &&
	        img->manifest_rc == 0);
}

/* Parse the whole manifest of an image opened by its index. */
static int load_manifest(gpucc_image *img)
{
	manifest_view view;
	if (gpucc_image_manifest_open(img, img->manifest_offset - BLOCK, img->manifest_size,
	                              &view) != 0)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': truncated image: it ends inside its "
		                       "manifest", img->name);
	int rc = gpucc_image_parse_manifest(img, view.json, (size_t)img->manifest_size);
	if (gpucc_image_manifest_close(&view)) {
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
	if (!gpucc_image_manifest_loaded(img)) {
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
	return !gpucc_image_manifest_loaded(img);
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

	/* The object, with the byte before it and up to 4 after it: the line
	 * it stands on (formats/image.md, "The index"). */
	indexed_entry *x = calloc(1, sizeof *x);
	uint64_t from = rec.object_offset ? rec.object_offset - 1 : 0;
	uint64_t to = rec.object_offset + rec.object_length + 4;
	to = to < img->manifest_size ? to : img->manifest_size;
	char *window = malloc((size_t)(to - from));
	if (!x || !window) {
		free(x);
		free(window);
		return gpucc_error_oom();
	}
	char hex[GPUCC_DIGEST_HEX_SIZE], found[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &rec.key);
	ssize_t n = gpucc_image_read_at(img, img->manifest_offset + from, window, (size_t)(to - from));
	if (n < 0)
		rc = gpucc_error_set_errno("cannot read '%s'", img->name);
	else if ((uint64_t)n != to - from)
		rc = gpucc_error_set(GPUCC_ECORRUPT, "'%s': truncated image: it ends inside its manifest",
		                     img->name);
	else if (rec.object_offset == 0 ||
	         !gpucc_manifest_entry_on_line(window, (size_t)(to - from), rec.object_length,
	                                       to == img->manifest_size))
		rc = gpucc_error_set(GPUCC_ECORRUPT,
		                     "'%s': corrupt index: the record of key %.12s points to no line of "
		                     "the manifest's entries",
		                     img->name, hex);
	else
		rc = gpucc_manifest_parse_entry(&x->manifest, window + 1, rec.object_length, img->name,
		                                i);
	free(window);
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
	if (gpucc_image_manifest_loaded(img))
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
int gpucc_image_indexed_payload_offset(gpucc_image *img, const gpucc_payload *p, uint64_t *offset)
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

/* ---- the payload list ----------------------------------------------------- */

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

/* Build the payload list and, for uncompressed images whose manifest
 * header was a single ustar block, the offsets of all payload headers
 * (the first follows the manifest's data; a wrong guess is caught by the
 * header check before any byte is used).  Once, for all threads: the
 * first caller builds them under lock, any other waits for it. */
static int build_payloads(gpucc_image *img);

int gpucc_image_ensure_payloads(gpucc_image *img)
{
	/* Every payload read and accessor comes here: the built list costs
	 * one load. */
	if (atomic_load_explicit(&img->payloads_ready, memory_order_acquire) && img->payloads_rc == 0)
		return 0;
	int rc = ensure_manifest(img);
	return rc ? rc : build_payloads(img);
}

/* gpucc_image_ensure_payloads, the first time (or after a failure). */
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
	gpucc_image_ensure_payloads(img);
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
	gpucc_image_ensure_payloads((gpucc_image *)img);
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
	int rc = gpucc_image_ensure_payloads((gpucc_image *)img);
	if (rc == 0)
		*out = img->payload_count;
	return rc;
}

const gpucc_payload *gpucc_image_payload(const gpucc_image *img, size_t index)
{
	GPUCC_REQUIRE_OR(img, NULL);
	if (gpucc_image_ensure_payloads((gpucc_image *)img) != 0)
		return NULL;
	return index < img->payload_count ? &img->payloads[index] : NULL;
}

const gpucc_entry *gpucc_image_find(const gpucc_image *img, const gpucc_digest *key)
{
	GPUCC_REQUIRE_OR(img, NULL);
	GPUCC_REQUIRE_OR(key, NULL);
	if (!gpucc_image_manifest_loaded(img)) {
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
	if (len == 0 || len > 2 * GPUCC_DIGEST_SIZE || gpucc_hex_span(prefix, false) != len)
		return gpucc_error_set(GPUCC_EINVALID, "'%s' is not a key or key prefix (1 to 64 hex digits)",
		                       prefix ? prefix : "");
	char lower[GPUCC_DIGEST_HEX_SIZE];
	for (size_t i = 0; i <= len; i++)
		lower[i] = (char)(prefix[i] >= 'A' && prefix[i] <= 'F' ? prefix[i] - 'A' + 'a' : prefix[i]);
	if (!gpucc_image_manifest_loaded(img))
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
