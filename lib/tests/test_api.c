/*
 * lib/tests/test_api.c -- the public API as a package author meets it:
 * linked against libgpucc.so and including nothing but <gpucc.h>, each
 * case holds one documented contract (error codes, messages, what a
 * call accepts) to what the library does.  The other unit tests link
 * the static library and reach internals; this one cannot.
 */
#include "check.h"

#include <gpucc.h>

#include <malloc.h> /* malloc_usable_size */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A path of 5,000 bytes, too long to open (ENAMETOOLONG), with a newline
 * in it that messages must spell. */
static const char *too_long_path(void)
{
	static char path[5001];
	memset(path, 'a', sizeof path - 1);
	path[10] = '\n';
	path[sizeof path - 1] = '\0';
	return path;
}

/* gpucc_image_open_mapped's errors are gpucc_image_open's, and
 * gpucc_image_fetch_payload's name the file as they do: a name too long
 * to open is GPUCC_EINVALID, its message cut to a line a terminal shows
 * (gpucc_image_open's 'an absurd one cut'), not GPUCC_ERROR and a
 * kilobyte of 'a'. */
static void test_open_too_long_name(void)
{
	const char *path = too_long_path();
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open(&img, path), GPUCC_EINVALID);
	CHECK(strlen(gpucc_error_last()->message) < 400);
	CHECK_INT(gpucc_image_open_mapped(&img, path), GPUCC_EINVALID);
	CHECK(img == NULL);
	CHECK(strlen(gpucc_error_last()->message) < 400);
	CHECK_ERROR_HAS("aaaaaaaaaa\\naaa");
	CHECK_ERROR_HAS("the name has 5000 bytes");

	gpucc_digest digest;
	memset(&digest, 0, sizeof digest);
	void *data = &digest;
	size_t size = 1;
	CHECK_INT(gpucc_image_fetch_payload(&data, &size, path, &digest, GPUCC_PART_PTX),
	          GPUCC_EINVALID);
	CHECK(data == NULL);
	CHECK_INT(size, 0);
	CHECK(strlen(gpucc_error_last()->message) < 400);
	CHECK_ERROR_HAS("the name has 5000 bytes");
}

/* An empty output path (a script's unset variable) is GPUCC_EINVALID,
 * said as what it is: not "'' is a directory", and for the image writer
 * at once, not at commit after everything was added. */
static void test_empty_output_path(void)
{
	gpucc_image_writer *w = NULL;
	CHECK_INT(gpucc_image_writer_new(&w, "", NULL), GPUCC_EINVALID);
	CHECK(w == NULL);
	CHECK_ERROR_HAS("empty");
	gpucc_image_writer_free(w);

	gpucc_snapshot *s = NULL;
	CHECK_INT(gpucc_snapshot_new(&s, NULL, 0), 0);
	CHECK_INT(gpucc_snapshot_write(s, ""), GPUCC_EINVALID);
	CHECK_ERROR_HAS("empty");
	CHECK(strstr(gpucc_error_last()->message, "directory") == NULL);
	gpucc_snapshot_free(s);

	CHECK_INT(gpucc_merge_lock_acquire(""), GPUCC_EINVALID);
	CHECK_ERROR_HAS("empty");
	CHECK_INT(gpucc_embed_write_header("", "symbol"), GPUCC_EINVALID);
	CHECK_ERROR_HAS("empty");
	CHECK(strstr(gpucc_error_last()->message, "directory") == NULL);
	/* A name ending in a slash does name a directory. */
	CHECK_INT(gpucc_merge_lock_acquire("some/dir/"), GPUCC_EINVALID);
	CHECK_ERROR_HAS("is a directory");
}

/* The parsers of text take NULL for malformed text, GPUCC_EINVALID, as
 * they take "": none of them crashes on it. */
static void test_parsers_take_null(void)
{
	gpucc_part part = GPUCC_PART_HSACO;
	CHECK_INT(gpucc_part_from_name(&part, NULL), GPUCC_EINVALID);
	CHECK_INT(part, GPUCC_PART_HSACO);
	CHECK_ERROR_HAS("unknown payload kind ''");
	CHECK_INT(gpucc_part_from_name(&part, "PTX"), GPUCC_EINVALID);
	CHECK_INT(gpucc_part_from_name(&part, "ptx"), 0);
	CHECK_INT(part, GPUCC_PART_PTX);

	gpucc_target target;
	CHECK_INT(gpucc_target_parse(&target, NULL), GPUCC_EINVALID);
	gpucc_digest digest;
	CHECK_INT(gpucc_digest_from_hex(&digest, NULL), GPUCC_EINVALID);
	uint64_t size;
	CHECK_INT(gpucc_size_parse(&size, NULL), GPUCC_EINVALID);
	CHECK_INT(gpucc_target_from_hip_arch(&target, NULL), GPUCC_EINVALID);
}

