/*
 * lib/cache/cache_insert.c -- putting an entry into the local cache
 * (formats/cache.md): judging what is there already (a duplicate, a
 * conflict, a corrupt file), writing the entry under a pending name and
 * publishing it by a rename that does not replace; and the staging paths of
 * imports.
 */
#include "cache_impl.h"

#include "atomic_file.h"
#include "errors.h"
#include "image_internal.h"
#include "manifest.h" /* gpucc_entry_validate */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- insertion ------------------------------------------------------------ */

/* 64 random bits for names no other process picks, whatever its pid. */
static uint64_t random_u64(void)
{
	uint64_t random = 0;
	if (getrandom(&random, sizeof random, GRND_NONBLOCK) != (ssize_t)sizeof random) {
		static atomic_uint calls;
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		random = ((uint64_t)now.tv_sec * 1000000007u) ^ (uint64_t)now.tv_nsec ^
		         ((uint64_t)getpid() << 32) ^ atomic_fetch_add(&calls, 1);
	}
	return random;
}

#ifdef GPUCC_TEST_HOOKS
void (*gpucc_cache_test_before_publish)(gpucc_cache *c, const gpucc_digest *key);
#endif

static int shard_ready(gpucc_cache *c, const gpucc_digest *key)
{
	char *shard = gpucc_cache_entry_path(c, key, true);
	if (!shard)
		return gpucc_error_oom();
	int rc = 0;
	if (gpucc_cache_make_directory(shard) != 0)
		rc = gpucc_error_set_errno("cannot create cache directory '%s'", shard);
	free(shard);
	return rc;
}

static int64_t file_size_or_zero(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

/* What an insert finds at an entry's name. */
typedef enum held_kind {
	HELD_NOTHING,
	HELD_SAME,   /* the arriving entry's contents: a duplicate */
	HELD_RENAME, /* a duplicate under a larger module name: replaced, so
	              * that a cache, as an image, keeps the smallest name of
	              * identical copies whatever their order of arrival */
	HELD_OTHER,  /* other contents: a conflict */
	HELD_CORRUPT /* a file that fails its checks: as good as absent */
} held_kind;

/* What the cache holds at path (key's entry file) now, against the
 * arriving entry's content digest and module name (module, "" for none).
 * Checked completely, as a lookup does, so that a duplicate never keeps a
 * file whose payloads are bad.  A corrupt file is reported; st gets its
 * identity and size. */
static int judge_held(held_kind *out, gpucc_cache *c, const gpucc_digest *key, const char *path,
                      const gpucc_digest *arriving, const char *module, struct stat *st)
{
	gpucc_image *old = NULL;
	memset(st, 0, sizeof *st);
	int rc = gpucc_cache_open_entry_file(&old, c, key, path, st, true);
	if (rc == GPUCC_ENOTFOUND) {
		gpucc_error_clear(); /* expected: no error for gpucc_cache_free to keep */
		*out = HELD_NOTHING;
		return 0;
	}
	if (rc == GPUCC_ECORRUPT || rc == GPUCC_EVERSION) {
		/* Said before the replacing, which may fail (a directory there
		 * cannot be unlinked): the failure then says so. */
		gpucc_cache_warn(c, "cache entry '%s' is corrupt, to be replaced by the arriving one: %s",
		                 path, gpucc_error_last()->message);
		gpucc_error_clear();
		*out = HELD_CORRUPT;
		return 0;
	}
	if (rc)
		return rc;
	gpucc_digest held;
	const gpucc_entry *e = gpucc_image_entry(old, 0);
	rc = gpucc_entry_content_digest(&held, e);
	/* Byte order, as the image writer compares module names. */
	bool larger_name = rc == 0 && strcmp(e->module ? e->module : "", module) > 0;
	gpucc_image_free(old);
	if (rc)
		return rc;
	*out = gpucc_digest_compare(&held, arriving) != 0 ? HELD_OTHER
	       : larger_name                               ? HELD_RENAME
	                                                   : HELD_SAME;
	return 0;
}

/* A conflict with key's entry in the cache: tell fn, then GPUCC_ECONFLICT
 * under the fail policy, else 0 (the caller applies first or last). */
int gpucc_cache_report_conflict(gpucc_cache *c, const gpucc_digest *key, const char *src_name,
                                gpucc_conflict_policy policy, gpucc_conflict_fn fn, void *fn_ctx)
{
	if (fn) /* a cache is named by its directory, as a source of a merge is */
		fn(fn_ctx, key, c->dir, src_name);
	if (policy != GPUCC_CONFLICT_FAIL)
		return 0;
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, key);
	return gpucc_error_set(GPUCC_ECONFLICT,
	                       "conflict: key %s has different contents in cache '%s' and '%s'", hex,
	                       c->dir, src_name);
}

