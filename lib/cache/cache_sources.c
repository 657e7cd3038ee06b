/*
 * lib/cache/cache_sources.c -- what gc, clear and verify do with the cache's
 * direct-mode records of sources, v1/sources/<name[0:2]>/<name>.record
 * (formats/cache.md, "Sources"; written and read by lib/compile/compile_source_records.c).
 * A record leads to entry keys: gc removes one none of whose keys the cache
 * holds any longer (it can lead nowhere), clear removes them all, verify
 * reports one that does not parse.  Files of no record (an earlier
 * format's IR) are gc's to remove too.  Also what the prelude records
 * (cache_pch.c) share with these: the check of a record's file line and
 * the walk over a kind's shards.
 */
#include "cache_internal.h"

#include "atomic_file.h"
#include "escape.h"
#include "hex.h"
#include "temp_name.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


/* Whether the len bytes at line are "dir DEV INO MTIME CTIME PATH": four
 * numbers of 1 to 20 decimal digits, a path of at least one byte. */
static bool is_directory_line(const char *line, size_t len)
{
	if (len < 4 || memcmp(line, "dir ", 4) != 0)
		return false;
	size_t at = 4;
	for (int field = 0; field < 4; field++) {
		size_t digits = 0;
		while (at + digits < len && line[at + digits] >= '0' && line[at + digits] <= '9')
			digits++;
		if (digits == 0 || digits > 20 || at + digits >= len || line[at + digits] != ' ')
			return false;
		at += digits + 1;
	}
	return at < len;
}

bool gpucc_record_file_line_ok(const char *line, size_t len)
{
	/* Most lines are places found empty, whose zeros a memcmp checks at
	 * once. */
	static const char zeros[65] = "0000000000000000000000000000000000000000000000000000000000000000";
	if (len >= 66 && line[64] == ' ' &&
	    (memcmp(line, zeros, 64) == 0 || gpucc_hex_span(line, true) == 64))
		return true;
	return is_directory_line(line, len);
}

/* The line at p (before end) ends with '\n': its length, else -1. */
static ptrdiff_t line_length(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	return nl ? nl - p : -1;
}

const char *gpucc_source_record_parse(const char *text, size_t size, gpucc_source_record_fn fn,
                                      void *ctx)
{
	const char *end = text + size;
	if (memchr(text, '\0', size))
		return "it holds a NUL byte";
	if (size == 0 || text[size - 1] != '\n')
		return "it does not end with a line break";
	if (size < sizeof GPUCC_SOURCE_RECORD_MAGIC ||
	    memcmp(text, GPUCC_SOURCE_RECORD_MAGIC "\n", sizeof GPUCC_SOURCE_RECORD_MAGIC) != 0)
		return "its first line is not '" GPUCC_SOURCE_RECORD_MAGIC "'";
	const char *line = text + sizeof GPUCC_SOURCE_RECORD_MAGIC;
	if (line == end)
		return "it holds no result";
	while (line < end) {
		ptrdiff_t len = line_length(line, end);
		/* "entry " KEY " " COUNT: decimal digits, no sign, not 0. */
		if (len < 6 + 64 + 2 || memcmp(line, "entry ", 6) != 0 || line[70] != ' ' ||
		    gpucc_hex_span(line + 6, true) != 64)
			return "a result does not start 'entry <key> <count>'";
		unsigned long count = 0;
		for (const char *d = line + 71; d < line + len; d++) {
			if (*d < '0' || *d > '9' || count > (ULONG_MAX - 9) / 10)
				return "a result's count of files is not a positive number";
			count = count * 10 + (unsigned long)(*d - '0');
		}
		if (count == 0)
			return "a result's count of files is not a positive number";
		char hex[65];
		memcpy(hex, line + 6, 64);
		hex[64] = '\0';
		gpucc_digest key;
		if (gpucc_digest_from_hex(&key, hex) != 0)
			return "a result's key is not a SHA-256";
		const char *lines = line + len + 1;
		line = lines;
		for (unsigned long i = 0; i < count; i++) {
			len = line < end ? line_length(line, end) : -1;
			if (len < 0)
				return "a result lists fewer files than its count";
			if (!gpucc_record_file_line_ok(line, (size_t)len))
				return "a line is neither '<SHA-256> <path>' nor 'dir <stamp> <path>'";
			line += len + 1;
		}
		if (fn)
			fn(ctx, &key, lines, (size_t)(line - lines), count);
	}
	return NULL;
}

/* The file name in shard_fd, read whole (at most GPUCC_SOURCE_RECORD_MAX_BYTES), or NULL. */
static char *read_record(int shard_fd, const char *name, size_t *size)
{
	int fd = openat(shard_fd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	struct stat st;
	char *buf = NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= GPUCC_SOURCE_RECORD_MAX_BYTES)
		buf = malloc((size_t)st.st_size + 1);
	size_t used = 0;
	while (buf && used < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + used, (size_t)st.st_size - used);
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	if (buf && used != (size_t)st.st_size) {
		free(buf);
		buf = NULL;
	}
	if (buf) {
		buf[used] = '\0';
		*size = used;
	}
	return buf;
}

static bool is_record_name(const char *name)
{
	size_t len = strlen(name);
	return len > 7 && strcmp(name + len - 7, ".record") == 0 && name[0] != '.';
}

