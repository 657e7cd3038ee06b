/*
 * lib/tests/test_cache.c -- the local cache and the algebra on top of it:
 * insert and lookup, conflicts, corrupt entries as reported misses,
 * read-only use, LRU gc, prune's removal, counters, sizes; verify, and gc of what killed
 * writers left; snapshots from items and text
 * (both sort paths), snapshot deltas, and merges into images and caches.
 */
#include "check.h"

#include <gpucc.h>

#include "atomic_file.h"
#include "cache_internal.h" /* gpucc_cache_test_before_publish, staging paths */

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

typedef struct test_entry {
	gpucc_entry e;
	gpucc_option option;
	gpucc_kernel kernel;
	char target[GPUCC_TARGET_NAME_SIZE];
} test_entry;

static void make_entry(test_entry *t, const char *module)
{
	memset(t, 0, sizeof *t);
	gpucc_target parsed;
	CHECK_INT(gpucc_target_parse(&parsed, "sm_90"), 0);
	gpucc_target_format(t->target, &parsed);
	t->option = (gpucc_option){"opt-level", "2"};
	t->kernel = (gpucc_kernel){"kernel", -1, -1, -1};
	t->e.key_schema = 1;
	t->e.module = module;
	gpucc_digest_buffer(&t->e.module_sha256, module, strlen(module));
	t->e.target = t->target;
	t->e.triple = gpucc_target_triple(&parsed);
	t->e.gpucc_version = gpucc_version();
	t->e.llvm_version = "19.1.7";
	t->e.option_count = 1;
	t->e.options = &t->option;
	t->e.kernel_count = 1;
	t->e.kernels = &t->kernel;
	CHECK_INT(gpucc_entry_compute_key(&t->e.key, &t->e), 0);
}

static int insert(gpucc_cache *c, const char *module, const char *ptx, gpucc_conflict_policy p)
{
	test_entry t;
	make_entry(&t, module);
	gpucc_payload_source src = {GPUCC_PART_PTX, NULL, ptx, strlen(ptx)};
	return gpucc_cache_insert(c, &t.e, &src, 1, p);
}

static void count_defect(void *ctx, const char *path, const char *message)
{
	(void)path;
	(void)message;
	++*(int *)ctx;
}

static int warnings;
static char last_warning[1024];
static void count_warning(void *ctx, const char *message)
{
	(void)ctx;
	snprintf(last_warning, sizeof last_warning, "%s", message);
	warnings++;
}

/* The file of module's entry in c (a static buffer). */
static const char *entry_file(gpucc_cache *c, const char *module)
{
	static char path[512];
	test_entry t;
	make_entry(&t, module);
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &t.e.key);
	snprintf(path, sizeof path, "%s/v1/%.2s/%s.gpucc", gpucc_cache_dir(c), hex, hex);
	return path;
}

/* Overwrite the start of the payload text in the entry file at path, in
 * place: the manifest still promises the old bytes. */
static void corrupt_payload(const char *path, const char *text)
{
	int fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	struct stat st;
	fstat(fd, &st);
	char *buf = malloc((size_t)st.st_size);
	CHECK(pread(fd, buf, (size_t)st.st_size, 0) == st.st_size);
	char *hit = memmem(buf, (size_t)st.st_size, text, strlen(text));
	CHECK(hit != NULL);
	if (hit)
		CHECK(pwrite(fd, "SOME", 4, hit - buf) == 4);
	close(fd);
	free(buf);
}

/* The PTX of module's entry in c, looked up (NULL on a miss; free()). */
static char *lookup_ptx(gpucc_cache *c, const char *module)
{
	test_entry t;
	make_entry(&t, module);
	gpucc_image *img;
	if (gpucc_cache_lookup(&img, c, &t.e.key) != 0)
		return NULL;
	void *data = NULL;
	size_t size = 0;
	CHECK_INT(gpucc_image_read_payload(&data, &size, img, &gpucc_image_entry(img, 0)->payloads[0]), 0);
	gpucc_image_free(img);
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	gpucc_free(data);
	return text;
}

static void test_insert_lookup(void)
{
	gpucc_cache *c;
	/* "" is refused, not taken for the default cache (NULL). */
	CHECK_INT(gpucc_cache_open(&c, "", 0), GPUCC_EINVALID);
	CHECK(c == NULL);
	CHECK_ERROR_HAS("empty string");
	CHECK_INT(gpucc_cache_open(&c, path_in_dir("c1"), 0), 0);
	CHECK(gpucc_cache_writable(c));
	CHECK_INT(insert(c, "a", "ptx a", GPUCC_CONFLICT_FAIL), 0);
	struct stat first, again;
	CHECK_INT(stat(entry_file(c, "a"), &first), 0);
	CHECK_INT(insert(c, "a", "ptx a", GPUCC_CONFLICT_FAIL), 0); /* identical: kept */
	/* ... as it was: the file is not written again */
	CHECK_INT(stat(entry_file(c, "a"), &again), 0);
	CHECK(first.st_ino == again.st_ino && first.st_dev == again.st_dev);
	CHECK_INT(insert(c, "a", "ptx A", GPUCC_CONFLICT_FAIL), GPUCC_ECONFLICT);
	CHECK_ERROR_HAS("conflict");

	test_entry t;
	make_entry(&t, "a");
	gpucc_image *img;
	CHECK_INT(gpucc_cache_lookup(&img, c, &t.e.key), 0);
	CHECK_INT(gpucc_image_entry_count(img), 1);
	void *data;
	size_t size;
	CHECK_INT(gpucc_image_read_payload(&data, &size, img, &gpucc_image_entry(img, 0)->payloads[0]), 0);
	CHECK(size == 5 && memcmp(data, "ptx a", 5) == 0);
	gpucc_free(data);
	gpucc_image_free(img);

	/* last replaces, first keeps */
	CHECK_INT(insert(c, "a", "ptx A", GPUCC_CONFLICT_FIRST), 0);
	CHECK_INT(gpucc_cache_lookup(&img, c, &t.e.key), 0);
	CHECK_INT(gpucc_image_entry(img, 0)->payloads[0].size, 5);
	CHECK_INT(gpucc_image_read_payload(&data, &size, img, &gpucc_image_entry(img, 0)->payloads[0]), 0);
	CHECK(memcmp(data, "ptx a", 5) == 0);
	gpucc_free(data);
	gpucc_image_free(img);
	CHECK_INT(insert(c, "a", "ptx A", GPUCC_CONFLICT_LAST), 0);
	CHECK_INT(gpucc_cache_lookup(&img, c, &t.e.key), 0);
	CHECK_INT(gpucc_image_read_payload(&data, &size, img, &gpucc_image_entry(img, 0)->payloads[0]), 0);
	CHECK(memcmp(data, "ptx A", 5) == 0);
	gpucc_free(data);
	gpucc_image_free(img);

	make_entry(&t, "absent");
	CHECK_INT(gpucc_cache_lookup(&img, c, &t.e.key), GPUCC_ENOTFOUND);
	CHECK(img == NULL);

	gpucc_cache_stats st;
	CHECK_INT(gpucc_cache_stats_get(&st, c), 0);
	CHECK_INT(st.entries, 1);
	CHECK_INT(st.hits, 3);
	CHECK_INT(st.misses, 1);
	gpucc_cache_free(c); /* saves the counters */

	CHECK_INT(gpucc_cache_open(&c, path_in_dir("c1"), GPUCC_CACHE_READ_ONLY), 0);
	CHECK(!gpucc_cache_writable(c));
	CHECK_INT(gpucc_cache_stats_get(&st, c), 0);
	CHECK_INT(st.hits, 3);
	CHECK_INT(st.misses, 1);
	CHECK_INT(insert(c, "b", "ptx b", GPUCC_CONFLICT_FAIL), GPUCC_ERROR);
	CHECK_ERROR_HAS("read-only");
	gpucc_cache_free(c);

	/* a read-only open of a directory that does not exist is an empty cache */
	CHECK_INT(gpucc_cache_open(&c, path_in_dir("nothing"), GPUCC_CACHE_READ_ONLY), 0);
	CHECK_INT(gpucc_cache_lookup(&img, c, &t.e.key), GPUCC_ENOTFOUND);
	CHECK_INT(gpucc_cache_stats_get(&st, c), 0);
	CHECK_INT(st.entries, 0);
	gpucc_cache_free(c);
	struct stat sb;
	CHECK(stat(path_in_dir("nothing"), &sb) != 0);
}

