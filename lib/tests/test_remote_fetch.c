/*
 * lib/tests/test_remote_fetch.c -- lib/remote/remote.c's fetching and uploading,
 * over a backend of the test's own (the test_hooks build's "test:"
 * remotes): a fetch of many keys asks the backend for them, and a push
 * hands it their entries, in pieces of at most REMOTE_FETCH_PIECE keys,
 * each key once, so that the objects held in memory at once do not grow
 * with the number of keys.
 */
#include "check.h"

#include "remote_impl.h"

#include <gpucc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define KEYS 50

#ifdef GPUCC_TEST_HOOKS
static size_t calls, most, asked[KEYS], put_calls, put_most, put[KEYS];

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

/* Each entry handed over: stored, if its bytes are the file's. */
static void fake_put(remote *r, const gpucc_digest *keys, const remote_blob *blobs, size_t count,
                     remote_outcome *out)
{
	(void)r;
	put_calls++;
	if (count > put_most)
		put_most = count;
	for (size_t i = 0; i < count; i++) {
		bool ours = keys[i].bytes[0] < KEYS && blobs[i].size == 1 &&
		            blobs[i].data[0] == keys[i].bytes[0];
		if (ours)
			put[keys[i].bytes[0]]++;
		out[i] = ours ? REMOTE_OK : REMOTE_ERROR;
	}
}

static const remote_backend fake = {
	.name = "test",
	.connect = fake_connect,
	.get = fake_get,
	.put = fake_put,
};
#endif

static void test_fetch_in_pieces(void)
{
	CHECK_NEEDS_HOOKS();
#ifdef GPUCC_TEST_HOOKS
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
#endif
}

/* Entries "held" by a cache: files of one byte (the key's index) where
 * the cache keeps its entries; a push reads them as they are. */
static void test_push_in_pieces(void)
{
	CHECK_NEEDS_HOOKS();
#ifdef GPUCC_TEST_HOOKS
	gpucc_remote_test_backend = &fake;
	gpucc_cache *c = NULL;
	CHECK_INT(gpucc_cache_open(&c, path_in_dir("pushed"), 0), 0);
	CHECK_INT(gpucc_cache_add_remotes(c, "test:one", "test"), 0);
	gpucc_digest keys[KEYS];
	memset(keys, 0, sizeof keys);
	for (size_t i = 0; i < KEYS; i++) {
		keys[i].bytes[0] = (unsigned char)i;
		keys[i].bytes[31] = 0x5a;
		char hex[GPUCC_DIGEST_HEX_SIZE], path[512];
		gpucc_digest_to_hex(hex, &keys[i]);
		snprintf(path, sizeof path, "%s/v1/%.2s", path_in_dir("pushed"), hex);
		mkdir(path, 0755);
		snprintf(path, sizeof path, "%s/v1/%.2s/%s.gpucc", path_in_dir("pushed"), hex, hex);
		FILE *f = fopen(path, "wb");
		CHECK(f != NULL);
		if (f) {
			fputc((int)i, f);
			fclose(f);
		}
	}
	gpucc_remote_push_result res;
	CHECK_INT(gpucc_cache_remote_push(c, keys, KEYS, false, &res), 0);
	CHECK_INT(res.uploaded, KEYS);
	CHECK(put_most >= 1 && put_most <= REMOTE_FETCH_PIECE);
	CHECK_INT(put_calls, (KEYS + REMOTE_FETCH_PIECE - 1) / REMOTE_FETCH_PIECE);
	for (size_t i = 0; i < KEYS; i++)
		CHECK_INT(put[i], 1);
	gpucc_cache_free(c);
	gpucc_remote_test_backend = NULL;
#endif
}

int main(void)
{
	if (check_dir_create("remote-fetch") != 0)
		return 1;
	RUN(test_fetch_in_pieces);
	RUN(test_push_in_pieces);
	check_dir_remove();
	return CHECK_DONE();
}
