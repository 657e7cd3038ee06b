/*
 * gpucc/cache.h -- the local cache: a mutable store of entries that many
 * processes use at once (docs/design.md, "Cache"; invariants 4, 6 and 7).
 *
 * Layout (formats/cache.md): every entry is a single-entry image at a path
 * derived from its key, DIR/v1/<first two hex digits>/<key hex>.gpucc,
 * published by a rename that does not replace.  A lookup is therefore one open whatever the size of
 * the cache, a reader never sees a partial entry, and an entry verifies like
 * any image.  Hits touch the entry's mtime; gc evicts the oldest entries
 * first (least recently used) down to the bound.  Hit and miss counters live
 * in DIR/stats, updated under a lock; the bound in DIR/config.
 *
 * A cache problem never breaks a build: a corrupt or unreadable entry is a
 * miss, reported through the warning handler; a cache that cannot be written
 * (a read-only directory) still serves lookups.
 */
#ifndef GPUCC_CACHE_H
#define GPUCC_CACHE_H

#include "common.h"
#include "image.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpucc_cache gpucc_cache;

/* The bound when nothing configures one: 5 GiB. */
#define GPUCC_CACHE_DEFAULT_MAX_SIZE ((uint64_t)5 << 30)

/* What to do when an entry arrives whose key is already present with other
 * content (a conflict, docs/design.md invariant 3).  Identical duplicates always
 * collapse silently.  Any other value is GPUCC_EINVALID wherever a policy
 * is taken, before anything is done. */
typedef enum gpucc_conflict_policy {
	GPUCC_CONFLICT_FAIL = 0, /* GPUCC_ECONFLICT naming the key and both sources */
	GPUCC_CONFLICT_FIRST = 1, /* keep the entry already there */
	GPUCC_CONFLICT_LAST = 2   /* replace it with the one arriving */
} gpucc_conflict_policy;

/* Called once per conflict met, whatever the policy, before it is applied:
 * key, and the names of the source already holding it and the arriving one
 * (an image's path; a cache's directory). */
typedef void (*gpucc_conflict_fn)(void *ctx, const gpucc_digest *key, const char *first,
                                  const char *second);

/* Receives one line (no newline) about a problem the cache worked around:
 * a corrupt entry counted as a miss, counters that could not be saved.
 * Control characters in it are spelt as in gpucc_error's message. */
typedef void (*gpucc_cache_warning_fn)(void *ctx, const char *message);

/* The default cache directory, in a new string (gpucc_free), from the
 * config (gpucc/config.h): its cache_dir (GPUCC_CACHE_DIR), else
 * xdg_cache_home/gpucc, else home/.cache/gpucc; an empty cache_dir counts
 * as unset, and so do an xdg_cache_home and a home that are not absolute
 * paths.  GPUCC_ENOTFOUND when none is left (always, for a program that
 * has set no config). */
GPUCC_API int gpucc_cache_default_dir(char **out);

enum {
	/* Never write: no directories created, no mtimes touched, no counters
	 * saved.  A directory that does not exist opens as an empty cache. */
	GPUCC_CACHE_READ_ONLY = 1,
	/* The directory must be a cache already: GPUCC_ENOTFOUND when it does
	 * not exist, GPUCC_EINVALID when it holds neither v1/ nor nothing at
	 * all (an empty directory is an empty cache), so that a mistyped path
	 * is neither reported on as an empty cache nor written into. */
	GPUCC_CACHE_EXISTING = 2
};

/* Open the cache in dir (NULL: gpucc_cache_default_dir; "" is refused,
 * GPUCC_EINVALID, never taken for the default), creating it unless
 * GPUCC_CACHE_READ_ONLY.  A directory that exists but cannot be written
 * opens too, read-only (gpucc_cache_writable says so): lookups work, writes
 * fail with a message naming the directory. */
GPUCC_API int gpucc_cache_open(gpucc_cache **out, const char *dir, unsigned flags);
/* Save the counters (gpucc_cache_flush) and release the cache. */
GPUCC_API void gpucc_cache_free(gpucc_cache *c);
/* The cache's directory, borrowed from the cache. */
GPUCC_API const char *gpucc_cache_dir(const gpucc_cache *c);
/* False when the cache was opened read-only, or could not be written. */
GPUCC_API bool gpucc_cache_writable(const gpucc_cache *c);
/* Send the cache's warnings to fn (NULL: keep those of opening for a later
 * handler, drop the rest).  Warnings kept since gpucc_cache_open are
 * delivered at once, in order. */
