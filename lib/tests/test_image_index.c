/*
 * lib/tests/test_image_index.c -- the index member of images
 * (formats/image.md, "The index"): where writers put it and that their
 * bytes stay deterministic; lookups through it (by key, prefix and kernel)
 * that parse only the entries they find; images without one (as earlier
 * gpucc wrote them) read as before; and hostile indexes -- records out of
 * order, out of range, pointing into another entry, duplicate keys, a
 * fan-out that disagrees, forged keys, payload offsets elsewhere -- which
 * make lookups fail or fall back, never return another entry, and which
 * verify refuses.
 */
#include "check.h"
#include "check_image.h"

#include <gpucc.h>

#include "image_index.h"
#include "image_internal.h"
#include "check_hooks.h"
#include "ustar.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ENTRIES 600
#define BLOCK 512

/* What the reference (fully parsed) image says about entry i, in key
 * order. */
static gpucc_digest ref_key[ENTRIES], ref_content[ENTRIES];
static char ref_kernel[ENTRIES][32];

static unsigned char payload_bytes[ENTRIES][700];
static size_t payload_size[ENTRIES];

static void make_payloads(void)
{
	for (size_t i = 0; i < ENTRIES; i++) {
		/* Every 50th entry shares entry 0's payload: stored once. */
		size_t from = i % 50 == 0 ? 0 : i;
		payload_size[i] = 100 + (from * 37) % 600;
		uint32_t x = (uint32_t)(from * 2654435761u + 7);
		for (size_t k = 0; k < payload_size[i]; k++) {
			x = x * 1103515245u + 12345u;
			payload_bytes[i][k] = (unsigned char)(x >> 16);
		}
		memcpy(payload_bytes[i], &from, sizeof from);
	}
}

/* Entry i: gfx90a, kernels "k<i>", "pair<i/2>" and "common"; t holds
 * what it points at. */
typedef struct {
	char module[32], kernel[32], pair[32], target[GPUCC_TARGET_NAME_SIZE];
	gpucc_kernel k[3];
	gpucc_entry e;
} test_entry;

static int entry_of(test_entry *t, size_t i)
{
	gpucc_target parsed;
	if (gpucc_target_parse(&parsed, "gfx90a") != 0)
		return -1;
	gpucc_target_format(t->target, &parsed);
	snprintf(t->module, sizeof t->module, "module %zu", i);
	snprintf(t->kernel, sizeof t->kernel, "k%zu", i);
	snprintf(t->pair, sizeof t->pair, "pair%zu", i / 2);
	t->k[0] = (gpucc_kernel){"common", -1, -1, -1};
	t->k[1] = (gpucc_kernel){t->kernel, 10, -1, -1};
	t->k[2] = (gpucc_kernel){t->pair, -1, -1, -1};
	memset(&t->e, 0, sizeof t->e);
	t->e.key_schema = 1;
	t->e.module = "module.ll";
	gpucc_digest_buffer(&t->e.module_sha256, t->module, strlen(t->module));
	t->e.target = t->target;
	t->e.triple = gpucc_target_triple(&parsed);
	t->e.gpucc_version = gpucc_version();
	t->e.llvm_version = "19.1.7";
	t->e.kernel_count = 3;
	t->e.kernels = t->k;
	return gpucc_entry_compute_key(&t->e.key, &t->e);
}

static int add_entry(gpucc_image_writer *w, size_t i)
{
	test_entry t;
	if (entry_of(&t, i) != 0)
		return -1;
	gpucc_payload_source src = {GPUCC_PART_HSACO, NULL, payload_bytes[i], payload_size[i]};
	return gpucc_image_writer_add(w, &t.e, &src, 1);
}

/* The key of entry i in hex. */
static void test_entry_key(size_t i, char hex[GPUCC_DIGEST_HEX_SIZE])
{
	test_entry t;
	CHECK_INT(entry_of(&t, i), 0);
	gpucc_digest_to_hex(hex, &t.e.key);
}

/* check_write_image's add function for entries chosen_entries[0], [1]... */
static const size_t *chosen_entries;
static int add_chosen(gpucc_image_writer *w, size_t i)
{
	return add_entry(w, chosen_entries[i]);
}

static int write_image(const char *path, int zstd)
{
	return check_write_image(path, zstd, ENTRIES, add_entry);
}

static bool same_file(const char *a, const char *b)
{
	size_t na, nb;
	unsigned char *x = check_read_file(a, &na), *y = check_read_file(b, &nb);
	bool same = x && y && na == nb && memcmp(x, y, na) == 0;
	free(x);
	free(y);
	return same;
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* Where the index's data begin in an uncompressed image gpucc wrote. */
#define INDEX_AT (3 * BLOCK)
#define RECORDS_AT (INDEX_AT + GPUCC_INDEX_HEADER_SIZE + GPUCC_INDEX_FANOUT_SIZE)
static unsigned char *record(unsigned char *image, size_t i)
{
	return image + RECORDS_AT + i * GPUCC_INDEX_ENTRY_SIZE;
}

static void reference(void)
{
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open(&img, path_in_dir("a.gpucc")), 0);
	CHECK_INT(gpucc_image_entry_count(img), ENTRIES);
	for (size_t i = 0; i < ENTRIES && img; i++) {
		const gpucc_entry *e = gpucc_image_entry(img, i);
		ref_key[i] = e->key;
		CHECK_INT(gpucc_entry_content_digest(&ref_content[i], e), 0);
		snprintf(ref_kernel[i], sizeof ref_kernel[i], "%s", e->kernels[1].name);
	}
	gpucc_image_free(img);
}

/* ---- layout and determinism ------------------------------------------------------------ */

