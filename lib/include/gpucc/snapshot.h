/*
 * gpucc/snapshot.h -- the cache algebra: snapshots, deltas and merges
 * (docs/design.md, "Snapshot", "Delta", "Merge"; invariants 2-4).
 *
 * A snapshot is the set of (key, content digest) pairs a cache or an image
 * holds, sorted by key (formats/snapshot.md).  A delta is the entries of an
 * operand whose keys are not in a base; a merge is the union of operands.
 * Both write images through the image writer, so their bytes depend only on
 * the set of entries: merge is commutative and associative byte for byte.  They
 * stream payloads: memory grows with the number of entries, not their size.
 */
#ifndef GPUCC_SNAPSHOT_H
#define GPUCC_SNAPSHOT_H

#include "cache.h"
#include "common.h"
#include "image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- snapshots ---------------------------------------------------------- */

typedef struct gpucc_snapshot_item {
	gpucc_digest key;
	gpucc_digest content; /* gpucc_entry_content_digest */
} gpucc_snapshot_item;

typedef struct gpucc_snapshot gpucc_snapshot;

/* A snapshot of items given in any order.  The same key twice with the same
 * content collapses; with different content it is GPUCC_ECONFLICT. */
GPUCC_API int gpucc_snapshot_new(gpucc_snapshot **out, const gpucc_snapshot_item *items,
                                 size_t count);
/* Read and check a snapshot file: GPUCC_ENOTFOUND, GPUCC_EVERSION,
 * GPUCC_EINVALID for a name too long to open, or GPUCC_ECORRUPT naming the
 * file and the defect (bad magic, size, checksum, order). */
GPUCC_API int gpucc_snapshot_read(gpucc_snapshot **out, const char *path);
/* Parse the text form that gpucc_snapshot_write_text writes ("KEY CONTENT"
 * per line, 64 hex digits each, any order).  name is used in messages
 * (NULL: "snapshot text"). */
GPUCC_API int gpucc_snapshot_parse_text(gpucc_snapshot **out, const char *text, size_t size,
                                        const char *name);
/* Write s to path atomically, in snapshot format v1. */
GPUCC_API int gpucc_snapshot_write(const gpucc_snapshot *s, const char *path);
/* Write s as text to fd: one "KEY CONTENT\n" line per item, sorted. */
GPUCC_API int gpucc_snapshot_write_text(const gpucc_snapshot *s, int fd);
/* Release the snapshot; accepts NULL. */
GPUCC_API void gpucc_snapshot_free(gpucc_snapshot *s);

/* The number of (key, content digest) items. */
GPUCC_API size_t gpucc_snapshot_count(const gpucc_snapshot *s);
/* Items sorted by key, unique.  Borrowed from s. */
GPUCC_API const gpucc_snapshot_item *gpucc_snapshot_items(const gpucc_snapshot *s);
/* The item of key, or NULL (binary search). */
GPUCC_API const gpucc_snapshot_item *gpucc_snapshot_find(const gpucc_snapshot *s,
                                                         const gpucc_digest *key);

/* ---- operands ----------------------------------------------------------- */

/* An operand of snapshot, delta and merge: an image file, a cache
 * directory or a snapshot file (which has keys but no entries).  (A
 * "source" is a HIP, CUDA or OpenCL C file: gpucc/compile.h.) */
typedef struct gpucc_operand gpucc_operand;

typedef enum gpucc_operand_kind {
	GPUCC_OPERAND_IMAGE = 1,
	GPUCC_OPERAND_CACHE = 2,
	GPUCC_OPERAND_SNAPSHOT = 3
} gpucc_operand_kind;

/* Open path as an operand: a directory is a cache (opened read-only; it must
 * hold the cache layout, and warn, which may be NULL, receives its warnings),
 * a regular file starting with the snapshot magic is a snapshot, any other
 * regular file must be an image; anything else (a FIFO, a device) is
 * GPUCC_EINVALID, refused without waiting on it, as is a name too long to
 * open.  Errors name path. */
GPUCC_API int gpucc_operand_open(gpucc_operand **out, const char *path, gpucc_cache_warning_fn warn,
                                void *warn_ctx);
/* Open n operands as gpucc_operand_open does, several at once on as many
 * threads as there are CPUs (warn may be called from any of them): 0 with
 * out[0..n) set, or the error of the first path that failed, in order,
 * with every out[i] NULL.  Images beyond half the limit on open files hold
 * no descriptor between reads (each read reopens the file, and fails if it
 * is no longer the file first opened, unchanged), so that any number of
 * operands can be open at once. */
GPUCC_API int gpucc_operands_open(gpucc_operand **out, const char *const *paths, size_t n,
                                 gpucc_cache_warning_fn warn, void *warn_ctx);
/* Wrap an open cache or image (borrowed: it must outlive the operand). */
GPUCC_API int gpucc_operand_from_cache(gpucc_operand **out, gpucc_cache *c);
GPUCC_API int gpucc_operand_from_image(gpucc_operand **out, gpucc_image *img);
/* Release the operand (and what it opened itself, not what it wraps);
 * accepts NULL. */
GPUCC_API void gpucc_operand_free(gpucc_operand *s);
/* Whether s is an image, a cache or a snapshot. */
GPUCC_API gpucc_operand_kind gpucc_operand_kind_of(const gpucc_operand *s);
/* The path s was opened from (a wrapped image's or cache's name), for
 * messages; borrowed. */
GPUCC_API const char *gpucc_operand_name(const gpucc_operand *s);
/* True when path names the file or directory s was opened from (the same
 * device and inode, whatever the spelling): an output that would replace
 * an input.  False for a wrapped cache or image. */