void gpucc_cache_walk_shards(gpucc_cache *c, const char *kind, gpucc_shard_file_fn fn, void *ctx,
                             bool empty_shards)
{
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/" GPUCC_CACHE_LAYOUT_DIR "/%s", gpucc_cache_dir(c), kind);
	DIR *top = opendir(dir);
	if (!top)
		return;
	struct dirent *de;
	while ((de = readdir(top)) != NULL) {
		if (de->d_name[0] == '.' || strlen(de->d_name) != 2)
			continue;
		char shard[4096 + 8];
		snprintf(shard, sizeof shard, "%s/%s", dir, de->d_name);
		int shard_fd =
			openat(dirfd(top), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		DIR *d = shard_fd >= 0 ? fdopendir(shard_fd) : NULL;
		if (!d) {
			if (shard_fd >= 0)
				close(shard_fd);
			continue;
		}
		struct dirent *f;
		while ((f = readdir(d)) != NULL)
			if (strcmp(f->d_name, ".") != 0 && strcmp(f->d_name, "..") != 0)
				fn(ctx, dirfd(d), f->d_name, shard);
		closedir(d);
		if (empty_shards)
			unlinkat(dirfd(top), de->d_name, AT_REMOVEDIR); /* fails unless empty */
	}
	closedir(top);
}

/* ---- gc and clear ----------------------------------------------------------- */

typedef struct gc_records {
	bool all;
	gpucc_digest *keys; /* the cache's, sorted */
	size_t key_count;
	bool any_cached;    /* of the record being read */
	time_t now;
	uint64_t removed;
} gc_records;

static int compare_keys(const void *a, const void *b)
{
	return gpucc_digest_compare(a, b);
}

static void note_key(void *ctx, const gpucc_digest *key, const char *lines, size_t size,
                     unsigned long count)
{
	(void)lines;
	(void)size;
	(void)count;
	gc_records *g = ctx;
	if (g->key_count && bsearch(key, g->keys, g->key_count, sizeof *key, compare_keys))
		g->any_cached = true;
}

static void gc_record(void *ctx, int shard_fd, const char *name, const char *shard)
{
	gc_records *g = ctx;
	(void)shard;
	if (gpucc_temp_file_is_any(name)) {
		gpucc_atomic_file_remove_abandoned(shard_fd, name, g->now, GPUCC_ABANDONED_SECONDS);
		return;
	}
	bool keep = false;
	if (!g->all && is_record_name(name)) {
		size_t size = 0;
		char *text = read_record(shard_fd, name, &size);
		g->any_cached = false;
		/* Unreadable now (a writer's rename in between): kept for next time. */
		keep = !text || (!gpucc_source_record_parse(text, size, note_key, g) && g->any_cached);
		free(text);
	}
	if (!keep && unlinkat(shard_fd, name, 0) == 0)
		g->removed++;
}

uint64_t gpucc_cache_sources_gc(gpucc_cache *c, bool all)
{
	gc_records g = {.all = all, .now = time(NULL)};
	if (!all && gpucc_cache_sorted_keys(&g.keys, &g.key_count, c) != 0) {
		gpucc_error_clear(); /* records are kept when the entries cannot be listed */
		return 0;
	}
	gpucc_cache_walk_shards(c, "sources", gc_record, &g, all);
	free(g.keys);
	return g.removed;
}

/* ---- verify ----------------------------------------------------------------- */

typedef struct verify_records {
	gpucc_cache_defect_fn fn;
	void *ctx;
	uint64_t damaged;
} verify_records;

static void verify_record(void *ctx, int shard_fd, const char *name, const char *shard)
{
	verify_records *v = ctx;
	if (!is_record_name(name))
		return; /* temporaries, and what gc removes */
	size_t size = 0;
	char *text = read_record(shard_fd, name, &size);
	struct stat st;
	bool other_format = text && strncmp(text, "gpucc-source-record ", 20) == 0 &&
	                    strncmp(text, GPUCC_SOURCE_RECORD_MAGIC "\n", sizeof GPUCC_SOURCE_RECORD_MAGIC) != 0;
	const char *why = other_format ? NULL /* an earlier format's: stale, not damaged; gc's */
	                  : text ? gpucc_source_record_parse(text, size, NULL, NULL)
	                  : fstatat(shard_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 ? NULL
	                  : !S_ISREG(st.st_mode) ? "it is not a regular file"
	                  : st.st_size > GPUCC_SOURCE_RECORD_MAX_BYTES ? "it is larger than 16 MiB"
	                                                  : "it cannot be read";
	free(text);
	if (!why)
		return;
	v->damaged++;
	if (!v->fn)
		return;
	char path[8192], message[9000], shown[9000];
	snprintf(path, sizeof path, "%s/%s", shard, name);
	snprintf(message, sizeof message, "source record '%s' is damaged: %s (gc removes it)", path, why);
	gpucc_escape_controls(shown, sizeof shown, message);
	v->fn(v->ctx, path, shown);
}

uint64_t gpucc_cache_sources_verify(gpucc_cache *c, gpucc_cache_defect_fn fn, void *ctx)
{
	verify_records v = {fn, ctx, 0};
	gpucc_cache_walk_shards(c, "sources", verify_record, &v, false);
	return v.damaged;
}
