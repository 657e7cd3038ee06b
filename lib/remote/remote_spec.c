/*
 * lib/remote/remote_spec.c -- a remote's spec parsed (formats/remote.md): its
 * URL (http://, https://, s3://, bazel+http(s)://, redis://, redis+unix:,
 * and the test hook's test:), shown with its password hidden, and its
 * attributes (timeouts, tokens, headers, signing keys...), each checked:
 * a value too long or with control characters is refused, never cut.
 * Releasing a remote too.  The remotes of a cache, asked and uploaded to:
 * lib/remote/remote.c.
 */
#include "remote_impl.h"

#include "errors.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DEFAULT_CONNECT_TIMEOUT_MS 100
/* Over TLS connecting includes the handshake, and a process's first
 * handshake loads the system's CA bundle: some 100-400 ms on a busy
 * machine. */
#define DEFAULT_TLS_CONNECT_TIMEOUT_MS 1000
#define DEFAULT_TIMEOUT_MS 2000
#define DEFAULT_TOTAL_TIMEOUT_MS 60000
/* The longest URL, and the longest attribute value (a token, a header, a
 * password), a remote's spec may give: longer is refused, never cut. */
#define REMOTE_URL_MAX 4096
#define REMOTE_VALUE_MAX 4096

#ifdef GPUCC_TEST_HOOKS
const remote_backend *gpucc_remote_test_backend;
#endif

/* ---- parsing ------------------------------------------------------------ */

void remote_free(remote *r)
{
	if (!r)
		return;
	if (r->connected && r->backend->close)
		r->backend->close(r);
	free(r->url);
	free(r->shown);
	free(r->bearer);
	for (size_t i = 0; i < r->header_count; i++)
		free(r->headers[i]);
	free(r->headers);
	free(r->cacert);
	free(r->host);
	free(r->user);
	free(r->password);
	free(r->unix_path);
	free(r->s3_bucket_path);
	free(r->region);
	free(r->endpoint);
	free(r->fault);
	gpucc_remote_free_keys(r);
	free(r);
}

static bool parse_ms(long *out, const char *text)
{
	char *end;
	errno = 0;
	long v = strtol(text, &end, 10);
	if (!*text || *end || errno || v < 1 || v > 3600 * 1000)
		return false;
	*out = v;
	return true;
}

/* The URL with any password ("user:secret@", ":secret@") spelt "***". */
static char *shown_url(const char *url)
{
	const char *scheme_end = strstr(url, "://");
	const char *auth = scheme_end ? scheme_end + 3 : url;
	const char *at = strchr(auth, '@');
	const char *slash = strchr(auth, '/');
	if (!at || (slash && slash < at))
		return strdup(url);
	const char *colon = memchr(auth, ':', (size_t)(at - auth));
	const char *secret = colon ? colon + 1 : auth;
	size_t head = (size_t)(secret - url);
	char *out = malloc(head + 4 + strlen(at) + 1);
	if (out)
		sprintf(out, "%.*s***%s", (int)head, url, at);
	return out;
}

/* The first control character in s (CR, LF, TAB, DEL...), NULL for none:
 * in a URL or a header it would end a protocol line early. */
static const char *control_char(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return s;
	return NULL;
}

