/*
 * lib/tests/test_image_shrink.c -- image files cut short in place while
 * libgpucc reads them (cp rewriting an image does that): every read must
 * then return the right bytes or fail with GPUCC_ECORRUPT naming the
 * file, and never end the process by a signal (a mapping of the file would
 * give SIGBUS).
 *
 * Deterministic: this program is linked with -Wl,--wrap=pread64 and
 * -Wl,--wrap=mmap64 (lib/tests/meson.build), so every read libgpucc makes
 * of a file, and any mapping, passes through the wrappers below; they count
 * those of the file under test and cut it short at a chosen one (a read
 * before it runs, a mapping after it is made).  Each case is run with the
 * cut at every such call in turn, and at several lengths, from a fresh copy
 * of the image each time: gpucc_image_fetch_payload, and opening,
 * reading every payload and verifying, of uncompressed and zstd images.
 */
#include "check.h"

#include <gpucc.h>

#include "image_internal.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ENTRIES 40

/* ---- cutting the file short ----------------------------------------------- */

/* The file to cut (its device and inode), the call at which to cut it, and
 * to how many bytes; the calls on it so far. */
typedef struct shrink_state {
	bool armed;
	dev_t dev;
	ino_t ino;
	const char *path;
	long at;
	off_t to;
	long calls;
	bool cut;
} shrink_state;
static shrink_state shrink;

ssize_t __real_pread64(int fd, void *buf, size_t n, off_t off);
ssize_t __wrap_pread64(int fd, void *buf, size_t n, off_t off);
void *__real_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void *__wrap_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off);

/* Count a read or mapping of fd; cut the file at the chosen one. */
static void count_call(int fd)
{
	struct stat st;
	if (!shrink.armed || fd < 0 || fstat(fd, &st) != 0 || st.st_dev != shrink.dev ||
	    st.st_ino != shrink.ino)
		return;
	if (shrink.calls++ == shrink.at) {
		if (truncate(shrink.path, shrink.to) != 0)
			abort(); /* the case would prove nothing */
		shrink.cut = true;
	}
}

ssize_t __wrap_pread64(int fd, void *buf, size_t n, off_t off)
{
	count_call(fd);
	return __real_pread64(fd, buf, n, off);
}

void *__wrap_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *m = __real_mmap64(addr, len, prot, flags, fd, off);
	if (m != MAP_FAILED && !(flags & MAP_ANONYMOUS))
		count_call(fd);
	return m;
}

/* Write bytes to path afresh, and cut it to `to` bytes at call `at`. */
static void arm(const char *path, const void *bytes, size_t size, long at, off_t to)
{
	shrink.armed = false;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	struct stat st = {0};
	CHECK(fd >= 0 && write(fd, bytes, size) == (ssize_t)size && fstat(fd, &st) == 0);
	if (fd >= 0)
		close(fd);
	shrink = (shrink_state){.armed = true, .dev = st.st_dev, .ino = st.st_ino, .path = path,
	                        .at = at, .to = to};
}

/* Stop counting: whether the file was cut (else the case made fewer calls
 * than `at`, and every cut point has been tried). */
static bool disarm(void)
{
	shrink.armed = false;
	return shrink.cut;
}

/* ---- the images --------------------------------------------------------------- */

static unsigned char *written[ENTRIES];
static size_t written_size[ENTRIES];
static gpucc_digest written_digest[ENTRIES];

static size_t payload_size(size_t i)
{
	if (i == 5)
		return 300000; /* larger than the reader's read-ahead window */
	if (i == 17)
		return 90000;
	return 100 + (i * 7919) % 3000;
}

static void make_payloads(void)
{
	for (size_t i = 0; i < ENTRIES; i++) {
		size_t size = payload_size(i);
		written[i] = malloc(size);
		uint32_t x = (uint32_t)(i * 2654435761u + 7);
		for (size_t k = 0; k < size; k++) {
			x = x * 1103515245u + 12345u;
			written[i][k] = (unsigned char)(x >> 16);
		}
		memcpy(written[i], &i, sizeof i);
		written_size[i] = size;
		gpucc_digest_buffer(&written_digest[i], written[i], size);
	}
}

static int write_image(const char *path, int zstd)
{
	gpucc_image_writer *w;
	gpucc_write_options opts = {.zstd_level = zstd};
	int rc = gpucc_image_writer_new(&w, path, &opts);
	for (size_t i = 0; rc == 0 && i < ENTRIES; i++) {
		char module[32], target[GPUCC_TARGET_NAME_SIZE];
		gpucc_target parsed;
		CHECK_INT(gpucc_target_parse(&parsed, "sm_90"), 0);
		gpucc_target_format(target, &parsed);
		snprintf(module, sizeof module, "module %zu", i);
		gpucc_kernel k = {"kernel", -1, -1, -1};
		gpucc_entry e = {0};
		e.key_schema = 1;
		e.module = "module.ll";
		gpucc_digest_buffer(&e.module_sha256, module, strlen(module));
		e.target = target;
		e.triple = gpucc_target_triple(&parsed);
		e.gpucc_version = gpucc_version();
		e.llvm_version = "19.1.7";
		e.kernel_count = 1;
		e.kernels = &k;
		CHECK_INT(gpucc_entry_compute_key(&e.key, &e), 0);
		gpucc_payload_source src = {GPUCC_PART_CUBIN, NULL, written[i], written_size[i]};
		rc = gpucc_image_writer_add(w, &e, &src, 1);
	}
	if (rc == 0)
		rc = gpucc_image_writer_commit(w);
	gpucc_image_writer_free(w);
	return rc;
}

