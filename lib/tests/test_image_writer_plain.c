/*
 * lib/tests/test_image_writer_plain.c -- the plain writer
 * (lib/image/image_writer_plain.c), which writes uncompressed images itself and
 * copies payloads on several threads, against the libarchive writer: the
 * same bytes for payloads from memory, from files and from images (mapped
 * or read through a file, small, empty, block-sized and larger than a
 * read-ahead window, enough of them for worker threads); the fall-back to
 * libarchive where a header needs pax; corrupt and truncated sources, where
 * the first defect in archive order is reported every time and nothing is
 * published; a payload file that changes before commit, or is not a
 * regular file; and an image without entries.
 */
#include "check.h"

#include <gpucc.h>

#include "image_writer_impl.h"
#include "check_hooks.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ENTRIES 48

static const gpucc_part parts[] = {GPUCC_PART_PTX, GPUCC_PART_CUBIN, GPUCC_PART_HSACO};

/* Payload sizes: empty, around a block, and up to 300 KiB (past the 256
 * KiB read-ahead window); 48 of them add up to more than the 4 MiB that
 * starts worker threads. */
static size_t payload_size(size_t i)
{
	static const size_t sizes[] = {0, 1, 511, 512, 513, 300 << 10, 150000, 90001};
	return sizes[i % (sizeof sizes / sizeof *sizes)];
}

static unsigned char *payload_bytes(size_t i, const char *variant, size_t *size)
{
	*size = payload_size(i);
	unsigned char *p = malloc(*size + 1);
	for (size_t k = 0; k < *size; k++)
		p[k] = (unsigned char)(i * 131 + k * 7 + (unsigned char)variant[0]);
	if (*size >= 16)
		snprintf((char *)p, 16, "#%s%05zu", variant, i); /* distinct contents */
	return p;
}

static void make_entry(gpucc_entry *e, gpucc_kernel *k, char *target, const char *variant, size_t i)
{
	memset(e, 0, sizeof *e);
	gpucc_target parsed;
	CHECK_INT(gpucc_target_parse(&parsed, i % 2 ? "gfx90a" : "sm_90"), 0);
	gpucc_target_format(target, &parsed);
	*k = (gpucc_kernel){"kernel", -1, -1, -1};
	char module[64];
	snprintf(module, sizeof module, "module %s %zu", variant, i);
	e->key_schema = 1;
	e->module = "module.ll";
	gpucc_digest_buffer(&e->module_sha256, module, strlen(module));
	e->target = target;
	e->triple = gpucc_target_triple(&parsed);
	e->gpucc_version = gpucc_version();
	e->llvm_version = "19.1.7";
	e->kernel_count = 1;
	e->kernels = k;
	CHECK_INT(gpucc_entry_compute_key(&e->key, e), 0);
}

/* An image of ENTRIES entries named after variant, payloads from memory
 * (from files for every fourth entry when files is set). */
static int write_source(const char *path, const char *variant, bool files,
                        const gpucc_write_options *opts)
{
	gpucc_image_writer *w;
	int rc = gpucc_image_writer_new(&w, path, opts);
	unsigned char *bytes[ENTRIES] = {0};
	for (size_t i = 0; rc == 0 && i < ENTRIES; i++) {
		gpucc_entry e;
		gpucc_kernel k;
		char target[GPUCC_TARGET_NAME_SIZE];
		make_entry(&e, &k, target, variant, i);
		size_t size;
		bytes[i] = payload_bytes(i, variant, &size);
		gpucc_payload_source src = {parts[i % 3], NULL, bytes[i], size};
		char file[64];
		if (files && i % 4 == 0) {
			snprintf(file, sizeof file, "payload-%s-%zu", variant, i);
			const char *at = path_in_dir(file);
			FILE *f = fopen(at, "wb");
			CHECK(f && fwrite(bytes[i], 1, size, f) == size);
			if (f)
				fclose(f);
			src.path = at;
			src.data = NULL;
		}
		rc = gpucc_image_writer_add(w, &e, &src, 1);
	}
	if (rc == 0)
		rc = gpucc_image_writer_commit(w);
	gpucc_image_writer_free(w);
	for (size_t i = 0; i < ENTRIES; i++)
		free(bytes[i]);
	return rc;
}

