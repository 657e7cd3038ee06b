/*
 * lib/remote/http_client.c -- a small HTTP/1.1 client (lib/remote/http_client.h): a URL
 * parsed once, a pool of keep-alive connections to its server, and a batch
 * engine running one request per connection at a time over non-blocking
 * sockets and poll().  Responses are framed by Content-Length, chunked
 * transfer coding, or the connection's close; a body cut short is an error.
 * A request on a reused connection that the server closed meanwhile (no
 * response byte came) is retried once on a fresh connection.
 */
#include "http_client.h"

#include "byte_buffer.h"
#include "hex.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* The most a response's head (status line and headers) may take. */
#define HEAD_LIMIT 65536
/* The most a chunk-size or trailer line may take. */
#define LINE_LIMIT 4096
#define READ_SIZE 65536

typedef enum { PHASE_CONNECTING, PHASE_EXCHANGE } conn_phase;

typedef enum {
	BODY_NONE,
	BODY_LENGTH,     /* remaining bytes by Content-Length */
	BODY_CLOSE,      /* until the server closes */
	BODY_CHUNK_SIZE, /* a chunk-size line is due */
	BODY_CHUNK_DATA, /* remaining bytes of a chunk */
	BODY_CHUNK_END,  /* the CRLF after a chunk's data */
	BODY_TRAILER     /* trailer lines up to an empty one */
} body_mode;

typedef struct conn {
	int fd;                      /* -1: none open */
	bool used;                   /* a response came over fd already */
	http_request *req;           /* NULL: free */
	conn_phase phase;
	const struct addrinfo *addr; /* connecting: the address tried */
	long long connect_deadline, deadline;
	char *head;                  /* the request's head */
	size_t head_size, head_sent, body_sent;
	char *in;                    /* received, not yet consumed */
	size_t in_len, in_cap, data_cap;
	bool in_head, got_byte, retried, close_after;
	body_mode mode;
	uint64_t remaining;
} conn;

struct http_client {
	char *host;      /* for getaddrinfo: no brackets */
	char port[8];
	char *shown;     /* host:port, for messages */
	char *base_path; /* "" or "/..." */
	char *fixed;     /* header lines every request carries */
	long connect_timeout_ms, timeout_ms;
	long long deadline; /* http_client_set_deadline's; LLONG_MAX: none */
	struct addrinfo *addrs; /* resolved at the first connect */
	conn conns[HTTP_CLIENT_CONNECTIONS];
};

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the URL and the headers ------------------------------------------ */

static void base64(char *out, const unsigned char *in, size_t n)
{
	static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		out[o++] = abc[v >> 18 & 63];
		out[o++] = abc[v >> 12 & 63];
		out[o++] = i + 1 < n ? abc[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? abc[v & 63] : '=';
	}
	out[o] = '\0';
}

/* s[0..n) with %XX decoded, appended to out at *o. */
static void percent_decode(char *out, size_t *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char v;
		if (s[i] == '%' && i + 2 < n && gpucc_hex_decode(&v, s + i + 1, 1, false)) {
			out[(*o)++] = (char)v;
			i += 2;
		} else {
			out[(*o)++] = s[i];
		}
	}
}

/* "Authorization: Basic ..." for userinfo user:password (percent-decoded). */
static char *basic_auth(const char *info, size_t n)
{
	char *plain = malloc(n + 2);
	char *line = malloc((n + 1) * 4 / 3 + 48);
	if (!plain || !line) {
		free(plain);
		free(line);
		return NULL;
	}
	size_t o = 0;
	percent_decode(plain, &o, info, n);
	if (!memchr(info, ':', n)) /* a user alone: an empty password */
		plain[o++] = ':';
	strcpy(line, "Authorization: Basic ");
	base64(line + strlen(line), (const unsigned char *)plain, o);
	strcat(line, "\r\n");
	free(plain);
	return line;
}

static int set_error(char *why, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int set_error(char *why, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, size, fmt, ap);
	va_end(ap);
	return -1;
}

