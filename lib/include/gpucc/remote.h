/*
 * gpucc/remote.h -- remote caches shared across machines, behind a local
 * cache (docs/remote-cache.md; the wire layout is in formats/remote.md).
 *
 * A remote is a URL with attributes, "URL|name=value|flag":
 *   http://host[:port]/prefix, https://...   objects by HTTP GET/HEAD/PUT/
 *                                             DELETE (nginx's WebDAV module
 *                                             or bazel-remote will do)
 *   redis://[[user:]password@]host[:port][/db], redis+unix:/path
 *   s3://bucket[/prefix]                      HTTP(S) with AWS SigV4,
 *                                             path-style (endpoint=URL,
 *                                             region=NAME attributes)
 * Attributes: read-only, connect-timeout=MS (default 100), timeout=MS
 * (default 2000), layout=flat|subdirs|bazel (HTTP), bearer=TOKEN,
 * header=Name:value (HTTP, repeatable), user=NAME and password=SECRET
 * (Redis), sign=KEY-FILE (sign what is uploaded with this Ed25519 private
 * key, PEM), trust=KEYS-FILE (accept only objects signed by one of these
 * public keys, 64 hex digits a line).
 *
 * Layering: a lookup reads the local cache, then each remote in order.  What
 * a remote returns is verified (the entry's key recomputed from its fields
 * and compared with the key asked for, every payload's SHA-256) before it
 * is stored locally; only then is it used.  An error, a timeout, a short
 * body or a digest mismatch is a miss: one warning per remote (through the
 * cache's warning handler), after which that remote is disabled for the
 * rest of the process; an object that failed verification is deleted from
 * a remote not marked read-only, for a writer to replace.  Nothing here
 * fails a build.
 *
 * The backends' client libraries (libcurl, hiredis) are loaded with dlopen
 * the first time a remote is used: a process that never looks past its
 * local cache never maps them.
 *
 * Not thread safe: one thread at a time per cache handle.
 */
#ifndef GPUCC_REMOTE_H
#define GPUCC_REMOTE_H

#include "cache.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Add the remotes of spec (URLs separated by blanks, each with its
 * attributes) after those the cache has, in order.  GPUCC_EINVALID naming
 * the defect for a malformed URL or attribute; then none of spec's remotes
 * is added.  origin names where spec came from, for messages ("GPUCC_REMOTE",
 * "--remote"); may be NULL. */
GPUCC_API int gpucc_cache_add_remotes(gpucc_cache *c, const char *spec, const char *origin);
/* The credentials S3 remotes sign with (AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, which the caller reads where it
 * likes); NULL or "" leaves one out.  Without a key and secret, S3 requests
 * go unsigned. */
GPUCC_API int gpucc_cache_set_s3_credentials(gpucc_cache *c, const char *access_key_id,
                                             const char *secret_access_key,
                                             const char *session_token);
/* How many remotes the cache has (disabled ones included). */
GPUCC_API size_t gpucc_cache_remote_count(const gpucc_cache *c);
/* The remotes set in the cache's config file ("remote = URL..." lines,
 * joined by blanks), borrowed; NULL when it sets none.  Adding them is the
 * caller's choice, so that a command line or the environment can override
 * the file. */
GPUCC_API const char *gpucc_cache_config_remotes(const gpucc_cache *c);

/* For every key that the local cache lacks, ask the remotes (one batch per
 * remote), verify what they return and insert it into the local cache.
 * found (may be NULL) gets, per key, whether it is now in the local cache
 * because of a remote.  Returns 0 whatever the remotes did; GPUCC_EINVALID
 * for bad arguments only. */
GPUCC_API int gpucc_cache_remote_fetch(gpucc_cache *c, const gpucc_digest *keys, size_t count,
                                       bool *found);

typedef struct gpucc_remote_push_result {
	uint64_t present; /* entries the remotes held already */
	uint64_t uploaded; /* entries uploaded */
	uint64_t missing;  /* keys the local cache lacks (nothing to upload) */
	uint64_t failed;   /* uploads refused or lost */
} gpucc_remote_push_result;

/* Upload the local entries of keys to every remote that is not read-only
 * and lacks them (one existence check per remote first, unless
 * check_existing is false: then every entry is sent).  Returns 0, or
 * GPUCC_ERROR when an upload failed (also warned about); out may be NULL. */
GPUCC_API int gpucc_cache_remote_push(gpucc_cache *c, const gpucc_digest *keys, size_t count,
                                      bool check_existing, gpucc_remote_push_result *out);

typedef struct gpucc_remote_stats {
	uint64_t hits;      /* entries a remote returned that verified */
	uint64_t misses;    /* keys the remotes lacked (errors and rejected entries included) */
	uint64_t errors;    /* failed requests, refused writes, rejected entries */
	uint64_t timeouts;  /* requests that ran out of time */
	uint64_t bytes_in;  /* bytes of entries received */
	uint64_t bytes_out; /* bytes of entries sent */
} gpucc_remote_stats;

/* The counters kept in DIR/remote-stats (all processes, since the last
 * reset), with this handle's unsaved ones added. */
GPUCC_API int gpucc_cache_remote_stats_get(gpucc_remote_stats *out, gpucc_cache *c);
/* Zero DIR/remote-stats. */
GPUCC_API int gpucc_cache_remote_stats_reset(gpucc_cache *c);

/* Write a new Ed25519 private key (PEM, mode 0600) to path, which must
 * not exist, and its public key in 64 hex digits (and a NUL) to
 * public_hex. */
GPUCC_API int gpucc_signing_key_generate(const char *path, char public_hex[65]);

#ifdef __cplusplus
}
#endif
#endif
