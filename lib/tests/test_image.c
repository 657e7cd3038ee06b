/*
 * lib/tests/test_image.c -- writing and reading images: round trips,
 * determinism (the bytes depend only on the set of entries), deduplication,
 * conflicts, key prefixes, compressed images, memory and fd sources,
 * corruption caught by digest checks, the limits on reading, and parked
 * images.
 */
#include "check.h"

#include <gpucc.h>

#include "image_internal.h"
#include "check_hooks.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* An entry for module text `source` on target, with the given payloads. */
typedef struct test_entry {
	gpucc_entry e;
	gpucc_option options[2];
	gpucc_kernel kernel;
	char target[GPUCC_TARGET_NAME_SIZE];
} test_entry;

static void make_entry(test_entry *t, const char *module, const char *source, const char *target)
{
	memset(t, 0, sizeof *t);
	gpucc_target parsed;
	CHECK_INT(gpucc_target_parse(&parsed, target), 0);
	gpucc_target_format(t->target, &parsed);
	t->options[0] = (gpucc_option){"fast-math", "off"};
	t->options[1] = (gpucc_option){"opt-level", "2"};
	t->kernel = (gpucc_kernel){"kernel", 12, 0, -1};
	t->e.key_schema = 1;
	t->e.module = module;
	gpucc_digest_buffer(&t->e.module_sha256, source, strlen(source));
	t->e.target = t->target;
	t->e.triple = gpucc_target_triple(&parsed);
	t->e.gpucc_version = gpucc_version();
	t->e.llvm_version = "19.1.7";
	t->e.option_count = 2;
	t->e.options = t->options;
	t->e.kernel_count = 1;
	t->e.kernels = &t->kernel;
	CHECK_INT(gpucc_entry_compute_key(&t->e.key, &t->e), 0);
}

static int write_image(const char *path, int zstd, const char *const *modules, size_t n)
{
	gpucc_image_writer *w;
	gpucc_write_options opts = {.version = GPUCC_WRITE_OPTIONS_VERSION, .zstd_level = zstd};
	int rc = gpucc_image_writer_new(&w, path, &opts);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && rc == 0; i++) {
		test_entry t;
		make_entry(&t, modules[i], modules[i], i % 2 ? "gfx90a" : "sm_90");
		gpucc_payload_source src[2] = {
			{GPUCC_PART_PTX, NULL, modules[i], strlen(modules[i])},
			{GPUCC_PART_BITCODE, NULL, "shared bitcode", 14},
		};
		rc = gpucc_image_writer_add(w, &t.e, src, 2);
	}
	if (rc == 0)
		rc = gpucc_image_writer_commit(w);
	gpucc_image_writer_free(w);
	return rc;
}

static bool same_file(const char *a, const char *b)
{
	size_t na, nb;
	char *da = check_read_file(a, &na), *db = check_read_file(b, &nb);
	bool same = da && db && na == nb && memcmp(da, db, na) == 0;
	free(da);
	free(db);
	return same;
}

static const char *const modules[] = {"alpha", "beta", "gamma", "delta", "epsilon"};

/* The payload count of an image whose list builds (a failure fails the
 * test, and counts 0). */
static size_t payload_count(const gpucc_image *img)
{
	size_t n = 0;
	CHECK_INT(gpucc_image_count_payloads(&n, img), 0);
	return n;
}

static void test_round_trip(void)
{
	const char *path = path_in_dir("a.gpucc");
	CHECK_INT(write_image(path, 0, modules, 5), 0);
	gpucc_image *img;
	CHECK_INT(gpucc_image_open(&img, path), 0);
	if (!img)
		return;
	CHECK_INT(gpucc_image_entry_count(img), 5);
	/* Five PTX payloads and one shared bitcode payload, stored once. */
	CHECK_INT(payload_count(img), 6);
	CHECK(!gpucc_image_is_compressed(img));
	CHECK(gpucc_image_has_random_access(img));
	for (size_t i = 1; i < gpucc_image_entry_count(img); i++)
		CHECK(gpucc_digest_compare(&gpucc_image_entry(img, i - 1)->key,
		                           &gpucc_image_entry(img, i)->key) < 0);
	for (size_t i = 0; i < 5; i++) {
		const gpucc_entry *e = gpucc_image_entry(img, i);
		const gpucc_payload *p = gpucc_entry_payload(e, GPUCC_PART_PTX);
		CHECK(p != NULL);
		void *data;
		size_t size;
		CHECK_INT(gpucc_image_read_payload(&data, &size, img, p), 0);
		CHECK_INT(size, strlen(e->module));
		CHECK(memcmp(data, e->module, size) == 0);
		gpucc_free(data);
		CHECK_STR(gpucc_entry_option(e, "opt-level"), "2");
		CHECK_INT(e->kernels[0].registers, 12);
		CHECK_INT(e->kernels[0].scratch_bytes, -1);
	}
	/* Read backwards too: the reader must not depend on order. */
	for (size_t i = payload_count(img); i-- > 0;) {
		void *data;
		size_t size;
		CHECK_INT(gpucc_image_read_payload(&data, &size, img, gpucc_image_payload(img, i)), 0);
		gpucc_free(data);
	}
	CHECK_INT(gpucc_image_verify(img), 0);
	gpucc_image_free(img);
}

static void test_deterministic(void)
{
	const char *reversed[] = {"epsilon", "delta", "gamma", "beta", "alpha"};
	const char *a = path_in_dir("det-a.gpucc"), *b = path_in_dir("det-b.gpucc");
	CHECK_INT(write_image(a, 0, modules, 5), 0);
	/* Same set, other order, with a duplicate: same bytes. */
	gpucc_image_writer *w;
	CHECK_INT(gpucc_image_writer_new(&w, b, NULL), 0);
	for (int round = 0; round < 2; round++)
		for (size_t i = 0; i < 5; i++) {
			size_t original = 4 - i;
			test_entry t;
			make_entry(&t, reversed[i], reversed[i], original % 2 ? "gfx90a" : "sm_90");
			gpucc_payload_source src[2] = {
				{GPUCC_PART_BITCODE, NULL, "shared bitcode", 14},
				{GPUCC_PART_PTX, NULL, reversed[i], strlen(reversed[i])},
			};
			CHECK_INT(gpucc_image_writer_add(w, &t.e, src, 2), 0);
		}
	CHECK_INT(gpucc_image_writer_entry_count(w), 5);
	CHECK_INT(gpucc_image_writer_commit(w), 0);
	gpucc_image_writer_free(w);
	CHECK(same_file(a, b));

	/* SOURCE_DATE_EPOCH changes the bytes (mtimes), and only it. */
	gpucc_config cfg = GPUCC_CONFIG_INIT;
	cfg.source_date_epoch_set = true;
	cfg.source_date_epoch = 1700000000;
	CHECK_INT(gpucc_set_config(&cfg), 0);
	const char *c = path_in_dir("det-c.gpucc");
	CHECK_INT(write_image(c, 0, modules, 5), 0);
	CHECK_INT(gpucc_set_config(NULL), 0);
	CHECK(!same_file(a, c));

	/* Compressed images are deterministic too. */
	const char *z1 = path_in_dir("z1.gpucc"), *z2 = path_in_dir("z2.gpucc");
	CHECK_INT(write_image(z1, 3, modules, 5), 0);
	CHECK_INT(write_image(z2, 3, modules, 5), 0);
	CHECK(same_file(z1, z2));
}