/* gpucc_cache_insert of an entry the caller described wrongly names the
 * cache and the entry, not the temporary file the cache was about to
 * write ('DIR/v1/2c/.KEY.gpucc.new.PID.RANDOM'). */
static void test_cache_insert_names_cache(void)
{
	char dir[] = "/tmp/gpucc-test_api-XXXXXX";
	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	gpucc_cache *cache = NULL;
	CHECK_INT(gpucc_cache_open(&cache, dir, 0), 0);
	gpucc_kernel kernel = {"saxpy", -1, -1, -1};
	gpucc_entry e;
	memset(&e, 0, sizeof e);
	e.key_schema = 1;
	e.module = "saxpy.ll";
	e.target = "gfx90a:xnack-:sramecc+"; /* not canonical */
	e.triple = "amdgcn-amd-amdhsa";
	e.gpucc_version = gpucc_version();
	e.llvm_version = "19.1.7";
	e.kernel_count = 1;
	e.kernels = &kernel;
	memset(&e.key, 0x2c, sizeof e.key);
	gpucc_payload_source src = {GPUCC_PART_HSACO, NULL, "code", 4};
	CHECK_INT(gpucc_cache_insert(cache, &e, &src, 1, GPUCC_CONFLICT_FAIL), GPUCC_EINVALID);
	CHECK_ERROR_HAS("cannot insert entry 2c2c2c2c2c2c into cache '");
	CHECK_ERROR_HAS("not canonical");
	CHECK(strstr(gpucc_error_last()->message, ".new.") == NULL);
	gpucc_cache_stats stats;
	CHECK_INT(gpucc_cache_stats_get(&stats, cache), 0);
	CHECK_INT(stats.entries, 0);
	gpucc_cache_free(cache);
	char command[128];
	snprintf(command, sizeof command, "rm -rf '%s'", dir);
	CHECK_INT(system(command), 0);
}

/* Zero-length buffers may come as NULL, as an empty file read into memory
 * does: every call that takes a pointer and a size accepts (NULL, 0).
 * gpucc_snapshot_parse_text passed NULL to memchr (undefined; a build
 * with -Db_sanitize=undefined stopped there). */
static void test_zero_length_buffers(void)
{
	gpucc_snapshot *s = NULL;
	CHECK_INT(gpucc_snapshot_parse_text(&s, NULL, 0, "empty"), 0);
	CHECK(s != NULL && gpucc_snapshot_count(s) == 0);
	gpucc_snapshot_free(s);
	s = NULL;
	CHECK_INT(gpucc_snapshot_new(&s, NULL, 0), 0);
	CHECK(s != NULL && gpucc_snapshot_count(s) == 0);
	gpucc_snapshot_free(s);

	gpucc_digest a, b;
	gpucc_digest_buffer(&a, NULL, 0);
	gpucc_digest_buffer(&b, "", 0);
	CHECK_INT(gpucc_digest_compare(&a, &b), 0);

	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_memory(&img, NULL, 0, "empty"), GPUCC_ECORRUPT);
	void *data = NULL;
	size_t size = 0;
	CHECK_INT(gpucc_image_fetch_payload_memory(&data, &size, NULL, 0, NULL, &a, GPUCC_PART_PTX),
	          GPUCC_ECORRUPT);

	gpucc_compile *c = NULL;
	CHECK_INT(gpucc_compile_new(&c, NULL), 0);
	CHECK_INT(gpucc_compile_add_memory(c, "empty.ll", NULL, 0), 0);
	gpucc_compile_free(c);
}

/* A session without targets is refused in the library's words: the
 * command's advice ("give at least one --target") means nothing to a
 * program calling gpucc_compile_plan. */
static void test_compile_without_targets(void)
{
	gpucc_compile *c = NULL;
	CHECK_INT(gpucc_compile_new(&c, NULL), 0);
	CHECK_INT(gpucc_compile_add_memory(c, "kernels.ll", "; empty\n", 8), 0);
	CHECK_INT(gpucc_compile_plan(c), GPUCC_EINVALID);
	CHECK_ERROR_HAS("no targets");
	CHECK(strstr(gpucc_error_last()->message, "--") == NULL);
	CHECK_INT(gpucc_compile_run(c), GPUCC_EINVALID);
	gpucc_compile_free(c);
}

/* ---- threads ------------------------------------------------------------ */

#define THREADS 4
#define ROUNDS 8

static const char ptx_text[] = "// PTX of the threads case\n.version 7.8\n.target sm_90\n";
static const char hsaco_text[] = "code object of the threads case";

