/*
 * lib/remote/remote_http.c -- the HTTP(S) remote (formats/remote.md): objects by
 * GET, HEAD, PUT and DELETE under the remote's URL, as nginx's WebDAV module
 * serves them (dav_methods PUT DELETE; create_full_put_path on for
 * layout=subdirs and layout=bazel).  Under layout=bazel an entry is a
 * record under ac/ and its payloads under cas/ (lib/remote/remote_bazel.c), two
 * rounds of requests.
 *
 * A plain http:// remote (not S3) goes through gpucc's own HTTP/1.1 client
 * (lib/remote/http_client.c): up to 8 keep-alive connections, a batch's requests
 * run over them in parallel.  For https:// and S3 (SigV4) libcurl is loaded
 * with dlopen (libcurl.so.4) the first time such a remote is used; only its
 * headers are needed to build.  A batch there is one curl multi handle:
 * transfers run in parallel, multiplexed over one connection where the
 * server speaks HTTP/2, else over a few HTTP/1.1 connections, all kept for
 * the next batch.  Status 404 is a miss; any other status but 200 (GET,
 * HEAD) or 2xx (PUT, DELETE, MKCOL), a transfer error, a short body and a
 * timeout are failures.  No request outlives its batch's deadline
 * (r->deadline_ms).
 */
#include "byte_buffer.h"
#include "http_client.h"
#include "config_internal.h"
#include "library_loader.h"
#include "remote_impl.h"

/* Built where the client's headers are (scripts/setup installs them);
 * elsewhere the backend only says why it is missing. */
#if __has_include(<curl/curl.h>)

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CURL_SONAME "libcurl.so.4"
/* Connections kept open to one server for HTTP/1.1 transfers in parallel,
 * and the transfers kept in flight over HTTPS (HTTP/2 streams where the
 * server offers HTTP/2, else queued for those connections). */
#define HTTP_MAX_CONNECTIONS 8
#define HTTP_MAX_STREAMS 64

static struct {
	CURLcode (*global_init)(long);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	void (*easy_cleanup)(CURL *);
	void (*easy_reset)(CURL *);
	const char *(*easy_strerror)(CURLcode);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
	CURLMcode (*multi_add_handle)(CURLM *, CURL *);
	CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
	CURLMcode (*multi_perform)(CURLM *, int *);
	CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd[], unsigned int, int, int *);
	CURLMsg *(*multi_info_read)(CURLM *, int *);
	CURLMcode (*multi_cleanup)(CURLM *);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
} curl;

static gpucc_library library = GPUCC_LIBRARY_INIT;

static const gpucc_library_symbol symbols[] = {
	{"curl_global_init", &curl.global_init, NULL, false},
	{"curl_easy_init", &curl.easy_init, NULL, false},
	{"curl_easy_setopt", &curl.easy_setopt, NULL, false},
	{"curl_easy_getinfo", &curl.easy_getinfo, NULL, false},
	{"curl_easy_cleanup", &curl.easy_cleanup, NULL, false},
	{"curl_easy_reset", &curl.easy_reset, NULL, false},
	{"curl_easy_strerror", &curl.easy_strerror, NULL, false},
	{"curl_multi_init", &curl.multi_init, NULL, false},
	{"curl_multi_setopt", &curl.multi_setopt, NULL, false},
	{"curl_multi_add_handle", &curl.multi_add_handle, NULL, false},
	{"curl_multi_remove_handle", &curl.multi_remove_handle, NULL, false},
	{"curl_multi_perform", &curl.multi_perform, NULL, false},
	{"curl_multi_poll", &curl.multi_poll, NULL, false},
	{"curl_multi_info_read", &curl.multi_info_read, NULL, false},
	{"curl_multi_cleanup", &curl.multi_cleanup, NULL, false},
	{"curl_slist_append", &curl.slist_append, NULL, false},
	{"curl_slist_free_all", &curl.slist_free_all, NULL, false},
	{NULL, NULL, NULL, false},
};