static void test_compressed_and_sources(void)
{
	const char *path = path_in_dir("z.gpucc");
	CHECK_INT(write_image(path, 19, modules, 5), 0);
	gpucc_image *img;
	CHECK_INT(gpucc_image_open(&img, path), 0);
	if (!img)
		return;
	CHECK(gpucc_image_is_compressed(img));
	CHECK(!gpucc_image_has_random_access(img));
	CHECK_INT(gpucc_image_verify(img), 0);
	/* Entries copied from an open (compressed) image into a new one give
	 * the same bytes as writing them directly. */
	const char *copy = path_in_dir("copy.gpucc");
	gpucc_image_writer *w;
	CHECK_INT(gpucc_image_writer_new(&w, copy, NULL), 0);
	for (size_t i = gpucc_image_entry_count(img); i-- > 0;)
		CHECK_INT(gpucc_image_writer_add_from(w, img, gpucc_image_entry(img, i)), 0);
	CHECK_INT(gpucc_image_writer_commit(w), 0);
	gpucc_image_writer_free(w);
	gpucc_image_free(img);
	const char *direct = path_in_dir("direct.gpucc");
	CHECK_INT(write_image(direct, 0, modules, 5), 0);
	CHECK(same_file(copy, direct));

	/* Memory and fd sources see the same image. */
	size_t size;
	char *bytes = check_read_file(direct, &size);
	CHECK_INT(gpucc_image_open_memory(&img, bytes, size, "memory"), 0);
	if (img) {
		CHECK_INT(gpucc_image_entry_count(img), 5);
		CHECK_INT(gpucc_image_verify(img), 0);
		void *data;
		size_t n;
		CHECK_INT(gpucc_image_read_payload(&data, &n, img, gpucc_image_payload(img, 5)), 0);
		gpucc_free(data);
		gpucc_image_free(img);
	}
	free(bytes);
	int fd = open(direct, O_RDONLY);
	CHECK_INT(gpucc_image_open_fd(&img, fd, "fd"), 0);
	close(fd);
	if (img) {
		CHECK_INT(gpucc_image_verify(img), 0);
		gpucc_image_free(img);
	}
}

static void test_lookup(void)
{
	const char *path = path_in_dir("a.gpucc");
	gpucc_image *img;
	CHECK_INT(gpucc_image_open(&img, path), 0);
	if (!img)
		return;
	char hex[GPUCC_DIGEST_HEX_SIZE];
	const gpucc_entry *e = gpucc_image_entry(img, 2), *found;
	gpucc_digest_to_hex(hex, &e->key);
	CHECK_INT(gpucc_image_lookup(&found, img, hex), 0);
	CHECK(found == e);
	hex[12] = '\0';
	CHECK_INT(gpucc_image_lookup(&found, img, hex), 0);
	CHECK(found == e);
	CHECK(gpucc_image_find(img, &e->key) == e);
	/* A one-digit prefix shared by several keys is ambiguous, unless the
	 * five keys happen to start with five different digits. */
	int ambiguous = 0;
	for (const char *d = "0123456789abcdef"; *d; d++) {
		char prefix[2] = {*d, 0};
		int rc = gpucc_image_lookup(&found, img, prefix);
		if (rc == GPUCC_EAMBIGUOUS) {
			ambiguous++;
			CHECK_ERROR_HAS("ambiguous");
		} else {
			CHECK(rc == 0 || rc == GPUCC_ENOTFOUND);
		}
	}
	CHECK(ambiguous > 0 || gpucc_image_entry_count(img) <= 16);
	CHECK_INT(gpucc_image_lookup(&found, img, "xyz"), GPUCC_EINVALID);
	CHECK_INT(gpucc_image_lookup(&found, img, ""), GPUCC_EINVALID);
	gpucc_image_free(img);
}

static void test_conflict(void)
{
	gpucc_image_writer *w;
	const char *path = path_in_dir("conflict.gpucc");
	CHECK_INT(gpucc_image_writer_new(&w, path, NULL), 0);
	test_entry t;
	make_entry(&t, "m", "source", "sm_80");
	gpucc_payload_source one = {GPUCC_PART_PTX, NULL, "one", 3};
	gpucc_payload_source two = {GPUCC_PART_PTX, NULL, "two", 3};
	CHECK_INT(gpucc_image_writer_add(w, &t.e, &one, 1), 0);
	CHECK_INT(gpucc_image_writer_add(w, &t.e, &one, 1), 0);
	CHECK_INT(gpucc_image_writer_add(w, &t.e, &two, 1), GPUCC_ECONFLICT);
	CHECK_ERROR_HAS("conflict");
	/* "Last wins": remove, then add. */
	CHECK_INT(gpucc_image_writer_remove(w, &t.e.key), 0);
	CHECK(gpucc_image_writer_find(w, &t.e.key) == NULL);
	CHECK_INT(gpucc_image_writer_add(w, &t.e, &two, 1), 0);
	/* A key that does not match its components is refused. */
	test_entry bad;
	make_entry(&bad, "m", "source", "sm_80");
	bad.e.key.bytes[0] ^= 1;
	CHECK_INT(gpucc_image_writer_add(w, &bad.e, &one, 1), GPUCC_EINVALID);
	CHECK_INT(gpucc_image_writer_commit(w), 0);
	gpucc_image_writer_free(w);
	gpucc_image *img;
	CHECK_INT(gpucc_image_open(&img, path), 0);
	if (img) {
		void *data;
		size_t size;
		CHECK_INT(gpucc_image_read_payload(&data, &size, img,
		          gpucc_entry_payload(gpucc_image_entry(img, 0), GPUCC_PART_PTX)), 0);
		CHECK(size == 3 && memcmp(data, "two", 3) == 0);
		gpucc_free(data);
		gpucc_image_free(img);
	}
}

