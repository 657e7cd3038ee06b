/*
 * lib/tests/test_remote_bazel.c -- layout=bazel's split of an entry file
 * into a record and payloads, and their join (lib/remote/remote_bazel.c,
 * formats/remote.md "The bazel layout"): a round trip byte for byte, and
 * records cut short, bit-flipped or forged, and payloads that are not their
 * names', each refused or joined into other bytes, never read out of
 * bounds (the sanitizer build runs this too).
 */
#include "check.h"

#include "remote_impl.h"
#include "ustar.h"

#include <stdlib.h>
#include <string.h>

/* A plain archive: a format member, a manifest, two payloads, the end
 * marker, and a 112-byte stand-in for a signature trailer. */
static unsigned char entry[8192];
static size_t entry_size;
static const char payload_a[] = "payload A: PTX text of some length";
static const char payload_b[] = "payload B";

static void add_member(const char *name, const void *data, size_t size)
{
	CHECK(gpucc_ustar_format(entry + entry_size, name, size, 0));
	entry_size += GPUCC_USTAR_BLOCK;
	memcpy(entry + entry_size, data, size);
	entry_size += (size_t)gpucc_ustar_padded(size);
}

static void add_payload(const char *data)
{
	gpucc_digest d;
	char hex[GPUCC_DIGEST_HEX_SIZE], name[100];
	gpucc_digest_buffer(&d, data, strlen(data));
	gpucc_digest_to_hex(hex, &d);
	snprintf(name, sizeof name, "payloads/%s.ptx", hex);
	add_member(name, data, strlen(data));
}

static void make_entry(void)
{
	memset(entry, 0, sizeof entry);
	entry_size = 0;
	add_member("GPUCC-IMAGE", "gpucc-image 1\n", 14);
	add_member("manifest.json", "{\"entries\": []}\n", 16);
	add_payload(payload_a);
	add_payload(payload_b);
	entry_size += 2 * GPUCC_USTAR_BLOCK;
	memset(entry + entry_size, 0x5a, 112);
	entry_size += 112;
}

/* The payloads of b as a fetch gets them, from the entry's bytes. */
static remote_blob *payloads_of(const remote_bazel *b)
{
	remote_blob *p = calloc(b->count ? b->count : 1, sizeof *p);
	for (size_t i = 0; p && i < b->count; i++) {
		p[i].data = entry + b->spans[i].offset;
		p[i].size = (size_t)b->spans[i].size;
	}
	return p;
}

static void test_round_trip(void)
{
	make_entry();
	remote_blob object = {.data = entry, .size = entry_size, .outcome = REMOTE_OK};
	remote_bazel split, parsed;
	CHECK_INT(gpucc_remote_bazel_split(&split, &object), 0);
	CHECK_INT(split.count, 2);
	CHECK(memmem(split.record.data, split.record.size, payload_a, strlen(payload_a)) == NULL);
	CHECK(memmem(split.record.data, split.record.size, payload_b, strlen(payload_b)) == NULL);
	const char *why = NULL;
	CHECK_INT(gpucc_remote_bazel_parse(&parsed, &split.record, &why), 0);
	CHECK_INT(parsed.count, 2);
	remote_blob *p = payloads_of(&parsed);
	remote_blob joined = {0};
	CHECK_INT(gpucc_remote_bazel_join(&joined, &parsed, p, &why), 0);
	CHECK(joined.size == entry_size && memcmp(joined.data, entry, entry_size) == 0);
	free(joined.data);
	/* A payload that is not its name's: refused. */
	char wrong[sizeof payload_b];
	memcpy(wrong, payload_b, sizeof wrong);
	wrong[0] ^= 1;
	p[1].data = (unsigned char *)wrong;
	CHECK(gpucc_remote_bazel_join(&joined, &parsed, p, &why) != 0);
	p[1].size--;
	CHECK(gpucc_remote_bazel_join(&joined, &parsed, p, &why) != 0);
	free(p);
	gpucc_remote_bazel_free(&parsed);
	gpucc_remote_bazel_free(&split);
}

/* Parse and join a damaged record: whatever comes out must not be the
 * entry file, unless the damage left the record as it was. */
static void damaged(const unsigned char *record, size_t size, bool intact)
{
	remote_blob r = {.data = (unsigned char *)record, .size = size, .outcome = REMOTE_OK};
	remote_bazel parsed;
	const char *why = NULL;
	if (gpucc_remote_bazel_parse(&parsed, &r, &why) != 0) {
		CHECK(why != NULL);
		CHECK(!intact);
		return;
	}
	remote_blob *p = payloads_of(&parsed);
	bool fits = p != NULL;
	for (size_t i = 0; fits && i < parsed.count; i++)
		fits = parsed.spans[i].offset + parsed.spans[i].size <= entry_size;
	remote_blob joined = {0};
	if (fits && gpucc_remote_bazel_join(&joined, &parsed, p, &why) == 0) {
		bool same = joined.size == entry_size && memcmp(joined.data, entry, entry_size) == 0;
		CHECK(same == intact);
		free(joined.data);
	} else {
		CHECK(!intact);
	}
	free(p);
	gpucc_remote_bazel_free(&parsed);
}

