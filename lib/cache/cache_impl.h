/*
 * lib/cache/cache_impl.h -- what the files of the local cache share: the handle,
 * the names of its layout, and the helpers one file of the cache calls in
 * another.  No file but these includes it (the rest of libgpucc has
 * cache_internal.h).  Each file calls only those above it:
 *
 *   cache.c           opening and closing, the stats and config files, the
 *                     counters, paths
 *   cache_walk.c      walking the entries, and looking one up
 *   cache_maintain.c  stats, verify, gc, and the removal prune judges
 *   cache_insert.c    insertion (which runs gc when past the bound)
 */
#ifndef GPUCC_LIB_CACHE_IMPL_H
#define GPUCC_LIB_CACHE_IMPL_H

#include "cache_internal.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#define LAYOUT_DIR GPUCC_CACHE_LAYOUT_DIR
#define STAGING_DIR "v1/tmp"
#define ENTRY_SUFFIX ".gpucc"
/* Beside an entry: the warnings of the compile that made it, which a hit
 * replays (formats/cache.md). */
#define WARNINGS_SUFFIX ".warnings"
#define PENDING_INFIX ".new."
/* Warnings found while opening, kept until a handler is set. */
#define OPEN_WARNINGS_MAX 8

struct gpucc_cache {
	char *dir;
	bool writable;
	int read_only_errno; /* why it is not writable: 0 when opened read-only */
	bool insert_failed;  /* an insert failed: its caller said why */
	bool gc_skip_warned; /* automatic gc could not lock, and said so */
	bool exists; /* the directory exists (read-only opens may find none) */
	uint64_t max_size;
	/* Counted by this handle, not yet added to DIR/stats. */
	uint64_t hits, misses, corrupt;
	int64_t bytes_added; /* change in entry bytes caused by this handle */
	uint64_t bytes_base; /* DIR/stats "bytes" when first needed or last gc'd */
	bool bytes_base_known; /* bytes_base read (gpucc_cache_maybe_gc) or set */
	gpucc_cache_warning_fn warn;
	void *warn_ctx;
	char *open_warnings[OPEN_WARNINGS_MAX]; /* not yet delivered */
	int open_warning_count;
	char *config_remotes;   /* DIR/config's "remote" values, joined by blanks */
	void *remotes;          /* lib/remote/remote.c's, released by remotes_release */
	void (*remotes_release)(gpucc_cache *c, void *remotes);
};

typedef struct stats_record {
	uint64_t hits, misses, corrupt, bytes;
	int64_t reset;
} stats_record;

/* ---- cache.c ---- */

char *gpucc_cache_path_join(const char *a, const char *b);
/* DIR/v1/<xx>/<key>.gpucc, or the shard directory when shard_only. */
char *gpucc_cache_entry_path(const gpucc_cache *c, const gpucc_digest *key, bool shard_only);
/* DIR/v1/<xx>/<key>.warnings. */
char *gpucc_cache_warnings_path(const gpucc_cache *c, const gpucc_digest *key);
/* Remove the warnings beside the entry file at entry_path (it ends in
 * ENTRY_SUFFIX), if any: whoever removes an entry removes them too. */
void gpucc_cache_remove_warnings_of(const char *entry_path);
/* mkdir, where an existing directory is success; -1 (errno set) else. */
int gpucc_cache_make_directory(const char *path);
/* DIR/stats's counters; all zeros when it is absent or unreadable. */
void gpucc_cache_stats_read(const gpucc_cache *c, stats_record *r);
/* Apply update to DIR/stats under the stats lock. */
int gpucc_cache_stats_update(gpucc_cache *c, void (*update)(stats_record *, void *), void *ctx);

/* ---- cache_walk.c ---- */

/* Called per entry file: its key, the shard's directory fd and the name.
 * Also given temporary files (key NULL), for gc to remove stale ones. */
typedef int (*walk_fn)(void *ctx, const gpucc_digest *key, int shard_fd, const char *name);

int gpucc_cache_walk_entries(gpucc_cache *c, walk_fn fn, void *ctx);
/* An entry written but not yet published by an insert (a temporary file
 * of lib/base/atomic_file.h is gpucc_temp_file_is_any's). */
bool gpucc_cache_is_pending_name(const char *name);
/* Remove a corrupt entry file unless another process replaced it since it
 * was read (read_st): 0 when it is gone or another file, -1 (errno set)
 * when it is still there. */
int gpucc_cache_remove_if_same(gpucc_cache *c, const char *path, const struct stat *read_st);
/* The entry file at path for key, checked as a lookup checks it (with
 * verify, its payloads too); st gets its identity. */
int gpucc_cache_open_entry_file(gpucc_image **out, gpucc_cache *c, const gpucc_digest *key,
                                const char *path, struct stat *st, bool verify);

/* ---- cache_maintain.c ---- */

/* After an insert: gc down to the low-water mark when the estimated size is
 * past the bound, unless another process is collecting; failures are
 * warnings. */
void gpucc_cache_maybe_gc(gpucc_cache *c);

#endif