/* What held decides with nothing to publish: a duplicate (touched, for
 * LRU), or a conflict that the policy fails or keeps.  1 with *outcome when
 * it decides; 0 when the arriving entry is to be published (a duplicate
 * under a smaller module name too); or an error. */
static int settled_by_held(held_kind held, gpucc_cache *c, const gpucc_digest *key,
                           const char *path, const char *src_name, gpucc_conflict_policy policy,
                           gpucc_conflict_fn fn, void *fn_ctx, cache_insert_outcome *outcome)
{
	if (held == HELD_SAME) {
		utimensat(AT_FDCWD, path, NULL, 0);
		*outcome = CACHE_INSERT_DUPLICATE;
		return 1;
	}
	if (held != HELD_OTHER)
		return 0;
	int rc = gpucc_cache_report_conflict(c, key, src_name, policy, fn, fn_ctx);
	if (rc)
		return rc;
	if (policy != GPUCC_CONFLICT_FIRST)
		return 0;
	*outcome = CACHE_INSERT_KEPT;
	return 1;
}

/* Rename from to to unless to exists (failing with EEXIST then):
 * RENAME_NOREPLACE where the file system has it, else link and unlink, else
 * (no hard links either) a check and a rename, which two racing writers
 * can slip between. */
static int rename_no_replace(const char *from, const char *to)
{
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
		return -1;
	if (link(from, to) == 0) {
		unlink(from);
		return 0;
	}
	if (errno != EPERM && errno != ENOSYS && errno != EOPNOTSUPP)
		return -1;
	if (access(to, F_OK) == 0) {
		errno = EEXIST;
		return -1;
	}
	return rename(from, to);
}

/* What an insert's publish did: the outcome, whether the written file is
 * now the entry, and the bytes of entry files it removed or replaced. */
typedef struct publish_result {
	cache_insert_outcome outcome;
	bool published;
	uint64_t gone_bytes;
} publish_result;

/* Publish the entry written at pending as path.  held is what the check
 * before writing found there (st its file).  Replaces only a conflicting
 * entry that policy last lets go, an identical one under a larger module
 * name, or a corrupt file (removed first); otherwise publishes only while
 * the name is free, so that an entry another process published meanwhile
 * is judged again, as a duplicate or a conflict (invariant 3), never
 * overwritten.  (A replacing rename replaces what is there by then: an
 * entry another process put there since it was judged goes too.) */
static int publish(publish_result *r, gpucc_cache *c, const gpucc_digest *key, const char *path,
                   const char *pending, const gpucc_digest *arriving, const char *module,
                   held_kind held, struct stat *st, const char *src_name,
                   gpucc_conflict_policy policy, gpucc_conflict_fn fn, void *fn_ctx)
{
	for (int attempt = 0; attempt < 16; attempt++) {
		int published;
		if (held == HELD_OTHER || held == HELD_RENAME) { /* other: the policy is last */
			if ((published = rename(pending, path)) == 0) {
				r->outcome = held == HELD_OTHER ? CACHE_INSERT_REPLACED : CACHE_INSERT_DUPLICATE;
				r->gone_bytes += (uint64_t)st->st_size;
			}
		} else {
			if (held == HELD_CORRUPT) {
				if (gpucc_cache_remove_if_same(c, path, st) != 0)
					return gpucc_error_set_errno("cannot replace corrupt cache entry '%s'", path);
				r->gone_bytes += (uint64_t)st->st_size;
			}
			if ((published = rename_no_replace(pending, path)) == 0)
				r->outcome = CACHE_INSERT_ADDED;
		}
		if (published == 0) {
			r->published = true;
			return 0;
		}
		if (errno != EEXIST) {
			int rc = gpucc_error_set_errno("cannot insert into cache '%s': cannot publish '%s'",
			                               c->dir, path);
			return rc == GPUCC_ENOTFOUND ? GPUCC_ERROR : rc;
		}
		int rc = judge_held(&held, c, key, path, arriving, module, st);
		if (rc == 0)
			rc = settled_by_held(held, c, key, path, src_name, policy, fn, fn_ctx, &r->outcome);
		if (rc)
			return rc < 0 ? rc : 0;
	}
	return gpucc_error_set(GPUCC_ERROR, "cannot insert into cache '%s': '%s' keeps changing",
	                       c->dir, path);
}

/* The last error, about the pending file, said of the entry it was to be:
 * "cannot insert into cache 'DIR': ..." with pending spelled as path. */