/* s with its control characters spelt '?', for one-line messages. */
static void hide_controls(char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

/* What is wrong with a value of attr (NULL: nothing): every value is
 * bounded and free of control characters. */
static const char *value_defect(const char *value, char *buf, size_t size)
{
	const char *c = control_char(value);
	if (c) {
		snprintf(buf, size, "holds a control character (0x%02x)", (unsigned char)*c);
		return buf;
	}
	if (strlen(value) > REMOTE_VALUE_MAX) {
		snprintf(buf, size, "is longer than %d bytes", REMOTE_VALUE_MAX);
		return buf;
	}
	return NULL;
}

static char *dup_range(const char *from, const char *to)
{
	return strndup(from, (size_t)(to - from));
}

/* redis://[[user:]password@]host[:port][/db] */
static int parse_redis_tcp(remote *r, const char *rest, const char *origin)
{
	const char *at = strrchr(rest, '@');
	const char *host = rest;
	if (at) {
		const char *colon = memchr(rest, ':', (size_t)(at - rest));
		if (colon) {
			if (colon > rest)
				r->user = dup_range(rest, colon);
			r->password = dup_range(colon + 1, at);
		} else {
			r->password = dup_range(rest, at);
		}
		host = at + 1;
	}
	const char *end = host + strcspn(host, "/");
	const char *colon = memchr(host, ':', (size_t)(end - host));
	r->host = dup_range(host, colon ? colon : end);
	r->port = 6379;
	if (colon) {
		char *stop;
		long port = strtol(colon + 1, &stop, 10);
		if (stop != end || port < 1 || port > 65535)
			return gpucc_error_set(GPUCC_EINVALID, "%s: remote '%s': bad port", origin, r->shown);
		r->port = (int)port;
	}
	if (*end == '/' && end[1]) {
		char *stop;
		long db = strtol(end + 1, &stop, 10);
		if (*stop || db < 0 || db > 1000000)
			return gpucc_error_set(GPUCC_EINVALID, "%s: remote '%s': bad database number",
			                       origin, r->shown);
		r->db = (int)db;
	}
	if (!r->host || !*r->host)
		return gpucc_error_set(GPUCC_EINVALID, "%s: remote '%s': no host", origin, r->shown);
	return 0;
}

static int parse_attribute(remote *r, char *attr, const char *origin)
{
	char *eq = strchr(attr, '=');
	const char *value = eq ? eq + 1 : NULL;
	if (eq)
		*eq = '\0';
	bool ok = true;
	char value_fault[64];
	const char *bad_name = control_char(attr);
	if (bad_name)
		return gpucc_error_set(GPUCC_EINVALID, "%s: remote '%s': an attribute's name holds a "
		                       "control character (0x%02x)", origin, r->shown,
		                       (unsigned char)*bad_name);
	if (value && value_defect(value, value_fault, sizeof value_fault))
		return gpucc_error_set(GPUCC_EINVALID, "%s: remote '%s': the value of '%s' %s", origin,
		                       r->shown, attr, value_fault);
	if (strcmp(attr, "read-only") == 0 && !value) {
		r->read_only = true;
	} else if (strcmp(attr, "sign") == 0 && value) {
		int rc = gpucc_remote_load_signing_key(r, value);
		if (rc)
			return gpucc_error_set(rc, "%s: remote '%s': %s", origin, r->shown,
			                       gpucc_error_last()->message);
	} else if (strcmp(attr, "trust") == 0 && value) {
		int rc = gpucc_remote_load_trusted_keys(r, value);
		if (rc)
			return gpucc_error_set(rc, "%s: remote '%s': %s", origin, r->shown,
			                       gpucc_error_last()->message);
	} else if (strcmp(attr, "connect-timeout") == 0 && value) {
		ok = parse_ms(&r->connect_timeout_ms, value);
	} else if (strcmp(attr, "timeout") == 0 && value) {
		ok = parse_ms(&r->timeout_ms, value);
	} else if (strcmp(attr, "total-timeout") == 0 && value) {
		ok = parse_ms(&r->total_timeout_ms, value);
	} else if (strcmp(attr, "layout") == 0 && value && r->backend == &gpucc_remote_http_backend) {
		if (strcmp(value, "flat") == 0)
			r->layout = REMOTE_LAYOUT_FLAT;
		else if (strcmp(value, "subdirs") == 0)
			r->layout = REMOTE_LAYOUT_SUBDIRS;
		else if (strcmp(value, "bazel") == 0)
			r->layout = REMOTE_LAYOUT_BAZEL;
		else
			ok = false;
	} else if ((strcmp(attr, "endpoint") == 0 || strcmp(attr, "region") == 0) && value && r->s3) {
		char **slot = attr[0] == 'e' ? &r->endpoint : &r->region;
		free(*slot);
		*slot = strdup(value);
		ok = *value && (attr[0] == 'r' || strncmp(value, "http://", 7) == 0 ||
		                strncmp(value, "https://", 8) == 0) &&
		     (attr[0] == 'r' || !strpbrk(value, "?#"));
	} else if (strcmp(attr, "bearer") == 0 && value && r->backend == &gpucc_remote_http_backend) {
		free(r->bearer);
		r->bearer = strdup(value);
	} else if (strcmp(attr, "header") == 0 && value && strchr(value, ':') &&
	           r->backend == &gpucc_remote_http_backend) {
		char **grown = realloc(r->headers, (r->header_count + 1) * sizeof *grown);
		if (!grown || !(grown[r->header_count] = strdup(value))) {
			if (grown)
				r->headers = grown;
			return gpucc_error_oom();
		}
		r->headers = grown;
		r->header_count++;
	} else if (strcmp(attr, "cacert") == 0 && value && r->backend == &gpucc_remote_http_backend) {
		/* Read now, so that a wrong path is the user's error, not a TLS
		 * failure at the first request. */
		struct stat st;
		const char *defect = !*value                   ? "empty path"
		                     : access(value, R_OK) != 0 ? strerror(errno)
		                     : stat(value, &st) != 0    ? strerror(errno)
		                     : !S_ISREG(st.st_mode)     ? "not a regular file"
		                                                : NULL;
		if (defect)
			return gpucc_error_set(GPUCC_EINVALID, "%s: remote '%s': cacert file '%s': %s",
			                       origin, r->shown, value, defect);
		free(r->cacert);
		if (!(r->cacert = strdup(value)))
			return gpucc_error_oom();
	} else if ((strcmp(attr, "password") == 0 || strcmp(attr, "user") == 0) && value &&
	           r->backend == &gpucc_remote_redis_backend) {
		char **slot = attr[0] == 'p' ? &r->password : &r->user;
		free(*slot);
		*slot = strdup(value);
	} else {
		return gpucc_error_set(GPUCC_EINVALID,
		                       "%s: remote '%s': unknown attribute '%s%s%s' (known: read-only, "
		                       "connect-timeout=MS, timeout=MS, total-timeout=MS, sign=KEY-FILE, "
		                       "trust=KEYS-FILE%s)",
		                       origin, r->shown, attr, value ? "=" : "", value ? value : "",
		                       r->s3 ? ", layout=flat|subdirs|bazel, endpoint=URL, region=NAME, "
		                               "cacert=PATH"
		                       : r->backend == &gpucc_remote_http_backend
		                           ? ", layout=flat|subdirs|bazel, bearer=TOKEN, header=NAME:VALUE, "
		                             "cacert=PATH"
		                           : ", user=NAME, password=SECRET");
	}
	if (!ok)
		return gpucc_error_set(GPUCC_EINVALID, "%s: remote '%s': bad value '%s' for %s", origin,
		                       r->shown, value, attr);
	return 0;
}

/* One "URL|attr|attr=value" word into *out. */
int parse_remote(remote **out, char *word, const char *origin)
{
	*out = NULL;
	remote *r = calloc(1, sizeof *r);
	if (!r)
		return gpucc_error_oom();
	char *attrs = strchr(word, '|');
	if (attrs)
		*attrs++ = '\0';
	r->url = strdup(word);
	r->shown = shown_url(word);
	r->connect_timeout_ms = 0; /* none given: a default below */
	r->timeout_ms = DEFAULT_TIMEOUT_MS;
	r->total_timeout_ms = DEFAULT_TOTAL_TIMEOUT_MS;
	if (!r->url || !r->shown) {
		remote_free(r);
		return gpucc_error_oom();
	}
	hide_controls(r->shown);
	int rc = 0;
	/* A URL goes into request lines and object names as it is: a control
	 * character would end a line early, a query or fragment would not
	 * name objects under it; a password is spelt in the URL, not escaped,
	 * so it cannot hold them either (Redis takes password=). */
	const char *control = control_char(word), *query = strpbrk(word, "?#");
	if (control)
		rc = gpucc_error_set(GPUCC_EINVALID, "%s: remote '%s': a control character (0x%02x) in "
		                     "the URL", origin, r->shown, (unsigned char)*control);
	else if (strlen(word) > REMOTE_URL_MAX)
		rc = gpucc_error_set(GPUCC_EINVALID, "%s: remote '%.64s...': the URL is longer than %d "
		                     "bytes", origin, r->shown, REMOTE_URL_MAX);
	else if (query && strncmp(word, "redis+unix:", 11) != 0)
		rc = gpucc_error_set(GPUCC_EINVALID, "%s: remote '%s': '%c' in the URL (a remote's URL "
		                     "has no query or fragment)", origin, r->shown, *query);
	if (rc != 0) {
		remote_free(r);
		return rc;
	}
	if (strncmp(word, "http://", 7) == 0 || strncmp(word, "https://", 8) == 0) {
		r->backend = &gpucc_remote_http_backend;
		const char *host = strstr(word, "://") + 3;
		if (!*host || *host == '/')
			rc = gpucc_error_set(GPUCC_EINVALID, "%s: remote '%s': no host", origin, r->shown);
		/* No trailing slash: object names are appended after one. */
		for (size_t n = strlen(r->url); n > 0 && r->url[n - 1] == '/'; n--)
			r->url[n - 1] = '\0';
	} else if (strncmp(word, "redis://", 8) == 0) {
		r->backend = &gpucc_remote_redis_backend;
		rc = parse_redis_tcp(r, word + 8, origin);
	} else if (strncmp(word, "redis+unix:", 11) == 0) {
		r->backend = &gpucc_remote_redis_backend;
		const char *path = word + 11;
		if (strncmp(path, "//", 2) == 0)
			path += 2;
		if (*path != '/')
			rc = gpucc_error_set(GPUCC_EINVALID,
			                     "%s: remote '%s': a Unix socket needs an absolute path",
			                     origin, r->shown);
		else
			r->unix_path = strdup(path);
#ifdef GPUCC_TEST_HOOKS
	} else if (gpucc_remote_test_backend && strncmp(word, "test:", 5) == 0) {
		r->backend = gpucc_remote_test_backend;
#endif
	} else if (strncmp(word, "s3://", 5) == 0) {
		r->backend = &gpucc_remote_http_backend;
		r->s3 = true;
		r->s3_bucket_path = strdup(word + 5);
		for (size_t n = r->s3_bucket_path ? strlen(r->s3_bucket_path) : 0;
		     n > 0 && r->s3_bucket_path[n - 1] == '/'; n--)
			r->s3_bucket_path[n - 1] = '\0';
		if (!r->s3_bucket_path || !*r->s3_bucket_path || *r->s3_bucket_path == '/')
			rc = gpucc_error_set(GPUCC_EINVALID, "%s: remote '%s': no bucket", origin, r->shown);
	} else {
		rc = gpucc_error_set(GPUCC_EINVALID,
		                     "%s: remote '%s': unknown scheme (known: http://, https://, "
		                     "redis://, redis+unix:)", origin, r->shown);
	}
	while (rc == 0 && attrs) {
		char *attr = attrs;
		attrs = strchr(attrs, '|');
		if (attrs)
			*attrs++ = '\0';
		if (*attr)
			rc = parse_attribute(r, attr, origin);
	}
	if (rc == 0 && r->s3) {
		/* Path-style: ENDPOINT/BUCKET/PREFIX (curl 7.88 signs no virtual
		 * host or query), the endpoint by default AWS's for the region. */
		if (!r->region)
			r->region = strdup("us-east-1");
		char *url = NULL;
		if (r->region && (r->endpoint
		                      ? asprintf(&url, "%s/%s", r->endpoint, r->s3_bucket_path)
		                      : asprintf(&url, "https://s3.%s.amazonaws.com/%s", r->region,
		                                 r->s3_bucket_path)) >= 0) {
			free(r->url);
			r->url = url;
			for (size_t n = strlen(r->url); n > 0 && r->url[n - 1] == '/'; n--)
				r->url[n - 1] = '\0';
		} else {
			rc = gpucc_error_oom();
		}
	}
	if (r->connect_timeout_ms == 0)
		r->connect_timeout_ms = strncmp(r->url, "https://", 8) == 0
		                            ? DEFAULT_TLS_CONNECT_TIMEOUT_MS
		                            : DEFAULT_CONNECT_TIMEOUT_MS;
	if (rc != 0) {
		remote_free(r);
		return rc;
	}
	*out = r;
	return 0;
}