static int load(gpucc_library *lib, void *unused)
{
	(void)unused;
	static const char *const names[] = {CURL_SONAME, NULL};
	const char *why, *missing;
	if (gpucc_library_open(lib, names, 0, &why) != 0)
		return gpucc_library_fail(lib, GPUCC_EUNAVAILABLE, "cannot load libcurl: %s",
		                          why ? why : "dlopen failed");
	if (gpucc_library_resolve(lib, symbols, &missing) != 0)
		return gpucc_library_fail(lib, GPUCC_EUNAVAILABLE, "%s lacks %s", CURL_SONAME, missing);
	if (curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return gpucc_library_fail(lib, GPUCC_EUNAVAILABLE, "libcurl failed to initialise");
	return 0;
}

typedef struct http_state {
	http_client *plain; /* plain http://: the built-in client, no libcurl */
	CURLM *multi;
	struct curl_slist *headers;
	bool multiplexed; /* a transfer went over HTTP/2: streams share a connection */
	bool conflict;    /* a PUT was refused with 409: its collection is missing */
	char *cainfo;     /* CURLOPT_CAINFO; NULL: libcurl's built-in CA bundle */
	/* Easy handles of finished transfers, reset, for the next ones: a
	 * handle is kilobytes to allocate and clear, per request. */
	CURL *spare[HTTP_MAX_STREAMS];
	size_t spare_count;
} http_state;

static CURL *take_handle(http_state *st)
{
	return st->spare_count ? st->spare[--st->spare_count] : curl.easy_init();
}

/* A finished transfer's handle, out of the multi handle, kept for reuse. */
static void keep_handle(http_state *st, CURL *e)
{
	curl.multi_remove_handle(st->multi, e);
	if (st->spare_count < HTTP_MAX_STREAMS) {
		curl.easy_reset(e);
		st->spare[st->spare_count++] = e;
	} else {
		curl.easy_cleanup(e);
	}
}

/* The CA certificates TLS servers are verified against: cacert=PATH, else
 * the config's CA bundle (gpucc/config.h: curl's CURL_CA_BUNDLE, else
 * OpenSSL's SSL_CERT_FILE, which libcurl itself does not read), else NULL. */
static const char *ca_file(const remote *r)
{
	if (r->cacert)
		return r->cacert;
	return gpucc_config_or(gpucc_config_current()->ca_bundle, NULL);
}

/* A plain http:// remote (no TLS, no SigV4): served without libcurl. */
static bool is_plain(const remote *r)
{
	return !r->s3 && strncmp(r->url, "http://", 7) == 0;
}

/* The built-in client for r, with the remote's headers and bearer token. */
static int plain_connect(remote *r)
{
	http_state *st = calloc(1, sizeof *st);
	const char **lines = malloc((r->header_count + 1) * sizeof *lines);
	char *bearer = NULL;
	if (!st || !lines || (r->bearer && asprintf(&bearer, "Authorization: Bearer %s", r->bearer) < 0)) {
		free(st);
		free(lines);
		snprintf(r->why, sizeof r->why, "out of memory");
		return -1;
	}
	size_t n = 0;
	for (size_t i = 0; i < r->header_count; i++)
		lines[n++] = r->headers[i];
	if (r->bearer)
		lines[n++] = bearer;
	st->plain = http_client_open(r->url, lines, n, r->connect_timeout_ms, r->timeout_ms, r->why,
	                             sizeof r->why);
	free(bearer);
	free(lines);
	if (!st->plain) {
		free(st);
		return -1;
	}
	r->state = st;
	return 0;
}

static int http_connect(remote *r)
{
	if (is_plain(r))
		return plain_connect(r);
	if (gpucc_library_load(&library, load, NULL) != 0) {
		snprintf(r->why, sizeof r->why, "%s", gpucc_library_error(&library));
		return -1;
	}
	const char *ca = ca_file(r);
	http_state *st = calloc(1, sizeof *st);
	if (!st || !(st->multi = curl.multi_init()) || (ca && !(st->cainfo = strdup(ca)))) {
		if (st && st->multi)
			curl.multi_cleanup(st->multi);
		free(st);
		snprintf(r->why, sizeof r->why, "out of memory");
		return -1;
	}
	curl.multi_setopt(st->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
	curl.multi_setopt(st->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)HTTP_MAX_CONNECTIONS);
	/* No "Expect: 100-continue" round trip before a PUT. */
	st->headers = curl.slist_append(NULL, "Expect:");
	for (size_t i = 0; i < r->header_count; i++)
		st->headers = curl.slist_append(st->headers, r->headers[i]);
	char *bearer = NULL;
	if (r->bearer && asprintf(&bearer, "Authorization: Bearer %s", r->bearer) >= 0) {
		st->headers = curl.slist_append(st->headers, bearer);
		free(bearer);
	}
	r->state = st;
	return 0;
}

static void http_close(remote *r)
{
	http_state *st = r->state;
	if (!st)
		return;
	if (st->plain) {
		http_client_close(st->plain);
		free(st);
		r->state = NULL;
		return;
	}
	while (st->spare_count)
		curl.easy_cleanup(st->spare[--st->spare_count]);
	curl.multi_cleanup(st->multi);
	curl.slist_free_all(st->headers);
	free(st->cainfo);
	free(st);
	r->state = NULL;
}

typedef enum { HTTP_GET, HTTP_HEAD, HTTP_PUT, HTTP_DELETE, HTTP_MKCOL } http_method;

typedef struct transfer {
	CURL *easy;
	remote_blob *blob;     /* GET: filled; PUT: sent */
	size_t capacity;
	size_t sent;           /* PUT: bytes read by curl */
	remote_outcome outcome;
	bool done;
	struct curl_slist *headers; /* S3: the remote's and this request's own */
	char name[80];
	char error[CURL_ERROR_SIZE];
} transfer;

static size_t on_write(char *data, size_t size, size_t count, void *ctx)
{
	transfer *t = ctx;
	size_t n = size * count;
	remote_blob *b = t->blob;
	if (b->size + n > REMOTE_MAX_OBJECT)
		return 0;
	/* The object grows in the blob, whose allocation the transfer tracks. */
	gpucc_buffer bytes = {(char *)b->data, b->size, t->capacity, false};
	if (gpucc_buffer_append(&bytes, data, n) != 0)
		return 0;
	b->data = (unsigned char *)bytes.data;
	b->size = bytes.size;
	t->capacity = bytes.capacity;
	return n;
}

/* An answer's body nobody reads (PUT, DELETE). */
static size_t on_discard(char *data, size_t size, size_t count, void *ctx)
{
	(void)data;
	(void)ctx;
	return size * count;
}

static size_t on_read(char *buffer, size_t size, size_t count, void *ctx)
{
	transfer *t = ctx;
	size_t n = size * count, left = t->blob->size - t->sent;
	if (n > left)
		n = left;
	memcpy(buffer, t->blob->data + t->sent, n);
	t->sent += n;
	return n;
}

static const char *method_name(http_method m)
{
	return m == HTTP_GET ? "GET" : m == HTTP_HEAD ? "HEAD" : m == HTTP_PUT ? "PUT"
	       : m == HTTP_DELETE ? "DELETE" : "MKCOL";
}

/* t's object name: key's object, or with cas the payload of SHA-256 key
 * under layout=bazel; for MKCOL, the collection that object is in ("ab/",
 * "cas/", "ac/"). */
static void name_transfer(const remote *r, transfer *t, const gpucc_digest *key, bool cas,
                          http_method method)
{
	if (cas) {
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, key);
		snprintf(t->name, sizeof t->name, "cas/%s", hex);
	} else {
		gpucc_remote_object_name(t->name, sizeof t->name, r, key);
	}
	char *slash = strrchr(t->name, '/');
	if (method == HTTP_MKCOL && slash)
		slash[1] = '\0';
}

