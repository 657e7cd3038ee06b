/*
 * lib/algebra/merge.c -- merge: the union of images and caches, into an image or
 * into a cache (gpucc/snapshot.h); and the lock that serialises writers of
 * one output.
 *
 * Into an image: every entry goes to one image writer, which collapses
 * identical duplicates, sorts, and streams the payloads from the sources at
 * commit, so the output's bytes depend only on the set of entries (merge is
 * commutative and associative) and memory only on the number of entries.
 *
 * Into a cache: a first pass over the sources' keys and content digests
 * finds conflicts among the inputs before anything is written, and picks
 * the entry each key gets; then each is inserted on its own (a cache is a
 * set of independently published entries).  Compressed inputs are first
 * copied to an uncompressed staging image inside the cache, in one pass, so
 * that entries can then be read in any order without decompressing the
 * image again for each.
 *
 * Either way only the payloads copied are read, so every image input is
 * checked whole (gpucc_algebra_check_whole): an uncompressed one by its
 * length before anything is read, a compressed one read on to its end once
 * its payloads are copied, before the output is published or its entries
 * go into the cache.  Inputs past half the limit on open files come parked
 * from gpucc_operands_open, and share that budget with the entries of
 * caches opened here.
 */
#include "algebra.h"
#include "atomic_file.h"
#include "cache_internal.h"
#include "errors.h"
#include "image_internal.h"
#include "temp_name.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- reading sources entry by entry ----------------------------------------- */

/* The entries of one source: an image's, or a cache's (each entry file
 * opened and kept, since the writer reads them at commit; parked beyond
 * the budget of open files). */
typedef struct source_entries {
	gpucc_operand *source;
	size_t count;
	const gpucc_entry **entries;
	gpucc_image **images; /* the image each entry is read from */
	gpucc_image **owned;  /* cache entry images to free */
	size_t owned_count;
} source_entries;

static void source_entries_release(source_entries *se)
{
	for (size_t i = 0; i < se->owned_count; i++)
		gpucc_image_free(se->owned[i]);
	free(se->owned);
	free(se->entries);
	free(se->images);
	memset(se, 0, sizeof *se);
}

static int source_entries_load(source_entries *se, gpucc_operand *s, gpucc_entry_budget *budget)
{
	memset(se, 0, sizeof *se);
	se->source = s;
	if (gpucc_operand_kind_of(s) == GPUCC_OPERAND_SNAPSHOT)
		return gpucc_error_set(GPUCC_EINVALID,
		                       "'%s' is a snapshot: it holds keys, not entries, and cannot be merged",
		                       gpucc_operand_name(s));
	if (gpucc_operand_kind_of(s) == GPUCC_OPERAND_IMAGE) {
		gpucc_image *img = gpucc_operand_image(s);
		size_t n = gpucc_image_entry_count(img);
		se->entries = malloc((n ? n : 1) * sizeof *se->entries);
		se->images = malloc((n ? n : 1) * sizeof *se->images);
		if (!se->entries || !se->images) {
			source_entries_release(se);
			return gpucc_error_oom();
		}
		for (size_t i = 0; i < n; i++) {
			se->entries[i] = gpucc_image_entry(img, i);
			se->images[i] = img;
		}
		se->count = n;
		return 0;
	}
	gpucc_cache *c = gpucc_operand_cache(s);
	gpucc_digest *keys = NULL;
	size_t key_count = 0;
	int rc = gpucc_cache_sorted_keys(&keys, &key_count, c);
	if (rc)
		return rc;
	size_t cap = key_count ? key_count : 1;
	se->entries = malloc(cap * sizeof *se->entries);
	se->images = malloc(cap * sizeof *se->images);
	se->owned = malloc(cap * sizeof *se->owned);
	if (!se->entries || !se->images || !se->owned) {
		free(keys);
		source_entries_release(se);
		return gpucc_error_oom();
	}
	for (size_t i = 0; i < key_count; i++) {
		gpucc_image *img;
		rc = gpucc_algebra_open_entry(&img, c, &keys[i], budget);
		if (rc == GPUCC_OTHER_PATH) {
			rc = 0;
			continue;
		}
		if (rc) {
			free(keys);
			source_entries_release(se);
			return rc;
		}
		se->owned[se->owned_count++] = img;
		se->entries[se->count] = gpucc_image_entry(img, 0);
		se->images[se->count] = img;
		se->count++;
	}
	free(keys);
	return 0;
}

static void load_all_release(source_entries *all, size_t count)
{
	for (size_t i = 0; i < count; i++)
		source_entries_release(&all[i]);
	free(all);
}

