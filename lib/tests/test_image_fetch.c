/*
 * lib/tests/test_image_fetch.c -- gpucc_image_fetch_payload: every payload
 * of an image found by its digest, from a file and from memory, equal to
 * what the full reader returns; absent and corrupt payloads; compressed
 * images through the full reader; and payloads whose data hold blocks that
 * look like payload headers, which must not change what is returned.
 */
#include "check.h"

#include <gpucc.h>

#include "image_internal.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define ENTRIES 300
#define BLOCK 512

static const gpucc_part parts[] = {GPUCC_PART_PTX, GPUCC_PART_CUBIN, GPUCC_PART_HSACO};

/* A ustar header block for a regular file: name, size, valid checksum. */
static void forge_header(unsigned char block[BLOCK], const char *name, uint64_t size)
{
	memset(block, 0, BLOCK);
	snprintf((char *)block, 100, "%s", name);
	memcpy(block + 100, "0000644", 8);
	memcpy(block + 108, "0000000", 8);
	memcpy(block + 116, "0000000", 8);
	snprintf((char *)block + 124, 12, "%011llo", (unsigned long long)size);
	memcpy(block + 136, "00000000000", 12);
	block[156] = '0';
	memcpy(block + 257, "ustar", 6);
	memcpy(block + 263, "00", 2);
	memset(block + 148, ' ', 8);
	unsigned sum = 0;
	for (size_t i = 0; i < BLOCK; i++)
		sum += block[i];
	snprintf((char *)block + 148, 8, "%06o", sum);
}

typedef enum forgery { NONE, HEADERS, CHAINS } forgery;

/* Payload i: sizes from a few bytes to several blocks.  With forgeries,
 * every third one's data begin with a forged header (for a name at either
 * end of the order) followed by garbage, block-aligned within the member
 * so that a scan for headers meets it. */
static size_t payload_bytes(unsigned char *buf, size_t i, forgery forge)
{
	size_t size = 40 + (i * 7919) % (5 * BLOCK);
	for (size_t k = 0; k < size; k++)
		buf[k] = (unsigned char)(i * 31 + k * 17);
	if (forge != NONE && i % 3 == 0 && size >= BLOCK) {
		static const char *const names[] = {
			"payloads/0000000000000000000000000000000000000000000000000000000000000000.ptx",
			"payloads/ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff.ptx",
		};
		forge_header(buf, names[i / 3 % 2], 64);
	}
	snprintf((char *)buf + size - 12, 12, "#%09zu", i); /* distinct contents */
	return size;
}

static void make_entry(gpucc_entry *e, gpucc_kernel *k, char *target, size_t i)
{
	memset(e, 0, sizeof *e);
	gpucc_target parsed;
	CHECK_INT(gpucc_target_parse(&parsed, i % 2 ? "gfx90a" : "sm_90"), 0);
	gpucc_target_format(target, &parsed);
	*k = (gpucc_kernel){"kernel", -1, -1, -1};
	char module[32];
	snprintf(module, sizeof module, "module %zu", i);
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

/* CHAINS: after the first forged header, forge the one it points to. */
static int write_image(const char *path, int zstd, forgery forge)
{
	gpucc_image_writer *w;
	gpucc_write_options opts = {.version = GPUCC_WRITE_OPTIONS_VERSION, .zstd_level = zstd};
	int rc = gpucc_image_writer_new(&w, path, &opts);
	static unsigned char bufs[ENTRIES][6 * BLOCK];
	for (size_t i = 0; rc == 0 && i < ENTRIES; i++) {
		gpucc_entry e;
		gpucc_kernel k;
		char target[GPUCC_TARGET_NAME_SIZE];
		make_entry(&e, &k, target, i);
		gpucc_payload_source src = {parts[i % 3], NULL, bufs[i], payload_bytes(bufs[i], i, forge)};
		/* A forged chain: the block where the first forged header's
		 * successor must be is a header for a real payload's member,
		 * payload i-1's, which a probe takes for the real one. */
		if (forge == CHAINS && i % 3 == 0 && i >= 3 && src.size >= 2 * BLOCK) {
			gpucc_payload prev = {.part = parts[(i - 1) % 3]};
			unsigned char prev_bytes[6 * BLOCK];
			gpucc_digest_buffer(&prev.sha256, prev_bytes, payload_bytes(prev_bytes, i - 1, forge));
			char hex[GPUCC_DIGEST_HEX_SIZE], name[128];
			gpucc_digest_to_hex(hex, &prev.sha256);
			snprintf(name, sizeof name, "payloads/%s%s", hex, gpucc_part_extension(prev.part));
			forge_header(bufs[i] + BLOCK, name, 100);
		}
		rc = gpucc_image_writer_add(w, &e, &src, 1);
	}
	if (rc == 0)
		rc = gpucc_image_writer_commit(w);
	gpucc_image_writer_free(w);
	return rc;
}

/* Every payload, fetched by digest from the file and from memory, equals
 * what the full reader gives.  bisected: each must be found by bisection,
 * with no walk. */
static void check_every_payload(const char *path, bool bisected)
{
	unsigned long walks = gpucc_image_fetch_walks;
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open(&img, path), 0);
	size_t size = 0;
	unsigned char *bytes = check_read_file(path, &size);
	CHECK(bytes != NULL);
	if (!img || !bytes)
		return;
	size_t count = 0;
	CHECK_INT(gpucc_image_count_payloads(&count, img), 0);
	CHECK_INT(count, ENTRIES);
	for (size_t i = 0; i < count; i++) {
		const gpucc_payload *p = gpucc_image_payload(img, i);
		void *want = NULL, *got = NULL, *mem = NULL;
		size_t want_size = 0, got_size = 0, mem_size = 0;
		CHECK_INT(gpucc_image_read_payload(&want, &want_size, img, p), 0);
		CHECK_INT(gpucc_image_fetch_payload(&got, &got_size, path, &p->sha256, p->part), 0);
		CHECK_INT(gpucc_image_fetch_payload_memory(&mem, &mem_size, bytes, size, "embedded",
		                                           &p->sha256, p->part),
		          0);
		CHECK(got && got_size == want_size && memcmp(got, want, want_size) == 0);
		CHECK(mem && mem_size == want_size && memcmp(mem, want, want_size) == 0);
		gpucc_free(want);
		gpucc_free(got);
		gpucc_free(mem);
	}
	if (bisected)
		CHECK_INT(gpucc_image_fetch_walks - walks, 0);
	gpucc_image_free(img);
	free(bytes);
}