/* Prepare t's request of method for key's object (name_transfer). */
static bool setup(remote *r, transfer *t, const gpucc_digest *key, http_method method, bool cas)
{
	http_state *st = r->state;
	name_transfer(r, t, key, cas, method);
	size_t url_size = strlen(r->url) + strlen(t->name) + 2;
	char *url = malloc(url_size);
	t->easy = url ? take_handle(st) : NULL;
	if (!t->easy) {
		free(url);
		return false;
	}
	snprintf(url, url_size, "%s/%s", r->url, t->name);
	CURL *e = t->easy;
	curl.easy_setopt(e, CURLOPT_URL, url);
	free(url); /* libcurl copies it */
	curl.easy_setopt(e, CURLOPT_PRIVATE, (void *)t);
	curl.easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl.easy_setopt(e, CURLOPT_ERRORBUFFER, t->error);
	if (r->s3) {
		/* SigV4 (curl's CURLOPT_AWS_SIGV4), with the payload's SHA-256 in
		 * x-amz-content-sha256, which curl 7.88 signs but does not add. */
		gpucc_digest payload;
		gpucc_digest_buffer(&payload, method == HTTP_PUT ? t->blob->data : NULL,
		                    method == HTTP_PUT ? t->blob->size : 0);
		char hex[GPUCC_DIGEST_HEX_SIZE], line[4200];
		gpucc_digest_to_hex(hex, &payload);
		struct curl_slist *h = NULL;
		/* Not "Expect:": curl 7.88 signs that header, empty, yet sends
		 * none, so a server's signature would not match. */
		for (const struct curl_slist *l = st->headers; l; l = l->next)
			if (strcmp(l->data, "Expect:") != 0)
				h = curl.slist_append(h, l->data);
		snprintf(line, sizeof line, "x-amz-content-sha256: %s", hex);
		h = curl.slist_append(h, line);
		const remote_s3_credentials *cr = r->credentials;
		char *token = NULL;
		if (cr && cr->session_token &&
		    asprintf(&token, "x-amz-security-token: %s", cr->session_token) >= 0) {
			h = curl.slist_append(h, token);
			free(token);
		}
		t->headers = h;
		curl.easy_setopt(e, CURLOPT_HTTPHEADER, h);
		snprintf(line, sizeof line, "aws:amz:%s:s3", r->region);
		curl.easy_setopt(e, CURLOPT_AWS_SIGV4, line);
		if (cr && cr->access_key_id && cr->secret_access_key) {
			curl.easy_setopt(e, CURLOPT_USERNAME, cr->access_key_id);
			curl.easy_setopt(e, CURLOPT_PASSWORD, cr->secret_access_key);
		}
	} else {
		curl.easy_setopt(e, CURLOPT_HTTPHEADER, st->headers);
	}
	curl.easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	/* Over TLS, wait for ALPN to say whether one HTTP/2 connection
	 * carries them all; cleartext HTTP/1.1 opens connections at once. */
	curl.easy_setopt(e, CURLOPT_PIPEWAIT, strncmp(r->url, "https:", 6) == 0 ? 1L : 0L);
	/* Each transfer within the batch's deadline: its timeout, or what is
	 * left of the batch when that is less (1 ms: nothing is). */
	long request_ms = gpucc_remote_request_ms(r);
	if (request_ms < 1)
		request_ms = 1;
	curl.easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
	                 r->connect_timeout_ms < request_ms ? r->connect_timeout_ms : request_ms);
	curl.easy_setopt(e, CURLOPT_TIMEOUT_MS, request_ms);
	curl.easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	/* Peer and host verification stay libcurl's default: on. */
	if (st->cainfo)
		curl.easy_setopt(e, CURLOPT_CAINFO, st->cainfo);
	curl.easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	switch (method) {
	case HTTP_GET:
		curl.easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
		curl.easy_setopt(e, CURLOPT_WRITEDATA, (void *)t);
		curl.easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)REMOTE_MAX_OBJECT);
		break;
	case HTTP_HEAD:
		curl.easy_setopt(e, CURLOPT_NOBODY, 1L);
		break;
	case HTTP_PUT:
		curl.easy_setopt(e, CURLOPT_UPLOAD, 1L);
		curl.easy_setopt(e, CURLOPT_READFUNCTION, on_read);
		curl.easy_setopt(e, CURLOPT_READDATA, (void *)t);
		curl.easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)t->blob->size);
		curl.easy_setopt(e, CURLOPT_WRITEFUNCTION, on_discard);
		break;
	case HTTP_DELETE:
	case HTTP_MKCOL:
		curl.easy_setopt(e, CURLOPT_CUSTOMREQUEST, method_name(method));
		curl.easy_setopt(e, CURLOPT_WRITEFUNCTION, on_discard);
		break;
	}
	return true;
}