/* The entries of every source, and the uncompressed image inputs checked
 * whole (the compressed ones are read to their ends later, as their
 * payloads are read). */
static int load_all(source_entries **out, gpucc_operand *const *sources, size_t count)
{
	int rc = gpucc_algebra_check_whole(sources, count, false);
	if (rc)
		return rc;
	source_entries *all = calloc(count ? count : 1, sizeof *all);
	if (!all)
		return gpucc_error_oom();
	/* The image inputs gpucc_operands_open left open share the budget
	 * with the cache entries opened here. */
	gpucc_entry_budget budget;
	gpucc_entry_budget_init(&budget);
	for (size_t i = 0; i < count; i++) {
		gpucc_image *img = gpucc_operand_image(sources[i]);
		if (img && !gpucc_image_is_parked(img))
			budget.open++;
	}
	for (size_t i = 0; i < count; i++) {
		rc = source_entries_load(&all[i], sources[i], &budget);
		if (rc) {
			load_all_release(all, i);
			return rc;
		}
	}
	*out = all;
	return 0;
}

static int conflict_error(const gpucc_digest *key, const char *first, const char *second)
{
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, key);
	return gpucc_error_set(GPUCC_ECONFLICT,
	                       "conflict: key %s has different contents in '%s' and '%s'", hex, first,
	                       second);
}

/* ---- into an image ---------------------------------------------------------- */