static void test_layout(void)
{
	CHECK_INT(write_image(path_in_dir("a.gpucc"), 0), 0);
	reference();
	size_t size;
	unsigned char *b = check_read_file(path_in_dir("a.gpucc"), &size);
	CHECK(b && size > 4 * BLOCK);
	if (!b)
		return;
	CHECK_STR((const char *)b, "GPUCC-IMAGE");
	CHECK(memcmp(b + BLOCK, "gpucc-image 1.1\n", 16) == 0);
	CHECK_STR((const char *)b + 2 * BLOCK, GPUCC_IMAGE_INDEX_MEMBER);
	CHECK(memcmp(b + INDEX_AT, GPUCC_INDEX_MAGIC, 8) == 0);
	CHECK_INT(get32(b + INDEX_AT + 8), ENTRIES);
	CHECK_INT(get32(b + INDEX_AT + 12), ENTRIES);    /* one payload reference each */
	CHECK_INT(get32(b + INDEX_AT + 16), 3 * ENTRIES); /* three kernels each */
	/* The fan-out's last value is the entry count; records are sorted. */
	CHECK_INT(get32(b + INDEX_AT + GPUCC_INDEX_HEADER_SIZE + 255 * 4), ENTRIES);
	for (size_t i = 1; i < ENTRIES; i++)
		CHECK(memcmp(record(b, i - 1), record(b, i), 32) < 0);
	free(b);

	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open(&img, path_in_dir("a.gpucc")), 0);
	CHECK_INT(gpucc_image_verify(img), 0);
	gpucc_image_free(img);

	/* Same entries, same bytes: again, through libarchive, and added in
	 * another order. */
	CHECK_INT(write_image(path_in_dir("b.gpucc"), 0), 0);
	CHECK(same_file(path_in_dir("a.gpucc"), path_in_dir("b.gpucc")));
	if (check_hooks_built) {
		gpucc_image_writer_force_libarchive(true);
		CHECK_INT(write_image(path_in_dir("c.gpucc"), 0), 0);
		gpucc_image_writer_force_libarchive(false);
		CHECK(same_file(path_in_dir("a.gpucc"), path_in_dir("c.gpucc")));
	} else {
		CHECK_SKIP_PART(CHECK_HOOKS_REASON);
	}
	gpucc_image_writer *w;
	gpucc_write_options opts = GPUCC_WRITE_OPTIONS_INIT;
	CHECK_INT(gpucc_image_writer_new(&w, path_in_dir("d.gpucc"), &opts), 0);
	for (size_t i = ENTRIES; i-- > 0;)
		CHECK_INT(add_entry(w, i), 0);
	CHECK_INT(gpucc_image_writer_commit(w), 0);
	gpucc_image_writer_free(w);
	CHECK(same_file(path_in_dir("a.gpucc"), path_in_dir("d.gpucc")));

	/* Compressed, it verifies (through the decompressor), and opening it
	 * for lookup parses its manifest as any open does. */
	CHECK_INT(write_image(path_in_dir("z.gpucc"), 3), 0);
	CHECK_INT(gpucc_image_open_for_lookup(&img, path_in_dir("z.gpucc")), 0);
	CHECK_INT(gpucc_image_entry_count(img), ENTRIES);
	CHECK_INT(gpucc_image_verify(img), 0);
	gpucc_image_free(img);
	if (!check_hooks_built)
		return;
	gpucc_image_force_libarchive(true);
	CHECK_INT(gpucc_image_open(&img, path_in_dir("a.gpucc")), 0);
	CHECK_INT(gpucc_image_verify(img), 0);
	gpucc_image_free(img);
	gpucc_image_force_libarchive(false);
}

/* ---- lookups through the index --------------------------------------------------- */

/* Entry e is entry i of the reference, and its payload reads back. */
static void check_entry(gpucc_image *img, const gpucc_entry *e, size_t i)
{
	gpucc_digest content;
	CHECK(gpucc_digest_compare(&e->key, &ref_key[i]) == 0);
	CHECK_INT(gpucc_entry_content_digest(&content, e), 0);
	CHECK(gpucc_digest_compare(&content, &ref_content[i]) == 0);
	void *data = NULL;
	size_t size = 0;
	CHECK_INT(e->payload_count, 1);
	CHECK_INT(gpucc_image_read_payload(&data, &size, img, &e->payloads[0]), 0);
	gpucc_digest got;
	gpucc_digest_buffer(&got, data ? data : "", size);
	CHECK(gpucc_digest_compare(&got, &e->payloads[0].sha256) == 0);
	gpucc_free(data);
}