static void test_every_payload_plain(void)
{
	const char *path = path_in_dir("plain.gpucc");
	CHECK_INT(write_image(path, 0, NONE), 0);
	check_every_payload(path, true);
}

/* Forged headers may cost walks, never wrong bytes. */
static void test_every_payload_forged(void)
{
	const char *path = path_in_dir("forged.gpucc");
	CHECK_INT(write_image(path, 0, HEADERS), 0);
	check_every_payload(path, false);
	path = path_in_dir("chains.gpucc");
	CHECK_INT(write_image(path, 0, CHAINS), 0);
	unsigned long walks = gpucc_image_fetch_walks;
	check_every_payload(path, false);
	CHECK(gpucc_image_fetch_walks > walks); /* the forgeries do mislead */
}

static void test_every_payload_compressed(void)
{
	const char *path = path_in_dir("zstd.gpucc");
	CHECK_INT(write_image(path, 3, CHAINS), 0);
	check_every_payload(path, false);
}

static void test_absent_and_wrong_kind(void)
{
	const char *path = path_in_dir("plain.gpucc");
	gpucc_digest none;
	gpucc_digest_buffer(&none, "not in the image", 16);
	void *out = (void *)1;
	size_t n = 1;
	CHECK_INT(gpucc_image_fetch_payload(&out, &n, path, &none, GPUCC_PART_PTX), GPUCC_ENOTFOUND);
	CHECK(out == NULL && n == 0);
	CHECK_ERROR_HAS("plain.gpucc' has no payload payloads/");
	/* A real digest asked for as another kind is another member. */
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open(&img, path), 0);
	if (!img)
		return;
	const gpucc_payload *p = gpucc_image_payload(img, 0);
	gpucc_part other = p->part == GPUCC_PART_PTX ? GPUCC_PART_HSACO : GPUCC_PART_PTX;
	CHECK_INT(gpucc_image_fetch_payload(&out, &n, path, &p->sha256, other), GPUCC_ENOTFOUND);
	CHECK_INT(gpucc_image_fetch_payload(&out, &n, path, &p->sha256, (gpucc_part)99), GPUCC_EINVALID);
	CHECK_INT(gpucc_image_fetch_payload(&out, &n, path_in_dir("missing.gpucc"), &p->sha256, p->part),
	          GPUCC_ENOTFOUND);
	gpucc_image_free(img);
}

/* A payload whose bytes changed is refused, wherever the search found it;
 * cutting the image anywhere gives an error, never other bytes. */
static void test_corrupt_and_truncated(void)
{
	const char *path = path_in_dir("plain.gpucc");
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open(&img, path), 0);
	size_t size = 0;
	unsigned char *bytes = check_read_file(path, &size);
	if (!img || !bytes)
		return;
	size_t count = 0;
	CHECK_INT(gpucc_image_count_payloads(&count, img), 0);
	size_t last = count - 1;
	const gpucc_payload *p = gpucc_image_payload(img, last);
	/* The last payload's data end just before the two zero blocks. */
	size_t end = size - 2 * BLOCK;
	while (end > 0 && bytes[end - 1] == 0)
		end--;
	bytes[end - 1] ^= 1;
	void *out = NULL;
	size_t n = 0;
	CHECK_INT(gpucc_image_fetch_payload_memory(&out, &n, bytes, size, "flipped", &p->sha256, p->part),
	          GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("'flipped': payloads/");
	CHECK_ERROR_HAS("does not match its digest");
	bytes[end - 1] ^= 1;
	/* Cut before the payload's last byte (a cut in the end-of-archive
	 * blocks leaves it whole, and it is found). */
	for (size_t cut = 0; cut < end; cut += 4099) {
		int rc = gpucc_image_fetch_payload_memory(&out, &n, bytes, cut, "cut", &p->sha256, p->part);
		CHECK(rc == GPUCC_ENOTFOUND || rc == GPUCC_ECORRUPT || rc == GPUCC_EVERSION);
		CHECK(out == NULL);
	}
	gpucc_image_free(img);
	free(bytes);
}

