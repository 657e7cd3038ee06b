/*
 * lib/tests/test_remote_fetch.c -- lib/remote.c's fetching, over a backend
 * of the test's own (the test_hooks build's "test:" remotes): a fetch of
 * many keys asks the backend for them in pieces of at most
 * REMOTE_FETCH_PIECE keys, each key once, so that the objects a fetch holds
 * in memory at once do not grow with the number of keys.
 */
#include "check.h"

#include "remote_internal.h"

#include <gpucc.h>

#include <stdlib.h>
#include <string.h>

#define KEYS 50

static size_t calls, most, asked[KEYS];

static int fake_connect(remote *r)
{
	(void)r;
	return 0;
}

/* Each key asked: its first byte is its index; an object for none. */
static void fake_get(remote *r, const gpucc_digest *keys, size_t count, remote_blob *out)
{
	(void)r;
	calls++;
	if (count > most)
		most = count;
	for (size_t i = 0; i < count; i++) {
		if (keys[i].bytes[0] < KEYS)
			asked[keys[i].bytes[0]]++;
		out[i].outcome = REMOTE_MISS;
	}
}

static const remote_backend fake = {
	.name = "test",
	.connect = fake_connect,
	.get = fake_get,
};

static void test_fetch_in_pieces(void)
{
	gpucc_remote_test_backend = &fake;
	gpucc_cache *c = NULL;
	CHECK_INT(gpucc_cache_open(&c, path_in_dir("cache"), 0), 0);
	CHECK_INT(gpucc_cache_add_remotes(c, "test:one", "test"), 0);
	gpucc_digest keys[KEYS];
	bool found[KEYS];
	memset(keys, 0, sizeof keys);
	for (size_t i = 0; i < KEYS; i++) {
		keys[i].bytes[0] = (unsigned char)i;
		keys[i].bytes[31] = 0xa5;
	}
	CHECK_INT(gpucc_cache_remote_fetch(c, keys, KEYS, found), 0);
	CHECK(most >= 1 && most <= REMOTE_FETCH_PIECE);
	CHECK_INT(calls, (KEYS + REMOTE_FETCH_PIECE - 1) / REMOTE_FETCH_PIECE);
	for (size_t i = 0; i < KEYS; i++) {
		CHECK_INT(asked[i], 1);
		CHECK(!found[i]);
	}
	gpucc_cache_free(c);
	gpucc_remote_test_backend = NULL;
}

int main(void)
{
	if (check_dir_create("remote-fetch") != 0)
		return 1;
	RUN(test_fetch_in_pieces);
	check_dir_remove();
	return CHECK_DONE();
}