GPUCC_API bool gpucc_operand_is_file(const gpucc_operand *s, const char *path);

/* The snapshot of an operand (a copy, for a snapshot operand). */
GPUCC_API int gpucc_snapshot_of(gpucc_snapshot **out, gpucc_operand *s);
/* The snapshot a snapshot operand holds, borrowed from s (no copy: a
 * snapshot of a million keys is 64 MB); NULL for an image or a cache. */
GPUCC_API const gpucc_snapshot *gpucc_operand_snapshot(const gpucc_operand *s);
/* Whether s holds all that it lists, as a delta must know of its BASE,
 * whose payloads it never reads (a snapshot of s reads only the manifest):
 * an image must hold every member its manifest lists and its
 * end-of-archive marker -- uncompressed, told by its length at no cost;
 * compressed, by decompressing it to the marker (names and sizes checked,
 * not digests).  0, also for a cache, a snapshot or an image read from a
 * pipe; or GPUCC_ECORRUPT naming the image and the defect. */
GPUCC_API int gpucc_operand_check_whole(gpucc_operand *s);

/* ---- delta and merge ---------------------------------------------------- */

typedef struct gpucc_algebra_options {
	unsigned version;                  /* GPUCC_ALGEBRA_OPTIONS_VERSION */
	gpucc_write_options write;         /* for an image output */
	gpucc_conflict_policy on_conflict; /* see below */
	gpucc_conflict_fn conflict_fn;     /* told of every conflict; may be NULL */
	void *conflict_ctx;
} gpucc_algebra_options;

/* The version of gpucc_algebra_options this header declares, which callers
 * set (as GPUCC_IMAGE_LIMITS_VERSION, gpucc/image.h; write has its own);
 * GPUCC_ALGEBRA_OPTIONS_INIT and gpucc_algebra_options_init give the
 * defaults: the write defaults, conflicts fail, no conflict callback. */
#define GPUCC_ALGEBRA_OPTIONS_VERSION 1
#define GPUCC_ALGEBRA_OPTIONS_INIT \
	{GPUCC_ALGEBRA_OPTIONS_VERSION, GPUCC_WRITE_OPTIONS_INIT, GPUCC_CONFLICT_FAIL, NULL, NULL}
GPUCC_API void gpucc_algebra_options_init(gpucc_algebra_options *opts);

typedef struct gpucc_algebra_counts {
	size_t entries_read; /* entries (or items) read from the operands */
	size_t entries_out;  /* entries (or items) in the result */
	size_t duplicates;   /* identical duplicates collapsed (merge), or in base (delta) */
	size_t conflicts;    /* conflicts met (and resolved by policy, unless FAIL) */
} gpucc_algebra_counts;

/* Write to out_path the image of the entries of source whose keys are not in
 * base.  A key in both with different content digests is a conflict:
 * GPUCC_CONFLICT_FAIL fails naming the key, source and base_name;
 * GPUCC_CONFLICT_FIRST keeps the base's (leaves it out of the delta);
 * GPUCC_CONFLICT_LAST takes the source's (puts it in).  An empty delta is a
 * valid empty image.  source must be an image or a cache; counts may be NULL.
 * An image source cut short is refused; a snapshot of an image
 * (gpucc_snapshot_of) does not tell whether that image is whole: check it
 * with gpucc_operand_check_whole, as `gpucc delta` does its BASE. */
GPUCC_API int gpucc_delta_write(const char *out_path, gpucc_operand *source,
                                const gpucc_snapshot *base, const char *base_name,
                                const gpucc_algebra_options *opts,
                                gpucc_algebra_counts *counts);
/* The same on keys alone: the items of source not in base, as a snapshot.
 * source_name and base_name name them in messages (NULL: "source", "base"). */
GPUCC_API int gpucc_snapshot_delta(gpucc_snapshot **out, const gpucc_snapshot *source,
                                   const char *source_name, const gpucc_snapshot *base,
                                   const char *base_name, const gpucc_algebra_options *opts,
                                   gpucc_algebra_counts *counts);

/* Write the union of operands (images or caches) to out_path.  Identical
 * duplicates collapse; a conflict fails naming the key and both operands,
 * unless opts->on_conflict keeps the first or last (in argument order).
 * out_path may name one of the operands: the caller holds
 * gpucc_merge_lock_acquire(out_path) from before opening the operands. */
GPUCC_API int gpucc_merge_write(const char *out_path, gpucc_operand *const *operands, size_t count,
                                const gpucc_algebra_options *opts,
                                gpucc_algebra_counts *counts);
/* Insert the union of operands into cache (cache import): entries already in
 * the cache are duplicates or conflicts like any others. */
GPUCC_API int gpucc_merge_into_cache(gpucc_cache *cache, gpucc_operand *const *operands,
                                     size_t count, const gpucc_algebra_options *opts,
                                     gpucc_algebra_counts *counts);

/* Serialise writers of out_path: an exclusive advisory lock (flock) on
 * ".NAME.lock" beside it, which gpucc_merge_lock_release removes; writers of
 * other files in the directory do not wait.  Blocks.  Returns a lock handle
 * (>= 0) for gpucc_merge_lock_release, or an error code. */
GPUCC_API int gpucc_merge_lock_acquire(const char *out_path);
/* Release the lock; out_path is the one it was acquired for.  Given NULL
 * for out_path, it still releases the lock, leaving its file to the next
 * writer, and sets GPUCC_EINVALID as the last error. */
GPUCC_API void gpucc_merge_lock_release(const char *out_path, int lock);

#ifdef __cplusplus
}
#endif
#endif