/* An image of two entries (gfx90a hsaco, sm_90 PTX) at path. */
static void write_two_entry_image(const char *path)
{
	gpucc_image_writer *w = NULL;
	CHECK_INT(gpucc_image_writer_new(&w, path, NULL), 0);
	const char *targets[2] = {"gfx90a", "sm_90:ptx78"};
	for (int i = 0; w && i < 2; i++) {
		gpucc_target parsed;
		CHECK_INT(gpucc_target_parse(&parsed, targets[i]), 0);
		gpucc_kernel kernel = {"saxpy", -1, -1, -1};
		gpucc_entry e;
		memset(&e, 0, sizeof e);
		e.key_schema = 1;
		e.module = "saxpy.ll";
		gpucc_digest_buffer(&e.module_sha256, targets[i], strlen(targets[i]));
		e.target = targets[i];
		e.triple = gpucc_target_triple(&parsed);
		e.gpucc_version = gpucc_version();
		e.llvm_version = "19.1.7";
		e.kernel_count = 1;
		e.kernels = &kernel;
		CHECK_INT(gpucc_entry_compute_key(&e.key, &e), 0);
		const char *bytes = i == 0 ? hsaco_text : ptx_text;
		gpucc_payload_source src = {i == 0 ? GPUCC_PART_HSACO : GPUCC_PART_PTX, NULL, bytes,
		                            strlen(bytes)};
		CHECK_INT(gpucc_image_writer_add(w, &e, &src, 1), 0);
	}
	CHECK_INT(gpucc_image_writer_commit(w), 0);
	gpucc_image_writer_free(w);
}

typedef struct thread_case {
	int index;
	const char *image, *cache;
	int failures;
} thread_case;

#define THREAD_CHECK(expr) ((expr) ? (void)0 : (void)tc->failures++)

/* One thread's work on handles of its own: open the image (each thread
 * another way), choose, read, fetch, verify; insert every entry into the
 * shared cache through its own cache handle and look it up; and find its
 * own last error after each failing call. */
static void *thread_run(void *arg)
{
	thread_case *tc = arg;
	char own_prefix[16]; /* not hex: never a key's */
	snprintf(own_prefix, sizeof own_prefix, "thread%d", tc->index);
	for (int round = 0; round < ROUNDS; round++) {
		gpucc_image *img = NULL;
		int rc = tc->index % 2 ? gpucc_image_open_mapped(&img, tc->image)
		                       : gpucc_image_open(&img, tc->image);
		THREAD_CHECK(rc == 0);
		if (rc)
			continue;
		gpucc_target device;
		THREAD_CHECK(gpucc_target_parse(&device, round % 2 ? "gfx90a" : "sm_90") == 0);
		device.ptx_isa = gpucc_cuda_max_ptx_isa(12040);
		gpucc_selection s;
		THREAD_CHECK(gpucc_image_select(&s, img, "saxpy", &device) == 0);
		void *data = NULL;
		size_t size = 0;
		THREAD_CHECK(gpucc_image_read_payload(&data, &size, img, s.payload) == 0);
		gpucc_free(data);
		THREAD_CHECK(gpucc_image_fetch_payload(&data, &size, tc->image, &s.payload->sha256,
		                                       s.part) == 0);
		gpucc_free(data);
		THREAD_CHECK(gpucc_image_verify(img) == 0);

		gpucc_cache *cache = NULL;
		THREAD_CHECK(gpucc_cache_open(&cache, tc->cache, 0) == 0);
		for (size_t i = 0; cache && i < gpucc_image_entry_count(img); i++) {
			const gpucc_entry *e = gpucc_image_entry(img, i);
			THREAD_CHECK(gpucc_cache_insert_from(cache, img, e, GPUCC_CONFLICT_FAIL) == 0);
			gpucc_image *hit = NULL;
			THREAD_CHECK(gpucc_cache_lookup(&hit, cache, &e->key) == 0);
			gpucc_image_free(hit);
		}
		gpucc_cache_free(cache);

		/* The last error is this thread's, whatever the others do. */
		const gpucc_entry *found = NULL;
		THREAD_CHECK(gpucc_image_lookup(&found, img, own_prefix) != 0);
		THREAD_CHECK(strstr(gpucc_error_last()->message, own_prefix) != NULL);
		gpucc_image_free(img);
	}
	return NULL;
}

/* A payload read into memory takes about its size: a package that keeps
 * the code of each kernel it read held 64 KiB for each, whatever its size. */
static void test_read_payload_size(void)
{
	char dir[] = "/tmp/gpucc-test_api-XXXXXX";
	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	char image[64];
	snprintf(image, sizeof image, "%s/two.gpucc", dir);
	write_two_entry_image(image);
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open(&img, image), 0);
	size_t count = 0;
	CHECK_INT(gpucc_image_count_payloads(&count, img), 0);
	CHECK_INT(count, 2);
	for (size_t i = 0; img && i < count; i++) {
		void *data = NULL;
		size_t size = 0;
		CHECK_INT(gpucc_image_read_payload(&data, &size, img, gpucc_image_payload(img, i)), 0);
		CHECK(size == strlen(ptx_text) || size == strlen(hsaco_text));
		CHECK(data && malloc_usable_size(data) < 1024);
		gpucc_free(data);
	}
	gpucc_image_free(img);
	char command[128];
	snprintf(command, sizeof command, "rm -rf '%s'", dir);
	CHECK_INT(system(command), 0);
}