static void test_lookup(void)
{
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_for_lookup(&img, path_in_dir("a.gpucc")), 0);
	if (!img)
		return;
	char hex[GPUCC_DIGEST_HEX_SIZE];
	for (size_t i = 0; i < ENTRIES; i++) {
		const gpucc_entry *e = NULL;
		gpucc_digest_to_hex(hex, &ref_key[i]);
		CHECK_INT(gpucc_image_lookup(&e, img, hex), 0);
		if (e)
			check_entry(img, e, i);
		/* A unique prefix, in capitals. */
		hex[12] = '\0';
		for (char *p = hex; *p; p++)
			if (*p >= 'a' && *p <= 'f')
				*p = (char)(*p - 'a' + 'A');
		const gpucc_entry *again = NULL;
		CHECK_INT(gpucc_image_lookup(&again, img, hex), 0);
		CHECK(again == e); /* the entry is parsed once */
		CHECK(gpucc_image_find(img, &ref_key[i]) == e);
	}
	const gpucc_entry *e = NULL;
	CHECK_INT(gpucc_image_lookup(&e, img, "a"), GPUCC_EAMBIGUOUS);
	CHECK_ERROR_HAS("is ambiguous");
	gpucc_digest absent = ref_key[0];
	absent.bytes[31] ^= 1;
	gpucc_digest_to_hex(hex, &absent);
	CHECK(gpucc_image_find(img, &absent) == NULL || gpucc_digest_compare(&absent, &ref_key[1]) == 0);
	CHECK_INT(gpucc_image_lookup(&e, img, "zz"), GPUCC_EINVALID);

	/* Kernel selection: the index names the entries of a kernel. */
	gpucc_target device;
	CHECK_INT(gpucc_target_parse(&device, "gfx90a"), 0);
	for (size_t i = 0; i < ENTRIES; i += 37) {
		gpucc_selection s;
		CHECK_INT(gpucc_image_select(&s, img, ref_kernel[i], &device), 0);
		CHECK(s.entry && gpucc_digest_compare(&s.entry->key, &ref_key[i]) == 0);
	}
	gpucc_image *full = NULL;
	CHECK_INT(gpucc_image_open(&full, path_in_dir("a.gpucc")), 0);
	gpucc_selection a, b;
	CHECK_INT(gpucc_image_select(&a, img, "common", &device), 0);
	CHECK_INT(gpucc_image_select(&b, full, "common", &device), 0);
	CHECK(a.entry && b.entry && gpucc_digest_compare(&a.entry->key, &b.entry->key) == 0);
	CHECK_INT(gpucc_image_select(&a, img, "no such kernel", &device), GPUCC_ENOTFOUND);
	CHECK_ERROR_HAS("its kernels:");
	gpucc_image_free(full);

	/* Everything else reads the whole manifest, on first use. */
	CHECK_INT(gpucc_image_load_manifest(img), 0);
	CHECK_INT(gpucc_image_entry_count(img), ENTRIES);
	CHECK_INT(gpucc_image_verify(img), 0);
	gpucc_image_free(img);

	/* The same from memory. */
	size_t size;
	unsigned char *bytes = check_read_file(path_in_dir("a.gpucc"), &size);
	CHECK_INT(gpucc_image_open_memory_for_lookup(&img, bytes, size, "mem"), 0);
	gpucc_digest_to_hex(hex, &ref_key[5]);
	CHECK_INT(gpucc_image_lookup(&e, img, hex), 0);
	if (e)
		check_entry(img, e, 5);
	gpucc_image_free(img);
	free(bytes);
}

/* A lookup handle parses only what it finds: a defect in another entry's
 * object does not stop it, while a full open refuses the image. */
static void test_only_what_is_found(void)
{
	size_t size;
	unsigned char *b = check_read_file(path_in_dir("a.gpucc"), &size);
	if (!b)
		return;
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &ref_key[100]);
	char *at = memmem(b + INDEX_AT, size - INDEX_AT, hex, 64);
	char *module = at ? memmem(at, 400, "\"module.ll\"", 11) : NULL;
	CHECK(module != NULL);
	if (!module) {
		free(b);
		return;
	}
	module[7] = '\x01'; /* a control character: not valid JSON */
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_memory(&img, b, size, "damaged"), GPUCC_ECORRUPT);
	CHECK_INT(gpucc_image_open_memory_for_lookup(&img, b, size, "damaged"), 0);
	const gpucc_entry *e = NULL;
	gpucc_digest_to_hex(hex, &ref_key[101]);
	CHECK_INT(gpucc_image_lookup(&e, img, hex), 0);
	if (e)
		check_entry(img, e, 101);
	gpucc_digest_to_hex(hex, &ref_key[100]);
	CHECK_INT(gpucc_image_lookup(&e, img, hex), GPUCC_ECORRUPT);
	CHECK_INT(gpucc_image_load_manifest(img), GPUCC_ECORRUPT);
	CHECK_INT(gpucc_image_load_manifest(img), GPUCC_ECORRUPT); /* again, with its message */
	CHECK_ERROR_HAS("corrupt manifest");
	CHECK_INT(gpucc_image_entry_count(img), 0);
	CHECK(gpucc_image_verify(img) != 0);
	gpucc_image_free(img);
	free(b);
}

/* ---- images without an index ----------------------------------------------------- */

static void test_without_index(void)
{
	CHECK_NEEDS_HOOKS();
	gpucc_image_writer_omit_index(true);
	CHECK_INT(write_image(path_in_dir("old.gpucc"), 0), 0);
	CHECK_INT(write_image(path_in_dir("old.zst.gpucc"), 5), 0);
	gpucc_image_writer_omit_index(false);
	size_t size;
	unsigned char *b = check_read_file(path_in_dir("old.gpucc"), &size);
	CHECK(b && memcmp(b + BLOCK, "gpucc-image 1\n", 14) == 0 &&
	      strcmp((const char *)b + 2 * BLOCK, "manifest.json") == 0);
	free(b);
	const char *paths[] = {path_in_dir("old.gpucc"), path_in_dir("old.zst.gpucc")};
	for (int k = 0; k < 2; k++) {
		for (int lookup = 0; lookup < 2; lookup++) {
			gpucc_image *img = NULL;
			CHECK_INT(lookup ? gpucc_image_open_for_lookup(&img, paths[k])
			                 : gpucc_image_open(&img, paths[k]),
			          0);
			if (!img)
				continue;
			char hex[GPUCC_DIGEST_HEX_SIZE];
			for (size_t i = 0; i < ENTRIES; i += 61) {
				const gpucc_entry *e = NULL;
				gpucc_digest_to_hex(hex, &ref_key[i]);
				CHECK_INT(gpucc_image_lookup(&e, img, hex), 0);
				if (e)
					check_entry(img, e, i);
			}
			CHECK_INT(gpucc_image_entry_count(img), ENTRIES);
			CHECK_INT(gpucc_image_verify(img), 0);
			gpucc_image_free(img);
		}
	}
	/* Merged, it gains an index: the bytes of a fresh image. */
	gpucc_image *old = NULL;
	CHECK_INT(gpucc_image_open(&old, path_in_dir("old.gpucc")), 0);
	gpucc_image_writer *w;
	gpucc_write_options opts = GPUCC_WRITE_OPTIONS_INIT;
	CHECK_INT(gpucc_image_writer_new(&w, path_in_dir("new.gpucc"), &opts), 0);
	for (size_t i = 0; i < gpucc_image_entry_count(old); i++)
		CHECK_INT(gpucc_image_writer_add_from(w, old, gpucc_image_entry(old, i)), 0);
	CHECK_INT(gpucc_image_writer_commit(w), 0);
	gpucc_image_writer_free(w);
	gpucc_image_free(old);
	CHECK(same_file(path_in_dir("a.gpucc"), path_in_dir("new.gpucc")));
}