static int write_empty(const char *path, const gpucc_write_options *opts)
{
	gpucc_image_writer *w;
	int rc = gpucc_image_writer_new(&w, path, opts);
	if (rc == 0)
		rc = gpucc_image_writer_commit(w);
	gpucc_image_writer_free(w);
	return rc;
}

/* Merge the images at paths into out: every entry of each. */
static int merge(const char *out, const char *const *paths, size_t count, bool mapped,
                 const gpucc_write_options *opts)
{
	gpucc_image *images[4] = {0};
	gpucc_image_writer *w = NULL;
	int rc = gpucc_image_writer_new(&w, out, opts);
	for (size_t s = 0; rc == 0 && s < count; s++) {
		rc = mapped ? gpucc_image_open_mapped(&images[s], paths[s])
		            : gpucc_image_open(&images[s], paths[s]);
		for (size_t i = 0; rc == 0 && i < gpucc_image_entry_count(images[s]); i++)
			rc = gpucc_image_writer_add_from(w, images[s], gpucc_image_entry(images[s], i));
	}
	if (rc == 0)
		rc = gpucc_image_writer_commit(w);
	gpucc_image_writer_free(w);
	for (size_t s = 0; s < count; s++)
		gpucc_image_free(images[s]);
	return rc;
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

/* Write with the plain writer into "NAME.plain", then through libarchive
 * into "NAME.la"; both must succeed with the same bytes.  (Without the
 * test hooks, the plain writer's half only.) */
#define BOTH_WRITERS(name, call_with_out)                                        \
	do {                                                                         \
		char plain_[64], la_[64];                                                \
		snprintf(plain_, sizeof plain_, "%s", path_in_dir(name ".plain"));       \
		snprintf(la_, sizeof la_, "%s", path_in_dir(name ".la"));                \
		const char *out_ = plain_;                                               \
		unsigned long plain_before_ = gpucc_plain_images_written;                \
		CHECK_INT(call_with_out, 0);                                             \
		plain_written_ += gpucc_plain_images_written - plain_before_;            \
		if (!check_hooks_built) {                                                \
			CHECK_SKIP_PART(CHECK_HOOKS_REASON);                                 \
			break;                                                               \
		}                                                                        \
		gpucc_image_writer_force_libarchive(true);                               \
		out_ = la_;                                                              \
		CHECK_INT(call_with_out, 0);                                             \
		gpucc_image_writer_force_libarchive(false);                              \
		CHECK(same_file(plain_, la_));                                           \
	} while (0)

/* How many of the images BOTH_WRITERS wrote the plain writer wrote. */
static unsigned long plain_written_;

static void test_sources_same_bytes(void)
{
	gpucc_write_options dated = {.version = GPUCC_WRITE_OPTIONS_VERSION, .use_mtime = true, .mtime = 1700000000};
	BOTH_WRITERS("memory", write_source(out_, "m", false, NULL));
	BOTH_WRITERS("files", write_source(out_, "f", true, NULL));
	BOTH_WRITERS("dated", write_source(out_, "d", true, &dated));
	CHECK_INT(plain_written_, 3);
}

static void test_merge_same_bytes(void)
{
	char a[64], b[64];
	snprintf(a, sizeof a, "%s", path_in_dir("a.gpucc"));
	snprintf(b, sizeof b, "%s", path_in_dir("b.gpucc"));
	CHECK_INT(write_source(a, "a", false, NULL), 0);
	CHECK_INT(write_source(b, "b", true, NULL), 0);
	const char *both[] = {a, b}, *twice[] = {a, a};
	/* Threads as there are CPUs; then one; then more than there are. */
	unsigned long workers = gpucc_plain_workers_started;
	plain_written_ = 0;
	BOTH_WRITERS("merged", merge(out_, both, 2, false, NULL));
	BOTH_WRITERS("mapped", merge(out_, both, 2, true, NULL));
	BOTH_WRITERS("duplicates", merge(out_, twice, 2, false, NULL));
	CHECK_INT(plain_written_, 3);
	if (sysconf(_SC_NPROCESSORS_ONLN) > 1)
		CHECK(gpucc_plain_workers_started > workers);
	for (size_t threads = 1; threads <= 5; threads += 4) {
		gpucc_plain_writer_threads(threads);
		workers = gpucc_plain_workers_started;
		BOTH_WRITERS("threads", merge(out_, both, 2, threads == 1, NULL));
		CHECK_INT(gpucc_plain_workers_started - workers, threads - 1);
		CHECK(same_file(path_in_dir("threads.plain"), path_in_dir("merged.plain")));
	}
	gpucc_plain_writer_threads(0);
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open(&img, path_in_dir("merged.plain")), 0);
	if (img) {
		CHECK_INT(gpucc_image_entry_count(img), 2 * ENTRIES);
		CHECK_INT(gpucc_image_verify(img), 0);
		gpucc_image_free(img);
	}
	/* Compressed inputs are not read at computed offsets: libarchive
	 * writes, with the same bytes. */
	char z[64];
	snprintf(z, sizeof z, "%s", path_in_dir("z.gpucc"));
	gpucc_write_options zstd = {.version = GPUCC_WRITE_OPTIONS_VERSION, .zstd_level = 3};
	CHECK_INT(write_source(z, "a", false, &zstd), 0);
	const char *compressed[] = {z, b};
	plain_written_ = 0;
	BOTH_WRITERS("from-zstd", merge(out_, compressed, 2, false, NULL));
	CHECK_INT(plain_written_, 0);
	CHECK(same_file(path_in_dir("from-zstd.plain"), path_in_dir("merged.plain")));
}

