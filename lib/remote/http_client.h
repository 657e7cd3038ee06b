/*
 * lib/remote/http_client.h -- a small HTTP/1.1 client for cleartext http:// URLs:
 * a pool of up to HTTP_CLIENT_CONNECTIONS keep-alive connections to one
 * server, and a batch engine that runs requests over them in parallel on
 * non-blocking sockets driven by poll().  It knows methods, headers and
 * bodies, nothing of what the bodies hold (lib/remote/remote_http.c uses it for
 * plain http:// remotes, sparing the process libcurl).
 */
#ifndef GPUCC_LIB_HTTP_CLIENT_H
#define GPUCC_LIB_HTTP_CLIENT_H

#include <netdb.h>
#include <stdbool.h>
#include <stddef.h>

#define HTTP_CLIENT_CONNECTIONS 8

typedef struct http_client http_client;

typedef enum http_request_state {
	HTTP_REQUEST_PENDING = 0, /* not run, or dropped unfinished */
	HTTP_REQUEST_DONE,        /* a whole response came: status is set */
	HTTP_REQUEST_FAILED,      /* no whole response: error says why */
	HTTP_REQUEST_TIMED_OUT    /* out of time: error says where */
} http_request_state;

typedef struct http_request {
	/* In: */
	const char *method;        /* "GET", "HEAD", "PUT", "DELETE" */
	char *target;              /* the path sent (malloc'd by the caller) */
	const unsigned char *body; /* PUT: sent with Content-Length */
	size_t body_size;
	bool send_body;            /* a body (maybe empty) goes with the request */
	bool keep_body;            /* the response's body goes to data */
	size_t max_body;           /* a response body above this is an error */
	void *user;
	/* Out: */
	http_request_state state;
	int status;
	unsigned char *data; /* keep_body: the response body, malloc'd */
	size_t size;
	/* DONE: the body had neither a length nor chunks, and ended where the
	 * server closed the connection; a body cut short in transit looks
	 * the same as a whole one. */
	bool until_close;
	char error[256];
} http_request;

/* A client for url, http://[user:password@]host[:port][/path], sending
 * headers[0..count) ("Name: value") with every request, and Authorization:
 * Basic for a user:password.  NULL with why set when url is malformed or
 * memory runs out.  Nothing is connected yet. */
http_client *http_client_open(const char *url, const char *const *headers, size_t count,
                              long connect_timeout_ms, long timeout_ms, char *why,
                              size_t why_size);

/* The URL's path ("" for none): request targets are built under it. */
const char *http_client_base_path(const http_client *c);

/* No request runs past deadline_ms (CLOCK_MONOTONIC, in ms) from now on:
 * each one's time is its timeout or what is left before it, whichever is
 * less; name resolution and connecting too.  Default: no deadline. */
void http_client_set_deadline(http_client *c, long long deadline_ms);

/* getaddrinfo for host and port (a number), given up after timeout_ms:
 * 0, HTTP_RESOLVE_TIMED_OUT, or getaddrinfo's error code (negative). */
#define HTTP_RESOLVE_TIMED_OUT 1
int http_resolve(const char *host, const char *port, long timeout_ms, struct addrinfo **out);

/* Called as each request ends (DONE, FAILED or TIMED_OUT); false stops
 * the batch: requests in flight are dropped (left PENDING), no more start. */
typedef bool (*http_client_done)(http_request *req, void *ctx);

/* Run reqs[0..count), at most HTTP_CLIENT_CONNECTIONS at a time, one per
 * connection; connections stay open for the next batch. */
void http_client_run(http_client *c, http_request *reqs, size_t count, http_client_done done,
                     void *ctx);

void http_client_close(http_client *c);

#endif
