/*
 * lib/algebra/delta.c -- delta: the entries of an image or a cache whose keys are not
 * in a base snapshot, written as an image (gpucc/snapshot.h).
 *
 * For an image source, source and base are both sorted by key, so choosing
 * the entries is one merge-join pass; the image writer then streams their
 * payloads from the source at commit.  A cache source is listed, sorted and
 * read one entry file at a time; those files stay open until the commit.
 */
#include "algebra.h"
#include "cache_internal.h"
#include "errors.h"
#include "image_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct delta_state {
	gpucc_image_writer *w;
	const gpucc_snapshot *base;
	const char *base_name, *source_name;
	const gpucc_algebra_options *opts;
	gpucc_algebra_counts counts;
} delta_state;

/* Decide for one entry of the source whose key base holds with content
 * base_content (NULL when it holds none): *take says whether it goes into
 * the delta. */
static int decide(delta_state *d, const gpucc_entry *e, const gpucc_digest *base_content,
                  bool *take)
{
	*take = true;
	if (!base_content)
		return 0;
	gpucc_digest content;
	int rc = gpucc_entry_content_digest(&content, e);
	if (rc)
		return rc;
	if (gpucc_digest_compare(&content, base_content) == 0) {
		d->counts.duplicates++;
		*take = false;
		return 0;
	}
	d->counts.conflicts++;
	if (d->opts->conflict_fn)
		d->opts->conflict_fn(d->opts->conflict_ctx, &e->key, d->base_name, d->source_name);
	switch (d->opts->on_conflict) {
	case GPUCC_CONFLICT_FIRST:
		*take = false;
		return 0;
	case GPUCC_CONFLICT_LAST:
		return 0;
	default: {
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &e->key);
		return gpucc_error_set(GPUCC_ECONFLICT,
		                       "conflict: key %s has different contents in '%s' and '%s'", hex,
		                       d->base_name, d->source_name);
	}
	}
}

static int delta_of_image(delta_state *d, gpucc_image *img)
{
	size_t n = gpucc_image_entry_count(img), j = 0;
	const gpucc_snapshot_item *base = gpucc_snapshot_items(d->base);
	size_t base_count = gpucc_snapshot_count(d->base);
	for (size_t i = 0; i < n; i++) {
		const gpucc_entry *e = gpucc_image_entry(img, i);
		while (j < base_count && memcmp(&base[j].key, &e->key, GPUCC_DIGEST_SIZE) < 0)
			j++;
		bool in_base = j < base_count && memcmp(&base[j].key, &e->key, GPUCC_DIGEST_SIZE) == 0;
		bool take;
		d->counts.entries_read++;
		int rc = decide(d, e, in_base ? &base[j].content : NULL, &take);
		if (rc == 0 && take)
			rc = gpucc_image_writer_add_from(d->w, img, e);
		if (rc)
			return rc;
	}
	return 0;
}

/* The entry images opened from a cache, kept until the writer commits
 * (parked beyond the budget of open files, algebra.h). */
typedef struct open_images {
	gpucc_image **images;
	size_t count;
} open_images;

static int delta_of_cache(delta_state *d, gpucc_cache *c, open_images *opened)
{
	gpucc_digest *keys = NULL;
	size_t key_count = 0;
	int rc = gpucc_cache_sorted_keys(&keys, &key_count, c);
	if (rc)
		return rc;
	opened->images = calloc(key_count ? key_count : 1, sizeof *opened->images);
	if (!opened->images) {
		free(keys);
		return gpucc_error_oom();
	}
	gpucc_entry_budget budget;
	gpucc_entry_budget_init(&budget);
	for (size_t i = 0; i < key_count && rc == 0; i++) {
		const gpucc_snapshot_item *in_base = gpucc_snapshot_find(d->base, &keys[i]);
		gpucc_image *img;
		rc = gpucc_algebra_open_entry(&img, c, &keys[i], &budget);
		if (rc == GPUCC_OTHER_PATH) {
			rc = 0;
			continue;
		}
		if (rc)
			break;
		opened->images[opened->count++] = img;
		const gpucc_entry *e = gpucc_image_entry(img, 0);
		bool take;
		d->counts.entries_read++;
		rc = decide(d, e, in_base ? &in_base->content : NULL, &take);
		if (rc == 0 && take)
			rc = gpucc_image_writer_add_from(d->w, img, e);
	}
	free(keys);
	return rc;
}

int gpucc_delta_write(const char *out_path, gpucc_operand *source, const gpucc_snapshot *base,
                      const char *base_name, const gpucc_algebra_options *opts,
                      gpucc_algebra_counts *counts)
{
	GPUCC_REQUIRE(out_path);
	GPUCC_REQUIRE(source);
	GPUCC_REQUIRE(base);
	if (gpucc_algebra_options_resolve(&opts) != 0)
		return GPUCC_EINVALID;
	if (gpucc_operand_kind_of(source) == GPUCC_OPERAND_SNAPSHOT)
		return gpucc_error_set(GPUCC_EINVALID,
		                       "'%s' is a snapshot: it holds keys, not entries, so its delta is "
		                       "a snapshot, not an image",
		                       gpucc_operand_name(source));
	delta_state d = {0};
	d.base = base;
	d.base_name = base_name ? base_name : "base";
	d.source_name = gpucc_operand_name(source);
	d.opts = opts;
	/* SOURCE must be whole, though the entries BASE holds are not read:
	 * an uncompressed image is measured now, a compressed one read to its
	 * end once its payloads are copied. */
	gpucc_operand *const inputs_of[1] = {source};
	gpucc_algebra_inputs inputs = {inputs_of, 1};
	int rc = gpucc_algebra_check_whole(inputs_of, 1, false);
	if (rc == 0)
		rc = gpucc_image_writer_new(&d.w, out_path, &opts->write);
	if (rc)
		return rc;
	gpucc_image_writer_before_publish(d.w, gpucc_algebra_check_compressed, &inputs);
	open_images opened = {0};
	if (gpucc_operand_kind_of(source) == GPUCC_OPERAND_IMAGE)
		rc = delta_of_image(&d, gpucc_operand_image(source));
	else
		rc = delta_of_cache(&d, gpucc_operand_cache(source), &opened);
	if (rc == 0) {
		d.counts.entries_out = gpucc_image_writer_entry_count(d.w);
		rc = gpucc_image_writer_commit(d.w);
	}
	gpucc_image_writer_free(d.w);
	for (size_t i = 0; i < opened.count; i++)
		gpucc_image_free(opened.images[i]);
	free(opened.images);
	if (rc == 0 && counts)
		*counts = d.counts;
	return rc;
}