/* ---- hostile indexes -------------------------------------------------------------- */

/* Every lookup on the damaged image b either fails or returns the entry of
 * the key asked for, with its content; returns how many failed. */
static size_t lookups_are_honest(const unsigned char *b, size_t size, const char *what)
{
	gpucc_image *img = NULL;
	if (gpucc_image_open_memory_for_lookup(&img, b, size, what) != 0) {
		CHECK(gpucc_error_last()->code == GPUCC_ECORRUPT);
		return ENTRIES;
	}
	size_t failed = 0;
	char hex[GPUCC_DIGEST_HEX_SIZE];
	for (size_t i = 0; i < ENTRIES; i++) {
		const gpucc_entry *e = NULL;
		gpucc_digest_to_hex(hex, &ref_key[i]);
		int rc = gpucc_image_lookup(&e, img, hex);
		if (rc != 0) {
			CHECK(rc == GPUCC_ECORRUPT || rc == GPUCC_ENOTFOUND || rc == GPUCC_EAMBIGUOUS);
			failed++;
			continue;
		}
		check_entry(img, e, i);
	}
	gpucc_target device;
	gpucc_target_parse(&device, "gfx90a");
	for (size_t i = 0; i < ENTRIES; i += 7) {
		gpucc_selection s;
		if (gpucc_image_select(&s, img, ref_kernel[i], &device) == 0)
			CHECK(gpucc_digest_compare(&s.entry->key, &ref_key[i]) == 0);
	}
	gpucc_image_free(img);
	return failed;
}

/* A lookup of prefix in b, opened for lookups, fails as corrupt, its
 * message holding needle. */
static void lookup_refused(const unsigned char *b, size_t size, const char *prefix,
                           const char *needle)
{
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_memory_for_lookup(&img, b, size, "hostile"), 0);
	const gpucc_entry *e = NULL;
	if (img)
		CHECK_INT(gpucc_image_lookup(&e, img, prefix), GPUCC_ECORRUPT);
	if (!strstr(gpucc_error_last()->message, needle))
		fprintf(stderr, "  looking up %s\n", prefix);
	CHECK_ERROR_HAS(needle);
	gpucc_image_free(img);
}

/* A full open of b refuses it at verify, naming the index. */
static void verify_refuses(const unsigned char *b, size_t size)
{
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_memory(&img, b, size, "hostile"), 0);
	CHECK_INT(gpucc_image_verify(img), GPUCC_ECORRUPT);
	const char *message = gpucc_error_last()->message;
	CHECK(strstr(message, "member 'manifest.idx': it disagrees with the manifest") ||
	      strstr(message, "corrupt index: "));
	gpucc_image_free(img);
}

