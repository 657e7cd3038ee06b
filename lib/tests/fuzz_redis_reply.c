/*
 * lib/tests/fuzz_redis_reply.c -- fuzz target: Redis replies to MGET, as
 * the Redis remote (lib/remote/remote_redis.c, through hiredis) reads them.  The
 * input is the whole of what a loopback server answers (fuzz_server.c).
 * Every key ends with one outcome; an object taken has its bytes and is no
 * larger than REMOTE_MAX_OBJECT, and is bytes of the input; a failure says
 * why.  Skipped (the input ignored) where hiredis cannot be loaded.
 */
#include "fuzz.h"
#include "fuzz_server.h"

#include "remote_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEYS 3

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int port = fuzz_server_port(FUZZ_REQUEST_FIRST);
	if (port < 0)
		fuzz_fail("the loopback server did not start");
	fuzz_server_answer(data, size);
	char host[] = "127.0.0.1";
	remote r = {.host = host, .port = port, .connect_timeout_ms = 2000, .timeout_ms = 2000,
	            .total_timeout_ms = 60000};
	r.deadline_ms = gpucc_remote_now_ms() + 4000;
	if (gpucc_remote_redis_backend.connect(&r) != 0) {
		static bool said;
		if (!said)
			fprintf(stderr, "fuzz_redis_reply: skipped: %s\n", r.why);
		said = true;
		return 0;
	}
	gpucc_digest keys[KEYS];
	memset(keys, 0, sizeof keys);
	for (size_t i = 0; i < KEYS; i++)
		keys[i].bytes[0] = (unsigned char)i;
	remote_blob out[KEYS];
	memset(out, 0, sizeof out);
	gpucc_remote_redis_backend.get(&r, keys, KEYS, out);
	bool failed = false;
	for (size_t i = 0; i < KEYS; i++) {
		remote_blob *b = &out[i];
		if (b->outcome != REMOTE_OK && b->outcome != REMOTE_MISS && b->outcome != REMOTE_ERROR &&
		    b->outcome != REMOTE_TIMEOUT)
			fuzz_fail("a key without an outcome MGET can give");
		if (b->outcome == REMOTE_OK) {
			if (!b->data || b->size > REMOTE_MAX_OBJECT)
				fuzz_fail("an object taken without its bytes, or over the limit");
			if (b->size && !memmem(data, size, b->data, b->size))
				fuzz_fail("an object that is not bytes of the reply");
		} else if (b->data) {
			fuzz_fail("a key not taken kept bytes");
		}
		failed |= b->outcome == REMOTE_ERROR || b->outcome == REMOTE_TIMEOUT;
		free(b->data);
	}
	if (failed && !r.why[0])
		fuzz_fail("a failure without a reason");
	gpucc_remote_redis_backend.close(&r);
	return 0;
}

void fuzz_seeds(void (*add)(const void *data, size_t size))
{
	static const char *seeds[] = {
		"*3\r\n$5\r\nhello\r\n$-1\r\n$0\r\n\r\n",
		"*3\r\n$-1\r\n$-1\r\n$-1\r\n",
		"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
		"*2\r\n$1\r\nx\r\n",
		"*3\r\n:1\r\n+OK\r\n*1\r\n$1\r\ny\r\n",
		"*3\r\n$100\r\ncut",
	};
	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
		add(seeds[i], strlen(seeds[i]));
}
