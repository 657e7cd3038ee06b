/*
 * lib/cache/cache_internal.h -- what the cache offers merge and snapshot beyond the
 * public API: inserts that report what happened and name their source, and
 * a staging directory inside the cache for temporary images.
 */
#ifndef GPUCC_LIB_CACHE_INTERNAL_H
#define GPUCC_LIB_CACHE_INTERNAL_H

#include "cache_layout.h"
#include "gpucc/cache.h"

#include <sys/stat.h>

typedef enum cache_insert_outcome {
	CACHE_INSERT_ADDED = 0,    /* the key was absent (or its entry corrupt) */
	CACHE_INSERT_DUPLICATE = 1, /* an identical entry was there */
	CACHE_INSERT_KEPT = 2,     /* a conflict; the entry there was kept */
	CACHE_INSERT_REPLACED = 3  /* a conflict; the arriving entry replaced it */
} cache_insert_outcome;

/* gpucc_cache_insert_from, naming the arriving entry's source src_name in
 * conflicts (reported to fn, which may be NULL), and saying what happened. */
int gpucc_cache_insert_entry_from(gpucc_cache *c, gpucc_image *src, const gpucc_entry *e,
                                  const char *src_name, gpucc_conflict_policy policy,
                                  gpucc_conflict_fn fn, void *fn_ctx,
                                  cache_insert_outcome *outcome);

/* The cache's counters' files, DIR/stats and DIR/remote-stats (the
 * remotes'): one line each, read under a shared flock on DIR/stats.lock
 * and rewritten in place under an exclusive one (lib/cache/cache.c). */
#define GPUCC_COUNTERS_MAX_BYTES 512
/* DIR/name's line, NUL-terminated, into line; "" when the file is absent,
 * unreadable, not a plain file or longer than the buffer. */
void gpucc_cache_counters_read(const gpucc_cache *c, const char *name,
                               char line[GPUCC_COUNTERS_MAX_BYTES]);
/* Rewrite DIR/name: update gets its line, as gpucc_cache_counters_read
 * gives it, writes the new line (under GPUCC_COUNTERS_MAX_BYTES bytes) over
 * it and returns the new line's length.  0, or an error. */
int gpucc_cache_counters_update(gpucc_cache *c, const char *name,
                                size_t (*update)(char *line, void *ctx), void *ctx);

/* The warnings of the compile that made an entry, kept beside it so that a
 * hit replays them, as a ccache hit replays a compiler's stderr
 * (formats/cache.md).  Text, at most GPUCC_CACHE_WARNINGS_MAX bytes. */
#define GPUCC_CACHE_WARNINGS_MAX (64 << 10)
/* The text stored for key; NULL when there is none (or it cannot be read:
 * a replay is a nicety, never an error). */
char *gpucc_cache_warnings_load(gpucc_cache *c, const gpucc_digest *key);
/* Store text for key (NULL or "", or longer than the maximum: remove what
 * is there), atomically; a failure is silent. */
void gpucc_cache_warnings_store(gpucc_cache *c, const gpucc_digest *key, const char *text);

/* A new path (free()) for a temporary file in the cache's staging directory,
 * created if needed; gc removes what killed processes leave there. */
int gpucc_cache_staging_path(char **out, gpucc_cache *c, const char *suffix);

/* Every key the cache holds, sorted (release *out with free()). */
int gpucc_cache_sorted_keys(gpucc_digest **out, size_t *count, gpucc_cache *c);

/* Why the cache is not writable ("Permission denied", "Read-only file
 * system", "opened read-only"); NULL when it is. */
const char *gpucc_cache_read_only_reason(const gpucc_cache *c);
/* Whether the caller asked for a read-only cache (GPUCC_CACHE_READ_ONLY),
 * as against one that could not be written. */
bool gpucc_cache_read_only_requested(const gpucc_cache *c);
/* The error for a write refused because the cache is read-only, GPUCC_ERROR:
 * "cannot DOING cache 'DIR': it is read-only (REASON)", doing being e.g.
 * "gc" or "insert into". */
int gpucc_cache_refuse_read_only(const gpucc_cache *c, const char *doing);

/* Whether the directory open as dir_fd is taken for a cache where one is
 * expected: it has the layout, or holds nothing at all (an empty cache: a CI
 * job's directory after mkdir -p).  Anything else is refused, lest a
 * mistyped path pass for an empty cache. */