static void test_hostile(void)
{
	size_t size;
	unsigned char *orig = check_read_file(path_in_dir("a.gpucc"), &size);
	if (!orig)
		return;
	unsigned char *b = malloc(size);
	const size_t r = 300;
	unsigned char *fanout = b + INDEX_AT + GPUCC_INDEX_HEADER_SIZE;
	unsigned char *refs = b + RECORDS_AT + ENTRIES * GPUCC_INDEX_ENTRY_SIZE;
	unsigned char *kernels = refs + ENTRIES * GPUCC_INDEX_PAYLOAD_SIZE + GPUCC_INDEX_FANOUT_SIZE;
	unsigned char tmp[GPUCC_INDEX_ENTRY_SIZE];

	/* Records out of order: two swapped. */
	memcpy(b, orig, size);
	memcpy(tmp, record(b, r), sizeof tmp);
	memcpy(record(b, r), record(b, r + 1), sizeof tmp);
	memcpy(record(b, r + 1), tmp, sizeof tmp);
	CHECK(lookups_are_honest(b, size, "swapped") >= 1);
	verify_refuses(b, size);

	/* A range past the manifest's end. */
	memcpy(b, orig, size);
	put32(record(b, r) + 32, 0x7fffff00u);
	CHECK(lookups_are_honest(b, size, "out of range") == 1);
	verify_refuses(b, size);

	/* A record pointing into another entry's object. */
	memcpy(b, orig, size);
	memcpy(record(b, r) + 32, record(b, r + 1) + 32, 8);
	CHECK(lookups_are_honest(b, size, "another entry") == 1);
	verify_refuses(b, size);
	/* ... or into the middle of one. */
	memcpy(b, orig, size);
	put32(record(b, r) + 32, get32(record(b, r) + 32) + 10);
	CHECK(lookups_are_honest(b, size, "mid-object") == 1);
	verify_refuses(b, size);

	/* Duplicate keys. */
	memcpy(b, orig, size);
	memcpy(record(b, r + 1), record(b, r), 32);
	CHECK(lookups_are_honest(b, size, "duplicate") >= 1);
	verify_refuses(b, size);

	/* Fan-outs that disagree: one value off, one decreasing, the last not
	 * the count. */
	memcpy(b, orig, size);
	unsigned first = record(b, r)[0];
	put32(fanout + 4 * first, get32(fanout + 4 * first) - 1);
	CHECK(lookups_are_honest(b, size, "fan-out") >= 1);
	verify_refuses(b, size);
	memcpy(b, orig, size);
	put32(fanout + 4 * 100, 0);
	CHECK(lookups_are_honest(b, size, "fan-out decreases") >= 1);
	verify_refuses(b, size);
	memcpy(b, orig, size);
	put32(fanout + 4 * 255, ENTRIES - 1);
	CHECK_INT(lookups_are_honest(b, size, "fan-out end"), ENTRIES);
	verify_refuses(b, size);

	/* Payload offsets elsewhere: the reads find the member anyway (from
	 * the manifest), or fail; never another payload's bytes. */
	memcpy(b, orig, size);
	memcpy(refs + r * 8, refs + (r + 1) * 8, 8);
	memset(refs + (r + 2) * 8, 0xff, 8);
	memset(refs + (r + 3) * 8, 0, 8);
	CHECK_INT(lookups_are_honest(b, size, "payload offsets"), 0);
	verify_refuses(b, size);
	{ /* the index of the manifest's size, other bytes: where they differ */
		gpucc_image *img = NULL;
		CHECK_INT(gpucc_image_open_memory(&img, b, size, "offsets"), 0);
		CHECK_INT(gpucc_image_verify(img), GPUCC_ECORRUPT);
		CHECK_ERROR_HAS("member 'manifest.idx': it disagrees with the manifest (at byte ");
		gpucc_image_free(img);
	}

	/* A kernel record naming another entry: selection falls back. */
	memcpy(b, orig, size);
	for (size_t k = 0; k < 3 * ENTRIES; k++)
		put32(kernels + k * GPUCC_INDEX_KERNEL_SIZE + 32,
		      (get32(kernels + k * GPUCC_INDEX_KERNEL_SIZE + 32) + 1) % ENTRIES);
	CHECK_INT(lookups_are_honest(b, size, "kernels"), 0);
	verify_refuses(b, size);

	/* Counts that do not match the member's size; a bad magic number. */
	memcpy(b, orig, size);
	put32(b + INDEX_AT + 8, ENTRIES + 1);
	CHECK_INT(lookups_are_honest(b, size, "count"), ENTRIES);
	memcpy(b, orig, size);
	b[INDEX_AT] = 'X';
	CHECK_INT(lookups_are_honest(b, size, "magic"), ENTRIES);
	verify_refuses(b, size);

	/* A forged key, in the index and the manifest alike: its
	 * components give another key. */
	memcpy(b, orig, size);
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &ref_key[r]);
	char *at = memmem(b + INDEX_AT, size - INDEX_AT, hex, 64);
	CHECK(at != NULL);
	if (at) {
		gpucc_digest forged = ref_key[r];
		forged.bytes[31] ^= 0x01;
		char forged_hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(forged_hex, &forged);
		memcpy(at, forged_hex, 64);
		memcpy(record(b, r), forged.bytes, 32);
		gpucc_image *img = NULL;
		CHECK_INT(gpucc_image_open_memory_for_lookup(&img, b, size, "forged"), 0);
		const gpucc_entry *e = NULL;
		CHECK_INT(gpucc_image_lookup(&e, img, forged_hex), GPUCC_ECORRUPT);
		CHECK_ERROR_HAS("does not match");
		gpucc_image_free(img);
	}

	/* Cut short inside the index, and inside the manifest. */
	for (size_t cut = INDEX_AT + 16; cut < size; cut += (cut < RECORDS_AT + 8000 ? 997 : 20011)) {
		gpucc_image *img = NULL;
		if (gpucc_image_open_memory_for_lookup(&img, orig, cut, "cut") != 0) {
			CHECK(gpucc_error_last()->code == GPUCC_ECORRUPT);
			continue;
		}
		const gpucc_entry *e = NULL;
		gpucc_digest_to_hex(hex, &ref_key[ENTRIES - 1]);
		if (gpucc_image_lookup(&e, img, hex) == 0) {
			void *data = NULL;
			size_t n;
			if (gpucc_image_read_payload(&data, &n, img, &e->payloads[0]) == 0)
				CHECK(n == e->payloads[0].size);
			gpucc_free(data);
		}
		gpucc_image_free(img);
	}
	free(b);
	free(orig);
}

/* A header the index cannot have refuses the open for lookups, naming
 * the defect: the reader never walks a table it has not measured. */