/* The name of the first source before `before` holding key with content. */
static const char *holder_name(source_entries *all, size_t before, const gpucc_digest *key,
                               const gpucc_digest *content)
{
	for (size_t j = 0; j < before; j++) {
		/* Each source's entries are sorted by key: binary search. */
		size_t lo = 0, hi = all[j].count;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			const gpucc_entry *e = all[j].entries[mid];
			int c = gpucc_digest_compare(&e->key, key);
			if (c == 0) {
				gpucc_digest d;
				if (gpucc_entry_content_digest(&d, e) == 0 &&
				    gpucc_digest_compare(&d, content) == 0)
					return gpucc_operand_name(all[j].source);
				break;
			}
			if (c < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	return "an earlier input";
}

void gpucc_algebra_options_init(gpucc_algebra_options *opts)
{
	GPUCC_REQUIRE_VOID(opts);
	*opts = (gpucc_algebra_options)GPUCC_ALGEBRA_OPTIONS_INIT;
}

int gpucc_algebra_options_resolve(const gpucc_algebra_options **opts)
{
	static const gpucc_algebra_options defaults = GPUCC_ALGEBRA_OPTIONS_INIT;
	if (!*opts)
		*opts = &defaults;
	if (gpucc_options_version_check("algebra options", (*opts)->version,
	                                GPUCC_ALGEBRA_OPTIONS_VERSION) != 0 ||
	    gpucc_conflict_policy_check((*opts)->on_conflict) != 0)
		return GPUCC_EINVALID;
	return 0;
}

int gpucc_merge_write(const char *out_path, gpucc_operand *const *sources, size_t count,
                      const gpucc_algebra_options *opts, gpucc_algebra_counts *counts)
{
	GPUCC_REQUIRE(out_path);
	GPUCC_REQUIRE_EACH(sources, count);
	if (gpucc_algebra_options_resolve(&opts) != 0)
		return GPUCC_EINVALID;
	source_entries *all;
	int rc = load_all(&all, sources, count);
	if (rc)
		return rc;
	gpucc_image_writer *w = NULL;
	rc = gpucc_image_writer_new(&w, out_path, &opts->write);
	gpucc_algebra_inputs inputs = {sources, count};
	if (rc == 0)
		gpucc_image_writer_before_publish(w, gpucc_algebra_check_compressed, &inputs);
	gpucc_algebra_counts local = {0};
	for (size_t s = 0; s < count && rc == 0; s++) {
		for (size_t i = 0; i < all[s].count && rc == 0; i++) {
			const gpucc_entry *e = all[s].entries[i];
			local.entries_read++;
			const gpucc_entry *there = gpucc_image_writer_find(w, &e->key);
			if (!there) {
				rc = gpucc_image_writer_add_from(w, all[s].images[i], e);
				continue;
			}
			gpucc_digest old_content, new_content;
			if ((rc = gpucc_entry_content_digest(&old_content, there)) != 0 ||
			    (rc = gpucc_entry_content_digest(&new_content, e)) != 0)
				break;
			if (gpucc_digest_compare(&old_content, &new_content) == 0) {
				/* The writer keeps the smallest module name of the
				 * copies, whatever their order (formats/image.md). */
				local.duplicates++;
				rc = gpucc_image_writer_add_from(w, all[s].images[i], e);
				continue;
			}
			local.conflicts++;
			const char *first = holder_name(all, s, &e->key, &old_content);
			const char *second = gpucc_operand_name(all[s].source);
			if (opts->conflict_fn)
				opts->conflict_fn(opts->conflict_ctx, &e->key, first, second);
			if (opts->on_conflict == GPUCC_CONFLICT_FAIL)
				rc = conflict_error(&e->key, first, second);
			else if (opts->on_conflict == GPUCC_CONFLICT_LAST &&
			         (rc = gpucc_image_writer_remove(w, &e->key)) == 0)
				rc = gpucc_image_writer_add_from(w, all[s].images[i], e);
		}
	}
	if (rc == 0) {
		local.entries_out = gpucc_image_writer_entry_count(w);
		rc = gpucc_image_writer_commit(w);
	}
	gpucc_image_writer_free(w);
	load_all_release(all, count);
	if (rc == 0 && counts)
		*counts = local;
	return rc;
}

/* ---- into a cache ------------------------------------------------------------ */

typedef struct pick {
	gpucc_digest key;
	gpucc_digest content;
	uint32_t source, index; /* which entry */
	bool chosen;            /* this one is inserted */
} pick;

static int pick_compare(const void *a, const void *b)
{
	const pick *x = a, *y = b;
	int c = memcmp(&x->key, &y->key, GPUCC_DIGEST_SIZE);
	if (c)
		return c;
	return x->source < y->source ? -1 : x->source > y->source;
}

/* Whether pick a names a smaller module than pick b (no name sorts first). */
static bool module_before(const pick *a, const pick *b, source_entries *all)
{
	const char *x = all[a->source].entries[a->index]->module;
	const char *y = all[b->source].entries[b->index]->module;
	return strcmp(x ? x : "", y ? y : "") < 0;
}

/* Decide, across the inputs, which entry each key gets: conflicts among the
 * inputs are found here, before the cache is touched. */
static int choose(pick **out, size_t *out_count, source_entries *all, size_t count,
                  const gpucc_algebra_options *opts, gpucc_algebra_counts *local)
{
	size_t total = 0;
	for (size_t s = 0; s < count; s++)
		total += all[s].count;
	pick *picks = malloc((total ? total : 1) * sizeof *picks);
	if (!picks)
		return gpucc_error_oom();
	size_t n = 0;
	for (uint32_t s = 0; s < count; s++) {
		for (uint32_t i = 0; i < all[s].count; i++) {
			pick *p = &picks[n++];
			p->key = all[s].entries[i]->key;
			p->source = s;
			p->index = i;
			p->chosen = false;
			int rc = gpucc_entry_content_digest(&p->content, all[s].entries[i]);
			if (rc) {
				free(picks);
				return rc;
			}
		}
	}
	local->entries_read = n;
	qsort(picks, n, sizeof *picks, pick_compare);
	for (size_t i = 0; i < n;) {
		size_t end = i + 1;
		while (end < n && memcmp(&picks[end].key, &picks[i].key, GPUCC_DIGEST_SIZE) == 0)
			end++;
		size_t winner = i;
		for (size_t j = i + 1; j < end; j++) {
			if (memcmp(&picks[j].content, &picks[winner].content, GPUCC_DIGEST_SIZE) == 0) {
				/* Of identical copies the one with the smallest
				 * module name, as in an image: order-independent. */
				local->duplicates++;
				if (module_before(&picks[j], &picks[winner], all))
					winner = j;
				continue;
			}
			local->conflicts++;
			const char *first = gpucc_operand_name(all[picks[winner].source].source);
			const char *second = gpucc_operand_name(all[picks[j].source].source);
			if (opts->conflict_fn)
				opts->conflict_fn(opts->conflict_ctx, &picks[j].key, first, second);
			if (opts->on_conflict == GPUCC_CONFLICT_FAIL) {
				int rc = conflict_error(&picks[j].key, first, second);
				free(picks);
				return rc;
			}
			if (opts->on_conflict == GPUCC_CONFLICT_LAST)
				winner = j;
		}
		picks[winner].chosen = true;
		i = end;
	}
	*out = picks;
	*out_count = n;
	return 0;
}

/* Under the default policy, a chosen entry that conflicts with the one the
 * cache already holds fails the import before anything is inserted, as a
 * conflict among the inputs does.  (An entry another process adds in the
 * meantime is still found when inserting.) */
static int check_cache_conflicts(gpucc_cache *cache, const pick *picks, size_t n,
                                 source_entries *all, const gpucc_algebra_options *opts,
                                 gpucc_algebra_counts *local)
{
	for (size_t i = 0; i < n; i++) {
		if (!picks[i].chosen)
			continue;
		gpucc_image *there;
		int rc = gpucc_cache_open_entry(&there, cache, &picks[i].key);
		if (rc == GPUCC_ENOTFOUND || rc == GPUCC_ECORRUPT || rc == GPUCC_EVERSION)
			continue; /* absent, or as good as absent: inserting replaces it */
		if (rc)
			return rc;
		gpucc_digest content;
		rc = gpucc_entry_content_digest(&content, gpucc_image_entry(there, 0));
		gpucc_image_free(there);
		if (rc)
			return rc;
		if (memcmp(&content, &picks[i].content, GPUCC_DIGEST_SIZE) == 0)
			continue;
		local->conflicts++;
		return gpucc_cache_report_conflict(cache, &picks[i].key,
		                                   gpucc_operand_name(all[picks[i].source].source),
		                                   GPUCC_CONFLICT_FAIL, opts->conflict_fn,
		                                   opts->conflict_ctx);
	}
	return 0;
}

/* An uncompressed copy of the chosen entries of a compressed image, in the
 * cache's staging directory: written in one forward pass over the source,
 * and unlinked as soon as it is open, so that a killed import leaves nothing
 * there (gc removes what a kill in between leaves). */
static int stage(gpucc_image **out, gpucc_cache *cache, gpucc_image *src, const bool *chosen)
{
	char *path;
	int rc = gpucc_cache_staging_path(&path, cache, ".gpucc");
	if (rc)
		return rc;
	gpucc_write_options wo = GPUCC_WRITE_OPTIONS_INIT;
	wo.use_mtime = true;
	gpucc_image_writer *w;
	rc = gpucc_image_writer_new(&w, path, &wo);
	for (size_t i = 0; rc == 0 && i < gpucc_image_entry_count(src); i++)
		if (chosen[i])
			rc = gpucc_image_writer_add_from(w, src, gpucc_image_entry(src, i));
	if (rc == 0)
		rc = gpucc_image_writer_commit(w);
	if (w)
		gpucc_image_writer_free(w);
	if (rc == 0)
		rc = gpucc_image_open(out, path);
	unlink(path);
	free(path);
	if (rc)
		return gpucc_error_prefix("cannot stage '%s' for import", gpucc_image_name(src));
	return 0;
}

static int insert_source(gpucc_cache *cache, source_entries *se, const bool *chosen,
                         const gpucc_algebra_options *opts, gpucc_algebra_counts *local)
{
	gpucc_image *staged = NULL;
	int rc = 0;
	bool any = false;
	for (size_t i = 0; i < se->count; i++)
		any = any || chosen[i];
	gpucc_image *src = gpucc_operand_image(se->source);
	bool compressed = src && gpucc_image_is_compressed(src);
	if (compressed && any && se->count > 1) {
		rc = stage(&staged, cache, src, chosen);
		if (rc)
			return rc;
	}
	/* A compressed input is read to its end before any of its entries goes
	 * in (staging read the chosen ones on the way; an uncompressed one was
	 * measured before anything was read), so that one cut short is refused
	 * even when the cache or another input holds all it has. */
	if (compressed && (rc = gpucc_image_check_whole(src)) != 0) {
		gpucc_image_free(staged);
		return rc;
	}
	if (!any)
		return 0;
	const char *name = gpucc_operand_name(se->source);
	for (size_t i = 0; i < se->count && rc == 0; i++) {
		if (!chosen[i])
			continue;
		gpucc_image *img = se->images[i];
		const gpucc_entry *e = se->entries[i];
		if (staged) {
			img = staged;
			e = gpucc_image_find(staged, &se->entries[i]->key);
			if (!e) {
				rc = gpucc_error_set(GPUCC_ERROR, "staged copy of '%s' lost an entry", name);
				break;
			}
		}
		cache_insert_outcome outcome;
		rc = gpucc_cache_insert_entry_from(cache, img, e, name, opts->on_conflict,
		                                   opts->conflict_fn, opts->conflict_ctx, &outcome);
		if (rc)
			break;
		switch (outcome) {
		case CACHE_INSERT_ADDED: local->entries_out++; break;
		case CACHE_INSERT_DUPLICATE: local->duplicates++; break;
		case CACHE_INSERT_KEPT: local->conflicts++; break;
		case CACHE_INSERT_REPLACED: local->conflicts++; local->entries_out++; break;
		}
	}
	gpucc_image_free(staged);
	return rc;
}

int gpucc_merge_into_cache(gpucc_cache *cache, gpucc_operand *const *sources, size_t count,
                           const gpucc_algebra_options *opts, gpucc_algebra_counts *counts)
{
	GPUCC_REQUIRE(cache);
	GPUCC_REQUIRE_EACH(sources, count);
	if (gpucc_algebra_options_resolve(&opts) != 0)
		return GPUCC_EINVALID;
	if (!gpucc_cache_writable(cache))
		return gpucc_cache_refuse_read_only(cache, "write to");
	source_entries *all;
	int rc = load_all(&all, sources, count);
	if (rc)
		return rc;
	gpucc_algebra_counts local = {0};
	pick *picks = NULL;
	size_t pick_count = 0;
	rc = choose(&picks, &pick_count, all, count, opts, &local);
	if (rc == 0 && opts->on_conflict == GPUCC_CONFLICT_FAIL)
		rc = check_cache_conflicts(cache, picks, pick_count, all, opts, &local);
	for (size_t s = 0; s < count && rc == 0; s++) {
		bool *chosen = calloc(all[s].count ? all[s].count : 1, sizeof *chosen);
		if (!chosen) {
			rc = gpucc_error_oom();
			break;
		}
		for (size_t i = 0; i < pick_count; i++)
			if (picks[i].chosen && picks[i].source == s)
				chosen[picks[i].index] = true;
		rc = insert_source(cache, &all[s], chosen, opts, &local);
		free(chosen);
	}
	free(picks);
	load_all_release(all, count);
	if (rc == 0 && counts)
		*counts = local;
	return rc;
}

/* ---- the output lock ------------------------------------------------------------ */

/* Writers of one output are serialised by an exclusive flock on
 * ".NAME.lock" beside it, so that merges into other files of the directory
 * run at once.  The holder removes the file before it lets go, so nothing
 * is left behind: a process that opened the file before that finds, once
 * it holds the lock, that the name is no longer that file, and starts
 * again.  Where the file system has no flock, merges go unserialised, as
 * temporary files go unlocked there (lib/base/atomic_file.c). */

/* 1: fd is locked and still the file at path; 0: it is not (start again);
 * < 0: an error. */
static int lock_held(int fd, const char *path, const char *out_path)
{
	while (flock(fd, LOCK_EX) != 0) {
		if (errno == EINTR)
			continue;
		if (gpucc_flock_unsupported(errno))
			return 1;
		return gpucc_error_set_errno("cannot lock '%s' (through '%s')", out_path, path);
	}
	struct stat held, named;
	if (fstat(fd, &held) != 0)
		return gpucc_error_set_errno("cannot lock '%s' (through '%s')", out_path, path);
	if (stat(path, &named) != 0)
		return errno == ENOENT ? 0 : gpucc_error_set_errno("cannot lock '%s' (through '%s')", out_path, path);
	return held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

int gpucc_merge_lock_acquire(const char *out_path)
{
	GPUCC_REQUIRE(out_path);
	const char *base = strrchr(out_path, '/');
	if (!*out_path)
		return gpucc_error_set(GPUCC_EINVALID, "an empty string is not a file name");
	if (!*(base ? base + 1 : out_path))
		return gpucc_error_set(GPUCC_EINVALID, "'%s' is a directory, not a file name", out_path);
	char *path = gpucc_lock_path_of(out_path);
	if (!path)
		return gpucc_error_oom();
	for (;;) {
		/* O_NOFOLLOW: a link planted at the lock's name is refused, not
		 * followed to create or lock some other file. */
		int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd < 0) {
			int rc = gpucc_error_set_errno("cannot lock '%s' (through '%s')", out_path, path);
			free(path);
			return rc;
		}
		int held = lock_held(fd, path, out_path);
		if (held == 1) {
			free(path);
			return fd;
		}
		close(fd);
		if (held < 0) {
			free(path);
			return held;
		}
	}
}

void gpucc_merge_lock_release(const char *out_path, int lock)
{
	if (lock < 0)
		return;
	if (out_path) {
		/* Still held, so the name is still this file: no other process
		 * can have replaced it. */
		char *path = gpucc_lock_path_of(out_path);
		if (path)
			unlink(path);
		free(path);
	} else {
		/* Released all the same, its file left for the next writer to
		 * take over: a lock held until the process ends would make
		 * every other writer of the output wait. */
		gpucc_error_null_argument(__func__, "out_path");
	}
	close(lock);
}