bool gpucc_cache_directory_at(int dir_fd);
/* The error for a directory refused so, GPUCC_EINVALID naming path. */
int gpucc_cache_not_a_cache(const char *path);

#ifdef GPUCC_TEST_HOOKS
/* A test hook (meson option test_hooks): when set, called by an insert
 * after it has decided what to do and before it publishes the entry, so
 * that a test can plant a rival entry in exactly the moment a concurrent
 * process could. */
extern void (*gpucc_cache_test_before_publish)(gpucc_cache *c, const gpucc_digest *key);
#endif

/* 0 for one of the three gpucc_conflict_policy values, else GPUCC_EINVALID:
 * every function that takes a policy refuses any other before it acts, so
 * that a caller's bad value is not read as one policy here and another
 * there (the cache replaced, merge kept the first, delta failed). */
int gpucc_conflict_policy_check(gpucc_conflict_policy policy);

/* A conflict between the entry c holds for key and one arriving from
 * src_name: tell fn (if any), then GPUCC_ECONFLICT naming both under the
 * default policy, else 0. */
int gpucc_cache_report_conflict(gpucc_cache *c, const gpucc_digest *key, const char *src_name,
                                gpucc_conflict_policy policy, gpucc_conflict_fn fn, void *fn_ctx);

/* gpucc_cache_prune's walk (lib/compile/cache_prune.c judges): judge(ctx, e, st)
 * gets each entry that can be read (its record and its file's stat) and
 * returns why it should go, or NULL to keep it.  An entry judged is
 * removed, unless dry, when it is still the file that was read with the
 * same mtime (one used meanwhile stays), and reported to fn.  Under gc's
 * lock; a cache that is not writable can only be walked dry. */
typedef const char *(*gpucc_cache_judge_fn)(void *ctx, const gpucc_entry *e, const struct stat *st);
int gpucc_cache_remove_judged(gpucc_cache *c, bool dry, gpucc_cache_judge_fn judge,
                              void *judge_ctx, gpucc_cache_prune_fn fn, void *fn_ctx,
                              gpucc_cache_prune_result *out);

/* The remote layer's state (lib/remote/remote.c), which the cache keeps and, by
 * calling release, lets go of in gpucc_cache_free; the cache itself knows
 * nothing of remotes.  NULL until attached. */
void gpucc_cache_attach_remotes(gpucc_cache *c, void *remotes,
                                void (*release)(gpucc_cache *c, void *remotes));
void *gpucc_cache_remotes(const gpucc_cache *c);

/* Direct-mode records of sources, CACHE/v1/sources/ (lib/cache/cache_sources.c;
 * formats/cache.md, "Sources"), whose first line this is. */
#define GPUCC_SOURCE_RECORD_MAGIC "gpucc-source-record 4"
/* A larger record is ignored (and gc removes it). */
#define GPUCC_SOURCE_RECORD_MAX_BYTES (16 << 20)
/* One result of a record: its key and its count lines ("SHA-256 PATH\n"
 * or "dir DEV INO MTIME CTIME PATH\n"), size bytes at lines (inside the
 * text parsed). */
typedef void (*gpucc_source_record_fn)(void *ctx, const gpucc_digest *key, const char *lines,
                                       size_t size, unsigned long count);
/* Parse a record's size bytes: the magic line, then one or more results,
 * each "entry KEY N\n" and N lines, each "SHA-256 PATH\n" (a digest of 64
 * lowercase hex digits, a blank, a path of at least one byte) or "dir DEV
 * INO MTIME CTIME PATH\n" (four decimal numbers of 1 to 20 digits, each
 * after one blank, then a blank and a path of at least one byte), nothing
 * else, no NUL byte.  fn (may be NULL) gets each result in order, those
 * before a defect too.  NULL when the whole text parses, else why not (a
 * static string).  The one reader of the format: compile's lookups and
 * its keeping of earlier results, gc's and verify's. */
/* Whether the len bytes at line (its line break not counted) are one of a
 * record's file lines as above: "SHA-256 PATH" or "dir DEV INO MTIME CTIME
 * PATH".  Source and prelude records share them (record_prepare in
 * lib/compile/compile_source_check.c writes both). */