static void test_corruption_is_caught(void)
{
	const char *path = path_in_dir("a.gpucc");
	size_t size;
	char *bytes = check_read_file(path, &size);
	/* Flip one byte inside the "gamma" payload's data. */
	char *at = NULL;
	for (size_t i = 0; i + 5 <= size; i++)
		if (memcmp(bytes + i, "gamma", 5) == 0 && (i % 512) == 0)
			at = bytes + i;
	CHECK(at != NULL);
	if (!at) {
		free(bytes);
		return;
	}
	at[0] = 'G';
	gpucc_image *img;
	CHECK_INT(gpucc_image_open_memory(&img, bytes, size, "flipped"), 0);
	if (img) {
		CHECK_INT(gpucc_image_verify(img), GPUCC_ECORRUPT);
		CHECK_ERROR_HAS("digest mismatch");
		CHECK_ERROR_HAS("flipped");
		int bad = 0;
		for (size_t i = 0; i < payload_count(img); i++) {
			void *data;
			size_t n;
			if (gpucc_image_read_payload(&data, &n, img, gpucc_image_payload(img, i)) ==
			    GPUCC_ECORRUPT)
				bad++;
			else
				gpucc_free(data);
		}
		CHECK_INT(bad, 1);
		gpucc_image_free(img);
	}
	at[0] = 'g';
	/* An entry whose fields were edited (-O2 made -O3, the manifest's size
	 * kept): it opens, and verify recomputes its key from its fields. */
	char *level = memmem(bytes, size, "\"opt-level\":\"2\"", 15);
	CHECK(level != NULL);
	if (level) {
		level[13] = '3';
		CHECK_INT(gpucc_image_open_memory(&img, bytes, size, "edited"), 0);
		if (img) {
			CHECK_INT(gpucc_image_verify(img), GPUCC_ECORRUPT);
			CHECK_ERROR_HAS("'edited': corrupt manifest: entry 0: key ");
			CHECK_ERROR_HAS("does not match the entry's key components");
			gpucc_image_free(img);
		}
		level[13] = '2';
	}
	/* Truncation. */
	CHECK_INT(gpucc_image_open_memory(&img, bytes, 1536, "cut"), GPUCC_ECORRUPT);
	free(bytes);
	CHECK_INT(gpucc_image_open_memory(&img, "hello", 5, "tiny"), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("not a gpucc image");
	CHECK_INT(gpucc_image_open(&img, path_in_dir("missing.gpucc")), GPUCC_ENOTFOUND);
}

/* Copy the image at from to to, inserting an unlisted member before the
 * payload member at position `at` (0-based among all members). */
static void insert_member(const char *from, const char *to, int at)
{
	struct archive *in = archive_read_new(), *out = archive_write_new();
	archive_read_support_format_tar(in);
	CHECK_INT(archive_read_open_filename(in, from, 10240), ARCHIVE_OK);
	archive_write_set_format_pax_restricted(out);
	CHECK_INT(archive_write_open_filename(out, to), ARCHIVE_OK);
	struct archive_entry *e;
	char buffer[65536];
	for (int i = 0; archive_read_next_header(in, &e) == ARCHIVE_OK; i++) {
		if (i == at) {
			struct archive_entry *extra = archive_entry_new();
			archive_entry_set_pathname(extra, "payloads/extra.txt");
			archive_entry_set_filetype(extra, AE_IFREG);
			archive_entry_set_perm(extra, 0644);
			archive_entry_set_size(extra, 5);
			archive_write_header(out, extra);
			archive_write_data(out, "extra", 5);
			archive_entry_free(extra);
		}
		archive_write_header(out, e);
		la_ssize_t n;
		while ((n = archive_read_data(in, buffer, sizeof buffer)) > 0)
			archive_write_data(out, buffer, (size_t)n);
	}
	archive_read_free(in);
	archive_write_free(out);
}

static void test_unlisted_member_is_named(void)
{
	const char *good = path_in_dir("a.gpucc");
	/* After the format member, the index and the manifest. */
	for (int at = 3; at <= 5; at++) {
		const char *bad = path_in_dir("extra.gpucc");
		insert_member(good, bad, at);
		gpucc_image *img;
		CHECK_INT(gpucc_image_open(&img, bad), 0);
		if (!img)
			continue;
		CHECK_INT(gpucc_image_verify(img), GPUCC_ECORRUPT);
		CHECK_ERROR_HAS("member 'payloads/extra.txt' is not listed in the manifest");
		gpucc_image_free(img);
	}
}

/* Open and verify bytes, through the ustar headers or through libarchive;
 * the verdict's code, and its message in message. */
static int verdict(const char *bytes, size_t size, bool with_libarchive, char message[512])
{
	gpucc_image_force_libarchive(with_libarchive);
	gpucc_image *img;
	int rc = gpucc_image_open_memory(&img, bytes, size, "cut.gpucc");
	if (rc == 0) {
		rc = gpucc_image_verify(img);
		gpucc_image_free(img);
	}
	snprintf(message, 512, "%s", rc ? gpucc_error_last()->message : "");
	gpucc_image_force_libarchive(false);
	return rc;
}

/* The direct reader (ustar headers) and libarchive agree on every image:
 * the same code, and the same defect named (both say "truncated" for a
 * truncated image, in their own words). */
static void test_readers_agree(void)
{
	CHECK_NEEDS_HOOKS();
	size_t size;
	char *good = check_read_file(path_in_dir("a.gpucc"), &size);
	char a[512], b[512];
	CHECK_INT(verdict(good, size, false, a), 0);
	CHECK_INT(verdict(good, size, true, b), 0);
	for (size_t cut = 600; cut < size; cut += 97) {
		int ra = verdict(good, cut, false, a), rb = verdict(good, cut, true, b);
		/* Both tolerate a cut inside the second end-of-archive block. */
		bool lenient = ra == 0 && rb == 0 && cut >= size - 512;
		if (!lenient && (ra != rb || ra != GPUCC_ECORRUPT || !strstr(a, "truncat") ||
		                 !strstr(b, "truncat")))
			fprintf(stderr, "  cut at %zu: direct %d '%s', libarchive %d '%s'\n", cut, ra, a, rb, b);
		CHECK(lenient || (ra == rb && ra == GPUCC_ECORRUPT));
	}
	for (size_t at = 2048; at < size; at += 512) {
		char *bad = malloc(size);
		memcpy(bad, good, size);
		bad[at + 3] ^= 0x20; /* a payload byte, or a header's */
		int ra = verdict(bad, size, false, a), rb = verdict(bad, size, true, b);
		if (ra != rb || strcmp(a, b) != 0)
			fprintf(stderr, "  flip at %zu: direct %d '%s', libarchive %d '%s'\n", at + 3, ra, a,
			        rb, b);
		CHECK_INT(ra, rb);
		free(bad);
	}
	for (int at = 2; at <= 4; at++) {
		insert_member(path_in_dir("a.gpucc"), path_in_dir("extra.gpucc"), at);
		size_t n;
		char *bad = check_read_file(path_in_dir("extra.gpucc"), &n);
		int ra = verdict(bad, n, false, a), rb = verdict(bad, n, true, b);
		CHECK_INT(ra, GPUCC_ECORRUPT);
		CHECK_INT(rb, GPUCC_ECORRUPT);
		CHECK_STR(a, b);
		free(bad);
	}
	free(good);
}

/* A missing end-of-archive marker: both readers call the image
 * truncated; one zero block is enough for both.  Also for an image whose
 * last member is the manifest. */
static void test_readers_agree_on_end_marker(void)
{
	CHECK_NEEDS_HOOKS();
	const char *empty = path_in_dir("no-entries.gpucc");
	CHECK_INT(write_image(empty, 0, modules, 0), 0);
	const char *paths[] = {path_in_dir("a.gpucc"), empty};
	for (size_t i = 0; i < 2; i++) {
		size_t size;
		char *good = check_read_file(paths[i], &size);
		char a[512], b[512];
		for (int libarchive = 0; libarchive <= 1; libarchive++) {
			CHECK_INT(verdict(good, size - 1024, libarchive, a), GPUCC_ECORRUPT);
			CHECK(strstr(a, "truncated image: it ends before its last member's end marker"));
			CHECK_INT(verdict(good, size - 512, libarchive, b), 0);
		}
		free(good);
	}
}

/* bytes, then more: a new buffer of size + more_size bytes. */
static char *appended(const char *bytes, size_t size, const void *more, size_t more_size)
{
	char *out = malloc(size + more_size);
	CHECK(out != NULL);
	if (out) {
		memcpy(out, bytes, size);
		memcpy(out + size, more, more_size);
	}
	return out;
}

/* What follows the end-of-archive marker (formats/image.md, "Reading"):
 * zero bytes are tar's record padding and pass; any other byte is refused
 * by verify at its offset, by both readers alike, in memory (an embedded
 * image is exactly its bytes) and in a file; other readers never look. */
static void test_data_after_end(void)
{
	CHECK_NEEDS_HOOKS();
	size_t size;
	char *good = check_read_file(path_in_dir("a.gpucc"), &size);
	char a[512], b[512], want[512];
	static const char zeros[10240];
	/* Padding: a partial block, a block, a tar record's worth. */
	size_t padding[] = {1, 512, 10240 - 512};
	for (size_t i = 0; i < 3; i++) {
		char *padded = appended(good, size, zeros, padding[i]);
		CHECK_INT(verdict(padded, size + padding[i], false, a), 0);
		CHECK_INT(verdict(padded, size + padding[i], true, b), 0);
		free(padded);
	}
	/* A byte, a second image, a zero block and then junk where the
	 * marker's second block would be (one zero block is a whole marker). */
	char *junk = appended(good, size, "\n", 1);
	char *twice = appended(good, size, good, size);
	char *half = appended(good, size, "", 0);
	half[size - 512 + 3] = 'x';
	struct { const char *bytes; size_t size, offset; } bad[] = {
		{junk, size + 1, size}, {twice, 2 * size, size}, {half, size, size - 512 + 3},
	};
	for (size_t i = 0; i < 3; i++) {
		snprintf(want, sizeof want,
		         "'cut.gpucc': data after the end of the archive, at offset %zu (only zero "
		         "bytes may follow its end-of-archive marker)",
		         bad[i].offset);
		CHECK_INT(verdict(bad[i].bytes, bad[i].size, false, a), GPUCC_ECORRUPT);
		CHECK_INT(verdict(bad[i].bytes, bad[i].size, true, b), GPUCC_ECORRUPT);
		CHECK_STR(a, want);
		CHECK_STR(b, want);
	}
	/* From a file too; and opening and reading payloads do not look. */
	const char *path = path_in_dir("twice.gpucc");
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(twice, 1, 2 * size, f) == 2 * size);
	if (f)
		fclose(f);
	gpucc_image *img;
	CHECK_INT(gpucc_image_open(&img, path), 0);
	if (img) {
		for (size_t i = 0; i < payload_count(img); i++) {
			void *data;
			size_t n;
			CHECK_INT(gpucc_image_read_payload(&data, &n, img, gpucc_image_payload(img, i)), 0);
			gpucc_free(data);
		}
		CHECK_INT(gpucc_image_verify(img), GPUCC_ECORRUPT);
		CHECK_ERROR_HAS("data after the end of the archive, at offset");
		gpucc_image_free(img);
	}
	free(junk);
	free(twice);
	free(half);

	/* Compressed: offsets count decompressed bytes.  A second zstd frame
	 * continues the stream: zeros in it pass, a second image does not;
	 * bytes after the last frame that are not zstd are refused. */
	const char *zpath = path_in_dir("a.zst.gpucc");
	CHECK_INT(write_image(zpath, 3, modules, 5), 0);
	size_t zsize;
	char *zgood = check_read_file(zpath, &zsize);
	CHECK_INT(verdict(zgood, zsize, false, a), 0);
	/* A frame of 512 zero bytes: magic, no flags, a 1 KiB window, one
	 * last RLE block of 512 (header 1 | 1 << 1 | 512 << 3, little-endian)
	 * repeating the byte 0. */
	static const unsigned char zero_frame[] = {0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x00,
	                                           0x03, 0x10, 0x00, 0x00};
	char *zpadded = appended(zgood, zsize, zero_frame, sizeof zero_frame);
	CHECK_INT(verdict(zpadded, zsize + sizeof zero_frame, false, a), 0);
	char *ztwice = appended(zgood, zsize, zgood, zsize);
	snprintf(want, sizeof want,
	         "'cut.gpucc': data after the end of the archive, at offset %zu of its decompressed "
	         "bytes (only zero bytes may follow its end-of-archive marker)",
	         size);
	CHECK_INT(verdict(ztwice, 2 * zsize, false, a), GPUCC_ECORRUPT);
	CHECK_STR(a, want);
	char *zjunk = appended(zgood, zsize, "junk", 4);
	CHECK_INT(verdict(zjunk, zsize + 4, false, a), GPUCC_ECORRUPT);
	CHECK(strstr(a, "Zstd decompression failed") != NULL);
	free(zpadded);
	free(ztwice);
	free(zjunk);
	free(zgood);
	free(good);
}