typedef enum { ENDED_WHOLE, ENDED_TIMEOUT, ENDED_ERROR } transfer_end;

/* Judge a finished transfer by how it ended, its HTTP status and the
 * client's error text; the first failure's reason goes to r->why. */
static void judge(remote *r, transfer *t, http_method method, transfer_end end, long status,
                  const char *error)
{
	t->done = true;
	if (end == ENDED_TIMEOUT) {
		t->outcome = REMOTE_TIMEOUT;
		if (!r->why[0])
			snprintf(r->why, sizeof r->why, "%s %s timed out (%s)", method_name(method), t->name,
			         error);
	} else if (end == ENDED_ERROR) {
		t->outcome = REMOTE_ERROR;
		if (!r->why[0])
			snprintf(r->why, sizeof r->why, "%s %s: %s", method_name(method), t->name, error);
	} else if (status == 404 && method != HTTP_PUT && method != HTTP_MKCOL) {
		t->outcome = REMOTE_MISS;
	} else if ((method == HTTP_GET || method == HTTP_HEAD)
	               ? status == 200
	               : (status >= 200 && status < 300) || (method == HTTP_MKCOL && status == 405)) {
		/* An object is a 200 with its bytes: 204 (no content), 206 (a
		 * part) or any other 2xx to a GET or HEAD is a failure, never an
		 * object to verify.  MKCOL's 405: the collection exists already. */
		t->outcome = REMOTE_OK;
	} else {
		t->outcome = REMOTE_ERROR;
		if (method == HTTP_PUT && status == 409)
			((http_state *)r->state)->conflict = true;
		if (!r->why[0])
			snprintf(r->why, sizeof r->why, "HTTP status %ld for %s %s", status,
			         method_name(method), t->name);
	}
}