/* An mtime beyond 11 octal digits needs a pax header: the plain writer
 * leaves the image to libarchive, which writes it readably. */
static void test_pax_falls_back(void)
{
	gpucc_write_options far = {.version = GPUCC_WRITE_OPTIONS_VERSION, .use_mtime = true, .mtime = (int64_t)1 << 34};
	plain_written_ = 0;
	BOTH_WRITERS("far", write_source(out_, "p", false, &far));
	CHECK_INT(plain_written_, 0);
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open(&img, path_in_dir("far.plain")), 0);
	if (img) {
		CHECK_INT(gpucc_image_verify(img), 0);
		gpucc_image_free(img);
	}
}

/* The offset of needle (size bytes) in the file at path, or -1. */
static long find_bytes(const char *path, const unsigned char *needle, size_t size)
{
	size_t n;
	unsigned char *data = check_read_file(path, &n);
	long at = -1;
	for (size_t i = 0; data && i + size <= n; i += 512)
		if (memcmp(data + i, needle, size) == 0) {
			at = (long)i;
			break;
		}
	free(data);
	return at;
}

static void flip_byte(const char *path, long offset)
{
	int fd = open(path, O_RDWR);
	unsigned char c = 0;
	CHECK(fd >= 0 && pread(fd, &c, 1, offset) == 1);
	c ^= 0x5a;
	CHECK(fd >= 0 && pwrite(fd, &c, 1, offset) == 1);
	if (fd >= 0)
		close(fd);
}

/* The member name of payload i of variant. */
static void member_of(char *out, size_t out_size, size_t i, const char *variant)
{
	size_t size;
	unsigned char *bytes = payload_bytes(i, variant, &size);
	gpucc_payload p = {.part = parts[i % 3], .size = size};
	gpucc_digest_buffer(&p.sha256, bytes, size);
	free(bytes);
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &p.sha256);
	snprintf(out, out_size, "payloads/%s%s", hex, gpucc_part_extension(p.part));
}

/* Two corrupt payloads: the merge fails naming the one first in archive
 * order, whichever thread meets which first, and publishes nothing. */