/* What gpucc_image_extract's before_commit saw: the files and the last
 * one's payload. */
typedef struct extract_seen {
	size_t files;
	gpucc_part part;
} extract_seen;

static int see_files(void *ctx, const gpucc_extract_file *files, size_t count)
{
	extract_seen *seen = ctx;
	seen->files = count;
	if (count)
		seen->part = files[count - 1].payload->part;
	return 0;
}

/* gpucc_extract_options: a caller built against the version 1 header
 * (which ended at ctx) passes a struct of that size, which the library
 * reads no further than (allocated at its own size, so that the
 * AddressSanitizer run catches a read past it): every entry is extracted.
 * Version 2's keys extract only the entries they name (an entry named by
 * its key and by a prefix, once); a key no entry has is GPUCC_ENOTFOUND
 * naming it, before anything is written; keys counted but NULL, or
 * another version, are GPUCC_EINVALID. */
static void test_extract_options(void)
{
	typedef struct extract_options_v1 {
		unsigned version;
		bool force;
		gpucc_extract_fn before_commit;
		void *ctx;
	} extract_options_v1;
	_Static_assert(offsetof(extract_options_v1, ctx) == offsetof(gpucc_extract_options, ctx),
	               "version 1 is the start of the current struct");
	char dir[] = "/tmp/gpucc-test_api-XXXXXX", image[64], out[64];
	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(image, sizeof image, "%s/two.gpucc", dir);
	write_two_entry_image(image);
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open_for_lookup(&img, image), 0);

	extract_seen seen = {0};
	extract_options_v1 *v1 = calloc(1, sizeof *v1);
	CHECK(v1 != NULL);
	if (v1) {
		*v1 = (extract_options_v1){1, false, see_files, &seen};
		snprintf(out, sizeof out, "%s/all", dir);
		CHECK_INT(gpucc_image_extract(img, out, (const gpucc_extract_options *)v1), 0);
		CHECK_INT(seen.files, 2);
	}
	free(v1);

	/* The keys of the sm_90 entry: its own, and a prefix of it. */
	gpucc_image *whole = NULL;
	char key[GPUCC_DIGEST_HEX_SIZE] = "", prefix[9] = "";
	CHECK_INT(gpucc_image_open(&whole, image), 0);
	for (size_t i = 0; whole && i < gpucc_image_entry_count(whole); i++)
		if (gpucc_image_entry(whole, i)->payloads[0].part == GPUCC_PART_PTX)
			gpucc_digest_to_hex(key, &gpucc_image_entry(whole, i)->key);
	gpucc_image_free(whole);
	memcpy(prefix, key, 8);
	const char *keys[2] = {key, prefix};
	gpucc_extract_options o;
	gpucc_extract_options_init(&o);
	CHECK_INT(o.version, GPUCC_EXTRACT_OPTIONS_VERSION);
	CHECK(o.keys == NULL && o.key_count == 0);
	o.before_commit = see_files;
	o.ctx = &seen;
	o.keys = keys;
	o.key_count = 2;
	snprintf(out, sizeof out, "%s/one", dir);
	CHECK_INT(gpucc_image_extract(img, out, &o), 0);
	CHECK_INT(seen.files, 1);
	CHECK_INT(seen.part, GPUCC_PART_PTX);

	const char *unknown[1] = {"0000000000000000000000000000000000000000000000000000000000000000"};
	o.keys = unknown;
	o.key_count = 1;
	snprintf(out, sizeof out, "%s/none", dir);
	CHECK_INT(gpucc_image_extract(img, out, &o), GPUCC_ENOTFOUND);
	CHECK_ERROR_HAS("no entry with key '00000000");
	CHECK_INT(access(out, F_OK), -1);
	o.keys = NULL;
	CHECK_INT(gpucc_image_extract(img, out, &o), GPUCC_EINVALID);
	CHECK_ERROR_HAS("gpucc_image_extract: 'opts->keys' is NULL");
	o.keys = keys;
	o.version = GPUCC_EXTRACT_OPTIONS_VERSION + 1;
	CHECK_INT(gpucc_image_extract(img, out, &o), GPUCC_EINVALID);
	CHECK_ERROR_HAS("extract options of version");
	CHECK_INT(access(out, F_OK), -1);
	gpucc_image_free(img);
	char command[128];
	snprintf(command, sizeof command, "rm -rf '%s'", dir);
	CHECK_INT(system(command), 0);
}

