/*
 * lib/cache/cache_maintain.c -- looking after the local cache as a whole
 * (formats/cache.md): its stats, verify, gc (by the bound, or of
 * everything: clear), and the removal of the entries prune judges
 * (lib/compile/cache_prune.c).
 */
#include "cache_impl.h"

#include "atomic_file.h"
#include "errors.h"
#include "escape.h"
#include "image_internal.h"
#include "temp_name.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- stats -------------------------------------------------------------- */

typedef struct count_ctx {
	uint64_t entries, bytes;
} count_ctx;

static int count_one(void *ctx, const gpucc_digest *key, int shard_fd, const char *name)
{
	count_ctx *cc = ctx;
	struct stat st;
	if (!key || fstatat(shard_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
		return 0; /* gone meanwhile, or not an entry */
	cc->entries++;
	cc->bytes += (uint64_t)st.st_size;
	return 0;
}

int gpucc_cache_stats_get(gpucc_cache_stats *out, gpucc_cache *c)
{
	GPUCC_REQUIRE(out);
	GPUCC_REQUIRE(c);
	memset(out, 0, sizeof *out);
	count_ctx cc = {0, 0};
	int rc = gpucc_cache_walk_entries(c, count_one, &cc);
	if (rc)
		return rc;
	stats_record r;
	gpucc_cache_stats_read(c, &r);
	out->entries = cc.entries;
	out->bytes = cc.bytes;
	out->max_bytes = c->max_size;
	out->hits = r.hits + c->hits;
	out->misses = r.misses + c->misses;
	out->corrupt = r.corrupt + c->corrupt;
	out->reset_time = r.reset;
	return 0;
}

/* ---- verify --------------------------------------------------------------- */

typedef struct verify_ctx {
	gpucc_cache *c;
	gpucc_cache_defect_fn fn;
	void *fn_ctx;
	gpucc_cache_verify_result r;
} verify_ctx;

static int verify_one(void *ctx, const gpucc_digest *key, int shard_fd, const char *name)
{
	verify_ctx *v = ctx;
	(void)shard_fd;
	(void)name;
	if (!key) {
		v->r.temporaries++;
		return 0;
	}
	char *path = gpucc_cache_entry_path(v->c, key, false);
	if (!path)
		return gpucc_error_oom();
	gpucc_image *img = NULL;
	struct stat st;
	int rc = gpucc_cache_open_entry_file(&img, v->c, key, path, &st, true);
	gpucc_image_free(img);
	if (rc == 0) {
		v->r.entries++;
		v->r.bytes += (uint64_t)st.st_size;
	} else if (rc != GPUCC_ENOTFOUND) { /* (not found: evicted since the listing) */
		if (rc == GPUCC_ECORRUPT || rc == GPUCC_EVERSION)
			v->r.corrupt++;
		else
			v->r.unreadable++;
		if (v->fn)
			v->fn(v->fn_ctx, path, gpucc_error_last()->message);
	}
	free(path);
	gpucc_error_clear();
	return 0;
}

/* Whether path, when it exists, is not a directory: reported to fn. */
static bool not_a_directory(verify_ctx *v, const char *path, const char *consequence)
{
	struct stat st;
	if (!path || stat(path, &st) != 0 || S_ISDIR(st.st_mode))
		return false;
	char message[1024];
	snprintf(message, sizeof message, "'%s' is not a directory: %s", path, consequence);
	if (v->fn) {
		char shown[1024];
		gpucc_escape_controls(shown, sizeof shown, message);
		v->fn(v->fn_ctx, path, shown);
	}
	return true;
}

/* Files where the layout has directories (v1/, a shard, v1/tmp): every
 * insert there fails and every lookup misses, while the walk, which skips
 * them, would find nothing wrong.  How many, each reported to v->fn. */
static uint64_t verify_layout(verify_ctx *v)
{
	if (!v->c->exists)
		return 0;
	char *layout = gpucc_cache_path_join(v->c->dir, LAYOUT_DIR);
	if (!layout || not_a_directory(v, layout, "no entry can be stored")) {
		free(layout);
		return layout ? 1 : 0;
	}
	uint64_t found = 0;
	for (int s = 0; s < 257; s++) {
		char shard[8], consequence[64];
		if (s == 256) {
			snprintf(shard, sizeof shard, "tmp");
			snprintf(consequence, sizeof consequence, "no compressed image can be imported");
		} else {
			snprintf(shard, sizeof shard, "%02x", s);
			snprintf(consequence, sizeof consequence, "no entry whose key starts with %s can be stored",
			         shard);
		}
		char *path = gpucc_cache_path_join(layout, shard);
		found += not_a_directory(v, path, consequence);
		free(path);
	}
	free(layout);
	return found;
}

int gpucc_cache_verify(gpucc_cache *c, gpucc_cache_defect_fn fn, void *ctx,
                       gpucc_cache_verify_result *out)
{
	GPUCC_REQUIRE(c);
	verify_ctx v = {c, fn, ctx, {0}};
	uint64_t misplaced = verify_layout(&v);
	int rc = gpucc_cache_walk_entries(c, verify_one, &v);
	v.r.corrupt += gpucc_cache_sources_verify(c, fn, ctx); /* damaged source records */
	v.r.corrupt += gpucc_cache_pch_verify(c, fn, ctx);     /* damaged preludes */
	v.r.corrupt += misplaced;
	if (out)
		*out = v.r;
	if (rc)
		return rc;
	if (misplaced)
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "cache '%s': %" PRIu64 " corrupt %s, %" PRIu64 " %s where a "
		                       "directory belongs",
		                       c->dir, v.r.corrupt - misplaced,
		                       v.r.corrupt - misplaced == 1 ? "entry" : "entries", misplaced,
		                       misplaced == 1 ? "file" : "files");
	if (v.r.corrupt)
		return gpucc_error_set(GPUCC_ECORRUPT, "cache '%s': %" PRIu64 " corrupt %s", c->dir,
		                       v.r.corrupt, v.r.corrupt == 1 ? "entry" : "entries");
	if (v.r.unreadable)
		return gpucc_error_set(GPUCC_ERROR, "cache '%s': %" PRIu64 " unreadable %s", c->dir,
		                       v.r.unreadable, v.r.unreadable == 1 ? "entry" : "entries");
	return 0;
}

/* ---- gc -------------------------------------------------------------------- */

typedef struct gc_item {
	gpucc_digest key;
	int64_t mtime_sec;
	long mtime_nsec;
	uint64_t size;
	bool prelude; /* a precompiled prelude (lib/cache/cache_pch.c), key its name */
} gc_item;

typedef struct gc_ctx {
	gc_item *items;
	size_t count, capacity;
	size_t preludes;    /* of the items */
	uint64_t bytes;
	time_t now;
	uint64_t removed_temporaries;
	int rc;
} gc_ctx;

/* Whether a staged image in v1/tmp ("stage.<pid>.<random>.<n>...", which its
 * importer unlinks as soon as it has opened it) was left by a process that
 * is gone, or is old enough to be a leftover whatever its name says.  (A
 * process in another PID namespace looks gone; at worst its import then
 * fails cleanly in the moment between writing and opening the copy.) */
static bool stage_abandoned(const char *name, const struct stat *st, time_t now)
{
	long pid;
	if (st->st_mtime + GPUCC_ABANDONED_SECONDS < now)
		return true;
	return sscanf(name, "stage.%ld.", &pid) == 1 && pid > 0 && kill((pid_t)pid, 0) != 0 &&
	       errno == ESRCH;
}

/* Remove what killed processes left in dir_fd: temporary files no live
 * writer holds (lib/base/atomic_file.h) and abandoned staged images. */
static void gc_temporary(gc_ctx *g, int dir_fd, const char *name)
{
	struct stat st;
	if (gpucc_temp_file_is_any(name)) {
		if (gpucc_atomic_file_remove_abandoned(dir_fd, name, g->now, GPUCC_ABANDONED_SECONDS))
			g->removed_temporaries++;
	} else if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	           (gpucc_cache_is_pending_name(name)
	                ? st.st_mtime + GPUCC_ABANDONED_SECONDS < g->now
	                : stage_abandoned(name, &st, g->now)) &&
	           unlinkat(dir_fd, name, 0) == 0) {
		g->removed_temporaries++;
	}
}

