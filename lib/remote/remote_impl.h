/*
 * lib/remote/remote_impl.h -- the remote layer's parts: a remote (one parsed
 * URL with its attributes), and the table of callbacks each backend fills
 * (lib/remote/remote_http.c, lib/remote/remote_redis.c).  lib/remote/remote.c layers them behind
 * the local cache and verifies what they return.
 *
 * A backend transfers whole entry files (formats/remote.md): it knows object
 * names and protocols, never entries.  Its calls report, per key, one
 * remote_outcome, and for the first failure a one-line reason in r->why.
 */
#ifndef GPUCC_LIB_REMOTE_IMPL_H
#define GPUCC_LIB_REMOTE_IMPL_H

#include "gpucc/remote.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum remote_outcome {
	REMOTE_OK = 0,      /* done: the object was there (get, exists) or stored (put) */
	REMOTE_MISS = 1,    /* the remote does not hold it */
	REMOTE_ERROR = 2,   /* failed: the remote is to be disabled */
	REMOTE_TIMEOUT = 3, /* ran out of time: the remote is to be disabled */
	REMOTE_BAD = 4      /* get: the object was there, malformed (remote_blob.bad says
	                     * how); rejected as an object that fails verification */
} remote_outcome;

/* The most bytes one entry may take on the wire: more is an error. */
#define REMOTE_MAX_OBJECT ((size_t)1 << 30)
/* The keys one call of a backend's get is given: a fetch of any number of
 * keys holds at most this many objects in memory at once (each verified,
 * stored and freed before the next piece is asked).  As many as the HTTP
 * client's connections, so that a piece still runs in parallel. */
#define REMOTE_FETCH_PIECE 8

typedef struct remote_blob {
	unsigned char *data; /* malloc'd (get) or borrowed (put) */
	size_t size;
	remote_outcome outcome;
	const char *bad; /* REMOTE_BAD: why, a static string */
	/* get: the transfer cannot tell a whole object from one cut short (an
	 * HTTP body that ended where the server closed the connection): an
	 * object that then fails verification is the transfer's failure, not
	 * the object's, and nothing is deleted for it. */
	bool unframed;
	/* get: refused by this reader's trust (unsigned, or signed by a key
	 * its trust= file does not list), which says nothing against the
	 * object: readers who trust its signer take it, and it is never
	 * deleted. */
	bool untrusted;
} remote_blob;

typedef enum remote_layout {
	REMOTE_LAYOUT_FLAT = 0,
	REMOTE_LAYOUT_SUBDIRS = 1,
	REMOTE_LAYOUT_BAZEL = 2 /* ac/<key> and cas/<sha256>: lib/remote/remote_bazel.c */
} remote_layout;

typedef struct remote remote;

typedef struct remote_backend {
	const char *name; /* "HTTP", "Redis" */
	/* Load the client library and connect (or prepare to); nonzero with
	 * r->why set when that fails. */
	int (*connect)(remote *r);
	/* Fetch keys[i] into out[i] (outcome, and data on REMOTE_OK). */
	void (*get)(remote *r, const gpucc_digest *keys, size_t count, remote_blob *out);
	/* Whether each key is held: REMOTE_OK present, REMOTE_MISS absent. */
	void (*exists)(remote *r, const gpucc_digest *keys, size_t count, remote_outcome *out);
	/* Store blobs[i] under keys[i]; out[i] REMOTE_OK when stored. */
	void (*put)(remote *r, const gpucc_digest *keys, const remote_blob *blobs, size_t count,
	            remote_outcome *out);
	/* Remove the objects of keys (a rejected object, so that a writer can
	 * replace it); out[i] REMOTE_OK when removed, REMOTE_MISS when absent. */
	void (*del)(remote *r, const gpucc_digest *keys, size_t count, remote_outcome *out);
	void (*close)(remote *r);
} remote_backend;

struct remote {
	char *url;   /* as given, without attributes */
	char *shown; /* for messages: any password replaced by "***" */
	const remote_backend *backend;
	void *state; /* the backend's, after connect */
	bool connected, disabled, read_only;
	long connect_timeout_ms, timeout_ms;
	/* The most time all of this remote's batches may take in one process
	 * (total-timeout=MS), the time they took so far, and the end of the
	 * batch under way (gpucc_remote_now_ms's clock): no request of the
	 * batch runs past it. */
	long total_timeout_ms;
	long long spent_ms, deadline_ms, batch_start_ms;
	remote_layout layout;
	char *bearer;        /* HTTP: Authorization: Bearer */
	/* S3 (served by the HTTP backend): url is endpoint/bucket[/prefix],
	 * path-style; requests are signed with AWS SigV4 for region. */
	bool s3;
	char *s3_bucket_path, *region, *endpoint;
	const struct remote_s3_credentials *credentials; /* the set's; NULL: none */
	char **headers;      /* HTTP: extra "Name: value" lines */
	size_t header_count;
	char *cacert;        /* HTTP: the CA certificates a TLS server is verified
	                      * against (cacert=PATH); NULL: libcurl's default */
	/* Signatures (lib/remote/remote_sign.c): the key uploads are signed with (an
	 * EVP_PKEY), and the public keys a fetched object must be signed by;
	 * none: signatures are neither made nor needed. */
	void *sign_key;
	unsigned char (*trusted)[32];
	size_t trusted_count;
	/* Redis: the parsed URL. */
	char *host, *user, *password, *unix_path;
	int port, db;
	/* A defect of its configuration found when it was parsed (its trust=
	 * file): it is disabled at its first use, with this as the reason. */
	char *fault;
	char why[512]; /* the backend's reason for the last failure */
};