static void test_index_header_refusals(void)
{
	size_t size;
	unsigned char *orig = check_read_file(path_in_dir("a.gpucc"), &size);
	if (!orig)
		return;
	unsigned char *b = malloc(size);
	struct {
		size_t at;
		uint32_t value;
		const char *needle;
	} cases[] = {
		{INDEX_AT, 0x58585858u, "corrupt index: bad magic number"},
		{INDEX_AT + 20, 1, "corrupt index: reserved header bytes are not zero"},
		{INDEX_AT + 8, ENTRIES + 1, "corrupt index: its size does not match its record counts"},
		{INDEX_AT + 16, 0, "corrupt index: its size does not match its record counts"},
		{INDEX_AT + 28, 12345, "corrupt index: it names another manifest size than the manifest"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		memcpy(b, orig, size);
		put32(b + cases[i].at, cases[i].value);
		gpucc_image *img = NULL;
		CHECK_INT(gpucc_image_open_memory_for_lookup(&img, b, size, "header"), GPUCC_ECORRUPT);
		CHECK_ERROR_HAS(cases[i].needle);
		gpucc_image_free(img);
	}
	free(b);
	free(orig);
}

/* An ambiguous prefix names its first 8 candidates (then "..."), and
 * only keys that have the prefix. */
static void test_ambiguous_prefixes(void)
{
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_for_lookup(&img, path_in_dir("a.gpucc")), 0);
	if (!img)
		return;
	const gpucc_entry *e = NULL;
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &ref_key[0]);
	char prefix[3] = {hex[0], 0, 0};
	CHECK_INT(gpucc_image_lookup(&e, img, prefix), GPUCC_EAMBIGUOUS);
	const char *m = gpucc_error_last()->message;
	size_t listed = 0;
	for (const char *c = strstr(m, "match ("); c && (c = strchr(c, ',')) != NULL; c++)
		listed++;
	CHECK_INT(listed, 8); /* 8 keys and "...": 8 commas */
	CHECK(strstr(m, ", ...)") != NULL);
	/* Two hex digits shared by 2 to 8 keys: every one listed, no other. */
	bool checked = false;
	for (size_t i = 0; i + 1 < ENTRIES && !checked; i++) {
		if (ref_key[i].bytes[0] != ref_key[i + 1].bytes[0] ||
		    (i + 8 < ENTRIES && ref_key[i + 8].bytes[0] == ref_key[i].bytes[0]) ||
		    (i > 0 && ref_key[i - 1].bytes[0] == ref_key[i].bytes[0]))
			continue;
		size_t n = 0;
		while (i + n < ENTRIES && ref_key[i + n].bytes[0] == ref_key[i].bytes[0])
			n++;
		gpucc_digest_to_hex(hex, &ref_key[i]);
		prefix[0] = hex[0];
		prefix[1] = hex[1];
		CHECK_INT(gpucc_image_lookup(&e, img, prefix), GPUCC_EAMBIGUOUS);
		m = gpucc_error_last()->message;
		for (size_t k = 0; k < n; k++) {
			gpucc_digest_to_hex(hex, &ref_key[i + k]);
			hex[16] = '\0';
			CHECK(strstr(m, hex) != NULL);
		}
		const char *list = strstr(m, "match (");
		size_t commas = 0;
		for (const char *c = list; c && (c = strchr(c, ',')) != NULL; c++)
			commas++;
		CHECK_INT(commas, n - 1);
		CHECK(strstr(m, "...") == NULL);
		checked = true;
		/* A candidate's record out of range: the listing fails on it. */
		size_t size;
		unsigned char *b = check_read_file(path_in_dir("a.gpucc"), &size);
		if (b) {
			put32(record(b, i + 1) + 32, 0x7fffff00u);
			lookup_refused(b, size, prefix, "corrupt index: an entry's range lies outside the manifest");
			free(b);
		}
	}
	CHECK(checked);
	gpucc_image_free(img);

	/* Exactly 8 candidates: all named, no "...".  Entries chosen so that 8
	 * keys share their first hex digit and 2 others do not. */
	static size_t chosen[10];
	size_t per_digit[16][8], in_digit[16] = {0};
	int digit = -1;
	for (size_t i = 0; i < ENTRIES && digit < 0; i++) {
		test_entry_key(i, hex);
		int d = hex[0] >= 'a' ? hex[0] - 'a' + 10 : hex[0] - '0';
		if (in_digit[d] < 8)
			per_digit[d][in_digit[d]++] = i;
		if (in_digit[d] == 8)
			digit = d;
	}
	CHECK(digit >= 0);
	if (digit < 0)
		return;
	size_t n = 0;
	for (; n < 8; n++)
		chosen[n] = per_digit[digit][n];
	for (int d = 0; d < 16 && n < 10; d++)
		for (size_t k = 0; k < in_digit[d] && d != digit && n < 10; k++)
			chosen[n++] = per_digit[d][k];
	chosen_entries = chosen;
	CHECK_INT(check_write_image(path_in_dir("eight.gpucc"), 0, 10, add_chosen), 0);
	CHECK_INT(gpucc_image_open_for_lookup(&img, path_in_dir("eight.gpucc")), 0);
	prefix[0] = "0123456789abcdef"[digit];
	prefix[1] = '\0';
	CHECK_INT(gpucc_image_lookup(&e, img, prefix), GPUCC_EAMBIGUOUS);
	m = gpucc_error_last()->message;
	CHECK(strstr(m, ": 8 entries match (") != NULL);
	CHECK(strstr(m, "...") == NULL);
	gpucc_image_free(img);
}

/* gpucc_image_find on a parsed manifest: every key found, keys between,
 * before and after them not. */
static void test_find_parsed(void)
{
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open(&img, path_in_dir("a.gpucc")), 0);
	if (!img)
		return;
	for (size_t i = 0; i < ENTRIES; i++) {
		const gpucc_entry *e = gpucc_image_find(img, &ref_key[i]);
		CHECK(e && gpucc_digest_compare(&e->key, &ref_key[i]) == 0);
		gpucc_digest other = ref_key[i];
		other.bytes[31] ^= 0x01;
		CHECK(gpucc_image_find(img, &other) == NULL);
	}
	gpucc_digest low, high;
	memset(&low, 0, sizeof low);
	memset(&high, 0xff, sizeof high);
	CHECK(gpucc_image_find(img, &low) == NULL);
	CHECK(gpucc_image_find(img, &high) == NULL);
	gpucc_image_free(img);
}

/* An index member shorter than its header and fan-out tables, in an
 * archive otherwise whole: a.gpucc with its index cut to 100 bytes. */
static void test_index_too_short(void)
{
	size_t size;
	unsigned char *orig = check_read_file(path_in_dir("a.gpucc"), &size);
	if (!orig)
		return;
	uint64_t index_size = gpucc_index_size(get32(orig + INDEX_AT + 8), get32(orig + INDEX_AT + 12),
	                                       get32(orig + INDEX_AT + 16));
	size_t manifest_header = INDEX_AT + gpucc_ustar_padded(index_size);
	size_t keep = size - manifest_header;
	unsigned char *b = calloc(1, INDEX_AT + BLOCK + keep);
	memcpy(b, orig, INDEX_AT - BLOCK); /* the format member */
	CHECK(gpucc_ustar_format(b + INDEX_AT - BLOCK, "manifest.idx", 100, 0));
	memcpy(b + INDEX_AT, orig + INDEX_AT, 100);
	memcpy(b + INDEX_AT + BLOCK, orig + manifest_header, keep);
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_memory_for_lookup(&img, b, INDEX_AT + BLOCK + keep, "short"),
	          GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("corrupt index: shorter than its header and fan-out tables");
	gpucc_image_free(img);
	free(b);
	free(orig);
}

/* Fan-out values a lookup reads: one over the record count, or one less
 * than the value before it, makes that lookup fail naming the defect; an
 * empty bucket is no defect, its keys are not found. */