static void test_corrupt_entry_is_a_miss(void)
{
	gpucc_cache *c;
	CHECK_INT(gpucc_cache_open(&c, path_in_dir("c2"), 0), 0);
	gpucc_cache_set_warning_handler(c, count_warning, NULL);
	CHECK_INT(insert(c, "x", "some ptx text", GPUCC_CONFLICT_FAIL), 0);
	test_entry t;
	make_entry(&t, "x");
	char path[512];
	snprintf(path, sizeof path, "%s", entry_file(c, "x"));
	corrupt_payload(path, "some ptx text");
	struct stat st;

	warnings = 0;
	gpucc_image *img;
	CHECK_INT(gpucc_cache_lookup(&img, c, &t.e.key), GPUCC_ENOTFOUND);
	CHECK_INT(warnings, 1);
	CHECK(stat(path, &st) != 0); /* removed */
	gpucc_cache_stats s;
	CHECK_INT(gpucc_cache_stats_get(&s, c), 0);
	CHECK_INT(s.corrupt, 1);
	CHECK_INT(s.misses, 1);
	/* and the next insert repairs it */
	CHECK_INT(insert(c, "x", "some ptx text", GPUCC_CONFLICT_FAIL), 0);
	CHECK_INT(gpucc_cache_lookup(&img, c, &t.e.key), 0);
	gpucc_image_free(img);

	/* a truncated entry too */
	CHECK_INT(truncate(path, 700), 0);
	CHECK_INT(gpucc_cache_lookup(&img, c, &t.e.key), GPUCC_ENOTFOUND);
	CHECK_INT(warnings, 2);
	gpucc_cache_free(c);
}

static void set_age(gpucc_cache *c, const char *module, int seconds_ago)
{
	struct timeval tv[2];
	gettimeofday(&tv[0], NULL);
	tv[0].tv_sec -= seconds_ago;
	tv[1] = tv[0];
	CHECK_INT(utimes(entry_file(c, module), tv), 0);
}

static void test_gc_is_lru(void)
{
	gpucc_cache *c;
	CHECK_INT(gpucc_cache_open(&c, path_in_dir("c3"), 0), 0);
	const char *mods[] = {"m0", "m1", "m2", "m3"};
	for (int i = 0; i < 4; i++) {
		CHECK_INT(insert(c, mods[i], mods[i], GPUCC_CONFLICT_FAIL), 0);
		set_age(c, mods[i], 1000 - i * 100); /* m0 oldest */
	}
	/* a hit makes m0 the most recent */
	test_entry t;
	make_entry(&t, "m0");
	gpucc_image *img;
	CHECK_INT(gpucc_cache_lookup(&img, c, &t.e.key), 0);
	gpucc_image_free(img);

	gpucc_cache_stats st;
	CHECK_INT(gpucc_cache_stats_get(&st, c), 0);
	uint64_t one = st.bytes / 4;
	gpucc_cache_gc_result r;
	CHECK_INT(gpucc_cache_gc(c, 2 * one + one / 2, &r), 0);
	CHECK_INT(r.removed_entries, 2);
	CHECK_INT(r.entries, 2);
	const char *kept[] = {"m0", "m3"}, *gone[] = {"m1", "m2"};
	for (int i = 0; i < 2; i++) {
		make_entry(&t, kept[i]);
		CHECK_INT(gpucc_cache_open_entry(&img, c, &t.e.key), 0);
		gpucc_image_free(img);
		make_entry(&t, gone[i]);
		CHECK_INT(gpucc_cache_open_entry(&img, c, &t.e.key), GPUCC_ENOTFOUND);
	}

	/* the bound applies on insert */
	CHECK_INT(gpucc_cache_set_max_size(c, one * 3), 0);
	gpucc_cache_free(c);
	CHECK_INT(gpucc_cache_open(&c, path_in_dir("c3"), 0), 0);
	CHECK_INT(gpucc_cache_max_size(c), one * 3);
	CHECK_INT(gpucc_cache_gc(c, 0, &r), 0); /* exact byte count for the estimate */
	for (int i = 0; i < 6; i++) {
		char name[16];
		snprintf(name, sizeof name, "n%d", i);
		CHECK_INT(insert(c, name, name, GPUCC_CONFLICT_FAIL), 0);
	}
	CHECK_INT(gpucc_cache_stats_get(&st, c), 0);
	CHECK(st.bytes <= one * 3 + one);
	CHECK_INT(gpucc_cache_clear(c), 0);
	CHECK_INT(gpucc_cache_stats_get(&st, c), 0);
	CHECK_INT(st.entries, 0);
	CHECK_INT(st.hits, 0);
	gpucc_cache_free(c);
}

/* A judge for gpucc_cache_remove_judged that wants every entry gone, and
 * plays a process hitting "m1" in the moment between the read and the
 * removal (a lookup sets the mtime to now). */
typedef struct racing_judge {
	gpucc_cache *c;
	int judged;
} racing_judge;

