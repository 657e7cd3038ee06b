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
 * Beside them, the SIGBUS guard that the manifest's mapping is read under
 * (lib/image/sigbus_guard.h) leaves every other SIGBUS to the process's own
 * handler.  The counting is per thread: with the argument "threads" (the 'threads'
 * suite, which scripts/test also runs under ThreadSanitizer), 8 threads
 * open, read and cut their own images at once, so that the SIGBUS guards
 * of their manifests (lib/image/sigbus_guard.h) come and go, and fault,
 * together.
 */
#include "check.h"

#include <gpucc.h>

#include "image_internal.h"
#include "sigbus_guard.h"

#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ENTRIES 40

/* ---- cutting the file short ----------------------------------------------- */

/* The file to cut (its device and inode), the call at which to cut it (or
 * its first mapping), and to how many bytes; the calls on it so far.  Each
 * thread cuts its own file, on its own reads. */
typedef struct shrink_state {
	bool armed;
	dev_t dev;
	ino_t ino;
	const char *path;
	long at;
	bool at_mapping;
	off_t to;
	long calls;
	bool cut;
} shrink_state;
static _Thread_local shrink_state shrink;

ssize_t __real_pread64(int fd, void *buf, size_t n, off_t off);
ssize_t __wrap_pread64(int fd, void *buf, size_t n, off_t off);
void *__real_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void *__wrap_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off);

/* Count a read or mapping of fd; cut the file at the chosen one. */
static void count_call(int fd, bool mapping)
{
	struct stat st;
	if (!shrink.armed || fd < 0 || fstat(fd, &st) != 0 || st.st_dev != shrink.dev ||
	    st.st_ino != shrink.ino)
		return;
	bool now = shrink.at_mapping ? mapping && !shrink.cut : shrink.calls == shrink.at;
	shrink.calls++;
	if (now) {
		if (truncate(shrink.path, shrink.to) != 0)
			abort(); /* the case would prove nothing */
		shrink.cut = true;
	}
}

ssize_t __wrap_pread64(int fd, void *buf, size_t n, off_t off)
{
	count_call(fd, false);
	return __real_pread64(fd, buf, n, off);
}

void *__wrap_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *m = __real_mmap64(addr, len, prot, flags, fd, off);
	if (m != MAP_FAILED && !(flags & MAP_ANONYMOUS))
		count_call(fd, true);
	return m;
}

/* Write bytes to path afresh, and cut it to `to` bytes at call `at` (-1:
 * at its first mapping). */
static void arm(const char *path, const void *bytes, size_t size, long at, off_t to)
{
	shrink.armed = false;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	struct stat st = {0};
	CHECK(fd >= 0 && write(fd, bytes, size) == (ssize_t)size && fstat(fd, &st) == 0);
	if (fd >= 0)
		close(fd);
	shrink = (shrink_state){.armed = true, .dev = st.st_dev, .ino = st.st_ino, .path = path,
	                        .at = at, .at_mapping = at < 0, .to = to};
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
	gpucc_write_options opts = {.version = GPUCC_WRITE_OPTIONS_VERSION, .zstd_level = zstd};
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

/* Lengths to cut an image of size bytes to: nothing left, inside the
 * manifest (two places), half, and all but the last page.  All whole
 * pages: a mapping's bytes past the end of a file in its last page read as
 * zeros, which a parser refuses before it touches the pages after them,
 * those that fault. */
static size_t cut_lengths(off_t out[5], size_t size)
{
	const size_t page = 4096;
	out[0] = 0;
	out[1] = (off_t)page;
	out[2] = (off_t)(2 * page);
	out[3] = (off_t)(size / 2 / page * page);
	out[4] = (off_t)((size - 1) / page * page);
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
/* The payload of digest d read back as data: the bytes written for it. */
static void check_written(const gpucc_digest *d, const void *data, size_t size)
{
	size_t i = 0;
	while (i < ENTRIES && gpucc_digest_compare(&written_digest[i], d) != 0)
		i++;
	CHECK(i < ENTRIES && size == written_size[i] && memcmp(data, written[i], size) == 0);
}

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
			check_written(&p->sha256, data, size);
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

/* The keys of the plain image's entries (from a full open). */
static gpucc_digest keys[ENTRIES];
static size_t key_count;

/* Open the image at path for lookup, look entries up through its index,
 * read their payloads, then parse the whole manifest: as read_all. */
static bool lookup_all(const char *path, const char *what, long at, off_t to)
{
	gpucc_image *img = NULL;
	int rc = gpucc_image_open_for_lookup(&img, path);
	if (rc) {
		check_cut_failure(rc, path, what, at, to);
		return true;
	}
	bool failed = false;
	for (size_t k = 0; k < key_count; k += 5) {
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &keys[k]);
		const gpucc_entry *e = NULL;
		void *data = NULL;
		size_t size = 0;
		rc = gpucc_image_lookup(&e, img, hex);
		if (rc == 0)
			rc = gpucc_image_read_payload(&data, &size, img, &e->payloads[0]);
		if (rc == 0) {
			check_written(&e->payloads[0].sha256, data, size);
		} else {
			check_cut_failure(rc, path, what, at, to);
			failed = true;
		}
		gpucc_free(data);
	}
	rc = gpucc_image_load_manifest(img);
	if (rc) {
		check_cut_failure(rc, path, what, at, to);
		failed = true;
	}
	gpucc_image_free(img);
	return failed;
}

/* Lookups through the index of a file cut at every read. */
static void test_lookup_plain(void)
{
	const char *path = path_in_dir("lookup.gpucc");
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_memory(&img, plain.bytes, plain.size, "plain"), 0);
	key_count = img ? gpucc_image_entry_count(img) : 0;
	for (size_t k = 0; k < key_count && k < ENTRIES; k++)
		keys[k] = gpucc_image_entry(img, k)->key;
	gpucc_image_free(img);
	off_t lengths[5];
	size_t n = cut_lengths(lengths, plain.size);
	for (size_t l = 0; l < n; l++) {
		for (long at = 0;; at++) {
			arm(path, plain.bytes, plain.size, at, lengths[l]);
			bool failed = lookup_all(path, "lookup", at, lengths[l]);
			if (!disarm()) {
				CHECK(!failed);
				break;
			}
		}
	}
}