/* judge for a transfer libcurl finished with code. */
static void judge_curl(remote *r, transfer *t, CURLcode code, http_method method)
{
	long status = 0;
	curl.easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
	transfer_end end = code == CURLE_OPERATION_TIMEDOUT ? ENDED_TIMEOUT
	                   : code != CURLE_OK               ? ENDED_ERROR
	                                                    : ENDED_WHOLE;
	judge(r, t, method, end, status, t->error[0] ? t->error : curl.easy_strerror(code));
	if (method == HTTP_GET && t->outcome == REMOTE_OK) {
		/* HTTP/1.x without a Content-Length (chunks, or the connection's
		 * close): a cut-short body is not told apart with certainty. */
		curl_off_t length = -1;
		long version = 0;
		curl.easy_getinfo(t->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
		curl.easy_getinfo(t->easy, CURLINFO_HTTP_VERSION, &version);
		t->blob->unframed = length < 0 && version != CURL_HTTP_VERSION_2_0 &&
		                    version != CURL_HTTP_VERSION_3;
	}
}

typedef struct plain_batch {
	remote *r;
	http_method method;
} plain_batch;

/* A request of the built-in client ended: judged; false (stop the batch)
 * at a failure. */
static bool plain_done(http_request *q, void *ctx)
{
	plain_batch *pb = ctx;
	transfer *t = q->user;
	transfer_end end = q->state == HTTP_REQUEST_DONE        ? ENDED_WHOLE
	                   : q->state == HTTP_REQUEST_TIMED_OUT ? ENDED_TIMEOUT
	                                                        : ENDED_ERROR;
	judge(pb->r, t, pb->method, end, q->status, q->error);
	if (pb->method == HTTP_GET && t->outcome == REMOTE_OK) {
		free(t->blob->data);
		t->blob->data = q->data;
		t->blob->size = q->size;
		t->blob->unframed = q->until_close;
		q->data = NULL;
	}
	return t->outcome != REMOTE_ERROR && t->outcome != REMOTE_TIMEOUT;
}

/* run_window's transfers t[0..count) over the built-in client. */
static void plain_window(remote *r, transfer *t, const gpucc_digest *keys, size_t count,
                         http_method method, bool cas)
{
	http_state *st = r->state;
	http_request *q = calloc(count ? count : 1, sizeof *q);
	const char *base = http_client_base_path(st->plain);
	bool ok = q != NULL;
	for (size_t i = 0; ok && i < count; i++) {
		name_transfer(r, &t[i], &keys[i], cas, method);
		t[i].outcome = REMOTE_MISS;
		q[i] = (http_request){.method = method_name(method),
		                      .send_body = method == HTTP_PUT,
		                      .body = method == HTTP_PUT ? t[i].blob->data : NULL,
		                      .body_size = method == HTTP_PUT ? t[i].blob->size : 0,
		                      .keep_body = method == HTTP_GET,
		                      .max_body = REMOTE_MAX_OBJECT,
		                      .user = &t[i]};
		ok = asprintf(&q[i].target, "%s/%s", base, t[i].name) >= 0;
		if (!ok)
			q[i].target = NULL;
	}
	if (ok) {
		plain_batch pb = {.r = r, .method = method};
		http_client_set_deadline(st->plain, r->deadline_ms);
		http_client_run(st->plain, q, count, plain_done, &pb);
	} else {
		snprintf(r->why, sizeof r->why, "out of memory");
		for (size_t i = 0; i < count; i++) {
			t[i].done = true;
			t[i].outcome = REMOTE_ERROR;
		}
	}
	for (size_t i = 0; q && i < count; i++) {
		free(q[i].target);
		free(q[i].data);
	}
	free(q);
}

/* Transfers one batch keeps in flight at most: their handles and buffers
 * are the memory a batch takes. */
#define HTTP_WINDOW 1024

/* run_window's transfers t[0..count) over libcurl's multi handle. */
static void curl_window(remote *r, transfer *t, const gpucc_digest *keys, size_t count,
                        http_method method, bool cas)
{
	http_state *st = r->state;
	/* Transfers are started as others end, never more than the server's
	 * connections (or HTTP/2 streams) carry at once: a transfer libcurl
	 * queued would spend its connect timeout waiting for a connection. */
	bool failed = false;
	size_t added = 0, active = 0;
	int running = 1;
	CURLMcode mc = CURLM_OK;
	while (!failed && (added < count || active)) {
		size_t most = st->multiplexed ? HTTP_MAX_STREAMS : HTTP_MAX_CONNECTIONS;
		while (!failed && added < count && active < most) {
			size_t i = added;
			t[i].outcome = REMOTE_MISS;
			if (!setup(r, &t[i], &keys[i], method, cas) ||
			    curl.multi_add_handle(st->multi, t[i].easy) != CURLM_OK) {
				t[i].outcome = REMOTE_ERROR;
				t[i].done = true;
				if (!r->why[0])
					snprintf(r->why, sizeof r->why, "cannot start a transfer");
				failed = true;
				if (t[i].easy) {
					curl.easy_cleanup(t[i].easy);
					t[i].easy = NULL;
				}
				break;
			}
			added++;
			active++;
		}
		if (failed || (mc = curl.multi_perform(st->multi, &running)) != CURLM_OK)
			break;
		CURLMsg *msg;
		int left;
		while ((msg = curl.multi_info_read(st->multi, &left)) != NULL) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			transfer *done = NULL;
			curl.easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&done);
			if (!done)
				continue;
			judge_curl(r, done, msg->data.result, method);
			long version = 0;
			curl.easy_getinfo(msg->easy_handle, CURLINFO_HTTP_VERSION, &version);
			st->multiplexed |= version == CURL_HTTP_VERSION_2_0;
			active--;
			failed |= done->outcome == REMOTE_ERROR || done->outcome == REMOTE_TIMEOUT;
			keep_handle(st, done->easy);
			done->easy = NULL;
		}
		if (!failed && running && (mc = curl.multi_poll(st->multi, NULL, 0, 1000, NULL)) != CURLM_OK)
			break;
	}
	/* libcurl itself failed: what did not finish failed with it. */
	for (size_t i = 0; mc != CURLM_OK && i < added; i++) {
		if (!t[i].done) {
			t[i].done = true;
			t[i].outcome = REMOTE_ERROR;
			if (!r->why[0])
				snprintf(r->why, sizeof r->why, "%s %s: libcurl's multi interface failed (%d)",
				         method_name(method), t[i].name, (int)mc);
		}
	}
	/* What is left are the transfers dropped unfinished. */
	for (size_t i = 0; i < count; i++) {
		if (t[i].easy && i < added)
			curl.multi_remove_handle(st->multi, t[i].easy);
		if (t[i].easy)
			curl.easy_cleanup(t[i].easy);
		if (t[i].headers)
			curl.slist_free_all(t[i].headers);
	}
}