static const char *judge_all_hit_m1(void *ctx, const gpucc_entry *e, const struct stat *st)
{
	racing_judge *j = ctx;
	(void)st;
	j->judged++;
	if (strcmp(e->module, "m1") == 0) {
		gpucc_image *img;
		CHECK_INT(gpucc_cache_lookup(&img, j->c, &e->key), 0);
		gpucc_image_free(img);
	}
	return "test";
}

static void count_pruned(void *ctx, const gpucc_entry *e, uint64_t bytes, const char *reason)
{
	(void)e;
	CHECK(bytes > 0);
	CHECK_STR(reason, "test");
	++*(int *)ctx;
}

/* Prune's removal: a dry run removes nothing; an entry used while it is
 * judged stays (it is recent now); the others go. */
static void test_prune_spares_used_entries(void)
{
	gpucc_cache *c;
	CHECK_INT(gpucc_cache_open(&c, path_in_dir("c-prune"), 0), 0);
	const char *mods[] = {"m0", "m1", "m2"};
	for (int i = 0; i < 3; i++) {
		CHECK_INT(insert(c, mods[i], mods[i], GPUCC_CONFLICT_FAIL), 0);
		set_age(c, mods[i], 1000);
	}
	racing_judge j = {c, 0};
	int reported = 0;
	gpucc_cache_prune_result r;
	CHECK_INT(gpucc_cache_remove_judged(c, true, judge_all_hit_m1, &j, count_pruned, &reported, &r), 0);
	CHECK_INT(j.judged, 3);
	CHECK_INT(reported, 3);
	CHECK_INT(r.removed_entries, 3);
	gpucc_cache_stats st;
	CHECK_INT(gpucc_cache_stats_get(&st, c), 0);
	CHECK_INT(st.entries, 3); /* dry: all there */
	set_age(c, "m1", 1000);
	j.judged = reported = 0;
	CHECK_INT(gpucc_cache_remove_judged(c, false, judge_all_hit_m1, &j, count_pruned, &reported, &r), 0);
	CHECK_INT(j.judged, 3);
	CHECK_INT(reported, 2);
	CHECK_INT(r.removed_entries, 2);
	CHECK_INT(r.entries, 1);
	char *ptx = lookup_ptx(c, "m1");
	CHECK(ptx && strcmp(ptx, "m1") == 0);
	free(ptx);
	CHECK(lookup_ptx(c, "m0") == NULL);
	CHECK(lookup_ptx(c, "m2") == NULL);
	gpucc_cache_free(c);
	/* A cache opened read-only is only judged dry. */
	CHECK_INT(gpucc_cache_open(&c, path_in_dir("c-prune"), GPUCC_CACHE_READ_ONLY), 0);
	CHECK_INT(gpucc_cache_remove_judged(c, false, judge_all_hit_m1, &j, NULL, NULL, &r), GPUCC_ERROR);
	gpucc_cache_free(c);
}