extern const remote_backend gpucc_remote_http_backend;
extern const remote_backend gpucc_remote_redis_backend;
#ifdef GPUCC_TEST_HOOKS
/* A test hook (meson option test_hooks): when set, a remote spelt
 * "test:ANYTHING" is served by this backend (lib/tests/test_remote_fetch.c). */
extern const remote_backend *gpucc_remote_test_backend;
#endif

/* lib/remote/remote_support.c: what the backends share with lib/remote/remote.c, apart
 * from it so that no file of the remote layer calls back into another. */

/* The object name of key under r's layout: "<hex>.gpucc" (flat),
 * "<hex[0:2]>/<hex>.gpucc" (subdirs) or "ac/<hex>" (bazel, the record);
 * out needs 72 bytes. */
void gpucc_remote_object_name(char *out, size_t size, const remote *r, const gpucc_digest *key);

/* Milliseconds of CLOCK_MONOTONIC (http_client.c keeps the same clock). */
long long gpucc_remote_now_ms(void);
/* The time one request of r started now may take: r->timeout_ms, or what
 * is left of the batch (r->deadline_ms) when that is less; 0 when nothing
 * is left. */
long gpucc_remote_request_ms(const remote *r);

/* A dropped connection must not end the process by SIGPIPE: SIGPIPE is
 * blocked in the calling thread between these two calls, and one raised
 * meanwhile is taken off the pending set. */
typedef struct remote_sigpipe_guard {
	sigset_t old;
	bool was_pending;
} remote_sigpipe_guard;
void gpucc_remote_sigpipe_block(remote_sigpipe_guard *g);
void gpucc_remote_sigpipe_restore(remote_sigpipe_guard *g);

/* lib/remote/remote_sign.c: load sign=PATH and trust=PATH; release both.  A
 * trust file that cannot be read, or holds a line that is not a key (or
 * no key), sets r->fault (0 returned): the remote is then disabled at its
 * first use, with one warning; nonzero only when memory runs out. */
int gpucc_remote_load_signing_key(remote *r, const char *path);
int gpucc_remote_load_trusted_keys(remote *r, const char *path);
/* The most bytes a trust file may hold. */
#define REMOTE_TRUST_FILE_MAX (1 << 20)
/* Parse a trust file's text[0..size): one key a line, 64 hex digits,
 * blanks around it; '#' starts a comment; blank lines.  The keys into
 * *keys (malloc'd), *count of them; -1 with *why set, and *line the
 * 1-based line at fault (0: the file as a whole), when a line is not a
 * key, or none is there. */
int gpucc_remote_parse_trusted_keys(const char *text, size_t size, unsigned char (**keys)[32],
                                    size_t *count, size_t *line, const char **why);
void gpucc_remote_free_keys(remote *r);
/* out: in's bytes with r's signature trailer for key (malloc'd data);
 * -1 when signing fails. */
int gpucc_remote_sign(remote *r, const gpucc_digest *key, const remote_blob *in, remote_blob *out);
/* Drop b's signature trailer, if any (b->size shrinks); when r trusts
 * keys, an error unless the trailer names a trusted key whose signature of
 * key and the remaining bytes verifies. */
int gpucc_remote_check_signature(remote *r, const gpucc_digest *key, remote_blob *b);

/* lib/remote/remote_bazel.c: an entry file as layout=bazel stores it, a record
 * (ac/<key>) and the payloads it lists (cas/<sha256>). */
/* The most payloads one record may list (an entry has at most one of each
 * of four kinds: formats/manifest.md): a record listing more is
 * malformed, so that one record costs a bounded number of requests. */
#define REMOTE_BAZEL_MAX_PAYLOADS 16
typedef struct remote_bazel_span {
	uint64_t offset, size; /* where the payload sits in the entry file */
	gpucc_digest digest;   /* its SHA-256: its name under cas/ */
} remote_bazel_span;
typedef struct remote_bazel {
	remote_blob record;     /* split: the record to store; parse: its skeleton */
	remote_bazel_span *spans;
	size_t count;
} remote_bazel;
/* Split object (an entry file, maybe with a signature trailer) into b:
 * b->record is the record; spans point into object.  -1: no memory. */
int gpucc_remote_bazel_split(remote_bazel *b, const remote_blob *object);
/* Parse a fetched record into b; -1 with *why set when it is malformed. */
int gpucc_remote_bazel_parse(remote_bazel *b, const remote_blob *record, const char **why);
/* The entry file of b and payloads[i] for b->spans[i] into out (malloc'd);
 * -1 with *why set when a payload's size or SHA-256 is not its span's. */
int gpucc_remote_bazel_join(remote_blob *out, const remote_bazel *b, const remote_blob *payloads,
                            const char **why);
void gpucc_remote_bazel_free(remote_bazel *b);

typedef struct remote_s3_credentials {
	char *access_key_id, *secret_access_key, *session_token;
} remote_s3_credentials;

/* ---- a remote's spec (lib/remote/remote_spec.c) ---- */

/* Parse one word of a remotes spec into *out (owned: remote_free); word
 * is edited in place.  origin names where the spec came from in messages. */
int parse_remote(remote **out, char *word, const char *origin);
void remote_free(remote *r);


#endif