/* Run one batch of count transfers of method; at the first failure the
 * transfers still running are dropped (the remote is done for). */
static void run_window(remote *r, const gpucc_digest *keys, size_t count, http_method method,
                       bool cas, remote_blob *blobs, remote_outcome *outcomes)
{
	http_state *st = r->state;
	transfer *t = calloc(count ? count : 1, sizeof *t);
	bool bodiless = method == HTTP_HEAD || method == HTTP_DELETE || method == HTTP_MKCOL;
	remote_blob *heads = bodiless ? calloc(count ? count : 1, sizeof *heads) : NULL;
	if (!t || (bodiless && !heads)) {
		free(t);
		free(heads);
		snprintf(r->why, sizeof r->why, "out of memory");
		for (size_t i = 0; i < count; i++) {
			if (blobs)
				blobs[i].outcome = REMOTE_ERROR;
			if (outcomes)
				outcomes[i] = REMOTE_ERROR;
		}
		return;
	}
	remote_sigpipe_guard guard;
	gpucc_remote_sigpipe_block(&guard);
	for (size_t i = 0; i < count; i++)
		t[i].blob = heads ? &heads[i] : &blobs[i];
	if (st->plain)
		plain_window(r, t, keys, count, method, cas);
	else
		curl_window(r, t, keys, count, method, cas);
	gpucc_remote_sigpipe_restore(&guard);
	for (size_t i = 0; i < count; i++) {
		remote_outcome o = t[i].done ? t[i].outcome : REMOTE_MISS;
		if (method == HTTP_GET) {
			blobs[i].outcome = o;
			if (o != REMOTE_OK) {
				free(blobs[i].data);
				blobs[i].data = NULL;
				blobs[i].size = 0;
			}
		} else if (outcomes) {
			/* A PUT that never ran is not stored. */
			outcomes[i] = method == HTTP_PUT && !t[i].done ? REMOTE_ERROR : o;
		}
		if (heads)
			free(heads[i].data);
	}
	free(heads);
	free(t);
}

/* run_window over windows of HTTP_WINDOW transfers; after a failure the
 * rest are misses (GET, HEAD) or not stored (PUT) without a request. */
static void run_batch(remote *r, const gpucc_digest *keys, size_t count, http_method method,
                      bool cas, remote_blob *blobs, remote_outcome *outcomes)
{
	bool failed = false;
	for (size_t first = 0; first < count; first += HTTP_WINDOW) {
		size_t n = count - first < HTTP_WINDOW ? count - first : HTTP_WINDOW;
		for (size_t i = first; failed && i < first + n; i++) {
			if (blobs && method == HTTP_GET)
				blobs[i].outcome = REMOTE_MISS;
			if (outcomes)
				outcomes[i] = method == HTTP_PUT ? REMOTE_ERROR : REMOTE_MISS;
		}
		if (failed)
			continue;
		run_window(r, keys + first, n, method, cas, blobs ? blobs + first : NULL,
		           outcomes ? outcomes + first : NULL);
		for (size_t i = first; i < first + n; i++) {
			remote_outcome o = method == HTTP_GET ? blobs[i].outcome : outcomes[i];
			failed |= o == REMOTE_ERROR || o == REMOTE_TIMEOUT;
		}
	}
}

/* ---- layout=bazel: a record under ac/, its payloads under cas/ --------- */