static void test_fanout_lookups(void)
{
	size_t size;
	unsigned char *orig = check_read_file(path_in_dir("a.gpucc"), &size);
	if (!orig)
		return;
	unsigned char *b = malloc(size);
	unsigned char *fanout = b + INDEX_AT + GPUCC_INDEX_HEADER_SIZE;
	size_t r = 300;
	unsigned first = ref_key[r].bytes[0];
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &ref_key[r]);
	struct {
		uint32_t value;
		const char *needle;
	} cases[] = {
		{ENTRIES + 5, "corrupt index: a fan-out value exceeds the record count"},
		{0, "corrupt index: the fan-out decreases"},
	};
	CHECK(first > 0);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		memcpy(b, orig, size);
		put32(fanout + 4 * first, cases[i].value);
		lookup_refused(b, size, hex, cases[i].needle);
	}
	/* A first byte no key has: its bucket is empty. */
	bool used[256] = {false};
	for (size_t i = 0; i < ENTRIES; i++)
		used[ref_key[i].bytes[0]] = true;
	unsigned empty = 0;
	while (empty < 256 && used[empty])
		empty++;
	CHECK(empty < 256);
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_memory_for_lookup(&img, orig, size, "empty bucket"), 0);
	char prefix[8];
	snprintf(prefix, sizeof prefix, "%02x", empty);
	const gpucc_entry *e = NULL;
	CHECK_INT(gpucc_image_lookup(&e, img, prefix), GPUCC_ENOTFOUND);
	gpucc_image_free(img);
	free(b);
	free(orig);
}

/* The index of a.gpucc read from memory, for formats/image_index.c's own
 * API. */
typedef struct {
	const unsigned char *index;
	size_t size;
} memory_index;

static int memory_index_read(void *ctx, uint64_t offset, void *buf, size_t len)
{
	const memory_index *m = ctx;
	if (offset > m->size || len > m->size - offset)
		return GPUCC_ECORRUPT;
	memcpy(buf, m->index + offset, len);
	return 0;
}

/* A record whose key's first byte is not its bucket's fails the lookup
 * that reads it, naming that; a prefix that is not hex is refused by the
 * index reader itself, whatever its caller checked. */
static void test_records_in_buckets(void)
{
	size_t size;
	unsigned char *orig = check_read_file(path_in_dir("a.gpucc"), &size);
	if (!orig)
		return;
	unsigned char *b = malloc(size);
	size_t r = 300;
	unsigned first = ref_key[r].bytes[0];
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &ref_key[r]);
	CHECK(first < 255);
	/* Record r+1 a copy of record r's key: the lookup of that key finds
	 * two, out of order, not an ambiguous prefix. */
	memcpy(b, orig, size);
	memcpy(record(b, r + 1), record(b, r), 32);
	lookup_refused(b, size, hex, "corrupt index: records are not in strictly increasing key order");
	/* Record r alone moved to the next bucket; then every record of its
	 * bucket. */
	for (int all = 0; all < 2; all++) {
		memcpy(b, orig, size);
		for (size_t i = 0; i < ENTRIES; i++)
			if (i == r || (all && ref_key[i].bytes[0] == first))
				record(b, i)[0] = (unsigned char)(first + 1);
		lookup_refused(b, size, hex, "corrupt index: a record lies outside its fan-out bucket");
	}
	/* The last record of a bucket of 3 or more, which the bisection for
	 * the bucket's 2-digit prefix does not read: the scan of the matches
	 * meets it. */
	for (size_t i = 0; i + 2 < ENTRIES; i++) {
		unsigned byte = ref_key[i].bytes[0];
		if ((i > 0 && ref_key[i - 1].bytes[0] == byte) || ref_key[i + 2].bytes[0] != byte ||
		    byte == 255)
			continue;
		size_t last = i + 2;
		while (last + 1 < ENTRIES && ref_key[last + 1].bytes[0] == byte)
			last++;
		memcpy(b, orig, size);
		record(b, last)[0] = (unsigned char)(byte + 1);
		char two[8];
		snprintf(two, sizeof two, "%02x", byte);
		lookup_refused(b, size, two, "corrupt index: a record lies outside its fan-out bucket");
		break;
	}
	memory_index m = {orig + INDEX_AT, gpucc_index_size(get32(orig + INDEX_AT + 8),
	                                                    get32(orig + INDEX_AT + 12),
	                                                    get32(orig + INDEX_AT + 16))};
	gpucc_index_reader reader = {.read = memory_index_read, .ctx = &m, .name = "memory",
	                             .size = m.size};
	uint64_t manifest_size = ((uint64_t)get32(orig + INDEX_AT + 24) << 32) | get32(orig + INDEX_AT + 28);
	CHECK_INT(gpucc_index_open(&reader, manifest_size), 0);
	uint32_t at = 0, count = 0;
	CHECK_INT(gpucc_index_find_prefix(&reader, hex, &at, &count), 0);
	CHECK_INT(count, 1);
	gpucc_index_record rec;
	CHECK_INT(gpucc_index_record_at(&reader, ENTRIES - 1, &rec), 0);
	CHECK_INT(gpucc_index_record_at(&reader, ENTRIES, &rec), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("corrupt index: no such record");
	const char *const not_prefixes[] = {"", "x", "0x", "A0"};
	for (size_t i = 0; i < sizeof not_prefixes / sizeof not_prefixes[0]; i++) {
		CHECK_INT(gpucc_index_find_prefix(&reader, not_prefixes[i], &at, &count), GPUCC_EINVALID);
		CHECK_ERROR_HAS("is not a key prefix");
	}
	free(b);
	free(orig);
}

/* What an entry record may point at: a range of at least 2 bytes up to
 * the manifest's very end, at most GPUCC_PART_COUNT payload references
 * anywhere in their table.  A record past those bounds fails the lookup
 * as "corrupt index"; one within them that is still wrong fails it when
 * its object is parsed or held against it. */
