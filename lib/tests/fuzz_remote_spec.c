/*
 * lib/tests/fuzz_remote_spec.c -- fuzz target: remotes as users spell them
 * (formats/remote.md: --remote, $GPUCC_REMOTE, a cache config's "remote ="
 * lines), parsed by gpucc_cache_add_remotes (lib/remote/remote.c): URLs
 * separated by blanks, each with its attributes.  The input, up to its
 * first NUL byte, is the spelling.  An accepted one adds one remote per
 * word, connecting to none (the client libraries are loaded on first use);
 * a refusal is GPUCC_EINVALID with a message and adds none.
 */
#include "fuzz.h"

#include <gpucc.h>
#include <gpucc/remote.h>

#include <stdlib.h>
#include <string.h>

static size_t words(const char *text)
{
	size_t n = 0;
	for (const char *p = text; *p;) {
		p += strspn(p, " \t\n");
		if (!*p)
			break;
		n++;
		p += strcspn(p, " \t\n");
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static gpucc_cache *c;
	if (!c) {
		char dir[4096];
		snprintf(dir, sizeof dir, "%s/cache", fuzz_scratch_dir());
		if (gpucc_cache_open(&c, dir, 0) != 0)
			fuzz_fail("the cache does not open");
	}
	char *text = fuzz_string(data, size);
	if (!text)
		return 0;
	size_t before = gpucc_cache_remote_count(c);
	int rc = gpucc_cache_add_remotes(c, text, "--remote");
	size_t added = gpucc_cache_remote_count(c) - before;
	if (rc == 0 && added != words(text))
		fuzz_fail("an accepted spelling added another number of remotes than its words");
	if (rc != 0 && added != 0)
		fuzz_fail("a refused spelling added remotes");
	if (rc != 0 && (rc != GPUCC_EINVALID || !*gpucc_error_last()->message))
		fuzz_fail("a refusal without GPUCC_EINVALID and a message");
	free(text);
	/* The remotes of one input only: a fresh handle when some were added. */
	if (added) {
		char dir[4096];
		snprintf(dir, sizeof dir, "%s", gpucc_cache_dir(c));
		gpucc_cache_free(c);
		if (gpucc_cache_open(&c, dir, 0) != 0)
			fuzz_fail("the cache does not open again");
	}
	return 0;
}

void fuzz_seeds(void (*add)(const void *data, size_t size))
{
	static const char *seeds[] = {
		"http://127.0.0.1:8080/cache",
		"https://cache.example/gpucc|read-only|layout=subdirs redis://127.0.0.1:6379/2",
		"s3://bucket/prefix|region=eu-west-1|endpoint=http://127.0.0.1:9000",
		"http://h/c|layout=bazel|timeout=250 \t redis+unix:///run/redis.sock",
		"ftp://nope", "http://h/c|bogus=1", "http://h/c|timeout=x", "",
	};
	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
		add(seeds[i], strlen(seeds[i]));
}