/* Host, port, shown and base path of url into c; *host_field the Host
 * header's value, *auth the Authorization line of a user:password. */
static int parse_url(http_client *c, const char *url, char **auth, char **host_field, char *why,
                     size_t why_size)
{
	if (strncasecmp(url, "http://", 7) != 0)
		return set_error(why, why_size, "not an http:// URL");
	const char *a = url + 7, *end = a + strcspn(a, "/?#");
	const char *at = NULL;
	for (const char *p = a; p < end; p++)
		if (*p == '@')
			at = p;
	*auth = at ? basic_auth(a, (size_t)(at - a)) : NULL;
	if (at && !*auth)
		return set_error(why, why_size, "out of memory");
	const char *h = at ? at + 1 : a, *hend, *port = NULL;
	if (*h == '[') {
		hend = memchr(h, ']', (size_t)(end - h));
		if (!hend)
			return set_error(why, why_size, "unclosed '[' in the host");
		c->host = strndup(h + 1, (size_t)(hend - h - 1));
		hend++;
	} else {
		hend = memchr(h, ':', (size_t)(end - h));
		if (!hend)
			hend = end;
		c->host = strndup(h, (size_t)(hend - h));
	}
	if (hend < end && *hend == ':')
		port = hend + 1;
	else if (hend != end)
		return set_error(why, why_size, "junk after the host");
	if (!c->host)
		return set_error(why, why_size, "out of memory");
	if (!c->host[0])
		return set_error(why, why_size, "no host");
	unsigned long p = 80;
	if (port) {
		char *stop;
		p = strtoul(port, &stop, 10);
		if (stop == port || stop != end || p == 0 || p > 65535)
			return set_error(why, why_size, "bad port '%.*s'", (int)(end - port), port);
	}
	snprintf(c->port, sizeof c->port, "%lu", p);
	if (asprintf(&c->shown, "%.*s:%s", (int)(hend - h), h, c->port) < 0) {
		c->shown = NULL;
		return set_error(why, why_size, "out of memory");
	}
	if (!(c->base_path = strdup(end)) || !(*host_field = strndup(h, (size_t)(end - h))))
		return set_error(why, why_size, "out of memory");
	return 0;
}

/* The header lines of every request: Host, auth, the caller's. */
static int build_fixed(http_client *c, const char *auth, const char *const *headers, size_t count,
                       const char *host_field)
{
	size_t size = strlen(host_field) + 64 + (auth ? strlen(auth) : 0);
	for (size_t i = 0; i < count; i++)
		size += strlen(headers[i]) + 2;
	c->fixed = malloc(size);
	if (!c->fixed)
		return -1;
	int n = snprintf(c->fixed, size, "Host: %s\r\nUser-Agent: gpucc\r\nAccept: */*\r\n%s",
	                 host_field, auth ? auth : "");
	size_t o = (size_t)n;
	for (size_t i = 0; i < count; i++) {
		/* "Name:" with no value asks for no such header (as with curl). */
		const char *colon = strchr(headers[i], ':');
		if (colon && colon[1 + strspn(colon + 1, " \t")] == '\0')
			continue;
		o += (size_t)snprintf(c->fixed + o, size - o, "%s\r\n", headers[i]);
	}
	return 0;
}

