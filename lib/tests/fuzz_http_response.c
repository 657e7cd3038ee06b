/*
 * lib/tests/fuzz_http_response.c -- fuzz target: HTTP responses, as gpucc's
 * own HTTP/1.1 client (lib/remote/http_client.c) reads them.  The input is the
 * whole of what a loopback server answers a GET (fuzz_server.c): status
 * line, headers, a body framed by Content-Length, chunks or the
 * connection's close.  Every request ends (whole, failed with a reason, or
 * timed out), a body kept is no larger than its limit, and a whole
 * response's body framed by a length or the close is bytes of the input.
 */
#include "fuzz.h"
#include "fuzz_server.h"

#include "http_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BODY 4096

static bool keep_going(http_request *req, void *ctx)
{
	(void)req;
	(void)ctx;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int port = fuzz_server_port(FUZZ_REQUEST_HTTP);
	if (port < 0)
		fuzz_fail("the loopback server did not start");
	fuzz_server_answer(data, size);
	char url[64], why[256];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/base", port);
	http_client *c = http_client_open(url, NULL, 0, 2000, 2000, why, sizeof why);
	if (!c)
		fuzz_fail("the client did not open");
	http_request q = {.method = "GET", .keep_body = true, .max_body = MAX_BODY};
	q.target = strdup("/base/object");
	if (!q.target)
		fuzz_fail("out of memory");
	http_client_run(c, &q, 1, keep_going, NULL);
	if (q.state == HTTP_REQUEST_PENDING)
		fuzz_fail("a request did not end");
	if (q.state != HTTP_REQUEST_DONE && !q.error[0])
		fuzz_fail("a failed request without a reason");
	if (q.state == HTTP_REQUEST_DONE) {
		if (q.status < 100 || q.status > 599)
			fuzz_fail("a response with a status out of range");
		if (q.size > MAX_BODY)
			fuzz_fail("a body over its limit was kept");
		bool chunked = memmem(data, size, "hunked", 6) || memmem(data, size, "HUNKED", 6);
		if (q.size && !chunked && !memmem(data, size, q.data, q.size))
			fuzz_fail("a body that is not bytes of the response");
	} else if (q.data) {
		fuzz_fail("a failed request kept a body");
	}
	free(q.data);
	free(q.target);
	http_client_close(c);
	return 0;
}

void fuzz_seeds(void (*add)(const void *data, size_t size))
{
	static const char *seeds[] = {
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nhel\r\n2\r\nlo\r\n0\r\n"
		 "Trailer: y\r\n\r\n"),
		"HTTP/1.0 200 OK\r\n\r\nuntil the close",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\ncut",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
		add(seeds[i], strlen(seeds[i]));
}