/* A temporary file a writer left: name in the cache's directory sub. */
static char *make_temporary(gpucc_cache *c, const char *sub, const char *name)
{
	static char path[512];
	snprintf(path, sizeof path, "%s/%s/%s", gpucc_cache_dir(c), sub, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	CHECK(write(fd, "partial", 7) == 7);
	close(fd);
	return path;
}

static void test_verify_and_leftovers(void)
{
	gpucc_cache *c;
	CHECK_INT(gpucc_cache_open(&c, path_in_dir("c5"), 0), 0);
	CHECK_INT(insert(c, "v0", "ptx of v0", GPUCC_CONFLICT_FAIL), 0);
	CHECK_INT(insert(c, "v1", "ptx of v1", GPUCC_CONFLICT_FAIL), 0);
	test_entry t;
	make_entry(&t, "v0");
	char hex[GPUCC_DIGEST_HEX_SIZE], shard[8], name[128];
	gpucc_digest_to_hex(hex, &t.e.key);
	snprintf(shard, sizeof shard, "v1/%.2s", hex);

	/* temporary files are counted apart from entries, never verified */
	snprintf(name, sizeof name, ".%s.gpucc.tmp.999999.1", hex);
	char dead[512], live[512];
	snprintf(dead, sizeof dead, "%s", make_temporary(c, shard, name));
	snprintf(live, sizeof live, "%s", make_temporary(c, ".", ".stats.tmp.999999.2"));
	gpucc_cache_verify_result v;
	CHECK_INT(gpucc_cache_verify(c, NULL, NULL, &v), 0);
	CHECK_INT(v.entries, 2);
	CHECK_INT(v.corrupt, 0);
	CHECK_INT(v.temporaries, 1); /* (the top directory holds no entries) */

	/* gc removes the one no writer holds a lock on, and keeps the other
	 * until its writer is gone, however young both are */
	int held = open(live, O_RDONLY);
	CHECK(held >= 0 && flock(held, LOCK_EX) == 0);
	gpucc_cache_gc_result r;
	CHECK_INT(gpucc_cache_gc(c, 0, &r), 0);
	CHECK_INT(r.removed_entries, 0);
	CHECK_INT(r.removed_temporaries, 1);
	struct stat st;
	CHECK(stat(dead, &st) != 0);
	CHECK(stat(live, &st) == 0);
	close(held);
	CHECK_INT(gpucc_cache_gc(c, 0, &r), 0);
	CHECK_INT(r.removed_temporaries, 1);
	CHECK(stat(live, &st) != 0);

	/* a corrupt entry is reported, not removed */
	char path[512];
	snprintf(path, sizeof path, "%s/%s/%s.gpucc", gpucc_cache_dir(c), shard, hex);
	CHECK_INT(truncate(path, 700), 0);
	int defects = 0;
	CHECK_INT(gpucc_cache_verify(c, count_defect, &defects, &v), GPUCC_ECORRUPT);
	CHECK_INT(defects, 1);
	CHECK_INT(v.entries, 1);
	CHECK_INT(v.corrupt, 1);
	CHECK(stat(path, &st) == 0);
	gpucc_cache_free(c);
}

static void test_sizes(void)
{
	uint64_t v;
	CHECK_INT(gpucc_size_parse(&v, "5G"), 0);
	CHECK(v == (uint64_t)5 << 30);
	CHECK_INT(gpucc_size_parse(&v, "512MiB"), 0);
	CHECK(v == (uint64_t)512 << 20);
	CHECK_INT(gpucc_size_parse(&v, "4096"), 0);
	CHECK(v == 4096);
	CHECK_INT(gpucc_size_parse(&v, "12x"), GPUCC_EINVALID);
	CHECK_INT(gpucc_size_parse(&v, ""), GPUCC_EINVALID);
	CHECK_INT(gpucc_size_parse(&v, "99999999999999999999"), GPUCC_EINVALID);
	/* at most INT64_MAX: sizes are file sizes, and a bound past it made
	 * every insert run a full gc */
	CHECK_INT(gpucc_size_parse(&v, "9223372036854775807"), 0);
	CHECK(v == INT64_MAX);
	CHECK_INT(gpucc_size_parse(&v, "9223372036854775808"), GPUCC_EINVALID);
	CHECK_ERROR_HAS("'9223372036854775808' is too large");
	CHECK_INT(gpucc_size_parse(&v, "8388607T"), 0);
	CHECK_INT(gpucc_size_parse(&v, "8388608T"), GPUCC_EINVALID);
	CHECK_ERROR_HAS("'8388608T' is too large");
	CHECK_INT(gpucc_size_parse(&v, "5 GiB"), GPUCC_EINVALID);
	gpucc_cache *c;
	CHECK_INT(gpucc_cache_open(&c, path_in_dir("c6"), 0), 0);
	CHECK_INT(gpucc_cache_set_max_size(c, (uint64_t)INT64_MAX + 1), GPUCC_EINVALID);
	CHECK_INT(gpucc_cache_max_size(c), GPUCC_CACHE_DEFAULT_MAX_SIZE);
	/* a bound of 0 would keep nothing (ccache reads it as "no limit") */
	CHECK_INT(gpucc_cache_set_max_size(c, 0), GPUCC_EINVALID);
	CHECK_ERROR_HAS("a bound of 0 would keep no entry");
	CHECK_INT(gpucc_cache_max_size(c), GPUCC_CACHE_DEFAULT_MAX_SIZE);
	gpucc_cache_free(c);
}

/* Write text to DIR/config of the cache in dir. */
static void write_config(const char *dir, const char *text)
{
	char path[512];
	snprintf(path, sizeof path, "%s/config", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
}

/* The bound of the cache in dir with config text; warnings counts what
 * the warning handler got (last_warning the last). */
static uint64_t bound_with(const char *dir, const char *config)
{
	write_config(dir, config);
	gpucc_cache *c = NULL;
	CHECK_INT(gpucc_cache_open(&c, dir, GPUCC_CACHE_READ_ONLY), 0);
	warnings = 0;
	last_warning[0] = '\0';
	gpucc_cache_set_warning_handler(c, count_warning, NULL);
	uint64_t bound = c ? gpucc_cache_max_size(c) : 0;
	gpucc_cache_free(c);
	return bound;
}

static void test_config(void)
{
	char dir[256];
	snprintf(dir, sizeof dir, "%s", path_in_dir("c7"));
	gpucc_cache *c;
	CHECK_INT(gpucc_cache_open(&c, dir, 0), 0);
	gpucc_cache_free(c);

	/* the whole value counts: "5 GiB" is no size, not 5 bytes; unknown
	 * names and bad values are reported, one line each, and ignored */
	CHECK_INT(bound_with(dir, "# settings\n"
	                          "max-size = 5 GiB\n"
	                          "max_size = 1G\n"
	                          "\n"
	                          "max-size = 5X   # five what?\n"
	                          "max-size\n"
	                          "max-size = 8388608T\n"),
	          GPUCC_CACHE_DEFAULT_MAX_SIZE);
	CHECK_INT(warnings, 5);
	CHECK(strstr(last_warning, "/config', line 7: ") != NULL);
	CHECK(strstr(last_warning, "'8388608T' is too large") != NULL);
	CHECK_INT(bound_with(dir, "max_size = 1G\n"), GPUCC_CACHE_DEFAULT_MAX_SIZE);
	CHECK_INT(warnings, 1);
	CHECK(strstr(last_warning, "line 1: unknown setting 'max_size'") != NULL);
	CHECK_INT(bound_with(dir, "max-size = 0K\n"), GPUCC_CACHE_DEFAULT_MAX_SIZE);
	CHECK_INT(warnings, 1);
	CHECK(strstr(last_warning, "line 1: max-size 0 ignored: a bound of 0") != NULL);

	/* what the size parser takes, with blanks and a comment around it */
	CHECK_INT(bound_with(dir, "  max-size   =   5GiB  # five\n"), (uint64_t)5 << 30);
	CHECK_INT(warnings, 0);
	CHECK_INT(bound_with(dir, "max-size=7M"), (uint64_t)7 << 20);
	CHECK_INT(warnings, 0);

	/* The config's GPUCC_CACHE_MAX_SIZE applies when the file sets none, and a bad one
	 * is reported too */
	gpucc_config cfg = GPUCC_CONFIG_INIT;
	cfg.cache_max_size = "3M";
	CHECK_INT(gpucc_set_config(&cfg), 0);
	CHECK_INT(bound_with(dir, "# nothing set\n"), (uint64_t)3 << 20);
	CHECK_INT(warnings, 0);
	cfg.cache_max_size = "5X";
	CHECK_INT(gpucc_set_config(&cfg), 0);
	CHECK_INT(bound_with(dir, "# nothing set\n"), GPUCC_CACHE_DEFAULT_MAX_SIZE);
	CHECK_INT(warnings, 1);
	CHECK(strstr(last_warning, "GPUCC_CACHE_MAX_SIZE") != NULL);
	CHECK(strstr(last_warning, "'5X' is not a size") != NULL);
	CHECK_INT(gpucc_set_config(NULL), 0);
}

/* Gc, by hand or on insert, evicts to 90% of the bound, so that a full
 * cache does not walk every entry again on the next insert. */
static void test_gc_low_water(void)
{
	gpucc_cache *c;
	CHECK_INT(gpucc_cache_open(&c, path_in_dir("c8"), 0), 0);
	char name[16];
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof name, "w%d", i);
		CHECK_INT(insert(c, name, "same ptx", GPUCC_CONFLICT_FAIL), 0);
		set_age(c, name, 1000 - i);
	}
	gpucc_cache_stats st;
	CHECK_INT(gpucc_cache_stats_get(&st, c), 0);
	uint64_t one = st.bytes / 10;
	CHECK_INT(st.bytes, one * 10); /* entries of one size */
	CHECK_INT(gpucc_cache_set_max_size(c, one * 10), 0);
	gpucc_cache_gc_result r;
	CHECK_INT(gpucc_cache_gc(c, 0, &r), 0); /* at the bound: down to 90% */
	CHECK_INT(r.removed_entries, 1);
	CHECK_INT(r.entries, 9);
	CHECK_INT(gpucc_cache_gc(c, one * 8, &r), 0); /* an explicit size is exact */
	CHECK_INT(r.entries, 8);
	for (int i = 10; i < 13; i++) { /* 11 entries: past the bound */
		snprintf(name, sizeof name, "w%d", i);
		CHECK_INT(insert(c, name, "same ptx", GPUCC_CONFLICT_FAIL), 0);
	}
	CHECK_INT(gpucc_cache_stats_get(&st, c), 0);
	CHECK_INT(st.entries, 9);
	gpucc_cache_free(c);
}