static void test_damaged_records(void)
{
	make_entry();
	remote_blob object = {.data = entry, .size = entry_size, .outcome = REMOTE_OK};
	remote_bazel split;
	CHECK_INT(gpucc_remote_bazel_split(&split, &object), 0);
	size_t n = split.record.size;
	unsigned char *copy = malloc(n);
	/* Cut short at every length, each an exact-size copy. */
	for (size_t len = 0; copy && len < n; len++) {
		unsigned char *cut = malloc(len ? len : 1);
		memcpy(cut, split.record.data, len);
		damaged(cut, len, false);
		free(cut);
	}
	/* Each bit of the header's lines flipped. */
	/* The header: the magic, the count and one line per payload. */
	size_t head = 0;
	for (size_t lines = 0; lines < 2 + split.count && head < n; head++)
		lines += split.record.data[head] == '\n';
	for (size_t i = 0; copy && i < head + 64 && i < n; i++) {
		for (int bit = 0; bit < 8; bit++) {
			memcpy(copy, split.record.data, n);
			copy[i] ^= (unsigned char)(1 << bit);
			/* Every flip changes what the record says (digests are
			 * lowercase only, numbers have one spelling). */
			damaged(copy, n, false);
		}
	}
	free(copy);
	gpucc_remote_bazel_free(&split);
}

static void forged(const char *text)
{
	remote_blob r = {.data = (unsigned char *)text, .size = strlen(text), .outcome = REMOTE_OK};
	remote_bazel parsed;
	const char *why = NULL;
	CHECK(gpucc_remote_bazel_parse(&parsed, &r, &why) != 0);
}

static void test_forged_records(void)
{
	const char *hex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
	char text[512];
	forged("gpucc-remote-record 2\n0\n");
	forged("gpucc-remote-record 1\n-1\n");
	forged("gpucc-remote-record 1\n99999999\n");
	snprintf(text, sizeof text, "gpucc-remote-record 1\n1\n10 0 %s\nskeleton", hex);
	forged(text); /* an empty span */
	snprintf(text, sizeof text, "gpucc-remote-record 1\n1\n100 5 %s\nskeleton", hex);
	forged(text); /* past the skeleton */
	snprintf(text, sizeof text, "gpucc-remote-record 1\n2\n4 2 %s\n2 2 %s\nskeleton", hex, hex);
	forged(text); /* out of order */
	snprintf(text, sizeof text, "gpucc-remote-record 1\n2\n2 4 %s\n4 2 %s\nskeleton", hex, hex);
	forged(text); /* overlapping */
	snprintf(text, sizeof text, "gpucc-remote-record 1\n1\n2 2 %.63s\nskeleton", hex);
	forged(text); /* a short digest */
	snprintf(text, sizeof text, "gpucc-remote-record 1\n1\n+2 2 %s\nskeleton", hex);
	forged(text);
	/* At most REMOTE_BAZEL_MAX_PAYLOADS payloads, each a request. */
	for (size_t n = REMOTE_BAZEL_MAX_PAYLOADS; n <= REMOTE_BAZEL_MAX_PAYLOADS + 1; n++) {
		char many[8192];
		int at = snprintf(many, sizeof many, "gpucc-remote-record 1\n%zu\n", n);
		for (size_t i = 0; i < n; i++)
			at += snprintf(many + at, sizeof many - (size_t)at, "%zu 1 %s\n", i, hex);
		snprintf(many + at, sizeof many - (size_t)at, "x");
		remote_blob rec = {.data = (unsigned char *)many, .size = strlen(many),
		                   .outcome = REMOTE_OK};
		remote_bazel p;
		const char *w = NULL;
		int rc = gpucc_remote_bazel_parse(&p, &rec, &w);
		CHECK_INT(rc, n <= REMOTE_BAZEL_MAX_PAYLOADS ? 0 : -1);
		if (rc == 0) {
			CHECK_INT(p.count, n);
			gpucc_remote_bazel_free(&p);
		}
	}
	/* The smallest valid one: no payloads, the skeleton is the file. */
	remote_blob r = {.data = (unsigned char *)"gpucc-remote-record 1\n0\nxyz", .size = 27, .outcome = REMOTE_OK};
	remote_bazel parsed;
	const char *why = NULL;
	CHECK_INT(gpucc_remote_bazel_parse(&parsed, &r, &why), 0);
	CHECK_INT(parsed.record.size, 3);
	gpucc_remote_bazel_free(&parsed);
}

int main(void)
{
	RUN(test_round_trip);
	RUN(test_damaged_records);
	RUN(test_forged_records);
	return CHECK_DONE();
}