/* A payload whose data end the bytes given, its size a multiple of the
 * block (so no padding follows), is found: only the end-of-archive
 * blocks are missing, which a fetch does not read. */
static void test_payload_at_the_very_end(void)
{
	const char *path = path_in_dir("one.gpucc");
	gpucc_image_writer *w = NULL;
	gpucc_write_options opts = {.version = GPUCC_WRITE_OPTIONS_VERSION};
	CHECK_INT(gpucc_image_writer_new(&w, path, &opts), 0);
	static unsigned char data[2 * BLOCK];
	memset(data, 0xab, sizeof data);
	gpucc_entry e;
	gpucc_kernel k;
	char target[GPUCC_TARGET_NAME_SIZE];
	make_entry(&e, &k, target, 7);
	gpucc_payload_source src = {GPUCC_PART_HSACO, NULL, data, sizeof data};
	CHECK_INT(gpucc_image_writer_add(w, &e, &src, 1), 0);
	CHECK_INT(gpucc_image_writer_commit(w), 0);
	gpucc_image_writer_free(w);
	size_t size = 0;
	unsigned char *bytes = check_read_file(path, &size);
	if (!bytes)
		return;
	size_t end = size;
	while (end > 0 && bytes[end - 1] == 0)
		end--;
	CHECK(end % BLOCK == 0 && end >= sizeof data && bytes[end - sizeof data] == 0xab);
	gpucc_digest sha;
	gpucc_digest_buffer(&sha, data, sizeof data);
	void *out = NULL;
	size_t n = 0;
	CHECK_INT(gpucc_image_fetch_payload_memory(&out, &n, bytes, end, "no end", &sha, GPUCC_PART_HSACO),
	          0);
	CHECK(out && n == sizeof data && memcmp(out, data, n) == 0);
	gpucc_free(out);
	free(bytes);
}

/* A child process that writes size bytes into the FIFO at path. */
static pid_t feed_fifo(const char *path, const unsigned char *bytes, size_t size)
{
	pid_t child = fork();
	if (child == 0) {
		int fd = open(path, O_WRONLY);
		size_t done = 0;
		while (fd >= 0 && done < size) {
			ssize_t w = write(fd, bytes + done, size - done);
			if (w <= 0)
				_exit(1);
			done += (size_t)w;
		}
		_exit(fd >= 0 ? 0 : 1);
	}
	return child;
}

/* A FIFO is read once, as it comes, by gpucc_image_fetch_payload and by
 * gpucc_image_open_mapped: the payload is found in what the one writer
 * sent.  (Opening the name a second time would wait for another writer:
 * alarm() turns such a hang into a failure.) */
static void test_fifo(void)
{
	const char *path = path_in_dir("plain.gpucc");
	const char *fifo = path_in_dir("fifo.gpucc");
	gpucc_image *img = NULL, *mapped = NULL;
	size_t size = 0;
	unsigned char *bytes = check_read_file(path, &size);
	CHECK_INT(gpucc_image_open(&img, path), 0);
	CHECK_INT(mkfifo(fifo, 0600), 0);
	if (!img || !bytes)
		return;
	const gpucc_payload *p = gpucc_image_payload(img, 0);
	void *want = NULL, *got = NULL;
	size_t want_size = 0, got_size = 0;
	CHECK_INT(gpucc_image_read_payload(&want, &want_size, img, p), 0);
	int status = 0;
	alarm(60);
	pid_t child = feed_fifo(fifo, bytes, size);
	CHECK_INT(gpucc_image_fetch_payload(&got, &got_size, fifo, &p->sha256, p->part), 0);
	CHECK(got_size == want_size && got && memcmp(got, want, want_size) == 0);
	CHECK(waitpid(child, &status, 0) == child); /* (the reader has closed the FIFO) */
	child = feed_fifo(fifo, bytes, size);
	CHECK_INT(gpucc_image_open_mapped(&mapped, fifo), 0);
	CHECK(mapped && gpucc_image_entry_count(mapped) == gpucc_image_entry_count(img));
	gpucc_image_free(mapped); /* the writer may wait for the rest to be read */
	CHECK(waitpid(child, &status, 0) == child);
	alarm(0);
	free(got);
	free(want);
	free(bytes);
	gpucc_image_free(img);
}

int main(void)
{
	if (check_dir_create("test-image-fetch") != 0)
		return 1;
	unsetenv("SOURCE_DATE_EPOCH");
	RUN(test_every_payload_plain);
	RUN(test_every_payload_forged);
	RUN(test_every_payload_compressed);
	RUN(test_absent_and_wrong_kind);
	RUN(test_corrupt_and_truncated);
	RUN(test_payload_at_the_very_end);
	RUN(test_fifo);
	if (check_dir_remove() != 0)
		return 1;
	return CHECK_DONE();
}