#ifdef GPUCC_TEST_HOOKS
/* A rival process's entry, planted by the test hook between an insert's
 * check and its publish (gpucc_cache_test_before_publish). */
static const char *rival_module, *rival_ptx;
static void plant_rival(gpucc_cache *c, const gpucc_digest *key)
{
	(void)key;
	gpucc_cache_test_before_publish = NULL; /* once, and not for the rival */
	gpucc_cache *other;
	CHECK_INT(gpucc_cache_open(&other, gpucc_cache_dir(c), 0), 0);
	CHECK_INT(insert(other, rival_module, rival_ptx, GPUCC_CONFLICT_FAIL), 0);
	gpucc_cache_free(other);
}

/* Insert module's entry with ptx while a rival publishes rival_ptx for the
 * same key first; the insert's result, and what the cache holds then. */
static int race(gpucc_cache *c, const char *module, const char *ptx, const char *rival,
                gpucc_conflict_policy policy, char **held)
{
	rival_module = module;
	rival_ptx = rival;
	gpucc_cache_test_before_publish = plant_rival;
	int rc = insert(c, module, ptx, policy);
	CHECK(gpucc_cache_test_before_publish == NULL); /* it did run */
	gpucc_cache_test_before_publish = NULL;
	*held = lookup_ptx(c, module);
	return rc;
}
#endif

/* Invariant 3 under concurrency: an entry published between an insert's
 * check and its publish is a conflict (or a duplicate), never overwritten. */
static void test_racing_inserts(void)
{
	CHECK_NEEDS_HOOKS();
#ifdef GPUCC_TEST_HOOKS
	gpucc_cache *c;
	CHECK_INT(gpucc_cache_open(&c, path_in_dir("c9"), 0), 0);
	char *held;
	CHECK_INT(race(c, "r1", "ptx A", "ptx B", GPUCC_CONFLICT_FAIL, &held), GPUCC_ECONFLICT);
	CHECK_ERROR_HAS("conflict: key");
	CHECK_STR(held, "ptx B");
	free(held);
	CHECK_INT(race(c, "r2", "ptx A", "ptx B", GPUCC_CONFLICT_FIRST, &held), 0);
	CHECK_STR(held, "ptx B");
	free(held);
	CHECK_INT(race(c, "r3", "ptx A", "ptx B", GPUCC_CONFLICT_LAST, &held), 0);
	CHECK_STR(held, "ptx A");
	free(held);
	CHECK_INT(race(c, "r4", "ptx A", "ptx A", GPUCC_CONFLICT_FAIL, &held), 0); /* identical */
	CHECK_STR(held, "ptx A");
	free(held);
	/* nothing of the losers is left behind */
	gpucc_cache_verify_result v;
	CHECK_INT(gpucc_cache_verify(c, NULL, NULL, &v), 0);
	CHECK_INT(v.entries, 4);
	CHECK_INT(v.temporaries, 0);
	gpucc_cache_free(c);
#endif
}

/* Importing an entry identical to one whose payload is corrupt replaces it:
 * "already there" must not keep a file every lookup rejects. */
static void test_duplicate_over_corrupt(void)
{
	gpucc_cache *c;
	CHECK_INT(gpucc_cache_open(&c, path_in_dir("c10"), 0), 0);
	CHECK_INT(insert(c, "y", "some ptx text", GPUCC_CONFLICT_FAIL), 0);
	corrupt_payload(entry_file(c, "y"), "some ptx text");
	warnings = 0;
	gpucc_cache_set_warning_handler(c, count_warning, NULL);
	CHECK_INT(insert(c, "y", "some ptx text", GPUCC_CONFLICT_FAIL), 0);
	CHECK_INT(warnings, 1);
	CHECK(strstr(last_warning, "corrupt") != NULL);
	char *held = lookup_ptx(c, "y");
	CHECK_STR(held, "some ptx text");
	free(held);
	gpucc_cache_free(c);
}

/* Staged images are named stage.<pid>.<random>.<n>: processes with one pid
 * (PID 1 of two containers sharing a cache) never share a name. */
static void test_staging_names(void)
{
	gpucc_cache *c;
	CHECK_INT(gpucc_cache_open(&c, path_in_dir("c11"), 0), 0);
	char *a = NULL, *b = NULL;
	CHECK_INT(gpucc_cache_staging_path(&a, c, ".gpucc"), 0);
	CHECK_INT(gpucc_cache_staging_path(&b, c, ".gpucc"), 0);
	char prefix[64];
	snprintf(prefix, sizeof prefix, "/v1/tmp/stage.%ld.", (long)getpid());
	const char *ra = a ? strstr(a, prefix) : NULL, *rb = b ? strstr(b, prefix) : NULL;
	CHECK(ra && rb);
	if (ra && rb) {
		ra += strlen(prefix);
		rb += strlen(prefix);
		CHECK(strspn(ra, "0123456789abcdef") == 16 && ra[16] == '.');
		CHECK(strspn(rb, "0123456789abcdef") == 16 && rb[16] == '.');
		CHECK(memcmp(ra, rb, 16) != 0);
	}
	free(a);
	free(b);

	gpucc_cache_free(c);
}

/* A cache directory that is a regular file, named or the config's (GPUCC_CACHE_DIR):
 * the error names it. */
static void test_cache_is_a_file(void)
{
	char file[256];
	snprintf(file, sizeof file, "%s", path_in_dir("plain-file"));
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	close(fd);
	gpucc_config cfg = GPUCC_CONFIG_INIT;
	cfg.cache_dir = file;
	CHECK_INT(gpucc_set_config(&cfg), 0);
	gpucc_cache *c;
	for (int i = 0; i < 4; i++) {
		CHECK_INT(gpucc_cache_open(&c, i < 2 ? file : NULL, i % 2 ? GPUCC_CACHE_READ_ONLY : 0),
		          GPUCC_EINVALID);
		CHECK_ERROR_HAS(file);
		CHECK_ERROR_HAS("is not a directory");
	}
	CHECK_INT(gpucc_set_config(NULL), 0);
}

/* GPUCC_CACHE_EXISTING: a directory that does not exist, or holds other
 * things but no v1/, is no cache, and is left as it was; an empty one, or
 * a cache with other things beside v1/, opens; read-only or not. */