/* Temporary files of the small files at the top (stats, config, memos). */
static void gc_top_temporaries(gpucc_cache *c, gc_ctx *g)
{
	DIR *d = opendir(c->dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		if (gpucc_temp_file_is_any(de->d_name))
			gc_temporary(g, dirfd(d), de->d_name);
	closedir(d);
}

/* One thing gc may evict, its recency the mtime in st, its bytes counted
 * against the bound. */
static int gc_add(gc_ctx *g, const gpucc_digest *key, const struct stat *st, uint64_t bytes,
                  bool prelude)
{
	if (g->count == g->capacity) {
		size_t capacity = g->capacity ? g->capacity * 2 : 1024;
		gc_item *grown = realloc(g->items, capacity * sizeof *grown);
		if (!grown)
			return gpucc_error_oom();
		g->items = grown;
		g->capacity = capacity;
	}
	g->items[g->count++] = (gc_item){*key, (int64_t)st->st_mtim.tv_sec, st->st_mtim.tv_nsec,
	                                 bytes, prelude};
	g->bytes += bytes;
	return 0;
}

static int gc_collect(void *ctx, const gpucc_digest *key, int shard_fd, const char *name)
{
	gc_ctx *g = ctx;
	if (!key) {
		gc_temporary(g, shard_fd, name);
		return 0;
	}
	struct stat st;
	if (fstatat(shard_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
		return 0;
	return gc_add(g, key, &st, (uint64_t)st.st_size, false);
}

/* A precompiled prelude: evicted with the entries, least recently used
 * first, its bytes counted against the bound. */
static int gc_collect_prelude(void *ctx, const gpucc_digest *name, const struct stat *st,
                              uint64_t bytes)
{
	gc_ctx *g = ctx;
	int rc = gc_add(g, name, st, bytes, true);
	if (rc == 0)
		g->preludes++;
	return rc;
}

static int gc_item_compare(const void *a, const void *b)
{
	const gc_item *x = a, *y = b;
	if (x->mtime_sec != y->mtime_sec)
		return x->mtime_sec < y->mtime_sec ? -1 : 1;
	if (x->mtime_nsec != y->mtime_nsec)
		return x->mtime_nsec < y->mtime_nsec ? -1 : 1;
	return gpucc_digest_compare(&x->key, &y->key);
}

static void set_bytes(stats_record *r, void *ctx)
{
	r->bytes = *(uint64_t *)ctx;
}

/* After a walk that removed entries: the entries' size, as counted, is the
 * estimate inserts keep from now on (in DIR/stats: best effort). */
static void record_bytes(gpucc_cache *c, uint64_t bytes)
{
	gpucc_cache_stats_update(c, set_bytes, &bytes);
	gpucc_error_clear();
	c->bytes_base = bytes;
	c->bytes_base_known = true;
	c->bytes_added = 0;
}

/* A lock on DIR/gc.lock; wait, or give up (GPUCC_LOCK_BUSY) when busy.  As
 * gpucc_lock_acquire does, a lock file that another user created and this
 * one may not write is locked through a read-only descriptor. */
static int gc_lock(gpucc_cache *c, bool wait)
{
	char *path = gpucc_cache_path_join(c->dir, "gc.lock");
	if (!path)
		return gpucc_error_oom();
	int fd = gpucc_lock_file(path, LOCK_EX | (wait ? 0 : LOCK_NB));
	free(path);
	return fd;
}

/* Where gc of the bound evicts down to: 90% of it, so that the inserts
 * after a gc do not each walk the whole cache again (ccache does the same). */
static uint64_t low_water(uint64_t bound)
{
	return bound - bound / 10;
}

/* The entries gc meant to evict and could not (unlink refused: a shard
 * directory of another user, a read-only file system, an immutable file):
 * how many, and the first one's path and errno, for the error. */
typedef struct gc_kept {
	uint64_t count;
	char *first_path;
	int first_errno;
} gc_kept;

/* Count the entry at path that unlink could not remove (errno err). */
static void gc_note_kept(gc_kept *k, char *path, int err)
{
	if (k->count++ == 0) {
		k->first_path = path; /* kept for the message; freed by the caller */
		k->first_errno = err;
	} else {
		free(path);
	}
}

/* Evict down to max_bytes; with all, every entry goes, used recently or not.
 * Entries that cannot be removed are passed over (the others still go);
 * when the cache stays above max_bytes because of them, the result is
 * GPUCC_ERROR naming how many and the first one, after *out (may be NULL)
 * has the counts and the bytes left are recorded, as on success. */
static int gc_locked(gpucc_cache *c, uint64_t max_bytes, bool all, gpucc_cache_gc_result *out)
{
	gc_ctx g = {0};
	g.now = time(NULL);
	gc_top_temporaries(c, &g);
	int rc = gpucc_cache_walk_entries(c, gc_collect, &g);
	if (rc == 0)
		rc = gpucc_cache_pch_collect(c, all, gc_collect_prelude, &g);
	if (rc) {
		free(g.items);
		return rc;
	}
	gpucc_cache_gc_result result = {0, 0, g.count - g.preludes, g.bytes, 0};
	gc_kept kept = {0, NULL, 0};
	if (g.bytes > max_bytes) {
		qsort(g.items, g.count, sizeof *g.items, gc_item_compare);
		for (size_t i = 0; i < g.count && result.bytes > max_bytes; i++) {
			if (g.items[i].prelude) {
				if (gpucc_cache_pch_remove(c, &g.items[i].key, g.items[i].mtime_sec,
				                           g.items[i].mtime_nsec, all)) {
					result.removed_bytes += g.items[i].size;
					result.bytes -= g.items[i].size <= result.bytes ? g.items[i].size
					                                                : result.bytes;
				}
				continue;
			}
			char *path = gpucc_cache_entry_path(c, &g.items[i].key, false);
			if (!path) {
				rc = gpucc_error_oom();
				break;
			}
			struct stat st;
			/* Skip an entry used or replaced since the walk: it is recent
			 * now.  One gone meanwhile (another gc) is gone. */
			if (stat(path, &st) != 0 ||
			    !(all || (st.st_mtim.tv_sec == g.items[i].mtime_sec &&
			              st.st_mtim.tv_nsec == g.items[i].mtime_nsec))) {
				free(path);
				continue;
			}
			if (unlink(path) != 0) {
				if (errno != ENOENT)
					gc_note_kept(&kept, path, errno);
				else
					free(path);
				continue;
			}
			gpucc_cache_remove_warnings_of(path);
			result.removed_entries++;
			result.removed_bytes += (uint64_t)st.st_size;
			result.entries--;
			result.bytes -= g.items[i].size <= result.bytes ? g.items[i].size : result.bytes;
			free(path);
		}
	}
	free(g.items);
	gpucc_cache_sources_gc(c, all); /* source records that lead to no entry */
	if (rc) {
		free(kept.first_path);
		return rc;
	}
	result.removed_temporaries = g.removed_temporaries;
	record_bytes(c, result.bytes);
	if (out)
		*out = result;
	if (kept.count && result.bytes > max_bytes)
		rc = gpucc_error_set(GPUCC_ERROR,
		                     "cache '%s': %" PRIu64 " %s could not be removed; the first, '%s': %s",
		                     c->dir, kept.count, kept.count == 1 ? "entry" : "entries",
		                     kept.first_path, strerror(kept.first_errno));
	if (rc)
		gpucc_error_keep_errno(kept.first_errno);
	free(kept.first_path);
	return rc;
}

int gpucc_cache_gc(gpucc_cache *c, uint64_t max_bytes, gpucc_cache_gc_result *out)
{
	GPUCC_REQUIRE(c);
	if (!c->writable)
		return gpucc_cache_refuse_read_only(c, "gc");
	int lock = gc_lock(c, true);
	if (lock < 0)
		return lock;
	int rc = gc_locked(c, max_bytes ? max_bytes : low_water(c->max_size), false, out);
	close(lock);
	return rc;
}

void gpucc_cache_maybe_gc(gpucc_cache *c)
{
	if (!c->bytes_base_known) {
		stats_record r;
		gpucc_cache_stats_read(c, &r);
		c->bytes_base = r.bytes;
		c->bytes_base_known = true;
	}
	uint64_t removed = c->bytes_added < 0 ? -(uint64_t)c->bytes_added : 0;
	uint64_t estimate = removed ? (c->bytes_base > removed ? c->bytes_base - removed : 0)
	                            : c->bytes_base + (uint64_t)c->bytes_added;
	if (estimate <= c->max_size)
		return;
	int lock = gc_lock(c, false);
	if (lock == GPUCC_LOCK_BUSY) {
		gpucc_error_clear();
		return; /* another process is collecting */
	}
	if (lock < 0) { /* said once: every insert past the bound meets it */
		if (!c->gc_skip_warned)
			gpucc_cache_warn(c, "cache gc skipped: %s", gpucc_error_last()->message);
		c->gc_skip_warned = true;
		gpucc_error_clear();
		return;
	}
	if (gc_locked(c, low_water(c->max_size), false, NULL) != 0)
		gpucc_cache_warn(c, "cache gc failed: %s", gpucc_error_last()->message);
	close(lock);
	gpucc_error_clear();
}

/* ---- removal of judged entries (prune) ------------------------------------ */

typedef struct judged_ctx {
	gpucc_cache *c;
	bool dry;
	gpucc_cache_judge_fn judge;
	void *judge_ctx;
	gpucc_cache_prune_fn fn;
	void *fn_ctx;
	gpucc_cache_prune_result r;
} judged_ctx;

/* Whether path is still the file read (st) and unused since: then unlink. */
static bool remove_if_untouched(const char *path, const struct stat *st)
{
	struct stat now;
	if (!(stat(path, &now) == 0 && now.st_ino == st->st_ino && now.st_dev == st->st_dev &&
	      now.st_mtim.tv_sec == st->st_mtim.tv_sec &&
	      now.st_mtim.tv_nsec == st->st_mtim.tv_nsec && unlink(path) == 0))
		return false;
	gpucc_cache_remove_warnings_of(path);
	return true;
}

static int judge_one(void *ctx, const gpucc_digest *key, int shard_fd, const char *name)
{
	judged_ctx *j = ctx;
	(void)shard_fd;
	(void)name;
	if (!key)
		return 0;
	char *path = gpucc_cache_entry_path(j->c, key, false);
	if (!path)
		return gpucc_error_oom();
	gpucc_image *img = NULL;
	struct stat st;
	int rc = gpucc_cache_open_entry_file(&img, j->c, key, path, &st, false);
	if (rc != 0) { /* evicted since the listing, or unreadable: kept */
		j->r.unreadable += rc != GPUCC_ENOTFOUND;
		gpucc_error_clear();
		free(path);
		return 0;
	}
	const gpucc_entry *e = gpucc_image_entry(img, 0);
	uint64_t size = (uint64_t)st.st_size;
	const char *reason = j->judge(j->judge_ctx, e, &st);
	if (reason && (j->dry || remove_if_untouched(path, &st))) {
		j->r.removed_entries++;
		j->r.removed_bytes += size;
		if (j->fn)
			j->fn(j->fn_ctx, e, size, reason);
	} else {
		j->r.entries++;
		j->r.bytes += size;
	}
	gpucc_image_free(img);
	free(path);
	return 0;
}

int gpucc_cache_remove_judged(gpucc_cache *c, bool dry, gpucc_cache_judge_fn judge,
                              void *judge_ctx, gpucc_cache_prune_fn fn, void *fn_ctx,
                              gpucc_cache_prune_result *out)
{
	if (!dry && !c->writable)
		return gpucc_cache_refuse_read_only(c, "prune");
	int lock = -1;
	if (!dry && (lock = gc_lock(c, true)) < 0)
		return lock;
	judged_ctx j = {c, dry, judge, judge_ctx, fn, fn_ctx, {0}};
	int rc = gpucc_cache_walk_entries(c, judge_one, &j);
	if (lock >= 0)
		close(lock);
	if (out)
		*out = j.r;
	if (rc == 0 && !dry && j.r.removed_bytes)
		record_bytes(c, j.r.bytes);
	return rc;
}

int gpucc_cache_clear(gpucc_cache *c)
{
	GPUCC_REQUIRE(c);
	if (!c->writable)
		return gpucc_cache_refuse_read_only(c, "clear");
	int lock = gc_lock(c, true);
	if (lock < 0)
		return lock;
	gpucc_cache_gc_result result;
	int rc = gc_locked(c, 0, true, &result);
	close(lock);
	if (rc == 0)
		return gpucc_cache_stats_reset(c);
	/* Entries that could not be removed fail the clear, named by the
	 * error; the counters are zeroed all the same, as far as they can be
	 * (a failure to do so is the lesser news, and not reported). */
	char message[2048];
	snprintf(message, sizeof message, "%s", gpucc_error_last()->message);
	gpucc_cache_stats_reset(c);
	return gpucc_error_set(rc, "%s", message);
}