http_client *http_client_open(const char *url, const char *const *headers, size_t count,
                              long connect_timeout_ms, long timeout_ms, char *why,
                              size_t why_size)
{
	http_client *c = calloc(1, sizeof *c);
	if (!c) {
		set_error(why, why_size, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < HTTP_CLIENT_CONNECTIONS; i++)
		c->conns[i].fd = -1;
	c->connect_timeout_ms = connect_timeout_ms;
	c->timeout_ms = timeout_ms;
	c->deadline = LLONG_MAX;
	char *auth = NULL, *host_field = NULL;
	int rc = parse_url(c, url, &auth, &host_field, why, why_size);
	if (rc == 0 && build_fixed(c, auth, headers, count, host_field) != 0)
		rc = set_error(why, why_size, "out of memory");
	free(host_field);
	free(auth);
	if (rc != 0) {
		http_client_close(c);
		return NULL;
	}
	return c;
}

const char *http_client_base_path(const http_client *c)
{
	return c->base_path;
}

/* ---- connections ------------------------------------------------------ */

static void conn_close(conn *k)
{
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
	k->used = false;
	k->in_len = 0;
}

/* Whether an idle kept connection is still open: nothing to read, no EOF. */
static bool idle_alive(int fd)
{
	char b;
	ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

static void req_fail(http_request *req, http_request_state state, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void req_fail(http_request *req, http_request_state state, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(req->error, sizeof req->error, fmt, ap);
	va_end(ap);
	req->state = state;
}

/* Start connecting k to address a (or the ones after it); false with the
 * request failed when none is left. */
static bool try_connect(http_client *c, conn *k, const struct addrinfo *a, int last_errno)
{
	for (; a; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			last_errno = errno;
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS) {
			k->fd = fd;
			k->addr = a;
			k->phase = PHASE_CONNECTING;
			k->connect_deadline = now_ms() + c->connect_timeout_ms;
			if (k->connect_deadline > c->deadline)
				k->connect_deadline = c->deadline;
			return true;
		}
		last_errno = errno;
		close(fd);
	}
	req_fail(k->req, HTTP_REQUEST_FAILED, "connect to %s: %s", c->shown, strerror(last_errno));
	return false;
}

/* A connection for k's request: the kept one when still open, else a new. */
static bool conn_begin(http_client *c, conn *k)
{
	if (k->fd >= 0 && !idle_alive(k->fd))
		conn_close(k);
	k->head_sent = k->body_sent = 0;
	k->in_head = true;
	k->got_byte = false;
	k->close_after = false;
	k->in_len = 0;
	if (k->fd >= 0) {
		k->phase = PHASE_EXCHANGE;
		return true;
	}
	if (!c->addrs) {
		long long left = k->deadline - now_ms();
		long wait = left < c->connect_timeout_ms ? (long)left : c->connect_timeout_ms;
		int rc = wait > 0 ? http_resolve(c->host, c->port, wait, &c->addrs)
		                  : HTTP_RESOLVE_TIMED_OUT;
		if (rc != 0) {
			c->addrs = NULL;
			bool late = rc == HTTP_RESOLVE_TIMED_OUT;
			req_fail(k->req, late ? HTTP_REQUEST_TIMED_OUT : HTTP_REQUEST_FAILED,
			         "cannot resolve host '%s': %s", c->host,
			         late ? "timed out" : gai_strerror(rc));
			return false;
		}
	}
	return try_connect(c, k, c->addrs, ECONNREFUSED);
}

static bool start(http_client *c, conn *k, http_request *req)
{
	k->req = req;
	k->retried = false;
	k->data_cap = 0;
	req->state = HTTP_REQUEST_PENDING;
	req->status = 0;
	req->size = 0;
	req->until_close = false;
	req->error[0] = '\0';
	k->deadline = now_ms() + c->timeout_ms;
	if (k->deadline > c->deadline)
		k->deadline = c->deadline;
	free(k->head);
	char length[48] = "";
	if (req->send_body)
		snprintf(length, sizeof length, "Content-Length: %zu\r\n", req->body_size);
	int n = asprintf(&k->head, "%s %s HTTP/1.1\r\n%s%s\r\n", req->method, req->target, c->fixed,
	                 length);
	if (n < 0) {
		k->head = NULL;
		req_fail(req, HTTP_REQUEST_FAILED, "out of memory");
		return false;
	}
	k->head_size = (size_t)n;
	return conn_begin(c, k);
}

void http_client_set_deadline(http_client *c, long long deadline_ms)
{
	c->deadline = deadline_ms;
}

/* A lookup getaddrinfo_a runs on its own thread.  When time runs out
 * before it ends and it cannot be cancelled, that thread still writes
 * into it: it is left allocated (a few hundred bytes, once per remote). */
typedef struct lookup {
	struct gaicb cb;
	struct addrinfo hints;
	char *host, *port;
} lookup;

int http_resolve(const char *host, const char *port, long timeout_ms, struct addrinfo **out)
{
	*out = NULL;
	/* An address (127.0.0.1, ::1) asks no resolver: no thread for it. */
	struct addrinfo numeric = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV | AI_NUMERICHOST};
	if (getaddrinfo(host, port, &numeric, out) == 0)
		return 0;
	*out = NULL;
	lookup *l = calloc(1, sizeof *l);
	if (!l || !(l->host = strdup(host)) || !(l->port = strdup(port))) {
		if (l)
			free(l->host);
		free(l);
		return EAI_MEMORY;
	}
	l->hints = (struct addrinfo){.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	l->cb = (struct gaicb){.ar_name = l->host, .ar_service = l->port, .ar_request = &l->hints};
	struct gaicb *list[1] = {&l->cb};
	int rc = getaddrinfo_a(GAI_NOWAIT, list, 1, NULL);
	long long end = now_ms() + timeout_ms;
	while (rc == 0 && (rc = gai_error(&l->cb)) == EAI_INPROGRESS) {
		long long left = end - now_ms();
		if (left <= 0)
			break;
		struct timespec ts = {(time_t)(left / 1000), (long)(left % 1000) * 1000000};
		gai_suspend((const struct gaicb *const *)list, 1, &ts);
		rc = 0;
	}
	if (rc == EAI_INPROGRESS) {
		if (gai_cancel(&l->cb) != EAI_CANCELED && gai_error(&l->cb) == EAI_INPROGRESS)
			return HTTP_RESOLVE_TIMED_OUT; /* still running: l stays allocated */
		rc = gai_error(&l->cb);
		if (rc == EAI_CANCELED || rc == EAI_INPROGRESS)
			rc = HTTP_RESOLVE_TIMED_OUT;
	}
	if (rc == 0)
		*out = l->cb.ar_result;
	else if (l->cb.ar_result)
		freeaddrinfo(l->cb.ar_result);
	free(l->host);
	free(l->port);
	free(l);
	return rc;
}

/* ---- the response ----------------------------------------------------- */

/* Append n body bytes to the request's data (when kept); -1: too many. */
static int take_body(conn *k, const char *p, size_t n)
{
	http_request *req = k->req;
	if (!req->keep_body || n == 0)
		return 0;
	if (req->size + n > req->max_body) {
		req_fail(req, HTTP_REQUEST_FAILED, "the response's body exceeds %zu bytes", req->max_body);
		return -1;
	}
	/* The body grows in req->data, whose allocation the connection
	 * tracks (data_cap). */
	gpucc_buffer body = {(char *)req->data, req->size, k->data_cap, false};
	if (gpucc_buffer_append(&body, p, n) != 0) {
		req_fail(req, HTTP_REQUEST_FAILED, "out of memory");
		return -1;
	}
	req->data = (unsigned char *)body.data;
	req->size = body.size;
	k->data_cap = body.capacity;
	return 0;
}

/* The length of the line at p (through its '\n'), 0 when incomplete. */
static size_t line_length(const char *p, size_t n)
{
	const char *nl = memchr(p, '\n', n);
	return nl ? (size_t)(nl - p) + 1 : 0;
}

/* Whether header value v (n bytes) lists token t, comma-separated. */
static bool has_token(const char *v, size_t n, const char *t)
{
	size_t tl = strlen(t);
	for (size_t i = 0; i < n;) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		size_t j = i;
		while (j < n && v[j] != ',')
			j++;
		size_t e = j;
		while (e > i && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e - i == tl && strncasecmp(v + i, t, tl) == 0)
			return true;
		i = j;
	}
	return false;
}

typedef struct head_facts {
	bool chunked, other_coding, has_length, keep_alive;
	uint64_t length;
} head_facts;

/* One header line (name: value, no line end) into f; -1: malformed. */
static int header_line(conn *k, head_facts *f, const char *p, size_t n)
{
	const char *colon = memchr(p, ':', n);
	if (!colon)
		return -1;
	size_t nl = (size_t)(colon - p);
	const char *v = colon + 1;
	size_t vl = n - nl - 1;
	while (vl && (*v == ' ' || *v == '\t'))
		v++, vl--;
	while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
		vl--;
	if (nl == 14 && strncasecmp(p, "Content-Length", 14) == 0) {
		uint64_t x = 0;
		if (vl == 0 || vl > 19)
			return -1;
		for (size_t i = 0; i < vl; i++) {
			if (v[i] < '0' || v[i] > '9')
				return -1;
			x = x * 10 + (uint64_t)(v[i] - '0');
		}
		if (f->has_length && f->length != x)
			return -1;
		f->has_length = true;
		f->length = x;
	} else if (nl == 17 && strncasecmp(p, "Transfer-Encoding", 17) == 0) {
		if (has_token(v, vl, "chunked"))
			f->chunked = true;
		else
			f->other_coding = true;
	} else if (nl == 10 && strncasecmp(p, "Connection", 10) == 0) {
		if (has_token(v, vl, "close"))
			k->close_after = true;
		if (has_token(v, vl, "keep-alive"))
			f->keep_alive = true;
	}
	return 0;
}

/* The response head in k->in[0..size): status and framing; -1 malformed. */
static int parse_head(conn *k, size_t size)
{
	const char *p = k->in, *end = k->in + size;
	size_t n = line_length(p, size);
	if (n < 13 || strncmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ' || p[9] < '1' || p[9] > '5' ||
	    p[10] < '0' || p[10] > '9' || p[11] < '0' || p[11] > '9')
		return -1;
	bool http10 = p[7] == '0';
	k->req->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	head_facts f = {0};
	k->close_after = false;
	for (p += n; p < end; p += n) {
		n = line_length(p, (size_t)(end - p));
		size_t content = n - 1 - (n >= 2 && p[n - 2] == '\r');
		if (content == 0)
			break;
		if (header_line(k, &f, p, content) != 0)
			return -1;
	}
	if (http10 && !f.keep_alive)
		k->close_after = true;
	int status = k->req->status;
	if (strcmp(k->req->method, "HEAD") == 0 || status == 204 || status == 304 || status < 200) {
		k->mode = BODY_NONE;
	} else if (f.chunked && !f.other_coding) {
		k->mode = BODY_CHUNK_SIZE;
	} else if (f.has_length && !f.chunked && !f.other_coding) {
		k->mode = f.length ? BODY_LENGTH : BODY_NONE;
		k->remaining = f.length;
		if (k->req->keep_body && f.length > k->req->max_body) {
			req_fail(k->req, HTTP_REQUEST_FAILED, "the response's body of %llu bytes exceeds %zu",
			         (unsigned long long)f.length, k->req->max_body);
			return -2;
		}
	} else {
		k->mode = BODY_CLOSE;
		k->close_after = true;
	}
	return 0;
}

/* A chunk-size line: the size, or -1 when malformed. */
static int chunk_size(const char *p, size_t n, uint64_t *size)
{
	uint64_t x = 0;
	size_t i = 0;
	for (; i < n; i++) {
		int d = gpucc_hex_digit((unsigned char)p[i]);
		if (d < 0)
			break;
		if (x >> 60)
			return -1;
		x = x * 16 + (uint64_t)d;
	}
	if (i == 0 || (i < n && p[i] != ';' && p[i] != ' ' && p[i] != '\t' && p[i] != '\r' &&
	               p[i] != '\n'))
		return -1;
	*size = x;
	return 0;
}

/* Consume body bytes from p[0..n); *used says how many.  1: the response
 * is whole, 0: more to come, -1: failed (error set). */
static int body_step(conn *k, const char *p, size_t n, size_t *used)
{
	*used = 0;
	switch (k->mode) {
	case BODY_NONE:
		return 1;
	case BODY_CLOSE:
		*used = n;
		return take_body(k, p, n) ? -1 : 0;
	case BODY_LENGTH:
	case BODY_CHUNK_DATA: {
		size_t take = n < k->remaining ? n : (size_t)k->remaining;
		if (take_body(k, p, take) != 0)
			return -1;
		*used = take;
		k->remaining -= take;
		if (k->remaining)
			return 0;
		if (k->mode == BODY_LENGTH)
			return 1;
		k->mode = BODY_CHUNK_END;
		return 0;
	}
	default:
		break;
	}
	size_t line = line_length(p, n);
	if (!line) {
		if (n > LINE_LIMIT) {
			req_fail(k->req, HTTP_REQUEST_FAILED, "a malformed chunked response");
			return -1;
		}
		return 0;
	}
	*used = line;
	size_t content = line - 1 - (line >= 2 && p[line - 2] == '\r');
	if (k->mode == BODY_CHUNK_SIZE) {
		if (chunk_size(p, content, &k->remaining) != 0) {
			req_fail(k->req, HTTP_REQUEST_FAILED, "a malformed chunk size in the response");
			return -1;
		}
		k->mode = k->remaining ? BODY_CHUNK_DATA : BODY_TRAILER;
		return 0;
	}
	if (k->mode == BODY_CHUNK_END) {
		if (content != 0) {
			req_fail(k->req, HTTP_REQUEST_FAILED, "a chunk of the response overruns its size");
			return -1;
		}
		k->mode = BODY_CHUNK_SIZE;
		return 0;
	}
	return content == 0; /* BODY_TRAILER: an empty line ends it */
}

/* Parse what k->in holds.  1: the response is whole, 0: more to come,
 * -1: failed (the request's error set). */
static int parse(conn *k)
{
	size_t pos = 0;
	int rc = 0;
	while (rc == 0 && k->in_head) {
		size_t end = 0;
		for (size_t i = 0; i < k->in_len && !end; i++)
			if (k->in[i] == '\n' && ((i >= 1 && k->in[i - 1] == '\n') ||
			                         (i >= 2 && k->in[i - 1] == '\r' && k->in[i - 2] == '\n')))
				end = i + 1;
		if (!end) {
			if (k->in_len > HEAD_LIMIT) {
				req_fail(k->req, HTTP_REQUEST_FAILED, "the response's head exceeds %d bytes",
				         HEAD_LIMIT);
				return -1;
			}
			return 0;
		}
		int h = parse_head(k, end);
		if (h != 0) {
			if (h == -1)
				req_fail(k->req, HTTP_REQUEST_FAILED, "a malformed response head");
			return -1;
		}
		memmove(k->in, k->in + end, k->in_len - end);
		k->in_len -= end;
		/* An interim response (100 Continue): the final one follows. */
		if (k->req->status >= 200 || k->req->status == 101)
			k->in_head = false;
	}
	while (rc == 0) {
		size_t used;
		rc = body_step(k, k->in + pos, k->in_len - pos, &used);
		pos += used;
		if (rc == 0 && used == 0)
			break;
	}
	memmove(k->in, k->in + pos, k->in_len - pos);
	k->in_len -= pos;
	return rc;
}

/* ---- the exchange ----------------------------------------------------- */

/* The request is done (whole response or failure); k's connection kept
 * when it may carry another. */
static void finish(conn *k, bool whole)
{
	http_request *req = k->req;
	if (whole) {
		req->state = HTTP_REQUEST_DONE;
		bool sent = k->head_sent == k->head_size && (!req->send_body || k->body_sent == req->body_size);
		if (k->close_after || k->in_len || !sent)
			conn_close(k);
		else
			k->used = true;
	} else {
		conn_close(k);
		if (req->keep_body) {
			free(req->data);
			req->data = NULL;
			req->size = 0;
		}
	}
	k->req = NULL;
}

/* The connection ended (err, or 0 for EOF).  A reused one the server
 * closed before answering: the request again, once, on a fresh one (0);
 * else, or when that cannot start, the request failed (-1, error set). */
static int retry_or_fail(http_client *c, conn *k, int err, const char *what)
{
	bool dropped = err == 0 || err == ECONNRESET || err == EPIPE;
	if (dropped && k->used && !k->got_byte && !k->retried) {
		conn_close(k);
		k->retried = true;
		if (k->req->keep_body)
			k->req->size = 0;
		return conn_begin(c, k) ? 0 : -1;
	}
	if (err)
		req_fail(k->req, HTTP_REQUEST_FAILED, "%s %s: %s", what, c->shown, strerror(err));
	else if (!k->got_byte)
		req_fail(k->req, HTTP_REQUEST_FAILED, "%s closed the connection without a response",
		         c->shown);
	else
		req_fail(k->req, HTTP_REQUEST_FAILED, "%s closed the connection before the response's end",
		         c->shown);
	return -1;
}

/* Send what the request still has to; -1: failed, else 0. */
static int do_send(http_client *c, conn *k)
{
	http_request *req = k->req;
	size_t body_size = req->send_body ? req->body_size : 0;
	while (k->head_sent < k->head_size || k->body_sent < body_size) {
		struct iovec iov[2];
		int n = 0;
		if (k->head_sent < k->head_size)
			iov[n++] = (struct iovec){k->head + k->head_sent, k->head_size - k->head_sent};
		if (k->body_sent < body_size)
			iov[n++] = (struct iovec){(void *)(req->body + k->body_sent), body_size - k->body_sent};
		struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		ssize_t sent = sendmsg(k->fd, &msg, MSG_NOSIGNAL);
		if (sent < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EINTR)
				continue;
			return retry_or_fail(c, k, errno, "send to");
		}
		size_t s = (size_t)sent, h = k->head_size - k->head_sent;
		if (s >= h) {
			k->head_sent = k->head_size;
			k->body_sent += s - h;
		} else {
			k->head_sent += s;
		}
	}
	return 0;
}