/* bytes compressed as one zstd stream: a new buffer, its size in *out_size. */
static char *zstd_of(const char *bytes, size_t size, size_t *out_size)
{
	size_t capacity = size + 65536;
	char *out = malloc(capacity);
	struct archive *a = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	archive_write_set_format_raw(a);
	archive_write_add_filter_zstd(a);
	archive_write_set_bytes_in_last_block(a, 1);
	*out_size = 0;
	CHECK_INT(archive_write_open_memory(a, out, capacity, out_size), ARCHIVE_OK);
	archive_entry_set_filetype(e, AE_IFREG);
	CHECK_INT(archive_write_header(a, e), ARCHIVE_OK);
	CHECK_INT((int)archive_write_data(a, bytes, size), (int)size);
	CHECK_INT(archive_write_close(a), ARCHIVE_OK);
	archive_entry_free(e);
	archive_write_free(a);
	return out;
}

/* verify reads a compressed image in one pass of the decompressor (the
 * members, then what follows them) and gives the verdicts libarchive's
 * walk, followed by a second pass over the tail, gave: on the sound image,
 * zero padding, a byte or a second image after the end, junk in the
 * marker's second block, a control byte in the manifest and a cut. */
static void test_compressed_readers_agree(void)
{
	CHECK_NEEDS_HOOKS();
	size_t size;
	char *good = check_read_file(path_in_dir("a.gpucc"), &size);
	static const char zeros[10240];
	char *variants[8];
	size_t sizes[8];
	variants[0] = appended(good, size, "", 0);
	sizes[0] = size;
	variants[1] = appended(good, size, zeros, sizeof zeros);
	sizes[1] = size + sizeof zeros;
	variants[2] = appended(good, size, "\n", 1);
	sizes[2] = size + 1;
	variants[3] = appended(good, size, good, size);
	sizes[3] = 2 * size;
	variants[4] = appended(good, size, "", 0);
	variants[4][size - 512 + 3] = 'x';
	sizes[4] = size;
	/* A control byte inside the manifest: invalid JSON wherever it lands.
	 * (Flipping a bit there depended on the entries' bytes: it turned a
	 * digest's hex 'f' into 'F', which reads as the same digest.) */
	variants[5] = appended(good, size, "", 0);
	variants[5][2048 + 3] = 0x01;
	sizes[5] = size;
	variants[6] = appended(good, size, "", 0);
	sizes[6] = size - 1024;
	variants[7] = appended(good, size, zeros, 100);
	memcpy(variants[7] + size + 99, "!", 1);
	sizes[7] = size + 100;
	int want[8] = {0, 0, GPUCC_ECORRUPT, GPUCC_ECORRUPT, GPUCC_ECORRUPT, GPUCC_ECORRUPT,
	               GPUCC_ECORRUPT, GPUCC_ECORRUPT};
	for (size_t i = 0; i < 8; i++) {
		size_t zsize;
		char *z = zstd_of(variants[i], sizes[i], &zsize);
		char a[512], b[512];
		int ra = verdict(z, zsize, false, a), rb = verdict(z, zsize, true, b);
		if (ra != rb || strcmp(a, b) != 0)
			fprintf(stderr, "  variant %zu: one pass %d '%s', libarchive %d '%s'\n", i, ra, a,
			        rb, b);
		CHECK_INT(ra, want[i]);
		CHECK_INT(rb, want[i]);
		CHECK_STR(a, b);
		free(z);
		free(variants[i]);
	}
	free(good);
}

/* The payload list is built from the manifest on first use, and that can
 * fail after a successful open: one payload listed with two sizes.  The
 * count says so, instead of looking like an image without payloads. */