static void test_existing_only(void)
{
	for (unsigned ro = 0; ro <= GPUCC_CACHE_READ_ONLY; ro++) {
		unsigned flags = GPUCC_CACHE_EXISTING | ro;
		char dir[256], notes[300], layout[300];
		snprintf(dir, sizeof dir, "%s", path_in_dir(ro ? "existing-ro" : "existing"));
		snprintf(notes, sizeof notes, "%s/notes", dir);
		snprintf(layout, sizeof layout, "%s/v1", dir);
		gpucc_cache *c = (gpucc_cache *)1;
		CHECK_INT(gpucc_cache_open(&c, dir, flags), GPUCC_ENOTFOUND);
		CHECK(c == NULL);
		CHECK_ERROR_HAS("does not exist");
		CHECK(access(dir, F_OK) != 0); /* not created */

		CHECK_INT(mkdir(dir, 0755), 0);
		int fd = open(notes, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		CHECK(fd >= 0);
		close(fd);
		CHECK_INT(gpucc_cache_open(&c, dir, flags), GPUCC_EINVALID);
		CHECK_ERROR_HAS("not a gpucc cache");
		CHECK(access(layout, F_OK) != 0); /* nothing written into it */

		CHECK_INT(unlink(notes), 0);
		CHECK_INT(gpucc_cache_open(&c, dir, flags), 0); /* empty: an empty cache */
		CHECK(gpucc_cache_writable(c) == !ro);
		gpucc_cache_free(c);

		if (ro)
			CHECK_INT(mkdir(layout, 0755), 0);
		else
			CHECK_INT(access(layout, F_OK), 0); /* the writable open made it */
		fd = open(notes, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		CHECK(fd >= 0);
		close(fd);
		CHECK_INT(gpucc_cache_open(&c, dir, flags), 0); /* v1/ and notes: a cache */
		gpucc_cache_free(c);
	}
}

static void count_conflict(void *ctx, const gpucc_digest *key, const char *first,
                           const char *second)
{
	(void)key;
	CHECK_STR(first, "old");
	CHECK_STR(second, "new");
	++*(int *)ctx;
}

static void random_items(gpucc_snapshot_item *items, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) {
		char text[32];
		snprintf(text, sizeof text, "%u-%zu", seed, i);
		gpucc_digest_buffer(&items[i].key, text, strlen(text));
		gpucc_digest_buffer(&items[i].content, text, 3);
	}
}

static void test_snapshots(void)
{
	/* both sort paths: small (qsort) and large (bucketed) */
	size_t sizes[] = {5, 20000};
	for (int k = 0; k < 2; k++) {
		size_t n = sizes[k];
		gpucc_snapshot_item *items = malloc(n * 2 * sizeof *items);
		random_items(items, n, 1);
		memcpy(items + n, items, n * sizeof *items); /* identical duplicates collapse */
		gpucc_snapshot *s;
		CHECK_INT(gpucc_snapshot_new(&s, items, 2 * n), 0);
		CHECK_INT(gpucc_snapshot_count(s), n);
		const gpucc_snapshot_item *it = gpucc_snapshot_items(s);
		for (size_t i = 1; i < n; i++)
			CHECK(memcmp(&it[i - 1].key, &it[i].key, 32) < 0);
		CHECK(gpucc_snapshot_find(s, &items[n / 2].key) != NULL);
		CHECK_INT(gpucc_snapshot_write(s, path_in_dir("s.snap")), 0);
		gpucc_snapshot *r;
		CHECK_INT(gpucc_snapshot_read(&r, path_in_dir("s.snap")), 0);
		CHECK_INT(gpucc_snapshot_count(r), n);
		CHECK(memcmp(gpucc_snapshot_items(r), it, n * sizeof *it) == 0);

		/* text round trip */
		int fd = open(path_in_dir("s.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
		CHECK_INT(gpucc_snapshot_write_text(s, fd), 0);
		close(fd);
		struct stat st;
		stat(path_in_dir("s.txt"), &st);
		CHECK_INT(st.st_size, (long long)n * 130);
		char *text = malloc((size_t)st.st_size);
		fd = open(path_in_dir("s.txt"), O_RDONLY);
		CHECK(read(fd, text, (size_t)st.st_size) == st.st_size);
		close(fd);
		gpucc_snapshot *t;
		CHECK_INT(gpucc_snapshot_parse_text(&t, text, (size_t)st.st_size, "s.txt"), 0);
		CHECK_INT(gpucc_snapshot_count(t), n);
		CHECK(memcmp(gpucc_snapshot_items(t), it, n * sizeof *it) == 0);
		free(text);

		/* delta of snapshots: the second half is new */
		gpucc_snapshot *half, *d;
		CHECK_INT(gpucc_snapshot_new(&half, items, n / 2), 0);
		gpucc_algebra_counts counts;
		CHECK_INT(gpucc_snapshot_delta(&d, s, "s", half, "half", NULL, &counts), 0);
		CHECK_INT(gpucc_snapshot_count(d), n - n / 2);
		CHECK_INT(counts.duplicates, n / 2);
		for (size_t i = 0; i < gpucc_snapshot_count(d); i++)
			CHECK(gpucc_snapshot_find(half, &gpucc_snapshot_items(d)[i].key) == NULL);
		gpucc_snapshot_free(d);
		/* a changed content digest is a conflict */
		items[0].content.bytes[0] ^= 1;
		gpucc_snapshot *changed;
		CHECK_INT(gpucc_snapshot_new(&changed, items, n), 0);
		CHECK_INT(gpucc_snapshot_delta(&d, changed, "new", half, "old", NULL, NULL), GPUCC_ECONFLICT);
		CHECK_ERROR_HAS("'old' and 'new'");
		CHECK_INT(gpucc_snapshot_delta(&d, changed, NULL, half, NULL, NULL, NULL), GPUCC_ECONFLICT);
		CHECK_ERROR_HAS("'base' and 'source'");
		/* first and last: each conflict reported, and chosen as asked */
		for (int last = 0; last < 2; last++) {
			gpucc_algebra_options chosen;
			gpucc_algebra_options_init(&chosen);
			chosen.on_conflict = last ? GPUCC_CONFLICT_LAST : GPUCC_CONFLICT_FIRST;
			int reported = 0;
			chosen.conflict_fn = count_conflict;
			chosen.conflict_ctx = &reported;
			CHECK_INT(gpucc_snapshot_delta(&d, changed, "new", half, "old", &chosen, NULL), 0);
			CHECK_INT(reported, 1);
			const gpucc_snapshot_item *got = d ? gpucc_snapshot_find(d, &items[0].key) : NULL;
			CHECK(last ? got && memcmp(&got->content, &items[0].content, sizeof got->content) == 0
			           : got == NULL);
			gpucc_snapshot_free(d);
		}
		/* a policy the library does not know is refused, not taken for one */
		gpucc_algebra_options unknown;
		gpucc_algebra_options_init(&unknown);
		unknown.on_conflict = (gpucc_conflict_policy)99;
		d = NULL;
		CHECK_INT(gpucc_snapshot_delta(&d, s, "s", half, "half", &unknown, NULL), GPUCC_EINVALID);
		CHECK(d == NULL);
		/* and two contents for one key cannot make one snapshot */
		memcpy(items + n, items, sizeof *items);
		items[n].content.bytes[0] ^= 1;
		CHECK_INT(gpucc_snapshot_new(&d, items, n + 1), GPUCC_ECONFLICT);
		gpucc_snapshot_free(changed);
		gpucc_snapshot_free(half);
		gpucc_snapshot_free(s);
		gpucc_snapshot_free(r);
		gpucc_snapshot_free(t);
		free(items);
	}
	gpucc_snapshot *s;
	CHECK_INT(gpucc_snapshot_parse_text(&s, "zz\n", 3, "bad.txt"), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("bad.txt' line 1");
	CHECK_INT(gpucc_snapshot_read(&s, path_in_dir("absent.snap")), GPUCC_ENOTFOUND);
}

static void test_merge_and_delta(void)
{
	/* two caches, overlapping in "shared": merge into an image both ways */
	gpucc_cache *a, *b;
	CHECK_INT(gpucc_cache_open(&a, path_in_dir("ma"), 0), 0);
	CHECK_INT(gpucc_cache_open(&b, path_in_dir("mb"), 0), 0);
	CHECK_INT(insert(a, "a1", "a1", GPUCC_CONFLICT_FAIL), 0);
	CHECK_INT(insert(a, "shared", "s", GPUCC_CONFLICT_FAIL), 0);
	CHECK_INT(insert(b, "b1", "b1", GPUCC_CONFLICT_FAIL), 0);
	CHECK_INT(insert(b, "shared", "s", GPUCC_CONFLICT_FAIL), 0);
	gpucc_operand *sa, *sb;
	CHECK_INT(gpucc_operand_from_cache(&sa, a), 0);
	CHECK_INT(gpucc_operand_from_cache(&sb, b), 0);
	gpucc_operand *ab[2] = {sa, sb}, *ba[2] = {sb, sa};
	gpucc_algebra_counts counts;
	CHECK_INT(gpucc_merge_write(path_in_dir("ab.gpucc"), ab, 2, NULL, &counts), 0);
	CHECK_INT(counts.entries_out, 3);
	CHECK_INT(counts.duplicates, 1);
	CHECK_INT(gpucc_merge_write(path_in_dir("ba.gpucc"), ba, 2, NULL, NULL), 0);
	gpucc_digest d1, d2;
	uint64_t s1, s2;
	CHECK_INT(gpucc_digest_file(&d1, &s1, path_in_dir("ab.gpucc")), 0);
	CHECK_INT(gpucc_digest_file(&d2, &s2, path_in_dir("ba.gpucc")), 0);
	CHECK(gpucc_digest_compare(&d1, &d2) == 0);

	/* delta of the merged image since a's snapshot is b's own entry */
	gpucc_snapshot *snap_a;
	CHECK_INT(gpucc_snapshot_of(&snap_a, sa), 0);
	gpucc_operand *merged;
	CHECK_INT(gpucc_operand_open(&merged, path_in_dir("ab.gpucc"), NULL, NULL), 0);
	CHECK_INT(gpucc_delta_write(path_in_dir("d.gpucc"), merged, snap_a, "a", NULL, &counts), 0);
	CHECK_INT(counts.entries_out, 1);
	gpucc_image *d;
	CHECK_INT(gpucc_image_open(&d, path_in_dir("d.gpucc")), 0);
	test_entry t;
	make_entry(&t, "b1");
	CHECK(gpucc_image_find(d, &t.e.key) != NULL);
	gpucc_image_free(d);

	/* a conflict between the caches names both */
	CHECK_INT(insert(b, "a1", "different", GPUCC_CONFLICT_FAIL), 0);
	CHECK_INT(gpucc_merge_write(path_in_dir("x.gpucc"), ab, 2, NULL, NULL), GPUCC_ECONFLICT);
	CHECK_ERROR_HAS(path_in_dir("ma"));
	CHECK_ERROR_HAS(path_in_dir("mb"));
	struct stat st;
	CHECK(stat(path_in_dir("x.gpucc"), &st) != 0);
	/* and merging into a third cache settles it by policy */
	gpucc_cache *c;
	CHECK_INT(gpucc_cache_open(&c, path_in_dir("mc"), 0), 0);
	CHECK_INT(gpucc_merge_into_cache(c, ab, 2, NULL, NULL), GPUCC_ECONFLICT);
	gpucc_cache_stats cs;
	CHECK_INT(gpucc_cache_stats_get(&cs, c), 0);
	CHECK_INT(cs.entries, 0); /* found before anything was written */
	gpucc_algebra_options opts = GPUCC_ALGEBRA_OPTIONS_INIT;
	opts.on_conflict = GPUCC_CONFLICT_LAST;
	CHECK_INT(gpucc_merge_into_cache(c, ab, 2, &opts, &counts), 0);
	CHECK_INT(counts.conflicts, 1);
	CHECK_INT(gpucc_cache_stats_get(&cs, c), 0);
	CHECK_INT(cs.entries, 3);

	gpucc_snapshot_free(snap_a);
	gpucc_operand_free(merged);
	gpucc_operand_free(sa);
	gpucc_operand_free(sb);
	gpucc_cache_free(a);
	gpucc_cache_free(b);
	gpucc_cache_free(c);
}

/* A directory where an entry's file should be is a corrupt entry, which
 * the arriving one replaces; it cannot, and the insert fails saying so
 * (nothing is said to be inserted that is not). */
static void test_directory_in_place(void)
{
	gpucc_cache *c;
	CHECK_INT(gpucc_cache_open(&c, path_in_dir("dir-in-place"), 0), 0);
	warnings = 0;
	gpucc_cache_set_warning_handler(c, count_warning, NULL);
	CHECK_INT(insert(c, "elsewhere", "ptx", GPUCC_CONFLICT_FAIL), 0); /* the shards exist */
	char path[512];
	snprintf(path, sizeof path, "%s", entry_file(c, "dir"));
	char shard[512];
	snprintf(shard, sizeof shard, "%s", path);
	*strrchr(shard, '/') = '\0';
	mkdir(shard, 0755);
	CHECK_INT(mkdir(path, 0755), 0);
	CHECK(insert(c, "dir", "ptx", GPUCC_CONFLICT_FAIL) != 0);
	CHECK_ERROR_HAS("cannot replace corrupt cache entry");
	CHECK(warnings >= 1);
	struct stat st;
	CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
	rmdir(path);
	gpucc_cache_free(c);
}

/* A published file's directory is swept of the temporary files killed
 * writers left beside it (".NAME.tmp.*" that no writer holds locked), and
 * also when descriptor 0 is closed, so that the directory opens as it. */
static void test_sweeps_abandoned(void)
{
	gpucc_snapshot_item items[3];
	random_items(items, 3, 7);
	gpucc_snapshot *s;
	CHECK_INT(gpucc_snapshot_new(&s, items, 3), 0);
	for (int closed = 0; closed < 2; closed++) {
		char left[512];
		snprintf(left, sizeof left, "%s", path_in_dir(".swept.snap.tmp.1.abcdef"));
		int fd = open(left, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		CHECK(fd >= 0);
		if (fd >= 0)
			close(fd);
		if (closed)
			close(0);
		CHECK_INT(gpucc_snapshot_write(s, path_in_dir("swept.snap")), 0);
		if (closed)
			CHECK_INT(open("/dev/null", O_RDONLY), 0);
		CHECK(access(left, F_OK) != 0);
	}
	gpucc_snapshot_free(s);
}

/* Descriptor 0 closed while a file is written: the commit's descriptors
 * (the one that holds the lock through the rename, the directory's) may
 * be 0, and are used and closed like any other. */
static void test_commit_with_descriptor_0(void)
{
	gpucc_atomic_file f;
	CHECK_INT(gpucc_atomic_file_open(&f, path_in_dir("zero.out")), 0);
	CHECK_INT(gpucc_write_all(f.fd, "zero", 4), 0);
	close(0);
	CHECK_INT(gpucc_atomic_file_commit(&f), 0);
	CHECK_INT(open("/dev/null", O_RDONLY), 0);
	char got[8] = {0};
	int fd = open(path_in_dir("zero.out"), O_RDONLY);
	CHECK(fd >= 0 && read(fd, got, sizeof got) == 4 && memcmp(got, "zero", 4) == 0);
	if (fd >= 0)
		close(fd);
}

/* DIR/stats, written in place: the one file keeps its inode across
 * updates, a longer old line is cut to the new one, a line that does not
 * parse counts as zeros and is rewritten, and a file with a second name
 * is replaced rather than written through (the other name keeps its
 * bytes). */
static void read_text(const char *path, char *buf, size_t size)
{
	buf[0] = '\0';
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;
	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

static void write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	if (fd >= 0)
		close(fd);
}

static void test_stats_in_place(void)
{
	gpucc_cache *c;
	char stats[512], line[512];
	CHECK_INT(gpucc_cache_open(&c, path_in_dir("stats"), 0), 0);
	snprintf(stats, sizeof stats, "%s/stats", gpucc_cache_dir(c));
	CHECK_INT(insert(c, "s", "ptx s", GPUCC_CONFLICT_FAIL), 0);
	for (int i = 0; i < 2; i++) {
		char *ptx = lookup_ptx(c, "s");
		CHECK(ptx != NULL);
		free(ptx);
	}
	CHECK_INT(gpucc_cache_flush(c), 0);
	struct stat first, later;
	CHECK_INT(stat(stats, &first), 0);
	read_text(stats, line, sizeof line);
	CHECK(strncmp(line, "gpucc-cache-stats 1 hits=2 misses=0 corrupt=0 reset=0 bytes=", 60) == 0);

	/* A longer line than the next: cut to the new one's length. */
	char longer[256];
	snprintf(longer, sizeof longer, "%.*s%s", (int)strcspn(line, "\n"), line,
	         "                                                  \n");
	write_text(stats, longer);
	free(lookup_ptx(c, "s"));
	CHECK_INT(gpucc_cache_flush(c), 0);
	CHECK_INT(stat(stats, &later), 0);
	CHECK(later.st_ino == first.st_ino);
	read_text(stats, line, sizeof line);
	CHECK(strncmp(line, "gpucc-cache-stats 1 hits=3 ", 27) == 0);
	CHECK_INT(later.st_size, strlen(line));

	/* Garbage reads as zeros, and the next update writes a line. */
	write_text(stats, "gpucc-cache-stats 1 hits=-4 misses=x\n");
	gpucc_cache_stats st;
	CHECK_INT(gpucc_cache_stats_get(&st, c), 0);
	CHECK_INT(st.hits, 0);
	free(lookup_ptx(c, "s"));
	CHECK_INT(gpucc_cache_flush(c), 0);
	read_text(stats, line, sizeof line);
	CHECK(strcmp(line, "gpucc-cache-stats 1 hits=1 misses=0 corrupt=0 reset=0 bytes=0\n") == 0);

	/* A second name: replaced, the other name's bytes kept. */
	char other[600];
	snprintf(other, sizeof other, "%s.other", stats);
	CHECK_INT(link(stats, other), 0);
	free(lookup_ptx(c, "s"));
	CHECK_INT(gpucc_cache_flush(c), 0);
	read_text(other, line, sizeof line);
	CHECK(strcmp(line, "gpucc-cache-stats 1 hits=1 misses=0 corrupt=0 reset=0 bytes=0\n") == 0);
	read_text(stats, line, sizeof line);
	CHECK(strcmp(line, "gpucc-cache-stats 1 hits=2 misses=0 corrupt=0 reset=0 bytes=0\n") == 0);
	CHECK_INT(stat(stats, &later), 0);
	CHECK_INT(later.st_nlink, 1);
	gpucc_cache_free(c);
}

/* The descriptors this process holds open. */
static int open_descriptors(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

int main(void)
{
	if (check_dir_create("test-cache") != 0)
		return 1;
	/* Every insert, publish, lookup and merge below closes what it opened,
	 * the descriptor that holds a temporary file's lock through its
	 * rename included: a library a long-lived program calls must not leak. */
	int descriptors = open_descriptors();
	RUN(test_insert_lookup);
	RUN(test_corrupt_entry_is_a_miss);
	RUN(test_gc_is_lru);
	RUN(test_prune_spares_used_entries);
	RUN(test_verify_and_leftovers);
	RUN(test_sizes);
	RUN(test_config);
	RUN(test_gc_low_water);
	RUN(test_racing_inserts);
	RUN(test_duplicate_over_corrupt);
	RUN(test_staging_names);
	RUN(test_cache_is_a_file);
	RUN(test_existing_only);
	RUN(test_snapshots);
	RUN(test_sweeps_abandoned);
	RUN(test_directory_in_place);
	RUN(test_commit_with_descriptor_0);
	RUN(test_stats_in_place);
	RUN(test_merge_and_delta);
	CHECK_INT(open_descriptors(), descriptors);
	if (check_dir_remove() != 0)
		return 1;
	return CHECK_DONE();
}