/* The image bytes each case starts from. */
typedef struct image_bytes {
	unsigned char *bytes;
	size_t size;
} image_bytes;

static image_bytes plain, zstd;

/* Lengths to cut an image of size bytes to: nothing left, inside the first
 * members, inside the manifest or the first payloads, half, and all but
 * the last bytes. */
static size_t cut_lengths(off_t out[5], size_t size)
{
	out[0] = 0;
	out[1] = 700;
	out[2] = (off_t)(size / 10);
	out[3] = (off_t)(size / 2);
	out[4] = (off_t)(size - 100);
	return 5;
}

/* A failure of a read of a file cut short: GPUCC_ECORRUPT, naming it. */
static void check_cut_failure(int rc, const char *path, const char *what, long at, off_t to)
{
	if (rc == GPUCC_ECORRUPT && strstr(gpucc_error_last()->message, path))
		return;
	fprintf(stderr, "%s, cut to %lld at call %ld: %d %s\n", what, (long long)to, at, rc,
	        gpucc_error_last()->message);
	CHECK(false);
}

/* ---- the cases ---------------------------------------------------------------- */

/* gpucc_image_fetch_payload of payload i, with the file cut at every call. */
static void fetch_cut(const image_bytes *img, const char *path, size_t i)
{
	off_t lengths[5];
	size_t n = cut_lengths(lengths, img->size);
	for (size_t l = 0; l < n; l++) {
		for (long at = 0;; at++) {
			arm(path, img->bytes, img->size, at, lengths[l]);
			void *data = NULL;
			size_t size = 0;
			int rc = gpucc_image_fetch_payload(&data, &size, path, &written_digest[i],
			                                   GPUCC_PART_CUBIN);
			bool cut = disarm();
			if (rc == 0)
				CHECK(size == written_size[i] && memcmp(data, written[i], size) == 0);
			else
				check_cut_failure(rc, path, "gpucc_image_fetch_payload", at, lengths[l]);
			gpucc_free(data);
			if (!cut) {
				CHECK_INT(rc, 0); /* nothing was cut: it must have succeeded */
				break;
			}
		}
	}
}

static void test_fetch(void)
{
	const char *path = path_in_dir("fetch.gpucc");
	for (size_t i = 0; i < ENTRIES; i += 7)
		fetch_cut(&plain, path, i);
	fetch_cut(&plain, path, 5);
	fetch_cut(&zstd, path, 17);
}

/* Open the image at path, read every payload, verify: each step succeeds
 * with the right bytes or fails as a cut image does.  Whether anything
 * failed. */
static bool read_all(const char *path, const char *what, long at, off_t to)
{
	gpucc_image *img = NULL;
	int rc = gpucc_image_open(&img, path);
	if (rc) {
		check_cut_failure(rc, path, what, at, to);
		return true;
	}
	bool failed = false;
	size_t count = 0;
	CHECK_INT(gpucc_image_count_payloads(&count, img), 0);
	for (size_t k = 0; k < count; k++) {
		const gpucc_payload *p = gpucc_image_payload(img, k);
		void *data = NULL;
		size_t size = 0;
		rc = gpucc_image_read_payload(&data, &size, img, p);
		if (rc == 0) {
			size_t i = 0;
			while (i < ENTRIES && gpucc_digest_compare(&written_digest[i], &p->sha256) != 0)
				i++;
			CHECK(i < ENTRIES && size == written_size[i] && memcmp(data, written[i], size) == 0);
		} else {
			check_cut_failure(rc, path, what, at, to);
			failed = true;
		}
		gpucc_free(data);
	}
	rc = gpucc_image_verify(img);
	if (rc) {
		check_cut_failure(rc, path, what, at, to);
		failed = true;
	}
	gpucc_image_free(img);
	return failed;
}

static void read_cut(const image_bytes *img, const char *path, const char *what)
{
	off_t lengths[5];
	size_t n = cut_lengths(lengths, img->size);
	for (size_t l = 0; l < n; l++) {
		for (long at = 0;; at++) {
			arm(path, img->bytes, img->size, at, lengths[l]);
			bool failed = read_all(path, what, at, lengths[l]);
			if (!disarm()) {
				CHECK(!failed);
				break;
			}
		}
	}
}

static void test_read_plain(void)
{
	read_cut(&plain, path_in_dir("read.gpucc"), "uncompressed image");
}

static void test_read_zstd(void)
{
	read_cut(&zstd, path_in_dir("read.gpucc"), "zstd image");
}

int main(void)
{
	if (check_dir_create("image-shrink") != 0)
		return 1;
	make_payloads();
	const char *path = path_in_dir("source.gpucc");
	CHECK_INT(write_image(path, 0), 0);
	plain.bytes = check_read_file(path, &plain.size);
	CHECK_INT(write_image(path, 3), 0);
	zstd.bytes = check_read_file(path, &zstd.size);
	if (!plain.bytes || !zstd.bytes)
		return 1;
	RUN(test_fetch);
	RUN(test_read_plain);
	RUN(test_read_zstd);
	for (size_t i = 0; i < ENTRIES; i++)
		free(written[i]);
	free(plain.bytes);
	free(zstd.bytes);
	check_dir_remove();
	return CHECK_DONE();
}