#define NO_LINE "points to no line of the manifest's entries"

static void test_record_ranges(void)
{
	size_t size;
	unsigned char *orig = check_read_file(path_in_dir("a.gpucc"), &size);
	if (!orig)
		return;
	unsigned char *b = malloc(size);
	size_t r = 300;
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &ref_key[r]);
	const unsigned char *manifest = memmem(orig, size, "{\"format\":\"gpucc-image\"", 22);
	CHECK(manifest != NULL);
	if (!manifest) {
		free(b);
		free(orig);
		return;
	}
	uint32_t manifest_size = get32(orig + INDEX_AT + 28);
	const unsigned char *empty = memmem(manifest, manifest_size, "{}", 2);
	CHECK(empty != NULL);
	uint32_t refs = get32(orig + INDEX_AT + 12);
	struct {
		uint32_t offset, length, first, count; /* UINT32_MAX: the record's own */
		const char *needle;
	} cases[] = {
		/* "{}", 2 bytes: a range, but no entry's line */
		{(uint32_t)(empty - manifest), 2, UINT32_MAX, UINT32_MAX, NO_LINE},
		{(uint32_t)(empty - manifest), 1, UINT32_MAX, UINT32_MAX,
		 "corrupt index: an entry's range lies outside the manifest"},
		/* the last 2 bytes: in the manifest, not an entry's line */
		{manifest_size - 2, 2, UINT32_MAX, UINT32_MAX, NO_LINE},
		{manifest_size - 2, 3, UINT32_MAX, UINT32_MAX,
		 "corrupt index: an entry's range lies outside the manifest"},
		{manifest_size, 2, UINT32_MAX, UINT32_MAX,
		 "corrupt index: an entry's range lies outside the manifest"},
		/* GPUCC_PART_COUNT references, in the table: the entry has 1 */
		{UINT32_MAX, UINT32_MAX, 0, GPUCC_PART_COUNT, "payloads, the entry 1"},
		{UINT32_MAX, UINT32_MAX, 0, GPUCC_PART_COUNT + 1,
		 "corrupt index: an entry's payload references lie outside the table"},
		/* none, from the table's end: the entry has 1 */
		{UINT32_MAX, UINT32_MAX, refs, 0, "has 0 payloads, the entry 1"},
		{UINT32_MAX, UINT32_MAX, refs, 1,
		 "corrupt index: an entry's payload references lie outside the table"},
		{UINT32_MAX, UINT32_MAX, refs + 1, 0,
		 "corrupt index: an entry's payload references lie outside the table"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		memcpy(b, orig, size);
		unsigned char *rec = record(b, r);
		if (cases[i].offset != UINT32_MAX) {
			put32(rec + 32, cases[i].offset);
			put32(rec + 36, cases[i].length);
		}
		if (cases[i].first != UINT32_MAX) {
			put32(rec + 40, cases[i].first);
			put32(rec + 44, cases[i].count);
		}
		lookup_refused(b, size, hex, cases[i].needle);
	}
	free(b);
	free(orig);
}

/* A payload read through the index is checked against its digest, as one
 * read through the manifest is: one byte of entry 7's payload flipped, its
 * lookup succeeds and the read fails, naming the mismatch. */
static void test_index_payload_digest(void)
{
	size_t size;
	unsigned char *b = check_read_file(path_in_dir("a.gpucc"), &size);
	if (!b)
		return;
	unsigned char *at = memmem(b, size, payload_bytes[7], payload_size[7]);
	CHECK(at != NULL);
	size_t r = 0;
	while (r < ENTRIES && strcmp(ref_kernel[r], "k7") != 0)
		r++;
	CHECK(r < ENTRIES);
	if (at && r < ENTRIES) {
		at[payload_size[7] / 2] ^= 0x01;
		gpucc_image *img = NULL;
		CHECK_INT(gpucc_image_open_memory_for_lookup(&img, b, size, "flipped"), 0);
		CHECK(img && gpucc_image_reads_by_index(img));
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &ref_key[r]);
		const gpucc_entry *e = NULL;
		CHECK_INT(gpucc_image_lookup(&e, img, hex), 0);
		void *data = NULL;
		size_t n = 0;
		if (e) {
			CHECK_INT(gpucc_image_read_payload(&data, &n, img, &e->payloads[0]), GPUCC_ECORRUPT);
			CHECK_ERROR_HAS(GPUCC_DIGEST_MISMATCH);
			CHECK(data == NULL);
		}
		gpucc_free(data);
		gpucc_image_free(img);
	}
	free(b);
}

/* A format member of an unknown minor version is refused. */
static void test_versions(void)
{
	size_t size;
	unsigned char *b = check_read_file(path_in_dir("a.gpucc"), &size);
	if (!b)
		return;
	gpucc_image *img = NULL;
	b[BLOCK + 14] = '2';
	CHECK_INT(gpucc_image_open_memory(&img, b, size, "v1.2"), GPUCC_EVERSION);
	CHECK_ERROR_HAS("image format version 1.2 is not supported");
	b[BLOCK + 14] = 'x';
	CHECK_INT(gpucc_image_open_memory(&img, b, size, "v1.x"), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("bad format member");
	free(b);
}

int main(void)
{
	if (check_dir_create("image-index") != 0)
		return 1;
	make_payloads();
	RUN(test_layout);
	RUN(test_lookup);
	RUN(test_only_what_is_found);
	RUN(test_without_index);
	RUN(test_hostile);
	RUN(test_index_payload_digest);
	RUN(test_index_header_refusals);
	RUN(test_index_too_short);
	RUN(test_ambiguous_prefixes);
	RUN(test_find_parsed);
	RUN(test_fanout_lookups);
	RUN(test_records_in_buckets);
	RUN(test_record_ranges);
	RUN(test_versions);
	check_dir_remove();
	return CHECK_DONE();
}