GPUCC_API void gpucc_cache_set_warning_handler(gpucc_cache *c, gpucc_cache_warning_fn fn,
                                               void *ctx);

/* Look up key.  On a hit, *out is an open, verified, single-entry image
 * (entry 0 has the key; free it with gpucc_image_free) and the entry counts
 * as recently used.  GPUCC_ENOTFOUND on a miss, including an entry found
 * corrupt or unreadable (reported through the warning handler, and removed
 * when the cache is writable).  Counts a hit or a miss. */
GPUCC_API int gpucc_cache_lookup(gpucc_image **out, gpucc_cache *c, const gpucc_digest *key);
/* Open the entry of key as it is, for inspection and export: no counting,
 * no touching, no verification of payloads beyond what gpucc_image_open
 * does.  GPUCC_ENOTFOUND when absent. */
GPUCC_API int gpucc_cache_open_entry(gpucc_image **out, gpucc_cache *c, const gpucc_digest *key);

/* Insert an entry described by e with payloads from sources (as for
 * gpucc_image_writer_add), published atomically.  An identical entry already
 * present is kept (and touched); one with other content is a conflict
 * handled by policy (the source names are "cache" and "new entry").  May
 * evict old entries when the cache grows past its bound. */
GPUCC_API int gpucc_cache_insert(gpucc_cache *c, const gpucc_entry *e,
                                 const gpucc_payload_source *sources, size_t source_count,
                                 gpucc_conflict_policy policy);
/* Insert an entry of an open image, streaming its payloads from src (and
 * verifying them).  Conflicts as for gpucc_cache_insert, the arriving source
 * named by src's name. */
GPUCC_API int gpucc_cache_insert_from(gpucc_cache *c, gpucc_image *src, const gpucc_entry *e,
                                      gpucc_conflict_policy policy);

typedef struct gpucc_cache_stats {
	uint64_t entries;   /* entries present now */
	uint64_t bytes;     /* their size on disk */
	uint64_t max_bytes; /* the bound gc evicts down to */
	uint64_t hits;      /* since the last reset, all processes */
	uint64_t misses;
	uint64_t corrupt;   /* entries found corrupt (counted as misses too) */
	int64_t reset_time; /* Unix time of the last reset; 0 when never reset */
} gpucc_cache_stats;

/* Count entries and bytes (a walk of the directory) and read the counters,
 * including this handle's unsaved ones. */
GPUCC_API int gpucc_cache_stats_get(gpucc_cache_stats *out, gpucc_cache *c);
/* Zero the hit, miss and corrupt counters. */
GPUCC_API int gpucc_cache_stats_reset(gpucc_cache *c);
/* Add this handle's hits and misses to DIR/stats (under the cache lock).
 * Best effort from gpucc_cache_free; explicit calls report failures. */
GPUCC_API int gpucc_cache_flush(gpucc_cache *c);

/* The bound: DIR/config "max-size", else the config's cache_max_size
 * (gpucc/config.h: GPUCC_CACHE_MAX_SIZE), else the default. */
GPUCC_API uint64_t gpucc_cache_max_size(const gpucc_cache *c);
/* Store a new bound in DIR/config (atomically); at least 1 (a bound of 0
 * would keep nothing), at most INT64_MAX; GPUCC_EINVALID otherwise. */
GPUCC_API int gpucc_cache_set_max_size(gpucc_cache *c, uint64_t bytes);
/* Parse a size: "5G", "5GiB", "512M", "100k", "4096" (binary multiples,
 * K M G T), at most INT64_MAX; GPUCC_EINVALID otherwise. */
GPUCC_API int gpucc_size_parse(uint64_t *out, const char *text);

typedef struct gpucc_cache_gc_result {
	uint64_t removed_entries, removed_bytes; /* evicted now */
	uint64_t entries, bytes;                 /* left */
	uint64_t removed_temporaries;            /* files killed processes left */
} gpucc_cache_gc_result;