static void set_bad(remote_blob *b, const char *why)
{
	free(b->data);
	b->data = NULL;
	b->size = 0;
	b->outcome = REMOTE_BAD;
	b->bad = why;
}

/* The outcome of a record whose payloads came back as p[0..n): the worst
 * of them (a failure, then a miss). */
static remote_outcome payloads_outcome(const remote_blob *p, size_t n)
{
	remote_outcome worst = REMOTE_OK;
	for (size_t k = 0; k < n; k++) {
		if (p[k].outcome == REMOTE_ERROR || p[k].outcome == REMOTE_TIMEOUT)
			return p[k].outcome;
		if (p[k].outcome != REMOTE_OK)
			worst = REMOTE_MISS;
	}
	return worst;
}

/* Each record found into out[i]'s entry file, joined with its payloads
 * (rec[i] parsed, theirs at first[i]), verified against their names. */
static void bazel_join_all(remote_blob *out, size_t count, const remote_bazel *rec,
                           const size_t *first, const remote_blob *payloads)
{
	for (size_t i = 0; i < count; i++) {
		if (out[i].outcome != REMOTE_OK)
			continue;
		free(out[i].data);
		out[i].data = NULL;
		out[i].size = 0;
		out[i].outcome = payloads_outcome(payloads + first[i], rec[i].count);
		for (size_t k = 0; k < rec[i].count; k++)
			out[i].unframed |= payloads[first[i] + k].unframed;
		const char *why = NULL;
		if (out[i].outcome == REMOTE_OK &&
		    gpucc_remote_bazel_join(&out[i], &rec[i], payloads + first[i], &why) != 0)
			set_bad(&out[i], why);
	}
}

static void bazel_get(remote *r, const gpucc_digest *keys, size_t count, remote_blob *out)
{
	run_batch(r, keys, count, HTTP_GET, false, out, NULL);
	remote_bazel *rec = calloc(count ? count : 1, sizeof *rec);
	size_t *first = calloc(count + 1, sizeof *first), total = 0;
	for (size_t i = 0; rec && first && i < count; i++) {
		const char *why = NULL;
		first[i] = total;
		if (out[i].outcome == REMOTE_OK && gpucc_remote_bazel_parse(&rec[i], &out[i], &why) != 0)
			set_bad(&out[i], why);
		total += rec[i].count;
	}
	gpucc_digest *names = malloc((total ? total : 1) * sizeof *names);
	remote_blob *payloads = calloc(total ? total : 1, sizeof *payloads);
	if (rec && first && names && payloads) {
		for (size_t i = 0; i < count; i++)
			for (size_t k = 0; k < rec[i].count; k++)
				names[first[i] + k] = rec[i].spans[k].digest;
		run_batch(r, names, total, HTTP_GET, true, payloads, NULL);
		bazel_join_all(out, count, rec, first, payloads);
	} else {
		snprintf(r->why, sizeof r->why, "out of memory");
		for (size_t i = 0; i < count; i++)
			if (out[i].outcome == REMOTE_OK)
				set_bad(&out[i], "out of memory");
	}
	for (size_t i = 0; rec && i < count; i++)
		gpucc_remote_bazel_free(&rec[i]);
	for (size_t k = 0; payloads && k < total; k++)
		free(payloads[k].data);
	free(payloads);
	free(names);
	free(first);
	free(rec);
}

/* Store the payloads of every blob under cas/, then, when all are stored,
 * the records under ac/: a reader never finds a record whose payloads are
 * yet to come. */
/* PUT blobs[i] as keys[i]'s object.  A WebDAV server that makes no
 * collections on PUT (Apache's mod_dav; nginx has create_full_put_path)
 * refuses an object whose collection ("ab/", "cas/", "ac/") is missing
 * with 409 Conflict: then those collections are made (MKCOL, one per
 * collection) and the objects not stored are put again, once. */