/* ---- the guard and the process's own SIGBUS handler --------------------------- */

static volatile sig_atomic_t host_calls;
static sigjmp_buf host_escape;
static volatile sig_atomic_t host_escapes;

/* A host's handler: counts, and leaves a faulting access by longjmp. */
static void host_handler(int sig, siginfo_t *info, void *context)
{
	(void)sig;
	(void)context;
	host_calls++;
	if (info->si_code > 0 && host_escapes)
		siglongjmp(host_escape, 1);
}

/* A mapping of the first two pages of a file of two pages, cut to one. */
static unsigned char *cut_mapping(const char *path)
{
	static unsigned char page[2 * 4096];
	memset(page, 'x', sizeof page);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0 && write(fd, page, sizeof page) == (ssize_t)sizeof page);
	void *m = fd >= 0 ? mmap(NULL, sizeof page, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	CHECK(m != MAP_FAILED && ftruncate(fd, 4096) == 0);
	if (fd >= 0)
		close(fd);
	return m == MAP_FAILED ? NULL : m;
}

/* A guard turns only its own mapping's faults into zeros: a SIGBUS sent
 * to the process, or a fault elsewhere, goes to the handler the process
 * had, which is back in place once the last guard ends. */
static void test_guard_passes_on(void)
{
	struct sigaction host, now;
	memset(&host, 0, sizeof host);
	host.sa_sigaction = host_handler;
	host.sa_flags = SA_SIGINFO;
	sigemptyset(&host.sa_mask);
	CHECK_INT(sigaction(SIGBUS, &host, NULL), 0);
	unsigned char *guarded = cut_mapping(path_in_dir("guarded"));
	unsigned char *unguarded = cut_mapping(path_in_dir("unguarded"));
	if (!guarded || !unguarded)
		return;
	gpucc_sigbus_guard g;
	CHECK_INT(gpucc_sigbus_guard_begin(&g, guarded, 2 * 4096), 0);
	raise(SIGBUS);
	CHECK_INT(host_calls, 1);
	host_escapes = 1;
	if (sigsetjmp(host_escape, 1) == 0) {
		volatile unsigned char byte = unguarded[4096]; /* faults */
		(void)byte;
		CHECK(false);
	}
	host_escapes = 0;
	CHECK_INT(host_calls, 2);
	CHECK_INT(guarded[0], 'x');
	CHECK_INT(guarded[4096], 0); /* the page the cut took: zeros */
	CHECK_INT(host_calls, 2);
	CHECK(gpucc_sigbus_guard_end(&g));
	CHECK_INT(sigaction(SIGBUS, NULL, &now), 0);
	CHECK((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == host_handler);
	/* A guard whose mapping never faulted says so. */
	CHECK_INT(gpucc_sigbus_guard_begin(&g, guarded, 4096), 0);
	CHECK_INT(guarded[1], 'x');
	CHECK(!gpucc_sigbus_guard_end(&g));
	munmap(guarded, 2 * 4096);
	munmap(unguarded, 2 * 4096);
	signal(SIGBUS, SIG_DFL);
}

/* ---- on several threads at once ------------------------------------------------ */

#define THREADS 8
#define ROUNDS 12

typedef struct cutter {
	unsigned id;
	int failures;
	char first[512];
} cutter;

/* Round r of thread c: open its image, cut into the manifest at its
 * mapping (refused), or not cut (opened and read); fetch a payload cut at
 * a read.  Failures are counted here: check.h's counter is not for
 * threads. */
static void *cut_rounds(void *arg)
{
	cutter *c = arg;
	char path[256]; /* (not path_in_dir, whose names are not per thread) */
	snprintf(path, sizeof path, "%s/thread-%u.gpucc", check_dir, c->id);
	for (int r = 0; r < ROUNDS; r++) {
		const image_bytes *img = r % 3 == 2 ? &zstd : &plain;
		bool cut = r % 2 == 0;
		arm(path, img->bytes, img->size, cut ? -1 : 1000000, 8192);
		gpucc_image *opened = NULL;
		int rc = gpucc_image_open(&opened, path);
		bool was_cut = disarm();
		/* A zstd image is not mapped: nothing cuts it. */
		bool ok = was_cut ? rc == GPUCC_ECORRUPT && strstr(gpucc_error_last()->message, path)
		                  : rc == 0 && (!cut || img == &zstd);
		if (rc == 0) {
			void *data = NULL;
			size_t size = 0;
			const gpucc_payload *p = gpucc_image_payload(opened, (size_t)r % ENTRIES);
			ok = ok && p && gpucc_image_read_payload(&data, &size, opened, p) == 0 &&
			     size == p->size;
			gpucc_free(data);
		}
		gpucc_image_free(opened);
		arm(path, plain.bytes, plain.size, r, (off_t)(plain.size / 2 / 4096 * 4096));
		void *data = NULL;
		size_t size = 0;
		size_t i = (size_t)(r * 5 + (int)c->id) % ENTRIES;
		rc = gpucc_image_fetch_payload(&data, &size, path, &written_digest[i], GPUCC_PART_CUBIN);
		disarm();
		ok = ok && (rc == 0 ? size == written_size[i] && memcmp(data, written[i], size) == 0
		                    : rc == GPUCC_ECORRUPT && strstr(gpucc_error_last()->message, path));
		gpucc_free(data);
		if (!ok && c->failures++ == 0)
			snprintf(c->first, sizeof c->first, "thread %u, round %d: %d %s", c->id, r, rc,
			         gpucc_error_last()->message);
	}
	return NULL;
}

static void test_threads(void)
{
	cutter cutters[THREADS];
	pthread_t threads[THREADS];
	size_t started = 0;
	for (unsigned i = 0; i < THREADS; i++) {
		cutters[i] = (cutter){.id = i};
		if (pthread_create(&threads[i], NULL, cut_rounds, &cutters[i]) != 0)
			break;
		started++;
	}
	CHECK_INT(started, THREADS);
	for (size_t i = 0; i < started; i++) {
		pthread_join(threads[i], NULL);
		if (cutters[i].failures)
			fprintf(stderr, "%d failure(s), the first: %s\n", cutters[i].failures,
			        cutters[i].first);
		CHECK_INT(cutters[i].failures, 0);
	}
}

/* With the argument "threads", test_threads alone. */
int main(int argc, char **argv)
{
	bool threads_only = argc > 1 && strcmp(argv[1], "threads") == 0;
	/* Manifests parsed in place under the SIGBUS guard, as the gpucc
	 * command has them; without asking, they are read with pread (the
	 * cases cover that path too: a guard refused reads so). */
	gpucc_image_set_sigbus_guard(true);
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
	if (!threads_only) {
		RUN(test_guard_passes_on);
		RUN(test_fetch);
		RUN(test_read_plain);
		RUN(test_read_zstd);
		RUN(test_lookup_plain);
	}
	RUN(test_threads);
	for (size_t i = 0; i < ENTRIES; i++)
		free(written[i]);
	free(plain.bytes);
	free(zstd.bytes);
	check_dir_remove();
	return CHECK_DONE();
}