static int name_entry_in_error(gpucc_cache *c, const char *pending, const char *path)
{
	const gpucc_error *e = gpucc_error_last();
	const char *hit = strstr(e->message, pending);
	if (!hit)
		return gpucc_error_prefix("cannot insert into cache '%s'", c->dir);
	char message[2048];
	snprintf(message, sizeof message, "%.*s%s%s", (int)(hit - e->message), e->message, path,
	         hit + strlen(pending));
	int sys_errno = gpucc_error_last_errno(); /* ENOSPC or not: compile.c asks */
	int rc = gpucc_error_set(e->code, "cannot insert into cache '%s': %s", c->dir, message);
	gpucc_error_keep_errno(sys_errno);
	return rc;
}

/* The common part of both inserts: w already holds the arriving entry, to
 * be written at pending and published as path. */
static int insert_with_writer(gpucc_cache *c, gpucc_image_writer *w, const gpucc_digest *key,
                              const char *path, const char *pending, const char *src_name,
                              gpucc_conflict_policy policy, gpucc_conflict_fn fn, void *fn_ctx,
                              cache_insert_outcome *outcome)
{
	const gpucc_entry *arriving = gpucc_image_writer_find(w, key);
	gpucc_digest new_digest;
	int rc = arriving ? gpucc_entry_content_digest(&new_digest, arriving)
	                  : gpucc_error_set(GPUCC_ERROR, "image writer lost the entry being inserted");
	if (rc)
		return rc;
	const char *module = arriving->module ? arriving->module : "";

	/* Decided before writing, so that a duplicate or a kept entry costs
	 * no write; publish decides again if another process was quicker. */
	held_kind held;
	struct stat st;
	if ((rc = judge_held(&held, c, key, path, &new_digest, module, &st)) == 0)
		rc = settled_by_held(held, c, key, path, src_name, policy, fn, fn_ctx, outcome);
	if (rc)
		return rc < 0 ? rc : 0;

	rc = gpucc_image_writer_commit(w);
	if (rc)
		return name_entry_in_error(c, pending, path);
	int64_t size = file_size_or_zero(pending);
#ifdef GPUCC_TEST_HOOKS
	if (gpucc_cache_test_before_publish)
		gpucc_cache_test_before_publish(c, key);
#endif
	publish_result r = {CACHE_INSERT_ADDED, false, 0};
	rc = publish(&r, c, key, path, pending, &new_digest, module, held, &st, src_name, policy, fn,
	             fn_ctx);
	if (!r.published)
		unlink(pending);
	c->bytes_added += (r.published ? size : 0) - (int64_t)r.gone_bytes;
	if (rc)
		return rc;
	*outcome = r.outcome;
	gpucc_cache_maybe_gc(c);
	return 0;
}

/* ".<key>.gpucc.new.<pid>.<random>" beside path: where an insert writes its
 * entry before publishing it (gc removes one a killed process left). */
static char *pending_path(const char *path)
{
	const char *base = strrchr(path, '/') + 1;
	size_t n = strlen(path) + 64;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%.*s.%s" PENDING_INFIX "%ld.%016" PRIx64, (int)(base - path), path, base,
		         (long)getpid(), random_u64());
	return p;
}

/* An arriving entry: e with payloads from sources, or from the image src. */
typedef struct arriving_entry {
	const gpucc_entry *e;
	const gpucc_payload_source *sources;
	size_t source_count;
	gpucc_image *src;
} arriving_entry;

int gpucc_conflict_policy_check(gpucc_conflict_policy policy)
{
	if (policy == GPUCC_CONFLICT_FAIL || policy == GPUCC_CONFLICT_FIRST ||
	    policy == GPUCC_CONFLICT_LAST)
		return 0;
	return gpucc_error_set(GPUCC_EINVALID,
	                       "unknown conflict policy %d (expected GPUCC_CONFLICT_FAIL, _FIRST "
	                       "or _LAST)",
	                       (int)policy);
}

/* Both inserts. */
static int insert_arriving(gpucc_cache *c, const arriving_entry *a, const char *src_name,
                           gpucc_conflict_policy policy, gpucc_conflict_fn fn, void *fn_ctx,
                           cache_insert_outcome *outcome)
{
	int rc = gpucc_conflict_policy_check(policy);
	if (rc)
		return rc;
	if (!c->writable) {
		c->insert_failed = true;
		return gpucc_cache_refuse_read_only(c, "insert into");
	}
	/* A described entry is the caller's: its defect is named with the
	 * cache, not with the temporary file the writer would have named.
	 * (An image's entry the writer names as the image's defect.) */
	if (!a->src && gpucc_entry_validate(a->e) != 0) {
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &a->e->key);
		c->insert_failed = true;
		return gpucc_error_prefix("cannot insert entry %.12s into cache '%s'", hex, c->dir);
	}
	gpucc_image_writer *w = NULL;
	char *path = gpucc_cache_entry_path(c, &a->e->key, false);
	char *pending = path ? pending_path(path) : NULL;
	rc = pending ? shard_ready(c, &a->e->key) : gpucc_error_oom();
	gpucc_write_options opts = GPUCC_WRITE_OPTIONS_INIT; /* uncompressed: random access on lookup */
	opts.use_mtime = true;
	opts.mtime = 0;
	/* No fsync: an entry cut short by a power loss fails verification
	 * and is a miss (invariant 7), and fsync per entry made importing
	 * 2,000 entries take 9 s instead of well under one. */
	opts.no_sync = true;
	if (rc == 0 && (rc = gpucc_image_writer_new(&w, pending, &opts)) == 0) {
		gpucc_image_writer_leave_leftovers(w); /* gc sweeps the cache */
		rc = a->src ? gpucc_image_writer_add_from(w, a->src, a->e)
		            : gpucc_image_writer_add(w, a->e, a->sources, a->source_count);
	}
	if (rc == 0)
		rc = insert_with_writer(c, w, &a->e->key, path, pending, src_name, policy, fn, fn_ctx,
		                        outcome);
	gpucc_image_writer_free(w);
	free(path);
	free(pending);
	c->insert_failed |= rc != 0;
	return rc;
}