static void test_corrupt_source(void)
{
	char c[64], b[64], out[64];
	snprintf(c, sizeof c, "%s", path_in_dir("corrupt.gpucc"));
	snprintf(b, sizeof b, "%s", path_in_dir("b.gpucc"));
	snprintf(out, sizeof out, "%s", path_in_dir("never.gpucc"));
	CHECK_INT(write_source(c, "c", false, NULL), 0);
	char first[128] = "", member[128];
	for (size_t i = 5; i < ENTRIES; i += 24) { /* two 300 KiB payloads */
		size_t size;
		unsigned char *bytes = payload_bytes(i, "c", &size);
		long at = find_bytes(c, bytes, 64);
		free(bytes);
		CHECK(at > 0);
		flip_byte(c, at + (long)size / 2);
		member_of(member, sizeof member, i, "c");
		if (!first[0] || strcmp(member, first) < 0)
			snprintf(first, sizeof first, "%s", member);
	}
	const char *inputs[] = {b, c};
	for (size_t run = 0; run < 6; run++) {
		gpucc_plain_writer_threads(run % 3 + 1);
		CHECK_INT(merge(out, inputs, 2, run % 2, NULL), GPUCC_ECORRUPT);
		CHECK_ERROR_HAS("corrupt.gpucc': member '");
		CHECK_ERROR_HAS(first);
		CHECK_ERROR_HAS("SHA-256 digest mismatch");
		CHECK(access(out, F_OK) != 0);
	}
	gpucc_plain_writer_threads(0);
}

/* A source cut inside a payload's data: that payload is the first defect
 * (those after it in the file are gone, headers and all). */
