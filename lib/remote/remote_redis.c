/*
 * lib/remote/remote_redis.c -- the Redis remote (formats/remote.md): one string
 * value per entry under "gpucc:v1:<key hex>", read with MGET, written with
 * pipelined SETs, checked with pipelined TYPEs (a key of another type, which
 * MGET reads as nil, is absent, so that a SET replaces it), removed with
 * pipelined DELs.
 *
 * hiredis is loaded with dlopen (libhiredis.so.0.14) the first time a Redis
 * remote is used; only its headers (of the same version, from the same
 * package) are needed to build.  One connection per remote, over TCP or a
 * Unix socket, with AUTH (a password, or an ACL user and password) and
 * SELECT.  The connect timeout bounds the connection; the timeout bounds
 * each command, from the first byte of its reply awaited to the last (and
 * each write of the pipeline's commands), and no command outlives its
 * batch's deadline (r->deadline_ms).
 */
#include "http_client.h"
#include "library_loader.h"
#include "remote_impl.h"

/* Built where the client's headers are (scripts/setup installs them);
 * elsewhere the backend only says why it is missing. */
#if __has_include(<hiredis/hiredis.h>)

#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define HIREDIS_LIBRARY_FILE "libhiredis.so.0.14"
#define KEY_PREFIX "gpucc:v1:"
#define KEY_SIZE (sizeof KEY_PREFIX + 64)
/* Keys per MGET: bounds one command's size. */
#define MGET_CHUNK 512

static struct {
	redisContext *(*connect_tcp)(const char *, int, const struct timeval);
	redisContext *(*connect_unix)(const char *, const struct timeval);
	int (*append_argv)(redisContext *, int, const char **, const size_t *);
	int (*buffer_read)(redisContext *);
	int (*buffer_write)(redisContext *, int *);
	int (*reply_from_reader)(redisContext *, void **);
	void (*free_reply)(void *);
	void (*free_context)(redisContext *);
} hiredis;

static gpucc_library library = GPUCC_LIBRARY_INIT;

static const gpucc_library_symbol symbols[] = {
	{"redisConnectWithTimeout", &hiredis.connect_tcp, NULL, false},
	{"redisConnectUnixWithTimeout", &hiredis.connect_unix, NULL, false},
	{"redisAppendCommandArgv", &hiredis.append_argv, NULL, false},
	{"redisBufferRead", &hiredis.buffer_read, NULL, false},
	{"redisBufferWrite", &hiredis.buffer_write, NULL, false},
	{"redisGetReplyFromReader", &hiredis.reply_from_reader, NULL, false},
	{"freeReplyObject", &hiredis.free_reply, NULL, false},
	{"redisFree", &hiredis.free_context, NULL, false},
	{NULL, NULL, NULL, false},
};

static int load(gpucc_library *lib, void *unused)
{
	(void)unused;
	static const char *const names[] = {HIREDIS_LIBRARY_FILE, NULL};
	const char *why, *missing;
	if (gpucc_library_open(lib, names, 0, &why) != 0)
		return gpucc_library_fail(lib, GPUCC_EUNAVAILABLE, "cannot load hiredis: %s",
		                          why ? why : "dlopen failed");
	if (gpucc_library_resolve(lib, symbols, &missing) != 0)
		return gpucc_library_fail(lib, GPUCC_EUNAVAILABLE, "%s lacks %s", HIREDIS_LIBRARY_FILE, missing);
	return 0;
}

static struct timeval ms_to_timeval(long ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	return tv;
}

/* The context's failure into r->why; REMOTE_TIMEOUT for a read or write
 * that ran out of time (hiredis reports EAGAIN from SO_RCVTIMEO). */
static remote_outcome context_failure(remote *r, const char *doing)
{
	redisContext *ctx = r->state;
	int err = errno;
	bool timeout = ctx && ctx->err == REDIS_ERR_IO &&
	               (err == EAGAIN || err == EWOULDBLOCK || err == ETIMEDOUT ||
	                strstr(ctx->errstr, "temporarily unavailable") ||
	                strstr(ctx->errstr, "timed out"));
	if (!r->why[0])
		snprintf(r->why, sizeof r->why, "%s: %s", doing,
		         timeout ? "timed out" : ctx && ctx->errstr[0] ? ctx->errstr : "connection lost");
	return timeout ? REMOTE_TIMEOUT : REMOTE_ERROR;
}

