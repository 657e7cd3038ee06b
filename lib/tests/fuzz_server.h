/*
 * lib/tests/fuzz_server.h -- a loopback TCP server for the fuzz targets of
 * network clients (fuzz_http_response.c, fuzz_redis_reply.c): each
 * connection it accepts gets the current input as the server's whole
 * answer, sent once the request has arrived, then the connection's end.
 */
#ifndef GPUCC_TESTS_FUZZ_SERVER_H
#define GPUCC_TESTS_FUZZ_SERVER_H

#include <stddef.h>
#include <stdint.h>

typedef enum fuzz_request_end {
	FUZZ_REQUEST_HTTP,  /* a request ends at its head's empty line */
	FUZZ_REQUEST_FIRST  /* the first bytes that arrive are the request */
} fuzz_request_end;

/* Start the server (once per process); its port, or -1. */
int fuzz_server_port(fuzz_request_end end);

/* What the next connections are answered (the bytes are copied). */
void fuzz_server_answer(const uint8_t *data, size_t size);

#endif