static void test_payload_count_failure(void)
{
	const char *path = path_in_dir("two-sizes.gpucc");
	CHECK_INT(write_image(path, 0, modules, 2), 0);
	size_t size;
	char *bytes = check_read_file(path, &size);
	/* Both entries list the shared 14-byte bitcode; make the last say 15
	 * (as many digits: the member keeps its size). */
	char *listed = NULL;
	for (char *at = bytes; (at = memmem(at, size - (size_t)(at - bytes), "\"size\":14}", 10));
	     at++)
		listed = at;
	CHECK(listed != NULL);
	if (!listed) {
		free(bytes);
		return;
	}
	listed[8] = '5';
	gpucc_image *img;
	CHECK_INT(gpucc_image_open_memory(&img, bytes, size, "two-sizes.gpucc"), 0);
	size_t count = 99;
	CHECK_INT(gpucc_image_count_payloads(&count, img), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("'two-sizes.gpucc': corrupt manifest: one payload listed with two sizes");
	CHECK_INT(count, 99);
	CHECK(gpucc_image_payload(img, 0) == NULL);
	/* The failure again, not a late success. */
	CHECK_INT(gpucc_image_count_payloads(&count, img), GPUCC_ECORRUPT);
	gpucc_image_free(img);
	free(bytes);

	/* An image without entries has no payloads, and says so with 0. */
	const char *empty = path_in_dir("none.gpucc");
	CHECK_INT(write_image(empty, 0, modules, 0), 0);
	CHECK_INT(gpucc_image_open(&img, empty), 0);
	CHECK_INT(gpucc_image_count_payloads(&count, img), 0);
	CHECK_INT(count, 0);
	gpucc_image_free(img);
}

/* Verify the image at path read from a pipe: what `cat x | gpucc verify
 * /dev/stdin` does. */
/* Verify the image at path read from a pipe, on descriptor 0 when
 * as_stdin (as `gpucc verify -` reads it). */
static int verify_from_pipe(const char *path, bool as_stdin)
{
	int fds[2];
	CHECK_INT(pipe(fds), 0);
	pid_t child = fork();
	if (child == 0) {
		close(fds[0]);
		size_t size;
		char *bytes = check_read_file(path, &size);
		for (size_t done = 0; bytes && done < size;) {
			ssize_t n = write(fds[1], bytes + done, size - done);
			if (n <= 0)
				_exit(1);
			done += (size_t)n;
		}
		_exit(0);
	}
	close(fds[1]);
	int saved = as_stdin ? dup(0) : -1;
	int fd = as_stdin ? dup2(fds[0], 0) : fds[0];
	gpucc_image *img;
	int rc = gpucc_image_open_fd(&img, fd, "pipe");
	if (rc == 0) {
		rc = gpucc_image_verify(img);
		gpucc_image_free(img);
	}
	close(fds[0]);
	if (as_stdin) {
		dup2(saved, 0);
		close(saved);
	}
	int status;
	waitpid(child, &status, 0);
	return rc;
}

static void test_verify_from_pipe(void)
{
	const char *plain = path_in_dir("pipe.gpucc"), *zstd = path_in_dir("pipe.zst.gpucc");
	CHECK_INT(write_image(plain, 0, modules, 5), 0);
	CHECK_INT(write_image(zstd, 3, modules, 5), 0);
	for (int as_stdin = 0; as_stdin < 2; as_stdin++) {
		CHECK_INT(verify_from_pipe(plain, as_stdin), 0);
		CHECK_INT(verify_from_pipe(zstd, as_stdin), 0);
	}
}

static void test_empty_image_and_failed_commit(void)
{
	const char *path = path_in_dir("empty.gpucc");
	CHECK_INT(write_image(path, 0, modules, 0), 0);
	gpucc_image *img;
	CHECK_INT(gpucc_image_open(&img, path), 0);
	if (img) {
		CHECK_INT(gpucc_image_entry_count(img), 0);
		CHECK_INT(gpucc_image_verify(img), 0);
		gpucc_image_free(img);
	}
	/* A commit into a missing directory fails and leaves nothing. */
	CHECK_INT(write_image(path_in_dir("no/such/dir.gpucc"), 0, modules, 1), GPUCC_ENOTFOUND);
	/* A file source that changes between add and commit is caught. */
	const char *src = path_in_dir("payload.ptx");
	FILE *f = fopen(src, "w");
	fputs("original", f);
	fclose(f);
	gpucc_image_writer *w;
	const char *out = path_in_dir("changed.gpucc");
	CHECK_INT(gpucc_image_writer_new(&w, out, NULL), 0);
	test_entry t;
	make_entry(&t, "m", "x", "sm_90");
	gpucc_payload_source s = {GPUCC_PART_PTX, src, NULL, 0};
	CHECK_INT(gpucc_image_writer_add(w, &t.e, &s, 1), 0);
	f = fopen(src, "w");
	fputs("modified", f);
	fclose(f);
	CHECK_INT(gpucc_image_writer_commit(w), GPUCC_ECORRUPT);
	gpucc_image_writer_free(w);
	struct stat st;
	CHECK(stat(out, &st) != 0);
}

/* ---- payloads copied from images, checked on a second thread ---------------- */

#define BIG_COUNT 8
#define BIG_SIZE ((size_t)1 << 20) /* BIG_COUNT of these pass the writer's threshold */

static char big_modules[BIG_COUNT][16];
static unsigned char *big_payloads[BIG_COUNT];

/* Distinct pseudo-random payloads, the same on every run. */
static void make_big_payloads(void)
{
	uint32_t x = 12345;
	for (size_t i = 0; i < BIG_COUNT; i++) {
		snprintf(big_modules[i], sizeof big_modules[i], "big%zu", i);
		big_payloads[i] = malloc(BIG_SIZE);
		for (size_t j = 0; j < BIG_SIZE; j++) {
			x = x * 1664525u + 1013904223u;
			big_payloads[i][j] = (unsigned char)(x >> 24);
		}
	}
}

/* An image of big entries first..last-1, written from memory (no image
 * sources, so no checker thread). */
static int write_big_image(const char *path, size_t first, size_t last, int zstd)
{
	gpucc_image_writer *w;
	gpucc_write_options opts = {.version = GPUCC_WRITE_OPTIONS_VERSION, .zstd_level = zstd};
	int rc = gpucc_image_writer_new(&w, path, &opts);
	for (size_t i = first; rc == 0 && i < last; i++) {
		test_entry t;
		make_entry(&t, big_modules[i], big_modules[i], "sm_90");
		gpucc_payload_source src = {GPUCC_PART_PTX, NULL, big_payloads[i], BIG_SIZE};
		rc = gpucc_image_writer_add(w, &t.e, &src, 1);
	}
	if (rc == 0)
		rc = gpucc_image_writer_commit(w);
	gpucc_image_writer_free(w);
	return rc;
}

/* Merge the images at paths (or of memory images of their bytes) into out
 * through the writer. */
static int merge_images(const char *out, const char *const *paths, size_t n, bool in_memory)
{
	gpucc_image *imgs[4] = {0};
	char *bytes[4] = {0};
	gpucc_image_writer *w = NULL;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (in_memory) {
			size_t size;
			bytes[i] = check_read_file(paths[i], &size);
			rc = gpucc_image_open_memory(&imgs[i], bytes[i], size, paths[i]);
		} else {
			rc = gpucc_image_open(&imgs[i], paths[i]);
		}
	}
	if (rc == 0)
		rc = gpucc_image_writer_new(&w, out, NULL);
	for (size_t i = 0; rc == 0 && i < n; i++)
		for (size_t j = 0; rc == 0 && j < gpucc_image_entry_count(imgs[i]); j++) {
			const gpucc_entry *e = gpucc_image_entry(imgs[i], j);
			if (!gpucc_image_writer_find(w, &e->key))
				rc = gpucc_image_writer_add_from(w, imgs[i], e);
		}
	if (rc == 0)
		rc = gpucc_image_writer_commit(w);
	gpucc_image_writer_free(w);
	for (size_t i = 0; i < n; i++) {
		gpucc_image_free(imgs[i]);
		free(bytes[i]);
	}
	return rc;
}

/* Flip the first byte of big payload i in the image file at path. */
static void flip_big_payload(const char *path, size_t i)
{
	size_t size;
	char *bytes = check_read_file(path, &size);
	char *at = NULL;
	for (size_t off = 0; bytes && off + 64 <= size && !at; off += 512)
		if (memcmp(bytes + off, big_payloads[i], 64) == 0)
			at = bytes + off;
	CHECK(at != NULL);
	if (at) {
		at[0] ^= 1;
		FILE *f = fopen(path, "wb");
		fwrite(bytes, 1, size, f);
		fclose(f);
	}
	free(bytes);
}