int gpucc_cache_insert(gpucc_cache *c, const gpucc_entry *e, const gpucc_payload_source *sources,
                       size_t source_count, gpucc_conflict_policy policy)
{
	GPUCC_REQUIRE(c);
	GPUCC_REQUIRE(e);
	if (source_count != 0)
		GPUCC_REQUIRE(sources);
	arriving_entry a = {e, sources, source_count, NULL};
	cache_insert_outcome outcome;
	return insert_arriving(c, &a, "new entry", policy, NULL, NULL, &outcome);
}

int gpucc_cache_insert_entry_from(gpucc_cache *c, gpucc_image *src, const gpucc_entry *e,
                                  const char *src_name, gpucc_conflict_policy policy,
                                  gpucc_conflict_fn fn, void *fn_ctx,
                                  cache_insert_outcome *outcome)
{
	arriving_entry a = {e, NULL, 0, src};
	return insert_arriving(c, &a, src_name, policy, fn, fn_ctx, outcome);
}

int gpucc_cache_insert_from(gpucc_cache *c, gpucc_image *src, const gpucc_entry *e,
                            gpucc_conflict_policy policy)
{
	GPUCC_REQUIRE(c);
	GPUCC_REQUIRE(src);
	GPUCC_REQUIRE(e);
	cache_insert_outcome outcome;
	return gpucc_cache_insert_entry_from(c, src, e, gpucc_image_name(src), policy, NULL, NULL,
	                                     &outcome);
}

int gpucc_cache_staging_path(char **out, gpucc_cache *c, const char *suffix)
{
	static atomic_uint counter;
	*out = NULL;
	if (!c->writable)
		return gpucc_cache_refuse_read_only(c, "stage an image in");
	char *dir = gpucc_cache_path_join(c->dir, STAGING_DIR);
	if (!dir)
		return gpucc_error_oom();
	if (gpucc_cache_make_directory(dir) != 0) {
		int rc = gpucc_error_set_errno("cannot create cache directory '%s'", dir);
		free(dir);
		return rc;
	}
	/* stage.<pid>.<random>.<n>: the pid lets gc tell a live importer's
	 * file; the random part keeps apart processes of one pid in other PID
	 * namespaces (PID 1 of containers that share a cache). */
	size_t n = strlen(dir) + strlen(suffix) + 64;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/stage.%ld.%016" PRIx64 ".%u%s", dir, (long)getpid(), random_u64(),
		         atomic_fetch_add(&counter, 1), suffix);
	free(dir);
	if (!p)
		return gpucc_error_oom();
	*out = p;
	return 0;
}

/* ---- the warnings beside an entry ------------------------------------------- */

void gpucc_cache_warnings_store(gpucc_cache *c, const gpucc_digest *key, const char *text)
{
	if (!c->writable || !c->exists)
		return;
	char *path = gpucc_cache_warnings_path(c, key);
	if (!path)
		return;
	size_t size = text ? strlen(text) : 0;
	if (size == 0 || size > GPUCC_CACHE_WARNINGS_MAX) {
		unlink(path);
		free(path);
		return;
	}
	/* As an entry is written: a reader sees the old file or the new one.
	 * Leftovers of a killed writer are the cache's gc's to remove. */
	gpucc_atomic_file f;
	if (gpucc_atomic_file_open(&f, path) == 0) {
		f.no_sweep = true;
		f.no_sync = true; /* what a power loss costs is a replay, not an entry */
		if (gpucc_write_all(f.fd, text, size) == 0)
			gpucc_atomic_file_commit(&f);
		else
			gpucc_atomic_file_abort(&f);
	}
	gpucc_error_clear(); /* a nicety: its failure is no error of the compile */
	free(path);
}