static void put_batch(remote *r, const gpucc_digest *keys, size_t count, bool cas,
                      remote_blob *blobs, remote_outcome *out)
{
	http_state *st = r->state;
	st->conflict = false;
	run_batch(r, keys, count, HTTP_PUT, cas, blobs, out);
	if (!st->conflict || r->layout == REMOTE_LAYOUT_FLAT)
		return;
	size_t *redo = malloc(count * sizeof *redo);
	gpucc_digest *again = malloc(count * sizeof *again);
	gpucc_digest *parents = malloc(count * sizeof *parents);
	transfer *names = malloc(count * sizeof *names); /* the parents' names */
	remote_blob *blobs2 = malloc(count * sizeof *blobs2);
	remote_outcome *out2 = malloc(count * sizeof *out2);
	size_t n = 0, p = 0;
	for (size_t i = 0; redo && again && parents && names && blobs2 && out2 && i < count; i++) {
		if (out[i] == REMOTE_OK)
			continue;
		name_transfer(r, &names[p], &keys[i], cas, HTTP_MKCOL);
		bool known = false;
		for (size_t k = 0; k < p && !known; k++)
			known = strcmp(names[k].name, names[p].name) == 0;
		if (!known)
			parents[p++] = keys[i];
		redo[n] = i;
		again[n] = keys[i];
		blobs2[n] = blobs[i];
		n++;
	}
	if (n) {
		r->why[0] = '\0';
		run_batch(r, parents, p, HTTP_MKCOL, cas, NULL, out2);
		bool made = true;
		for (size_t k = 0; k < p; k++)
			made &= out2[k] == REMOTE_OK;
		if (made) {
			run_batch(r, again, n, HTTP_PUT, cas, blobs2, out2);
			for (size_t k = 0; k < n; k++)
				out[redo[k]] = out2[k];
		}
	}
	free(redo);
	free(again);
	free(parents);
	free(names);
	free(blobs2);
	free(out2);
}

static void bazel_put(remote *r, const gpucc_digest *keys, const remote_blob *blobs, size_t count,
                      remote_outcome *out)
{
	remote_bazel *split = calloc(count ? count : 1, sizeof *split);
	size_t total = 0, made = 0;
	for (; split && made < count && gpucc_remote_bazel_split(&split[made], &blobs[made]) == 0;
	     made++)
		total += split[made].count;
	size_t most = total > count ? total : count;
	gpucc_digest *names = malloc((total ? total : 1) * sizeof *names);
	remote_blob *parts = calloc(most ? most : 1, sizeof *parts);
	remote_outcome *stored = calloc(most ? most : 1, sizeof *stored);
	bool ok = split && made == count && names && parts && stored;
	if (ok) {
		size_t n = 0;
		for (size_t i = 0; i < count; i++) {
			for (size_t k = 0; k < split[i].count; k++, n++) {
				names[n] = split[i].spans[k].digest;
				parts[n].data = blobs[i].data + split[i].spans[k].offset;
				parts[n].size = (size_t)split[i].spans[k].size;
			}
		}
		put_batch(r, names, total, true, parts, stored);
		for (size_t n2 = 0; n2 < total; n2++)
			ok &= stored[n2] == REMOTE_OK;
	} else {
		snprintf(r->why, sizeof r->why, "out of memory");
	}
	for (size_t i = 0; i < count; i++) {
		out[i] = REMOTE_ERROR;
		if (ok)
			parts[i] = split[i].record;
	}
	if (ok)
		put_batch(r, keys, count, false, parts, out);
	for (size_t i = 0; split && i < made; i++)
		gpucc_remote_bazel_free(&split[i]);
	free(split);
	free(names);
	free(parts);
	free(stored);
}

static void http_get(remote *r, const gpucc_digest *keys, size_t count, remote_blob *out)
{
	if (r->layout == REMOTE_LAYOUT_BAZEL)
		bazel_get(r, keys, count, out);
	else
		run_batch(r, keys, count, HTTP_GET, false, out, NULL);
}

static void http_exists(remote *r, const gpucc_digest *keys, size_t count, remote_outcome *out)
{
	run_batch(r, keys, count, HTTP_HEAD, false, NULL, out);
}

static void http_put(remote *r, const gpucc_digest *keys, const remote_blob *blobs, size_t count,
                     remote_outcome *out)
{
	if (r->layout == REMOTE_LAYOUT_BAZEL) {
		bazel_put(r, keys, blobs, count, out);
		return;
	}
	/* The transfers read the blobs only. */
	remote_blob *copy = malloc((count ? count : 1) * sizeof *copy);
	if (!copy) {
		for (size_t i = 0; i < count; i++)
			out[i] = REMOTE_ERROR;
		snprintf(r->why, sizeof r->why, "out of memory");
		return;
	}
	memcpy(copy, blobs, count * sizeof *copy);
	put_batch(r, keys, count, false, copy, out);
	free(copy);
}

/* Under layout=bazel the record goes: its payloads may be others' too. */
static void http_del(remote *r, const gpucc_digest *keys, size_t count, remote_outcome *out)
{
	run_batch(r, keys, count, HTTP_DELETE, false, NULL, out);
}

const remote_backend gpucc_remote_http_backend = {
	.name = "HTTP",
	.connect = http_connect,
	.get = http_get,
	.exists = http_exists,
	.put = http_put,
	.del = http_del,
	.close = http_close,
};

#else

static int unavailable_connect(remote *r)
{
	snprintf(r->why, sizeof r->why, "this gpucc was built without libcurl's headers");
	return -1;
}

const remote_backend gpucc_remote_http_backend = {
	.name = "HTTP",
	.connect = unavailable_connect,
};
#endif
