/*
 * lib/tests/fuzz_remote_bazel.c -- fuzz target: layout=bazel's records
 * (formats/remote.md, "The bazel layout").  The input is parsed as a
 * fetched record: an accepted one lists at most REMOTE_BAZEL_MAX_PAYLOADS
 * spans, in order, each fitting the entry file it rebuilds, and joining it
 * with payloads of the wrong bytes is refused.  The input is also split as
 * an entry file: when that succeeds, the record it gives parses, and joins
 * with the payloads cut from the input back into the input byte for byte.
 */
#include "fuzz.h"

#include "remote_impl.h"

#include <stdlib.h>
#include <string.h>

static void check_record(const uint8_t *data, size_t size)
{
	remote_blob rec = {.data = (unsigned char *)data, .size = size, .outcome = REMOTE_OK};
	remote_bazel b;
	const char *why = NULL;
	if (gpucc_remote_bazel_parse(&b, &rec, &why) != 0) {
		if (!why)
			fuzz_fail("a refused record without a reason");
		return;
	}
	if (b.count > REMOTE_BAZEL_MAX_PAYLOADS)
		fuzz_fail("a record listing more payloads than the maximum");
	uint64_t total = b.record.size, next = 0;
	for (size_t i = 0; i < b.count; i++)
		total += b.spans[i].size;
	for (size_t i = 0; i < b.count; i++) {
		if (b.spans[i].offset < next || b.spans[i].size == 0 ||
		    b.spans[i].offset + b.spans[i].size > total)
			fuzz_fail("an accepted record's spans are out of order or past the file");
		next = b.spans[i].offset + b.spans[i].size;
	}
	/* Payloads of the right sizes, all zeros: a span whose digest is not
	 * that of its zeros must be refused. */
	remote_blob *p = calloc(b.count ? b.count : 1, sizeof *p);
	bool ok = p != NULL;
	for (size_t i = 0; ok && i < b.count; i++) {
		p[i].size = (size_t)b.spans[i].size;
		ok = (p[i].data = calloc(p[i].size ? p[i].size : 1, 1)) != NULL;
	}
	if (ok) {
		remote_blob out = {0};
		bool all_zero_digests = true;
		for (size_t i = 0; i < b.count; i++) {
			gpucc_digest d;
			gpucc_digest_buffer(&d, p[i].data, p[i].size);
			all_zero_digests &= gpucc_digest_compare(&d, &b.spans[i].digest) == 0;
		}
		int rc = gpucc_remote_bazel_join(&out, &b, p, &why);
		if (rc == 0 && !all_zero_digests)
			fuzz_fail("a join took payloads whose SHA-256 is not their span's");
		if (rc == 0 && out.size != total)
			fuzz_fail("a join's size is not the record's and payloads' together");
		free(out.data);
	}
	for (size_t i = 0; p && i < b.count; i++)
		free(p[i].data);
	free(p);
	gpucc_remote_bazel_free(&b);
}

static void check_split(const uint8_t *data, size_t size)
{
	remote_blob object = {.data = (unsigned char *)data, .size = size, .outcome = REMOTE_OK};
	remote_bazel split;
	if (gpucc_remote_bazel_split(&split, &object) != 0)
		return; /* no memory, or more payload members than a record may list */
	remote_bazel parsed;
	const char *why = NULL;
	if (gpucc_remote_bazel_parse(&parsed, &split.record, &why) != 0)
		fuzz_fail("a record split from an entry file does not parse");
	if (parsed.count != split.count)
		fuzz_fail("a split record parses to another number of payloads");
	remote_blob *p = calloc(split.count ? split.count : 1, sizeof *p);
	if (p) {
		for (size_t i = 0; i < split.count; i++) {
			p[i].data = (unsigned char *)data + split.spans[i].offset;
			p[i].size = (size_t)split.spans[i].size;
		}
		remote_blob out = {0};
		if (gpucc_remote_bazel_join(&out, &parsed, p, &why) != 0)
			fuzz_fail("a split entry file does not join again");
		if (out.size != size || (size && memcmp(out.data, data, size) != 0))
			fuzz_fail("a split entry file joins into other bytes");
		free(out.data);
		free(p);
	}
	gpucc_remote_bazel_free(&parsed);
	gpucc_remote_bazel_free(&split);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_record(data, size);
	check_split(data, size);
	return 0;
}

void fuzz_seeds(void (*add)(const void *data, size_t size))
{
	static const char *seeds[] = {
		"gpucc-remote-record 1\n0\nxyz",
		"gpucc-remote-record 1\n1\n2 2 "
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\nskeleton",
		"gpucc-remote-record 1\n2\n0 1 "
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n4 3 "
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\nab",
	};
	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
		add(seeds[i], strlen(seeds[i]));
	/* An entry file: a ustar archive with one payload member. */
	static unsigned char tar[2048 + 512];
	memset(tar, 0, sizeof tar);
	memcpy(tar, "payloads/abc.ptx", 16);
	memcpy(tar + 100, "0000644", 7);
	memcpy(tar + 108, "0000000", 7);
	memcpy(tar + 116, "0000000", 7);
	memcpy(tar + 124, "00000000005", 11);
	memcpy(tar + 136, "00000000000", 11);
	tar[156] = '0';
	memcpy(tar + 257, "ustar", 6);
	memcpy(tar + 263, "00", 2);
	memset(tar + 148, ' ', 8);
	unsigned sum = 0;
	for (size_t i = 0; i < 512; i++)
		sum += tar[i];
	snprintf((char *)tar + 148, 8, "%06o", sum);
	memcpy(tar + 512, "hello", 5);
	add(tar, sizeof tar);
}