bool gpucc_record_file_line_ok(const char *line, size_t len);
/* Call fn(ctx, shard_fd, name, shard path) for every file of every shard
 * of CACHE/v1/KIND ("sources", "pch"); after a shard, rmdir it when
 * empty_shards (an empty one goes, others stay). */
typedef void (*gpucc_shard_file_fn)(void *ctx, int shard_fd, const char *name, const char *shard);
void gpucc_cache_walk_shards(gpucc_cache *c, const char *kind, gpucc_shard_file_fn fn, void *ctx,
                             bool empty_shards);
const char *gpucc_source_record_parse(const char *text, size_t size, gpucc_source_record_fn fn,
                                      void *ctx);
/* Remove the records none of whose keys the cache holds, damaged ones and
 * other files there (all: every one); under gc's lock.  How many went. */
uint64_t gpucc_cache_sources_gc(gpucc_cache *c, bool all);
/* Report each record that does not parse to fn (may be NULL); how many. */
uint64_t gpucc_cache_sources_verify(gpucc_cache *c, gpucc_cache_defect_fn fn, void *ctx);

/* Precompiled preludes, CACHE/v1/pch/ (lib/cache/cache_pch.c; formats/cache.md,
 * "Precompiled preludes"): a record, <name>.prelude, whose first line this
 * is, beside the PCH clang wrote, <name>.pch. */
#define GPUCC_PRELUDE_MAGIC "gpucc-prelude 2"
/* A larger record is damaged. */
#define GPUCC_PRELUDE_RECORD_MAX_BYTES (16 << 20)
typedef struct gpucc_prelude_record {
	gpucc_digest pch;     /* the PCH's SHA-256 */
	uint64_t pch_size;    /* and size, at least 1 */
	unsigned long count;  /* lines "SHA-256 PATH\n" of the files its making read, */
	const char *lines;    /* size bytes at lines (inside the text parsed) */
	size_t size;
} gpucc_prelude_record;
/* Parse a record's size bytes: the magic line, "pch SHA-256 SIZE", "files
 * N" (N at least 1), then exactly N file lines, as a source record's
 * (gpucc_record_file_line_ok), no NUL byte.  NULL when it parses, else why not (a static string).  The one
 * reader of the format: compile's lookups, gc's and verify's. */
const char *gpucc_prelude_record_parse(const char *text, size_t size, gpucc_prelude_record *out);
/* One whole prelude for gc: its name, its record's stat (mtime: its last
 * use) and the bytes of both files.  Nonzero stops the walk. */
typedef int (*gpucc_cache_prelude_fn)(void *ctx, const gpucc_digest *name, const struct stat *st,
                                      uint64_t bytes);
/* Under gc's lock: remove what cannot be a prelude (a record that does not
 * parse, either half alone, other files; with all, every one) and hand
 * fn every whole prelude.  fn's nonzero, or 0. */
int gpucc_cache_pch_collect(gpucc_cache *c, bool all, gpucc_cache_prelude_fn fn, void *ctx);
/* Remove the prelude name, unless its record's mtime is no longer the one
 * given (used since); any_time: whatever it is.  Whether it went. */
bool gpucc_cache_pch_remove(gpucc_cache *c, const gpucc_digest *name, int64_t mtime_sec,
                            long mtime_nsec, bool any_time);
/* Whether a prelude can never be read again (gpucc_cache_pch_prune): its
 * parsed record, and the record's stat (mtime: its last use). */
typedef bool (*gpucc_cache_prelude_judge_fn)(void *ctx, const gpucc_prelude_record *r,
                                             const struct stat *st);
/* Remove (dry: only count) each prelude whose record parses and judge
 * condemns, unless it was used meanwhile; how many. */
uint64_t gpucc_cache_pch_prune(gpucc_cache *c, bool dry, gpucc_cache_prelude_judge_fn judge,
                               void *ctx);
/* Report each damaged prelude to fn (may be NULL): a record that does not
 * parse, a PCH missing or not of its record's size and SHA-256; how many. */
uint64_t gpucc_cache_pch_verify(gpucc_cache *c, gpucc_cache_defect_fn fn, void *ctx);

/* Report a warning through the cache's handler, if any. */
void gpucc_cache_warn(gpucc_cache *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