/* Bound the socket's next blocking read or write to ms. */
static void socket_wait(redisContext *ctx, long ms)
{
	struct timeval tv = ms_to_timeval(ms > 0 ? ms : 1);
	setsockopt(ctx->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(ctx->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/* The next reply into *reply, the commands not yet sent sent first.  A
 * reply has one request's time (gpucc_remote_request_ms) from when it is
 * awaited to its last byte: hiredis's own redisGetReply waits a timeout
 * per read, so a server dripping a byte at a time would hold it for ever.
 * Sending has that time per write, within the batch's deadline.  The
 * outcome: REMOTE_OK, or the failure (r->why set). */
static remote_outcome reply_within(remote *r, void **reply, const char *doing)
{
	redisContext *ctx = r->state;
	*reply = NULL;
	int written = 0;
	while (!written) {
		long ms = gpucc_remote_request_ms(r);
		if (ms == 0)
			break;
		socket_wait(ctx, ms);
		if (hiredis.buffer_write(ctx, &written) != REDIS_OK)
			return context_failure(r, doing);
	}
	long long end = gpucc_remote_now_ms() + gpucc_remote_request_ms(r);
	if (written && hiredis.reply_from_reader(ctx, reply) != REDIS_OK)
		return context_failure(r, doing);
	while (!*reply) {
		long long left = end - gpucc_remote_now_ms();
		if (!written || left <= 0) {
			if (!r->why[0])
				snprintf(r->why, sizeof r->why, "%s: timed out", doing);
			return REMOTE_TIMEOUT;
		}
		socket_wait(ctx, (long)left);
		if (hiredis.buffer_read(ctx) != REDIS_OK ||
		    hiredis.reply_from_reader(ctx, reply) != REDIS_OK)
			return context_failure(r, doing);
	}
	return REMOTE_OK;
}

/* Send argv and wait for the reply; NULL (r->why set) on failure or an
 * error reply. */
static redisReply *command(remote *r, int argc, const char **argv, const char *doing)
{
	redisContext *ctx = r->state;
	void *reply = NULL;
	if (hiredis.append_argv(ctx, argc, argv, NULL) != REDIS_OK) {
		context_failure(r, doing);
		return NULL;
	}
	if (reply_within(r, &reply, doing) != REMOTE_OK)
		return NULL;
	redisReply *rr = reply;
	if (rr->type == REDIS_REPLY_ERROR) {
		snprintf(r->why, sizeof r->why, "%s: %.*s", doing, (int)rr->len, rr->str);
		hiredis.free_reply(rr);
		return NULL;
	}
	return rr;
}

static void redis_close(remote *r)
{
	if (r->state)
		hiredis.free_context(r->state);
	r->state = NULL;
}

static int redis_connect(remote *r)
{
	if (gpucc_library_load(&library, load, NULL) != 0) {
		snprintf(r->why, sizeof r->why, "%s", gpucc_library_error(&library));
		return -1;
	}
	remote_sigpipe_guard guard;
	gpucc_remote_sigpipe_block(&guard);
	long wait = gpucc_remote_request_ms(r);
	if (wait > r->connect_timeout_ms)
		wait = r->connect_timeout_ms;
	redisContext *ctx = NULL;
	int rc = 0;
	if (r->unix_path) {
		ctx = hiredis.connect_unix(r->unix_path, ms_to_timeval(wait));
	} else {
		/* hiredis would resolve the name itself, with no time limit: it is
		 * resolved here, within the connect timeout, and hiredis given the
		 * addresses in turn. */
		char port[8];
		snprintf(port, sizeof port, "%d", r->port);
		struct addrinfo *addrs = NULL;
		long long end = gpucc_remote_now_ms() + wait;
		int gai = wait > 0 ? http_resolve(r->host, port, wait, &addrs) : HTTP_RESOLVE_TIMED_OUT;
		if (gai != 0) {
			snprintf(r->why, sizeof r->why, "cannot resolve host '%s': %s", r->host,
			         gai == HTTP_RESOLVE_TIMED_OUT ? "timed out" : gai_strerror(gai));
			rc = -1;
		}
		for (struct addrinfo *a = addrs; a && rc == 0; a = a->ai_next) {
			char numeric[64];
			long left = (long)(end - gpucc_remote_now_ms());
			if (left < 1 || getnameinfo(a->ai_addr, a->ai_addrlen, numeric, sizeof numeric, NULL,
			                            0, NI_NUMERICHOST) != 0)
				continue;
			if (ctx)
				hiredis.free_context(ctx);
			ctx = hiredis.connect_tcp(numeric, r->port, ms_to_timeval(left));
			if (ctx && !ctx->err)
				break;
		}
		if (addrs)
			freeaddrinfo(addrs);
		if (rc == 0 && !ctx) {
			snprintf(r->why, sizeof r->why, "cannot connect: timed out");
			rc = -1;
		}
	}
	if (rc == 0 && !ctx) {
		snprintf(r->why, sizeof r->why, "cannot connect: out of memory");
		rc = -1;
	} else if (rc == 0 && ctx->err) {
		snprintf(r->why, sizeof r->why, "cannot connect: %s", ctx->errstr);
		rc = -1;
	} else if (rc == 0) {
		r->state = ctx;
	}
	if (rc != 0 && ctx)
		hiredis.free_context(ctx);
	redisReply *reply;
	if (rc == 0 && r->password) {
		const char *argv[3] = {"AUTH", r->user ? r->user : r->password, r->password};
		if ((reply = command(r, r->user ? 3 : 2, argv, "AUTH")) == NULL)
			rc = -1;
		else
			hiredis.free_reply(reply);
	}
	if (rc == 0 && r->db) {
		char db[16];
		snprintf(db, sizeof db, "%d", r->db);
		const char *argv[2] = {"SELECT", db};
		if ((reply = command(r, 2, argv, "SELECT")) == NULL)
			rc = -1;
		else
			hiredis.free_reply(reply);
	}
	if (rc != 0)
		redis_close(r);
	gpucc_remote_sigpipe_restore(&guard);
	return rc;
}

static void key_name(char out[KEY_SIZE], const gpucc_digest *key)
{
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, key);
	snprintf(out, KEY_SIZE, KEY_PREFIX "%s", hex);
}

/* Send count commands (argv built by make(i)) in one pipeline, then read
 * their replies in order, giving each to take(i, reply).  At the first
 * failure of the connection, the rest are left as they are. */
typedef struct pipeline {
	remote *r;
	const char *doing;
	size_t count;
	int (*make)(struct pipeline *p, size_t i, const char **argv, size_t *lens);
	void (*take)(struct pipeline *p, size_t i, redisReply *reply);
	void (*lost)(struct pipeline *p, size_t i, remote_outcome o);
	void *ctx;
	const gpucc_digest *keys;
	char (*names)[KEY_SIZE];
} pipeline;

static void run_pipeline(pipeline *p, int max_argc)
{
	redisContext *ctx = p->r->state;
	const char **argv = malloc((size_t)max_argc * sizeof *argv);
	size_t *lens = malloc((size_t)max_argc * sizeof *lens);
	remote_sigpipe_guard guard;
	gpucc_remote_sigpipe_block(&guard);
	size_t sent = 0;
	for (; argv && lens && sent < p->count; sent++) {
		int argc = p->make(p, sent, argv, lens);
		if (hiredis.append_argv(ctx, argc, argv, lens) != REDIS_OK)
			break;
	}
	for (size_t i = 0; i < p->count; i++) {
		void *reply = NULL;
		if (i >= sent) {
			if (!p->r->why[0])
				snprintf(p->r->why, sizeof p->r->why, "%s: out of memory", p->doing);
			p->lost(p, i, REMOTE_ERROR);
			continue;
		}
		remote_outcome o = reply_within(p->r, &reply, p->doing);
		if (o != REMOTE_OK) {
			p->lost(p, i, o);
			for (i++; i < p->count; i++)
				p->lost(p, i, REMOTE_MISS);
			break;
		}
		p->take(p, i, reply);
		hiredis.free_reply(reply);
	}
	gpucc_remote_sigpipe_restore(&guard);
	free(argv);
	free(lens);
}

/* ---- MGET -------------------------------------------------------------- */

typedef struct get_ctx {
	size_t total;
	remote_blob *out;
} get_ctx;

static size_t chunk_size(const get_ctx *g, size_t chunk)
{
	size_t first = chunk * MGET_CHUNK;
	return g->total - first < MGET_CHUNK ? g->total - first : MGET_CHUNK;
}

static int make_mget(pipeline *p, size_t i, const char **argv, size_t *lens)
{
	size_t first = i * MGET_CHUNK, n = chunk_size(p->ctx, i);
	argv[0] = "MGET";
	lens[0] = 4;
	for (size_t k = 0; k < n; k++) {
		argv[k + 1] = p->names[first + k];
		lens[k + 1] = strlen(p->names[first + k]);
	}
	return (int)n + 1;
}

/* A chunk lost: its first key carries the failure, the others are misses. */
static void lost_mget(pipeline *p, size_t i, remote_outcome o)
{
	get_ctx *g = p->ctx;
	size_t first = i * MGET_CHUNK, n = chunk_size(g, i);
	for (size_t k = 0; k < n; k++)
		g->out[first + k].outcome = k == 0 ? o : REMOTE_MISS;
}

static void take_mget(pipeline *p, size_t i, redisReply *reply)
{
	get_ctx *g = p->ctx;
	size_t first = i * MGET_CHUNK, n = chunk_size(g, i);
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != n) {
		if (!p->r->why[0]) {
			if (reply->type == REDIS_REPLY_ERROR)
				snprintf(p->r->why, sizeof p->r->why, "MGET: %.*s", (int)reply->len, reply->str);
			else
				snprintf(p->r->why, sizeof p->r->why, "MGET: unexpected reply");
		}
		lost_mget(p, i, REMOTE_ERROR);
		return;
	}
	for (size_t k = 0; k < n; k++) {
		redisReply *e = reply->element[k];
		remote_blob *b = &g->out[first + k];
		if (e->type == REDIS_REPLY_NIL) {
			b->outcome = REMOTE_MISS;
		} else if (e->type == REDIS_REPLY_STRING && e->len <= REMOTE_MAX_OBJECT &&
		           (b->data = malloc(e->len ? e->len : 1)) != NULL) {
			memcpy(b->data, e->str, e->len);
			b->size = e->len;
			b->outcome = REMOTE_OK;
		} else {
			b->outcome = REMOTE_ERROR;
			if (!p->r->why[0])
				snprintf(p->r->why, sizeof p->r->why, "MGET: unexpected value for %s",
				         p->names[first + k]);
		}
	}
}

static char (*make_names(const gpucc_digest *keys, size_t count))[KEY_SIZE]
{
	char (*names)[KEY_SIZE] = malloc((count ? count : 1) * sizeof *names);
	for (size_t i = 0; names && i < count; i++)
		key_name(names[i], &keys[i]);
	return names;
}

static void redis_get(remote *r, const gpucc_digest *keys, size_t count, remote_blob *out)
{
	get_ctx g = {count, out};
	pipeline p = {r, "MGET", (count + MGET_CHUNK - 1) / MGET_CHUNK, make_mget, take_mget,
	              lost_mget, &g, keys, make_names(keys, count)};
	if (!p.names) {
		snprintf(r->why, sizeof r->why, "out of memory");
		for (size_t i = 0; i < count; i++)
			out[i].outcome = REMOTE_ERROR;
		return;
	}
	run_pipeline(&p, MGET_CHUNK + 1);
	free(p.names);
}

/* ---- TYPE, SET and DEL -------------------------------------------------- */

typedef struct each_ctx {
	remote_outcome *out;
	const remote_blob *blobs;
} each_ctx;

static int make_type(pipeline *p, size_t i, const char **argv, size_t *lens)
{
	argv[0] = "TYPE";
	lens[0] = 4;
	argv[1] = p->names[i];
	lens[1] = strlen(p->names[i]);
	return 2;
}

static int make_del(pipeline *p, size_t i, const char **argv, size_t *lens)
{
	argv[0] = "DEL";
	lens[0] = 3;
	argv[1] = p->names[i];
	lens[1] = strlen(p->names[i]);
	return 2;
}

static int make_set(pipeline *p, size_t i, const char **argv, size_t *lens)
{
	each_ctx *e = p->ctx;
	argv[0] = "SET";
	lens[0] = 3;
	argv[1] = p->names[i];
	lens[1] = strlen(p->names[i]);
	argv[2] = (const char *)e->blobs[i].data;
	lens[2] = e->blobs[i].size;
	return 3;
}

static void lost_each(pipeline *p, size_t i, remote_outcome o)
{
	each_ctx *e = p->ctx;
	/* Not known to be stored, nor known to be present. */
	e->out[i] = o == REMOTE_MISS && e->blobs ? REMOTE_ERROR : o;
}

static void take_each(pipeline *p, size_t i, redisReply *reply)
{
	each_ctx *e = p->ctx;
	if (reply->type == REDIS_REPLY_ERROR) {
		e->out[i] = REMOTE_ERROR;
		if (!p->r->why[0])
			snprintf(p->r->why, sizeof p->r->why, "%s: %.*s", p->doing, (int)reply->len,
			         reply->str);
	} else if (reply->type == REDIS_REPLY_INTEGER) {
		e->out[i] = reply->integer > 0 ? REMOTE_OK : REMOTE_MISS;
	} else if (reply->type == REDIS_REPLY_STATUS) {
		e->out[i] = REMOTE_OK;
	} else {
		e->out[i] = REMOTE_ERROR;
		if (!p->r->why[0])
			snprintf(p->r->why, sizeof p->r->why, "%s: unexpected reply", p->doing);
	}
}

/* TYPE's reply: present only as a string, the type gpucc stores (any
 * other type is what MGET reads as nil, and a SET replaces). */
static void take_type(pipeline *p, size_t i, redisReply *reply)
{
	each_ctx *e = p->ctx;
	if (reply->type == REDIS_REPLY_STATUS)
		e->out[i] = reply->len == 6 && memcmp(reply->str, "string", 6) == 0 ? REMOTE_OK
		                                                                   : REMOTE_MISS;
	else
		take_each(p, i, reply);
}

/* One command per key, pipelined, each outcome into out (every one
 * REMOTE_ERROR when the names cannot be made). */
static void run_each(remote *r, const char *command, int argc,
                     int (*make)(pipeline *, size_t, const char **, size_t *),
                     void (*take)(pipeline *, size_t, redisReply *), const gpucc_digest *keys,
                     const remote_blob *blobs, size_t count, remote_outcome *out)
{
	each_ctx e = {out, blobs};
	pipeline p = {r, command, count, make, take, lost_each, &e, keys, make_names(keys, count)};
	if (!p.names) {
		snprintf(r->why, sizeof r->why, "out of memory");
		for (size_t i = 0; i < count; i++)
			out[i] = REMOTE_ERROR;
		return;
	}
	run_pipeline(&p, argc);
	free(p.names);
}

static void redis_exists(remote *r, const gpucc_digest *keys, size_t count, remote_outcome *out)
{
	run_each(r, "TYPE", 2, make_type, take_type, keys, NULL, count, out);
}

static void redis_put(remote *r, const gpucc_digest *keys, const remote_blob *blobs, size_t count,
                      remote_outcome *out)
{
	run_each(r, "SET", 3, make_set, take_each, keys, blobs, count, out);
}

static void redis_del(remote *r, const gpucc_digest *keys, size_t count, remote_outcome *out)
{
	run_each(r, "DEL", 2, make_del, take_each, keys, NULL, count, out);
}

const remote_backend gpucc_remote_redis_backend = {
	.name = "Redis",
	.connect = redis_connect,
	.get = redis_get,
	.exists = redis_exists,
	.put = redis_put,
	.del = redis_del,
	.close = redis_close,
};

#else

static int unavailable_connect(remote *r)
{
	snprintf(r->why, sizeof r->why, "this gpucc was built without hiredis's headers");
	return -1;
}

const remote_backend gpucc_remote_redis_backend = {
	.name = "Redis",
	.connect = unavailable_connect,
};
#endif