/* Read what arrived; 1: the response is whole, 0: more to come, -1:
 * failed. */
static int do_receive(http_client *c, conn *k)
{
	for (;;) {
		if (k->in_cap - k->in_len < READ_SIZE) {
			char *grown = realloc(k->in, k->in_len + READ_SIZE);
			if (!grown) {
				req_fail(k->req, HTTP_REQUEST_FAILED, "out of memory");
				return -1;
			}
			k->in = grown;
			k->in_cap = k->in_len + READ_SIZE;
		}
		ssize_t n = recv(k->fd, k->in + k->in_len, k->in_cap - k->in_len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n < 0)
			return retry_or_fail(c, k, errno, "receive from");
		if (n == 0) {
			if (!k->in_head && k->mode == BODY_CLOSE) {
				k->close_after = true;
				k->req->until_close = true;
				return 1;
			}
			return retry_or_fail(c, k, 0, NULL);
		}
		k->got_byte = true;
		k->in_len += (size_t)n;
		int rc = parse(k);
		if (rc != 0)
			return rc;
	}
}

/* Handle poll's revents for k; 1: done, 0: more to come, -1: failed. */
static int step(http_client *c, conn *k, short revents)
{
	if (k->phase == PHASE_CONNECTING) {
		if (!(revents & (POLLOUT | POLLERR | POLLHUP)))
			return 0;
		int err = 0;
		socklen_t len = sizeof err;
		if (getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
			err = errno;
		if (err) {
			const struct addrinfo *next = k->addr->ai_next;
			conn_close(k);
			return try_connect(c, k, next, err) ? 0 : -1;
		}
		k->phase = PHASE_EXCHANGE;
		revents = POLLOUT;
	}
	if ((revents & POLLOUT) && do_send(c, k) != 0)
		return -1;
	if (k->fd < 0 || k->phase == PHASE_CONNECTING) /* a retry began */
		return 0;
	if (revents & (POLLIN | POLLHUP | POLLERR))
		return do_receive(c, k);
	return 0;
}

static short wanted(const conn *k)
{
	if (k->phase == PHASE_CONNECTING)
		return POLLOUT;
	size_t body_size = k->req->send_body ? k->req->body_size : 0;
	bool sending = k->head_sent < k->head_size || k->body_sent < body_size;
	return (short)(POLLIN | (sending ? POLLOUT : 0));
}

/* A request past its deadline: timed out (true). */
static bool expired(http_client *c, conn *k, long long now)
{
	if (k->phase == PHASE_CONNECTING && now >= k->connect_deadline) {
		req_fail(k->req, HTTP_REQUEST_TIMED_OUT, "connect to %s timed out after %ld ms", c->shown,
		         c->connect_timeout_ms);
		return true;
	}
	if (now >= k->deadline) {
		req_fail(k->req, HTTP_REQUEST_TIMED_OUT, "no whole response from %s within %ld ms",
		         c->shown, c->timeout_ms);
		return true;
	}
	return false;
}

typedef struct batch {
	http_client *c;
	http_client_done done;
	void *ctx;
	bool stopped;
} batch;

static void end_request(batch *b, conn *k, bool whole)
{
	http_request *req = k->req;
	finish(k, whole);
	if (!b->stopped && !b->done(req, b->ctx))
		b->stopped = true;
}

/* One poll over the connections in use, and what it found handled. */
static void poll_once(batch *b)
{
	http_client *c = b->c;
	struct pollfd fds[HTTP_CLIENT_CONNECTIONS];
	conn *of[HTTP_CLIENT_CONNECTIONS];
	int n = 0;
	long long now = now_ms(), wait = -1;
	for (size_t i = 0; i < HTTP_CLIENT_CONNECTIONS; i++) {
		conn *k = &c->conns[i];
		if (!k->req)
			continue;
		long long until = k->deadline;
		if (k->phase == PHASE_CONNECTING && k->connect_deadline < until)
			until = k->connect_deadline;
		if (wait < 0 || until - now < wait)
			wait = until - now < 0 ? 0 : until - now;
		fds[n] = (struct pollfd){.fd = k->fd, .events = wanted(k)};
		of[n++] = k;
	}
	if (n == 0)
		return;
	int ready = poll(fds, (nfds_t)n, wait > INT_MAX ? INT_MAX : (int)wait);
	if (ready < 0 && errno != EINTR)
		ready = 0;
	now = now_ms();
	for (int i = 0; i < n && !b->stopped; i++) {
		conn *k = of[i];
		int rc = ready > 0 && fds[i].revents ? step(c, k, fds[i].revents) : 0;
		if (rc == 0 && expired(c, k, now))
			rc = -1;
		if (rc != 0)
			end_request(b, k, rc > 0);
	}
}

void http_client_run(http_client *c, http_request *reqs, size_t count, http_client_done done,
                     void *ctx)
{
	batch b = {.c = c, .done = done, .ctx = ctx};
	size_t next = 0;
	for (;;) {
		size_t active = 0;
		for (size_t i = 0; i < HTTP_CLIENT_CONNECTIONS && !b.stopped; i++) {
			conn *k = &c->conns[i];
			while (!k->req && next < count && !b.stopped) {
				if (!start(c, k, &reqs[next++]))
					end_request(&b, k, false);
			}
			active += k->req != NULL;
		}
		if (b.stopped || active == 0)
			break;
		poll_once(&b);
	}
	/* Dropped unfinished: their connections are in an unknown state. */
	for (size_t i = 0; i < HTTP_CLIENT_CONNECTIONS; i++) {
		conn *k = &c->conns[i];
		if (k->req) {
			k->req->state = HTTP_REQUEST_PENDING;
			k->req = NULL;
			conn_close(k);
		}
	}
}

void http_client_close(http_client *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < HTTP_CLIENT_CONNECTIONS; i++) {
		conn_close(&c->conns[i]);
		free(c->conns[i].head);
		free(c->conns[i].in);
	}
	if (c->addrs)
		freeaddrinfo(c->addrs);
	free(c->host);
	free(c->shown);
	free(c->base_path);
	free(c->fixed);
	free(c);
}