/* Evict least recently used entries until the cache holds at most max_bytes
 * (0: 90% of gpucc_cache_max_size, so that the next inserts do not each
 * start a gc), and remove temporary files left by killed processes (those
 * whose writer no longer holds their lock, and pending entries over an
 * hour old; formats/cache.md).  Safe while other processes read and write: readers keep the
 * entry they opened, and an entry evicted while being looked up is a miss.
 * An entry that cannot be removed (a shard directory this user may not
 * write, a read-only file system) is passed over and the others still go;
 * when the cache stays above max_bytes because of such entries the result
 * is GPUCC_ERROR, whose message says how many and names the first and why,
 * with *out filled all the same.  out may be NULL. */
GPUCC_API int gpucc_cache_gc(gpucc_cache *c, uint64_t max_bytes, gpucc_cache_gc_result *out);
typedef struct gpucc_cache_verify_result {
	uint64_t entries, bytes; /* entries found whole, and their size */
	uint64_t corrupt;        /* entries that failed a check */
	uint64_t unreadable;     /* entries that could not be read (I/O, permission) */
	uint64_t temporaries;    /* files being written, or left by killed processes */
} gpucc_cache_verify_result;

/* Receives each defect gpucc_cache_verify finds: the entry file (its path
 * as it is) and why (gpucc_error's message, its control characters spelt,
 * the path among them). */
typedef void (*gpucc_cache_defect_fn)(void *ctx, const char *path, const char *message);

/* Check every entry completely, as a lookup does (format, manifest, every
 * payload's SHA-256, the key its name says), without counting, touching or
 * removing anything; entries evicted meanwhile are skipped.  Each defect
 * goes to fn (may be NULL).  0 when every entry is whole, GPUCC_ECORRUPT
 * when some are corrupt, GPUCC_ERROR when some could not be read; out (may
 * be NULL) gets the counts either way. */
GPUCC_API int gpucc_cache_verify(gpucc_cache *c, gpucc_cache_defect_fn fn, void *ctx,
                                 gpucc_cache_verify_result *out);

/* Remove every entry (gc down to nothing) and zero the counters.  Entries
 * that cannot be removed make it GPUCC_ERROR, as for gpucc_cache_gc, after
 * the others are removed and the counters zeroed. */
GPUCC_API int gpucc_cache_clear(gpucc_cache *c);

typedef struct gpucc_cache_prune_result {
	uint64_t removed_entries, removed_bytes; /* removed (with a dry run: would be) */
	uint64_t entries, bytes;                 /* kept */
	uint64_t unreadable;                     /* entries that could not be read: kept */
} gpucc_cache_prune_result;

/* Receives each entry gpucc_cache_prune removes (or, dry, would remove):
 * the entry (valid during the call), its file's size and why it goes. */
typedef void (*gpucc_cache_prune_fn)(void *ctx, const gpucc_entry *e, uint64_t bytes,
                                     const char *reason);

enum { GPUCC_PRUNE_DRY_RUN = 1u }; /* judge and report, remove nothing */

/* Remove the entries that no key this gpucc computes can reach again
 * (docs/design.md, invariant 1): those of another key schema, gpucc or LLVM
 * version, and those made with a ptxas, an LLD or a device library other
 * than the ones a compile would use here (found as gpucc_compile finds
 * them: the config's cuda_path, path, rocm_device_libs: gpucc/config.h).  A tool or library
 * directory not found here judges nothing: those entries stay, and a
 * warning through the cache's handler says so.  With unused_seconds >= 0,
 * entries not used (hit or written) for that long go too.  An entry used
 * or replaced while prune runs stays; entries that cannot be read stay and
 * are counted.  Holds gc's lock.  out (may be NULL) gets the counts.
 * GPUCC_EUNAVAILABLE from a gpucc built without LLVM, which reaches none. */
GPUCC_API int gpucc_cache_prune(gpucc_cache *c, int64_t unused_seconds, unsigned flags,
                                gpucc_cache_prune_fn fn, void *ctx,
                                gpucc_cache_prune_result *out);

/* Call fn for every entry's key, in no particular order; fn returns 0 to go
 * on, anything else to stop (gpucc_cache_foreach then returns that). */
typedef int (*gpucc_cache_entry_fn)(void *ctx, const gpucc_digest *key);
GPUCC_API int gpucc_cache_foreach(gpucc_cache *c, gpucc_cache_entry_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