/* The message the reader gives for big payload i in the image named image. */
static void mismatch_message(char out[512], const char *image, size_t i)
{
	gpucc_digest d;
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_buffer(&d, big_payloads[i], BIG_SIZE);
	gpucc_digest_to_hex(hex, &d);
	snprintf(out, 512,
	         "'%s': member 'payloads/%s.ptx': SHA-256 digest mismatch (the payload is corrupt)",
	         image, hex);
}

/* No temporary file of a failed commit is left in the test directory. */
static bool no_temporary_files(void)
{
	char command[512];
	snprintf(command, sizeof command, "ls -A '%s' | grep -q '\\.tmp\\.'", check_dir);
	return system(command) != 0;
}

static void test_threaded_merge(void)
{
	make_big_payloads();
	const char *all = path_in_dir("big-all.gpucc"), *a = path_in_dir("big-a.gpucc"),
	           *b = path_in_dir("big-b.gpucc");
	const char *az = path_in_dir("big-a.gpucc.zst"), *bz = path_in_dir("big-b.gpucc.zst");
	CHECK_INT(write_big_image(all, 0, BIG_COUNT, 0), 0);
	CHECK_INT(write_big_image(a, 0, 5, 0), 0);
	CHECK_INT(write_big_image(b, 3, BIG_COUNT, 0), 0);
	CHECK_INT(write_big_image(az, 0, 5, 1), 0);
	CHECK_INT(write_big_image(bz, 3, BIG_COUNT, 1), 0);

	/* The same bytes as writing the entries directly, in any order, from
	 * files or memory, read at computed offsets (uncompressed) or through
	 * libarchive (compressed). */
	const char *ab[] = {a, b}, *ba[] = {b, a}, *abz[] = {az, bz}, *baz[] = {bz, az};
	const char *out = path_in_dir("big-merged.gpucc");
	for (int compressed = 0; compressed <= 1; compressed++)
		for (int in_memory = 0; in_memory <= 1; in_memory++)
			for (int order = 0; order <= 1; order++) {
				const char *const *inputs = compressed ? (order ? baz : abz) : (order ? ba : ab);
				unlink(out);
				CHECK_INT(merge_images(out, inputs, 2, in_memory), 0);
				if (!same_file(out, all))
					fprintf(stderr, "  differs: compressed %d, memory %d, order %d\n",
					        compressed, in_memory, order);
				CHECK(same_file(out, all));
			}

	/* A corrupt payload in an input fails the merge with the reader's
	 * message and leaves no output, whichever way the input is read; with
	 * two, the first in archive order is named. */
	const char *bad = path_in_dir("big-bad.gpucc");
	const char *failed = path_in_dir("big-failed.gpucc");
	CHECK_INT(write_big_image(bad, 0, 5, 0), 0);
	flip_big_payload(bad, 1);
	flip_big_payload(bad, 3);
	gpucc_digest d1, d3;
	gpucc_digest_buffer(&d1, big_payloads[1], BIG_SIZE);
	gpucc_digest_buffer(&d3, big_payloads[3], BIG_SIZE);
	size_t first = gpucc_digest_compare(&d1, &d3) < 0 ? 1 : 3;
	const char *inputs[] = {b, bad};
	for (int libarchive = 0; libarchive <= 1; libarchive++)
		for (int in_memory = 0; in_memory <= 1; in_memory++) {
			if (libarchive && !check_hooks_built) {
				CHECK_SKIP_PART(CHECK_HOOKS_REASON);
				continue;
			}
			gpucc_image_force_libarchive(libarchive);
			unlink(failed);
			CHECK_INT(merge_images(failed, inputs, 2, in_memory), GPUCC_ECORRUPT);
			gpucc_image_force_libarchive(false);
			char expected[512];
			mismatch_message(expected, bad, first);
			CHECK_STR(gpucc_error_last()->message, expected);
			struct stat st;
			CHECK(stat(failed, &st) != 0);
			CHECK(no_temporary_files());
		}
	for (size_t i = 0; i < BIG_COUNT; i++)
		free(big_payloads[i]);
}

/* A compressed image is the same bytes whatever number of threads zstd
 * compresses on (formats/image.md), and the level asked for is the level
 * used.  8 MiB of text is several zstd jobs at level 1. */
static void test_zstd_workers(void)
{
	CHECK_NEEDS_HOOKS();
	static const char *const words[] = {"ld.global.f32", "st.global.f32", "fma.rn.f32",
	                                    "add.s32", "mov.u32", "setp.lt.s32", "%r", "\n\t"};
	size_t size = (size_t)8 << 20, used = 0;
	char *text = malloc(size);
	uint32_t x = 7;
	while (used < size) {
		x = x * 1664525u + 1013904223u;
		const char *word = words[(x >> 24) % 8];
		for (size_t i = 0; word[i] && used < size; i++)
			text[used++] = word[i];
		if (used < size)
			text[used++] = (char)('0' + (x >> 8) % 10);
	}
	test_entry t;
	make_entry(&t, "text", "text", "sm_90");
	gpucc_payload_source src = {GPUCC_PART_PTX, NULL, text, size};
	char path[4][32];
	size_t sizes[4];
	for (int run = 0; run < 4; run++) {
		/* workers 1, 2, 3 at level 1; then 2 workers at level 6 */
		gpucc_image_writer_zstd_workers(run < 3 ? (size_t)run + 1 : 2);
		gpucc_write_options opts = {.version = GPUCC_WRITE_OPTIONS_VERSION, .zstd_level = run < 3 ? 1 : 6};
		snprintf(path[run], sizeof path[run], "zstd-%d.gpucc", run);
		gpucc_image_writer *w;
		CHECK_INT(gpucc_image_writer_new(&w, path_in_dir(path[run]), &opts), 0);
		CHECK_INT(gpucc_image_writer_add(w, &t.e, &src, 1), 0);
		CHECK_INT(gpucc_image_writer_commit(w), 0);
		gpucc_image_writer_free(w);
		free(check_read_file(path_in_dir(path[run]), &sizes[run]));
	}
	gpucc_image_writer_zstd_workers(0);
	CHECK(same_file(path_in_dir(path[0]), path_in_dir(path[1])));
	CHECK(same_file(path_in_dir(path[0]), path_in_dir(path[2])));
	CHECK(sizes[0] < size / 2);
	CHECK(sizes[3] < sizes[0]);

	for (int run = 0; run < 4; run += 3) {
		gpucc_image *img;
		CHECK_INT(gpucc_image_open(&img, path_in_dir(path[run])), 0);
		CHECK_INT(gpucc_image_verify(img), 0);
		void *back;
		size_t back_size;
		CHECK_INT(gpucc_image_read_payload(&back, &back_size, img,
		                                   &gpucc_image_entry(img, 0)->payloads[0]),
		          0);
		CHECK(back_size == size && memcmp(back, text, size) == 0);
		gpucc_free(back);
		gpucc_image_free(img);
	}
	free(text);
}

/* The limits on reading (formats/image.md, "Limits"): a real image that
 * expands 20 MiB of zeros from a few KiB is refused at the default ratio,
 * through a file and in memory, and read when the limits are raised. */