/* gpucc.h: separate handles may be used on separate threads at once.  In
 * a build with -Db_sanitize=thread this is also where a data race in the
 * library (a counter shared by every image writer) shows. */
static void test_threads_with_own_handles(void)
{
	char dir[] = "/tmp/gpucc-test_api-XXXXXX";
	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	char image[64], cache[64];
	snprintf(image, sizeof image, "%s/two.gpucc", dir);
	snprintf(cache, sizeof cache, "%s/cache", dir);
	write_two_entry_image(image);
	pthread_t threads[THREADS];
	thread_case cases[THREADS];
	for (int i = 0; i < THREADS; i++) {
		cases[i] = (thread_case){i, image, cache, 0};
		CHECK_INT(pthread_create(&threads[i], NULL, thread_run, &cases[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(threads[i], NULL);
		CHECK_INT(cases[i].failures, 0);
	}
	char command[128];
	snprintf(command, sizeof command, "rm -rf '%s'", dir);
	CHECK_INT(system(command), 0);
}

/* Every `**out` is NULL after a failure (gpucc.h), so that a caller may
 * free it on every path; gpucc_cache_default_dir left it as it was. */
static void test_out_null_on_failure(void)
{
	const char *names[] = {"GPUCC_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
	char *saved[3];
	for (int i = 0; i < 3; i++) {
		const char *value = getenv(names[i]);
		saved[i] = value ? strdup(value) : NULL;
		unsetenv(names[i]);
	}
	char *dir = (char *)"not touched";
	CHECK_INT(gpucc_cache_default_dir(&dir), GPUCC_ENOTFOUND);
	CHECK(dir == NULL);
	gpucc_free(dir);
	for (int i = 0; i < 3; i++) {
		if (saved[i])
			setenv(names[i], saved[i], 1);
		free(saved[i]);
	}

	gpucc_cache *cache = (gpucc_cache *)&dir;
	CHECK_INT(gpucc_cache_open(&cache, "", 0), GPUCC_EINVALID);
	CHECK(cache == NULL);
	gpucc_image *img = (gpucc_image *)&dir;
	CHECK_INT(gpucc_image_open_memory(&img, "not an image", 12, NULL), GPUCC_ECORRUPT);
	CHECK(img == NULL);
	gpucc_snapshot *snapshot = (gpucc_snapshot *)&dir;
	CHECK_INT(gpucc_snapshot_parse_text(&snapshot, "x\n", 2, "text"), GPUCC_ECORRUPT);
	CHECK(snapshot == NULL);
	gpucc_operand *source = (gpucc_operand *)&dir;
	CHECK_INT(gpucc_operand_open(&source, "no-such-source", NULL, NULL), GPUCC_ENOTFOUND);
	CHECK(source == NULL);
}

/* A conflict policy outside the enum is refused everywhere, before
 * anything is written: it was read as "last" by the cache (replacing the
 * entry there), as "first" by merge and as "fail" by delta. */
static void test_unknown_conflict_policy(void)
{
	char dir[] = "/tmp/gpucc-test_api-XXXXXX";
	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	char image[64], cache_dir[64], merged[64];
	snprintf(image, sizeof image, "%s/two.gpucc", dir);
	snprintf(cache_dir, sizeof cache_dir, "%s/cache", dir);
	snprintf(merged, sizeof merged, "%s/merged.gpucc", dir);
	write_two_entry_image(image);
	gpucc_image *img = NULL;
	gpucc_cache *cache = NULL;
	CHECK_INT(gpucc_image_open(&img, image), 0);
	CHECK_INT(gpucc_cache_open(&cache, cache_dir, 0), 0);
	if (!img || !cache)
		return;
	const gpucc_entry *e = gpucc_image_entry(img, 0);
	gpucc_conflict_policy bad = (gpucc_conflict_policy)7;
	CHECK_INT(gpucc_cache_insert_from(cache, img, e, bad), GPUCC_EINVALID);
	CHECK_ERROR_HAS("unknown conflict policy 7");
	gpucc_payload_source src = {GPUCC_PART_HSACO, NULL, "code", 4};
	CHECK_INT(gpucc_cache_insert(cache, e, &src, 1, bad), GPUCC_EINVALID);
	gpucc_image *hit = NULL;
	CHECK_INT(gpucc_cache_lookup(&hit, cache, &e->key), GPUCC_ENOTFOUND);

	gpucc_operand *source = NULL;
	CHECK_INT(gpucc_operand_from_image(&source, img), 0);
	gpucc_algebra_options opts = GPUCC_ALGEBRA_OPTIONS_INIT;
	opts.on_conflict = bad;
	CHECK_INT(gpucc_merge_write(merged, &source, 1, &opts, NULL), GPUCC_EINVALID);
	CHECK_INT(gpucc_image_open(&hit, merged), GPUCC_ENOTFOUND);
	CHECK_INT(gpucc_merge_into_cache(cache, &source, 1, &opts, NULL), GPUCC_EINVALID);
	gpucc_snapshot *base = NULL, *delta = NULL;
	CHECK_INT(gpucc_snapshot_new(&base, NULL, 0), 0);
	CHECK_INT(gpucc_delta_write(merged, source, base, "base", &opts, NULL), GPUCC_EINVALID);
	CHECK_INT(gpucc_snapshot_delta(&delta, base, "source", base, "base", &opts, NULL),
	          GPUCC_EINVALID);
	CHECK(delta == NULL);
	CHECK_ERROR_HAS("unknown conflict policy 7");
	gpucc_snapshot_free(base);
	gpucc_operand_free(source);
	gpucc_cache_free(cache);
	gpucc_image_free(img);
	char command[128];
	snprintf(command, sizeof command, "rm -rf '%s'", dir);
	CHECK_INT(system(command), 0);
}

/* gpucc_entry_prepare: an entry described in any order comes out sorted
 * and keyed as gpucc_entry_compute_key keys its canonical form; each
 * defect no image holds is GPUCC_EINVALID naming it. */
static void test_entry_prepare(void)
{
	gpucc_option options[] = {{"opt-level", "2"}, {"fast-math", "off"}};
	gpucc_device_lib libs[] = {{.name = "ocml.bc"}, {.name = "oclc_abi_version_500.bc"}};
	const char *externals[] = {"z_var", "a_var"};
	gpucc_kernel kernels[] = {{.name = "k2"}, {.name = "k1"}};
	gpucc_payload_source sources[] = {{.part = GPUCC_PART_BITCODE, .data = "b", .size = 1},
	                                  {.part = GPUCC_PART_HSACO, .data = "h", .size = 1}};
	gpucc_entry e = {.module = "m.ll", .target = "gfx90a", .triple = "amdgcn-amd-amdhsa",
	                 .option_count = 2, .options = options, .device_lib_count = 2,
	                 .device_libs = libs, .external_count = 2, .externals = externals,
	                 .kernel_count = 2, .kernels = kernels};
	CHECK_INT(gpucc_entry_prepare(&e, sources, 2), 0);
	CHECK_STR(options[0].name, "fast-math");
	CHECK_STR(libs[0].name, "oclc_abi_version_500.bc");
	CHECK_STR(externals[0], "a_var");
	CHECK_STR(kernels[0].name, "k2"); /* kernels keep the module's order */
	CHECK_INT(sources[0].part, GPUCC_PART_HSACO < GPUCC_PART_BITCODE ? GPUCC_PART_HSACO : GPUCC_PART_BITCODE);
	CHECK(e.key_schema != 0 && e.gpucc_version && e.llvm_version);
	CHECK_STR(e.gpucc_version, gpucc_version());
	gpucc_digest key;
	CHECK_INT(gpucc_entry_compute_key(&key, &e), 0);
	CHECK(gpucc_digest_compare(&key, &e.key) == 0);

	options[1].name = "fast-math";
	CHECK_INT(gpucc_entry_prepare(&e, sources, 2), GPUCC_EINVALID);
	CHECK_ERROR_HAS("option 'fast-math' given twice");
	options[1].name = "opt-level";
	kernels[1].name = "k2";
	CHECK_INT(gpucc_entry_prepare(&e, sources, 2), GPUCC_EINVALID);
	CHECK_ERROR_HAS("kernel 'k2' given twice");
	kernels[1].name = "k1";
	sources[0].part = GPUCC_PART_PTX;
	CHECK_INT(gpucc_entry_prepare(&e, sources, 2), GPUCC_EINVALID);
	CHECK_ERROR_HAS("a ptx payload does not fit target 'gfx90a'");
	sources[0].part = GPUCC_PART_HSACO;
	sources[1].part = GPUCC_PART_HSACO;
	CHECK_INT(gpucc_entry_prepare(&e, sources, 2), GPUCC_EINVALID);
	CHECK_ERROR_HAS("two hsaco payloads");
	CHECK_INT(gpucc_entry_prepare(&e, sources, 0), GPUCC_EINVALID);
	CHECK_ERROR_HAS("no payload");
	e.target = "gfx9999";
	CHECK_INT(gpucc_entry_prepare(&e, sources, 1), GPUCC_EINVALID);
	e.target = "gfx90a";
	e.module = "";
	CHECK_INT(gpucc_entry_prepare(&e, sources, 1), GPUCC_EINVALID);
	CHECK_ERROR_HAS("no module name");
}

/* gpucc_code_object_check: ELF headers of each slip, written to a file. */
static void test_code_object_check(void)
{
	FILE *f = tmpfile();
	CHECK(f != NULL);
	if (!f)
		return;
	int fd = fileno(f);
	unsigned char h[64] = {0x7f, 'E', 'L', 'F', 2 /* 64-bit */, 1 /* little-endian */, 1};
	struct {
		gpucc_part part;
		unsigned type, machine;
		int rc;
		const char *message;
	} cases[] = {
		{GPUCC_PART_CUBIN, 2 /* ET_EXEC */, 190 /* EM_CUDA */, 0, NULL},
		{GPUCC_PART_CUBIN, 1 /* ET_REL */, 190, GPUCC_ECORRUPT, "is a relocatable cubin"},
		{GPUCC_PART_HSACO, 3 /* ET_DYN */, 224 /* EM_AMDGPU */, 0, NULL},
		{GPUCC_PART_HSACO, 1, 224, GPUCC_ECORRUPT, "is a relocatable AMDGPU ELF"},
		{GPUCC_PART_HSACO, 2, 190, GPUCC_ECORRUPT, "an ELF for machine 190 (CUDA: a cubin)"},
		{GPUCC_PART_PTX, 1, 190, 0, NULL}, /* not a code object: not checked */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		h[16] = (unsigned char)cases[i].type;
		h[17] = 0;
		h[18] = (unsigned char)(cases[i].machine & 0xff);
		h[19] = (unsigned char)(cases[i].machine >> 8);
		CHECK(pwrite(fd, h, sizeof h, 0) == (ssize_t)sizeof h);
		CHECK_INT(gpucc_code_object_check(cases[i].part, fd, "k.bin"), cases[i].rc);
		if (cases[i].message)
			CHECK_ERROR_HAS(cases[i].message);
	}
	CHECK(pwrite(fd, "//\n.version 8.5\n.target sm_90\n", 30, 0) == 30);
	CHECK_INT(gpucc_code_object_check(GPUCC_PART_CUBIN, fd, "k.bin"), 0); /* not an ELF */
	fclose(f);
}

/* A caller built against the version 1 header of gpucc_compile_options
 * (which ended at progress_ctx) passes a smaller struct: the library reads
 * no field past it (the struct is allocated at its own size, so that the
 * AddressSanitizer run of this test catches a read past it), and the later
 * fields take their defaults.  The v1 struct is spelt out as that header
 * declared it. */
static void test_compile_options_v1(void)
{
	typedef struct compile_options_v1 {
		unsigned version;
		int opt_level;
		bool fast_math, ftz, debug_info;
		int code_object_version;
		bool no_cubin;
		unsigned jobs;
		gpucc_cache *cache;
		gpucc_image_writer *writer;
		gpucc_compile_progress_fn progress;
		void *progress_ctx;
	} compile_options_v1;
	_Static_assert(offsetof(compile_options_v1, progress_ctx) ==
	                       offsetof(gpucc_compile_options, progress_ctx),
	               "version 1 is the start of the current struct");
	compile_options_v1 *v1 = calloc(1, sizeof *v1);
	CHECK(v1 != NULL);
	if (!v1)
		return;
	v1->version = 1;
	v1->opt_level = 3;
	v1->jobs = 1;
	gpucc_compile *c = NULL;
	CHECK_INT(gpucc_compile_new(&c, (const gpucc_compile_options *)v1), 0);
	gpucc_compile_free(c);

	free(v1);

	/* Version 3 ends at clang_arg_count: a caller built then passes no
	 * llvm_major, and every job gets the newest backend that fits (a
	 * struct of exactly that size: AddressSanitizer sees a read past it). */
	size_t v3_size = offsetof(gpucc_compile_options, llvm_major);
	unsigned char *v3 = calloc(1, v3_size);
	CHECK(v3 != NULL);
	if (!v3)
		return;
	gpucc_compile_options defaults;
	gpucc_compile_options_init(&defaults);
	defaults.version = 3;
	memcpy(v3, &defaults, v3_size);
	CHECK_INT(gpucc_compile_new(&c, (const gpucc_compile_options *)(void *)v3), 0);
	if (gpucc_llvm_backend(0, NULL, NULL)) /* built with LLVM */
		CHECK_INT(gpucc_compile_add_target(c, "sm_90"), 0);
	gpucc_compile_free(c);
	free(v3);

	/* Version 4 ends at llvm_major (no no_pch): a struct of exactly that
	 * size still opens a session. */
	size_t v4_size = offsetof(gpucc_compile_options, no_pch);
	unsigned char *v4 = calloc(1, v4_size);
	CHECK(v4 != NULL);
	if (!v4)
		return;
	defaults.version = 4;
	memcpy(v4, &defaults, v4_size);
	CHECK_INT(gpucc_compile_new(&c, (const gpucc_compile_options *)(void *)v4), 0);
	gpucc_compile_free(c);
	free(v4);

	/* Version 4 on: llvm_major pins the backend; one this gpucc lacks is
	 * refused when a target is added, naming what it has. */
	gpucc_compile_options pinned;
	gpucc_compile_options_init(&pinned);
	CHECK_INT(pinned.version, 5);
	CHECK_INT(pinned.llvm_major, 0);
	pinned.llvm_major = 77;
	CHECK_INT(gpucc_compile_new(&c, &pinned), 0);
	if (gpucc_llvm_backend(0, NULL, NULL)) {
		CHECK_INT(gpucc_compile_add_target(c, "sm_90"), GPUCC_EINVALID);
		CHECK_ERROR_HAS("LLVM 77 was asked for, and this gpucc has LLVM ");
	}
	gpucc_compile_free(c);

	gpucc_compile_options newer; /* from a newer header than this library's */
	gpucc_compile_options_init(&newer);
	newer.version = GPUCC_COMPILE_OPTIONS_VERSION + 1;
	CHECK_INT(gpucc_compile_new(&c, &newer), GPUCC_EINVALID);
	CHECK_ERROR_HAS("compile options of version");
	CHECK(c == NULL);
}

/* Every public options struct carries its version: one this libgpucc does
 * not know (0, a caller that left it unset; or a newer header's) is
 * GPUCC_EINVALID naming the struct, before anything is opened or written;
 * the _INIT macros and _init functions give the version and the defaults. */
static void test_options_versions(void)
{
	gpucc_image_writer *w = NULL;
	gpucc_write_options wo = GPUCC_WRITE_OPTIONS_INIT;
	wo.version = 0;
	CHECK_INT(gpucc_image_writer_new(&w, "unwritten.gpucc", &wo), GPUCC_EINVALID);
	CHECK_ERROR_HAS("write options of version 0");
	wo.version = GPUCC_WRITE_OPTIONS_VERSION + 1;
	CHECK_INT(gpucc_image_writer_new(&w, "unwritten.gpucc", &wo), GPUCC_EINVALID);
	gpucc_write_options_init(&wo);
	CHECK_INT(wo.version, GPUCC_WRITE_OPTIONS_VERSION);
	CHECK_INT(wo.zstd_level, 0);

	gpucc_image *img = NULL;
	gpucc_image_limits limits = {.manifest_size = 1 << 20}; /* version left 0 */
	CHECK_INT(gpucc_image_open_limited(&img, "/nonexistent.gpucc", &limits), GPUCC_EINVALID);
	CHECK_ERROR_HAS("image limits of version 0");
	CHECK_INT(gpucc_image_default_limits(&limits), 0);
	CHECK_INT(limits.version, GPUCC_IMAGE_LIMITS_VERSION);
	CHECK_INT(gpucc_image_open_limited(&img, "/nonexistent.gpucc", &limits), GPUCC_ENOTFOUND);

	gpucc_algebra_options ao;
	gpucc_algebra_options_init(&ao);
	CHECK_INT(ao.version, GPUCC_ALGEBRA_OPTIONS_VERSION);
	CHECK_INT(ao.write.version, GPUCC_WRITE_OPTIONS_VERSION);
	ao.version = 7;
	CHECK_INT(gpucc_merge_write("unwritten.gpucc", NULL, 0, &ao, NULL), GPUCC_EINVALID);
	CHECK_ERROR_HAS("algebra options of version 7");
	ao.version = GPUCC_ALGEBRA_OPTIONS_VERSION;
	ao.write.version = 0; /* the nested write options are checked too */
	CHECK_INT(gpucc_merge_write("unwritten.gpucc", NULL, 0, &ao, NULL), GPUCC_EINVALID);
	CHECK_ERROR_HAS("write options of version 0");
	CHECK_INT(access("unwritten.gpucc", F_OK), -1);

	gpucc_embed_options eo;
	gpucc_embed_options_init(&eo);
	CHECK_INT(eo.version, GPUCC_EMBED_OPTIONS_VERSION);
	eo.symbol = "kernels";
	eo.version = 0;
	CHECK_INT(gpucc_embed_image("/nonexistent.gpucc", "unwritten.o", &eo), GPUCC_EINVALID);
	CHECK_ERROR_HAS("embed options of version 0");
}

int main(void)
{
	RUN(test_options_versions);
	RUN(test_compile_options_v1);
	RUN(test_entry_prepare);
	RUN(test_code_object_check);
	RUN(test_read_payload_size);
	RUN(test_extract_options);
	RUN(test_compile_without_targets);
	RUN(test_zero_length_buffers);
	RUN(test_unknown_conflict_policy);
	RUN(test_cache_insert_names_cache);
	RUN(test_out_null_on_failure);
	RUN(test_threads_with_own_handles);
	RUN(test_parsers_take_null);
	RUN(test_open_too_long_name);
	RUN(test_empty_output_path);
	return CHECK_DONE();
}
