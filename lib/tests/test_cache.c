/*
 * lib/tests/test_cache.c -- the local cache and the algebra on top of it:
 * insert and lookup, conflicts, corrupt entries as reported misses,
 * read-only use, LRU gc, counters, sizes; verify, and gc of what killed
 * writers left; snapshots from items and text
 * (both sort paths), snapshot deltas, and merges into images and caches.
 */
#include "check.h"

#include <gpucc.h>

#include <fcntl.h>
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
static void count_warning(void *ctx, const char *message)
{
	(void)ctx;
	(void)message;
	warnings++;
}

static void test_insert_lookup(void)
{
	gpucc_cache *c;
	CHECK_INT(gpucc_cache_open(&c, path_in_dir("c1"), 0), 0);
	CHECK(gpucc_cache_writable(c));
	CHECK_INT(insert(c, "a", "ptx a", GPUCC_CONFLICT_FAIL), 0);
	CHECK_INT(insert(c, "a", "ptx a", GPUCC_CONFLICT_FAIL), 0); /* identical: kept */
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
	char hex[GPUCC_DIGEST_HEX_SIZE], path[512];
	gpucc_digest_to_hex(hex, &t.e.key);
	snprintf(path, sizeof path, "%s/v1/%.2s/%s.gpucc", path_in_dir("c2"), hex, hex);
	/* flip the payload's bytes in place */
	int fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	struct stat st;
	fstat(fd, &st);
	char *buf = malloc((size_t)st.st_size);
	CHECK(pread(fd, buf, (size_t)st.st_size, 0) == st.st_size);
	char *hit = memmem(buf, (size_t)st.st_size, "some ptx text", 13);
	CHECK(hit != NULL);
	if (hit)
		CHECK(pwrite(fd, "SOME", 4, hit - buf) == 4);
	close(fd);
	free(buf);

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
	test_entry t;
	make_entry(&t, module);
	char hex[GPUCC_DIGEST_HEX_SIZE], path[512];
	gpucc_digest_to_hex(hex, &t.e.key);
	snprintf(path, sizeof path, "%s/v1/%.2s/%s.gpucc", gpucc_cache_dir(c), hex, hex);
	struct timeval tv[2];
	gettimeofday(&tv[0], NULL);
	tv[0].tv_sec -= seconds_ago;
	tv[1] = tv[0];
	CHECK_INT(utimes(path, tv), 0);
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
	gpucc_source *sa, *sb;
	CHECK_INT(gpucc_source_from_cache(&sa, a), 0);
	CHECK_INT(gpucc_source_from_cache(&sb, b), 0);
	gpucc_source *ab[2] = {sa, sb}, *ba[2] = {sb, sa};
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
	gpucc_source *merged;
	CHECK_INT(gpucc_source_open(&merged, path_in_dir("ab.gpucc"), NULL, NULL), 0);
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
	gpucc_algebra_options opts = {0};
	opts.on_conflict = GPUCC_CONFLICT_LAST;
	CHECK_INT(gpucc_merge_into_cache(c, ab, 2, &opts, &counts), 0);
	CHECK_INT(counts.conflicts, 1);
	CHECK_INT(gpucc_cache_stats_get(&cs, c), 0);
	CHECK_INT(cs.entries, 3);

	gpucc_snapshot_free(snap_a);
	gpucc_source_free(merged);
	gpucc_source_free(sa);
	gpucc_source_free(sb);
	gpucc_cache_free(a);
	gpucc_cache_free(b);
	gpucc_cache_free(c);
}

int main(void)
{
	if (check_dir_create("test-cache") != 0)
		return 1;
	RUN(test_insert_lookup);
	RUN(test_corrupt_entry_is_a_miss);
	RUN(test_gc_is_lru);
	RUN(test_verify_and_leftovers);
	RUN(test_sizes);
	RUN(test_snapshots);
	RUN(test_merge_and_delta);
	if (check_dir_remove() != 0)
		return 1;
	return CHECK_DONE();
}