static void test_limits(void)
{
	const char *path = path_in_dir("zeros.gpucc");
	size_t size = (size_t)20 << 20;
	char *zeros = calloc(1, size);
	gpucc_image_writer *w;
	gpucc_write_options opts = {.version = GPUCC_WRITE_OPTIONS_VERSION, .zstd_level = 3};
	test_entry t;
	make_entry(&t, "zeros", "zeros", "sm_90");
	gpucc_payload_source src = {GPUCC_PART_PTX, NULL, zeros, size};
	CHECK_INT(gpucc_image_writer_new(&w, path, &opts), 0);
	CHECK_INT(gpucc_image_writer_add(w, &t.e, &src, 1), 0);
	CHECK_INT(gpucc_image_writer_commit(w), 0);
	gpucc_image_writer_free(w);
	free(zeros);

	gpucc_image *img;
	CHECK_INT(gpucc_image_open(&img, path), 0);
	CHECK_INT(gpucc_image_verify(img), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("1000-fold");
	CHECK_ERROR_HAS("raise the image limit ratio=N");
	gpucc_image_free(img);
	/* Defaults a program sets (as the command does from its environment):
	 * the refusal names its setting; ratio=0 turns the check off. */
	gpucc_image_limits set = GPUCC_IMAGE_LIMITS_INIT;
	CHECK_INT(gpucc_image_limits_parse(&set, "ratio=500"), 0);
	CHECK_INT(gpucc_image_set_default_limits(&set, "MY_LIMITS"), 0);
	CHECK_INT(gpucc_image_open(&img, path), 0);
	CHECK_INT(gpucc_image_verify(img), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("500-fold");
	CHECK_ERROR_HAS("raise the limit with MY_LIMITS=ratio=N");
	gpucc_image_free(img);
	CHECK_INT(gpucc_image_limits_parse(&set, "ratio=0"), 0);
	CHECK_INT(gpucc_image_set_default_limits(&set, NULL), 0);
	CHECK_INT(gpucc_image_open(&img, path), 0);
	CHECK_INT(gpucc_image_verify(img), 0);
	gpucc_image_free(img);
	CHECK_INT(gpucc_image_limits_parse(&set, "ratio=1000,bogus=1"), GPUCC_EINVALID);
	CHECK_ERROR_HAS("'bogus=1' is not NAME=VALUE");
	CHECK(set.expansion_ratio == UINT64_MAX); /* unchanged: ratio=0 is "off" */
	CHECK_INT(gpucc_image_set_default_limits(NULL, NULL), 0);
	size_t file_size;
	char *bytes = check_read_file(path, &file_size);
	CHECK_INT(gpucc_image_open_memory(&img, bytes, file_size, "memory"), 0);
	CHECK_INT(gpucc_image_verify(img), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("1000-fold");
	gpucc_image_free(img);
	free(bytes);

	gpucc_image_limits limits = {.version = GPUCC_IMAGE_LIMITS_VERSION, .expansion_ratio = UINT64_MAX};
	CHECK_INT(gpucc_image_open_limited(&img, path, &limits), 0);
	CHECK_INT(gpucc_image_verify(img), 0);
	gpucc_image_free(img);
	limits.expanded_size = (uint64_t)8 << 20;
	CHECK_INT(gpucc_image_open_limited(&img, path, &limits), 0);
	CHECK_INT(gpucc_image_verify(img), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("more than 8 MiB when decompressed");
	CHECK_ERROR_HAS("(a limit the caller set)");
	gpucc_image_free(img);
	limits = (gpucc_image_limits){.version = GPUCC_IMAGE_LIMITS_VERSION, .manifest_size = 64};
	CHECK_INT(gpucc_image_open_limited(&img, path, &limits), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("more than the limit of 64 bytes");

	/* The program sets the defaults (the command from GPUCC_IMAGE_LIMITS);
	 * 0 turns a check off; the environment itself changes nothing. */
	setenv("GPUCC_IMAGE_LIMITS", "ratio=7", 1);
	CHECK_INT(gpucc_image_default_limits(&limits), 0);
	CHECK(limits.expansion_ratio == 1000);
	unsetenv("GPUCC_IMAGE_LIMITS");
	limits = (gpucc_image_limits)GPUCC_IMAGE_LIMITS_INIT;
	CHECK_INT(gpucc_image_limits_parse(&limits, "ratio=0,expanded=1G,manifest=1M"), 0);
	CHECK_INT(gpucc_image_set_default_limits(&limits, NULL), 0);
	CHECK_INT(gpucc_image_default_limits(&limits), 0);
	CHECK(limits.expansion_ratio == UINT64_MAX);
	CHECK(limits.expanded_size == (uint64_t)1 << 30);
	CHECK(limits.manifest_size == (uint64_t)1 << 20);
	CHECK_INT(gpucc_image_open(&img, path), 0);
	CHECK_INT(gpucc_image_verify(img), 0);
	gpucc_image_free(img);
	CHECK_INT(gpucc_image_limits_parse(&limits, "ratio=1000,nonsense"), GPUCC_EINVALID);
	CHECK_ERROR_HAS("'nonsense'");
	CHECK_INT(gpucc_image_set_default_limits(NULL, NULL), 0);
}

/* A manifest's parsed form counts against the manifest limit: 70,000
 * kernels '{"name":"k"}' are under 1 MiB of JSON but several MiB parsed. */
static void test_parsed_manifest_limit(void)
{
	enum { KERNELS = 70000 };
	const char *path = path_in_dir("kernels.gpucc");
	gpucc_kernel *kernels = calloc(KERNELS, sizeof *kernels);
	for (size_t i = 0; i < KERNELS; i++)
		kernels[i] = (gpucc_kernel){"k", -1, -1, -1};
	test_entry t;
	make_entry(&t, "kernels", "kernels", "sm_90");
	t.e.kernel_count = KERNELS;
	t.e.kernels = kernels;
	gpucc_payload_source src = {GPUCC_PART_PTX, NULL, "ptx", 3};
	gpucc_image_writer *w;
	CHECK_INT(gpucc_image_writer_new(&w, path, NULL), 0);
	CHECK_INT(gpucc_image_writer_add(w, &t.e, &src, 1), 0);
	CHECK_INT(gpucc_image_writer_commit(w), 0);
	gpucc_image_writer_free(w);
	free(kernels);

	gpucc_image *img;
	gpucc_image_limits limits = {.version = GPUCC_IMAGE_LIMITS_VERSION, .manifest_size = (uint64_t)1 << 20};
	CHECK_INT(gpucc_image_open_limited(&img, path, &limits), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("the manifest's parsed form would take more than 1048576 bytes");
	/* The caller's limit: GPUCC_IMAGE_LIMITS would not raise it. */
	CHECK_ERROR_HAS("a limit the caller set");
	CHECK(strstr(gpucc_error_last()->message, "GPUCC_IMAGE_LIMITS") == NULL);
	limits.manifest_size = (uint64_t)16 << 20;
	CHECK_INT(gpucc_image_open_limited(&img, path, &limits), 0);
	if (img) {
		CHECK_INT(gpucc_image_entry(img, 0)->kernel_count, KERNELS);
		gpucc_image_free(img);
	}
}

/* The descriptors this process has open. */
static size_t open_fds(void)
{
	size_t n = 0;
	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) != -1;
	return n;
}

/* A parked image holds no descriptor, reads (and verifies) as before by
 * reopening its file, and refuses a file replaced or removed meanwhile. */
static void test_parked(void)
{
	const char *path = path_in_dir("parked.gpucc");
	const char *other = path_in_dir("other.gpucc");
	CHECK_INT(write_image(path, 0, modules, 5), 0);
	CHECK_INT(write_image(other, 0, modules, 4), 0);
	gpucc_image *img;
	CHECK_INT(gpucc_image_open(&img, path), 0);
	if (!img)
		return;
	size_t before = open_fds();
	CHECK_INT(gpucc_image_park(img, path), 0);
	CHECK_INT(open_fds(), before - 1);
	const gpucc_payload *p = gpucc_image_payload(img, 0);
	gpucc_payload_location loc;
	CHECK_INT(gpucc_image_payload_location(img, p, &loc), 1);
	void *data;
	size_t size;
	CHECK_INT(gpucc_image_read_payload(&data, &size, img, p), 0);
	CHECK_INT(size, p->size);
	gpucc_free(data);
	CHECK_INT(gpucc_image_verify(img), 0);
	CHECK_INT(open_fds(), before - 1); /* closed again after each read */
	/* Another file renamed over it: refused, not read. */
	CHECK_INT(rename(other, path), 0);
	CHECK_INT(gpucc_image_read_payload(&data, &size, img, p), GPUCC_ERROR);
	CHECK(strstr(gpucc_error_last()->message, "was removed, replaced or changed") != NULL);
	unlink(path);
	CHECK_INT(gpucc_image_verify(img), GPUCC_ERROR);
	CHECK_INT(open_fds(), before - 1);
	gpucc_image_free(img);
}

/* The file of a parked image changed in place -- the same inode, grown, or
 * only touched -- is refused too; a compressed image parks, keeping its
 * decompressor between reads. */
static void test_parked_changed(void)
{
	const char *path = path_in_dir("changed.gpucc");
	CHECK_INT(write_image(path, 0, modules, 5), 0);
	gpucc_image *img;
	CHECK_INT(gpucc_image_open(&img, path), 0);
	if (!img)
		return;
	CHECK_INT(gpucc_image_park(img, path), 0);
	CHECK(gpucc_image_is_parked(img));
	const gpucc_payload *p = gpucc_image_payload(img, 0);
	void *data;
	size_t size;
	CHECK_INT(gpucc_image_read_payload(&data, &size, img, p), 0);
	gpucc_free(data);
	struct timespec times[2] = {{0, UTIME_OMIT}, {12345, 0}};
	CHECK_INT(utimensat(AT_FDCWD, path, times, 0), 0);
	CHECK_INT(gpucc_image_read_payload(&data, &size, img, p), GPUCC_ERROR);
	CHECK(strstr(gpucc_error_last()->message, "changed while it was being read") != NULL);
	gpucc_image_free(img);

	CHECK_INT(gpucc_image_open(&img, path), 0);
	if (!img)
		return;
	CHECK_INT(gpucc_image_park(img, path), 0);
	int fd = open(path, O_WRONLY | O_APPEND);
	CHECK(fd >= 0);
	CHECK_INT(write(fd, "\0", 1), 1);
	close(fd);
	CHECK_INT(gpucc_image_verify(img), GPUCC_ERROR);
	gpucc_image_free(img);

	const char *zpath = path_in_dir("parked.gpucc.zst");
	CHECK_INT(write_image(zpath, 3, modules, 5), 0);
	CHECK_INT(gpucc_image_open(&img, zpath), 0);
	if (!img)
		return;
	size_t before = open_fds();
	CHECK_INT(gpucc_image_park(img, zpath), 0);
	CHECK(gpucc_image_is_parked(img));
	CHECK_INT(open_fds(), before - 1);
	size_t n = payload_count(img);
	for (size_t i = 0; i < n; i++) {
		CHECK_INT(gpucc_image_read_payload(&data, &size, img, gpucc_image_payload(img, i)), 0);
		gpucc_free(data);
		CHECK_INT(open_fds(), before - 1);
	}
	CHECK_INT(gpucc_image_check_whole(img), 0);
	/* Read again from the start after the check. */
	CHECK_INT(gpucc_image_read_payload(&data, &size, img, gpucc_image_payload(img, 0)), 0);
	gpucc_free(data);
	CHECK_INT(open_fds(), before - 1);
	const char *replacement = path_in_dir("replacement.gpucc.zst");
	CHECK_INT(write_image(replacement, 3, modules, 5), 0);
	CHECK_INT(rename(replacement, zpath), 0);
	CHECK_INT(gpucc_image_read_payload(&data, &size, img, gpucc_image_payload(img, 1)), GPUCC_ERROR);
	CHECK(strstr(gpucc_error_last()->message, "was removed, replaced or changed") != NULL);
	gpucc_image_free(img);
}

/* Write size bytes of data to path: 0 or -1. */
static int write_bytes(const char *path, const void *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	bool ok = write(fd, data, size) == (ssize_t)size;
	return close(fd) == 0 && ok ? 0 : -1;
}

/* gpucc_image_check_whole: an uncompressed image cut anywhere after its
 * manifest is refused by its length, naming the defect as verify does,
 * though no payload is read; a whole one passes, in a file or in memory;
 * a compressed one passes after its payloads are read, or before. */
static void test_check_whole(void)
{
	const char *path = path_in_dir("whole.gpucc");
	const char *cut = path_in_dir("cut.gpucc");
	CHECK_INT(write_image(path, 0, modules, 5), 0);
	size_t size;
	char *bytes = check_read_file(path, &size);
	if (!bytes)
		return;
	gpucc_image *img;
	CHECK_INT(gpucc_image_open(&img, path), 0);
	CHECK_INT(gpucc_image_check_whole(img), 0);
	gpucc_payload_location first = {0};
	CHECK_INT(gpucc_image_payload_location(img, gpucc_image_payload(img, 0), &first), 0);
	gpucc_image_free(img);
	CHECK_INT(gpucc_image_open_memory(&img, bytes, size, "whole"), 0);
	CHECK_INT(gpucc_image_check_whole(img), 0);
	gpucc_image_free(img);
	/* Cut inside the last payload, before its end marker, and just after
	 * the manifest: each opens (the manifest is whole) but is refused. */
	size_t cuts[] = {size - 2 * 512 - 1, size - 2 * 512, (size_t)first.header_offset + 1};
	for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
		CHECK_INT(write_bytes(cut, bytes, cuts[i]), 0);
		CHECK_INT(gpucc_image_open(&img, cut), 0);
		if (!img)
			continue;
		CHECK_INT(gpucc_image_check_whole(img), GPUCC_ECORRUPT);
		CHECK(strstr(gpucc_error_last()->message, "cut.gpucc': ") != NULL);
		CHECK(strstr(gpucc_error_last()->message, "truncated") != NULL);
		gpucc_image_free(img);
		CHECK_INT(gpucc_image_open_memory(&img, bytes, cuts[i], "cut"), 0);
		if (img)
			CHECK_INT(gpucc_image_check_whole(img), GPUCC_ECORRUPT);
		gpucc_image_free(img);
	}
	/* One zero block after the last member is enough. */
	CHECK_INT(write_bytes(cut, bytes, size - 512), 0);
	CHECK_INT(gpucc_image_open(&img, cut), 0);
	CHECK_INT(gpucc_image_check_whole(img), 0);
	gpucc_image_free(img);
	free(bytes);

	const char *zpath = path_in_dir("whole.gpucc.zst");
	CHECK_INT(write_image(zpath, 3, modules, 5), 0);
	CHECK_INT(gpucc_image_open(&img, zpath), 0);
	CHECK_INT(gpucc_image_check_whole(img), 0);
	void *data;
	size_t data_size;
	CHECK_INT(gpucc_image_read_payload(&data, &data_size, img, gpucc_image_payload(img, 2)), 0);
	gpucc_free(data);
	CHECK_INT(gpucc_image_check_whole(img), 0);
	gpucc_image_free(img);
}

int main(void)
{
	if (check_dir_create("test-image") != 0)
		return 1;
	unsetenv("SOURCE_DATE_EPOCH");
	RUN(test_round_trip);
	RUN(test_deterministic);
	RUN(test_compressed_and_sources);
	RUN(test_lookup);
	RUN(test_conflict);
	RUN(test_corruption_is_caught);
	RUN(test_unlisted_member_is_named);
	RUN(test_readers_agree);
	RUN(test_readers_agree_on_end_marker);
	RUN(test_data_after_end);
	RUN(test_compressed_readers_agree);
	RUN(test_payload_count_failure);
	RUN(test_verify_from_pipe);
	RUN(test_empty_image_and_failed_commit);
	RUN(test_threaded_merge);
	RUN(test_zstd_workers);
	RUN(test_limits);
	RUN(test_parsed_manifest_limit);
	RUN(test_parked);
	RUN(test_parked_changed);
	RUN(test_check_whole);
	if (check_dir_remove() != 0)
		return 1;
	return CHECK_DONE();
}