static void test_truncated_source(void)
{
	char t[64], b[64], out[64], member[128];
	snprintf(t, sizeof t, "%s", path_in_dir("truncated.gpucc"));
	snprintf(b, sizeof b, "%s", path_in_dir("b.gpucc"));
	snprintf(out, sizeof out, "%s", path_in_dir("never.gpucc"));
	CHECK_INT(write_source(t, "t", false, NULL), 0);
	size_t size;
	unsigned char *bytes = payload_bytes(5, "t", &size);
	long at = find_bytes(t, bytes, 64);
	free(bytes);
	CHECK(at > 0);
	CHECK_INT(truncate(t, at + 1000), 0);
	member_of(member, sizeof member, 5, "t");
	const char *inputs[] = {t, b};
	CHECK_INT(merge(out, inputs, 2, false, NULL), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("truncated.gpucc': member '");
	CHECK_ERROR_HAS(member);
	CHECK_ERROR_HAS("truncated: the image ends inside it");
	CHECK(access(out, F_OK) != 0);
}

/* A payload file rewritten between add and commit, longer or shorter: both
 * writers refuse it, publishing nothing. */
static void test_file_changed(void)
{
	for (int run = 0; run < 4; run++) {
		bool libarchive = run % 2;
		if (libarchive && !check_hooks_built) {
			CHECK_SKIP_PART(CHECK_HOOKS_REASON);
			continue;
		}
		const char *rewritten = run < 2 ? "rewritten, longer payload bytes" : "shorter";
		const char *file = path_in_dir("changing.ptx"), *out = path_in_dir("never.gpucc");
		FILE *f = fopen(file, "wb");
		CHECK(f && fputs("original payload bytes", f) >= 0);
		if (f)
			fclose(f);
		gpucc_entry e;
		gpucc_kernel k;
		char target[GPUCC_TARGET_NAME_SIZE];
		make_entry(&e, &k, target, "x", 0);
		gpucc_payload_source src = {GPUCC_PART_PTX, file, NULL, 0};
		gpucc_image_writer *w = NULL;
		CHECK_INT(gpucc_image_writer_new(&w, out, NULL), 0);
		CHECK_INT(gpucc_image_writer_add(w, &e, &src, 1), 0);
		f = fopen(file, "wb");
		CHECK(f && fputs(rewritten, f) >= 0);
		if (f)
			fclose(f);
		gpucc_image_writer_force_libarchive(libarchive);
		CHECK_INT(gpucc_image_writer_commit(w), GPUCC_ECORRUPT);
		gpucc_image_writer_force_libarchive(false);
		CHECK_ERROR_HAS("changing.ptx' changed while the image was being written");
		CHECK(access(out, F_OK) != 0);
		gpucc_image_writer_free(w);
	}
}

/* A payload file replaced by a FIFO between add and commit (or given as a
 * FIFO, a device or a directory): refused, not waited on or read forever,
 * by both writers, publishing nothing. */
static void test_file_not_regular(void)
{
	const char *file = path_in_dir("swapped.ptx"), *out = path_in_dir("never.gpucc");
	gpucc_entry e;
	gpucc_kernel k;
	char target[GPUCC_TARGET_NAME_SIZE];
	make_entry(&e, &k, target, "x", 0);
	for (int run = 0; run < 2; run++) {
		if (run == 1 && !check_hooks_built) {
			CHECK_SKIP_PART(CHECK_HOOKS_REASON);
			continue;
		}
		FILE *f = fopen(file, "wb");
		CHECK(f && fputs("payload bytes", f) >= 0);
		if (f)
			fclose(f);
		gpucc_payload_source src = {GPUCC_PART_PTX, file, NULL, 0};
		gpucc_image_writer *w = NULL;
		CHECK_INT(gpucc_image_writer_new(&w, out, NULL), 0);
		CHECK_INT(gpucc_image_writer_add(w, &e, &src, 1), 0);
		CHECK_INT(unlink(file), 0);
		CHECK_INT(mkfifo(file, 0600), 0);
		gpucc_image_writer_force_libarchive(run == 1);
		CHECK_INT(gpucc_image_writer_commit(w), GPUCC_EINVALID);
		gpucc_image_writer_force_libarchive(false);
		CHECK_ERROR_HAS("swapped.ptx' is a FIFO, socket or device, not a regular file");
		CHECK(access(out, F_OK) != 0);
		gpucc_image_writer_free(w);
		unlink(file);
	}
	CHECK_INT(mkfifo(file, 0600), 0);
	const char *paths[] = {file, "/dev/zero", check_dir};
	for (size_t i = 0; i < 3; i++) {
		gpucc_payload_source src = {GPUCC_PART_PTX, paths[i], NULL, 0};
		gpucc_image_writer *w = NULL;
		CHECK_INT(gpucc_image_writer_new(&w, out, NULL), 0);
		CHECK_INT(gpucc_image_writer_add(w, &e, &src, 1), GPUCC_EINVALID);
		CHECK_ERROR_HAS(i == 2 ? "is a directory, not a regular file"
		                       : "is a FIFO, socket or device, not a regular file");
		gpucc_image_writer_free(w);
	}
	unlink(file);
}

/* An image without entries: the format member, an empty manifest and the
 * end, the same bytes from both writers, compressed or not. */
static void test_empty_same_bytes(void)
{
	gpucc_write_options zstd = {.version = GPUCC_WRITE_OPTIONS_VERSION, .zstd_level = 3};
	plain_written_ = 0;
	BOTH_WRITERS("empty", write_empty(out_, NULL));
	CHECK_INT(plain_written_, 1);
	char z1[64], z2[64];
	snprintf(z1, sizeof z1, "%s", path_in_dir("empty1.zst"));
	snprintf(z2, sizeof z2, "%s", path_in_dir("empty2.zst"));
	CHECK_INT(write_empty(z1, &zstd), 0);
	CHECK_INT(write_empty(z2, &zstd), 0);
	CHECK(same_file(z1, z2));
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open(&img, path_in_dir("empty.plain")), 0);
	if (img) {
		CHECK_INT(gpucc_image_entry_count(img), 0);
		CHECK_INT(gpucc_image_verify(img), 0);
		gpucc_image_free(img);
	}
	CHECK_INT(gpucc_image_open(&img, z1), 0);
	if (img) {
		CHECK_INT(gpucc_image_verify(img), 0);
		gpucc_image_free(img);
	}
}

int main(void)
{
	if (check_dir_create("plain-writer") != 0)
		return 1;
	RUN(test_sources_same_bytes);
	RUN(test_merge_same_bytes);
	RUN(test_pax_falls_back);
	RUN(test_corrupt_source);
	RUN(test_truncated_source);
	RUN(test_file_changed);
	RUN(test_file_not_regular);
	RUN(test_empty_same_bytes);
	check_dir_remove();
	return CHECK_DONE();
}
