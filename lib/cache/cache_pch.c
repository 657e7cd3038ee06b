/*
 * lib/cache/cache_pch.c -- the cache's precompiled preludes,
 * v1/pch/<name[0:2]>/<name>.prelude and <name>.pch (formats/cache.md,
 * "Precompiled preludes"; made, looked up and stored by
 * lib/compile/compile_source_pch.c): the one parser of a prelude record,
 * and what gc, clear and verify do with them.
 *
 * A prelude is a record (text: the PCH's SHA-256 and size, and the files
 * its making read, each with its SHA-256) beside the PCH clang wrote.  Its
 * recency is the record's mtime, which a use sets to now; gc evicts
 * preludes with entries, least recently used first, and counts their
 * bytes against the bound.  gc also removes a record that does not parse,
 * either half without the other, and any other file in v1/pch/; verify
 * reports a damaged record and a PCH whose size or SHA-256 is not the
 * record's, and removes nothing; prune removes those that can never be
 * read again, as its caller (lib/compile/cache_prune.c) judges them.
 */
#include "cache_internal.h"

#include "atomic_file.h"
#include "escape.h"
#include "hex.h"
#include "temp_name.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


/* Decimal digits from *p up to stop, no sign, into *out; whether they were. */
static bool parse_count(const char *p, const char *stop, uint64_t *out)
{
	uint64_t v = 0;
	if (p == stop)
		return false;
	for (; p < stop; p++) {
		if (*p < '0' || *p > '9' || v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*out = v;
	return true;
}

const char *gpucc_prelude_record_parse(const char *text, size_t size, gpucc_prelude_record *out)
{
	const char *end = text + size;
	memset(out, 0, sizeof *out);
	if (memchr(text, '\0', size))
		return "it holds a NUL byte";
	if (size == 0 || text[size - 1] != '\n')
		return "it does not end with a line break";
	size_t magic = sizeof GPUCC_PRELUDE_MAGIC; /* with its line break */
	if (size < magic || memcmp(text, GPUCC_PRELUDE_MAGIC "\n", magic) != 0)
		return "its first line is not '" GPUCC_PRELUDE_MAGIC "'";
	const char *line = text + magic;
	const char *nl = memchr(line, '\n', (size_t)(end - line));
	/* "pch " SHA-256 " " SIZE */
	if (!nl || nl - line < 4 + 64 + 2 || memcmp(line, "pch ", 4) != 0 ||
	    gpucc_hex_span(line + 4, true) != 64 ||
	    line[68] != ' ' || !parse_count(line + 69, nl, &out->pch_size) || out->pch_size == 0)
		return "its second line is not 'pch <SHA-256> <size>'";
	char hex[65];
	memcpy(hex, line + 4, 64);
	hex[64] = '\0';
	if (gpucc_digest_from_hex(&out->pch, hex) != 0)
		return "its second line is not 'pch <SHA-256> <size>'";
	line = nl + 1;
	nl = line < end ? memchr(line, '\n', (size_t)(end - line)) : NULL;
	uint64_t count = 0;
	if (!nl || nl - line < 7 || memcmp(line, "files ", 6) != 0 ||
	    !parse_count(line + 6, nl, &count) || count == 0 || count > ULONG_MAX)
		return "its third line is not 'files <count>'";
	out->count = (unsigned long)count;
	out->lines = nl + 1;
	line = nl + 1;
	for (uint64_t i = 0; i < count; i++) {
		nl = line < end ? memchr(line, '\n', (size_t)(end - line)) : NULL;
		if (!nl)
			return "it lists fewer files than its count";
		if (!gpucc_record_file_line_ok(line, (size_t)(nl - line)))
			return "a line is neither '<SHA-256> <path>' nor 'dir <stamp> <path>'";
		line = nl + 1;
	}
	if (line != end)
		return "it holds more lines than its count";
	out->size = (size_t)(line - out->lines);
	return NULL;
}

/* ---- the files of v1/pch ------------------------------------------------------ */

/* What a name in a shard is: a record, a PCH (with its stem), or neither. */
typedef enum prelude_file { PRELUDE_OTHER, PRELUDE_RECORD, PRELUDE_PCH } prelude_file;

static prelude_file file_kind(const char *name, gpucc_digest *stem)
{
	size_t len = strlen(name);
	prelude_file kind = len == 64 + 8 && strcmp(name + 64, ".prelude") == 0 ? PRELUDE_RECORD
	                    : len == 64 + 4 && strcmp(name + 64, ".pch") == 0   ? PRELUDE_PCH
	                                                                        : PRELUDE_OTHER;
	if (kind == PRELUDE_OTHER || gpucc_hex_span(name, true) < 64)
		return PRELUDE_OTHER;
	char hex[65];
	memcpy(hex, name, 64);
	hex[64] = '\0';
	return gpucc_digest_from_hex(stem, hex) == 0 ? kind : PRELUDE_OTHER;
}

/* The record name in shard_fd, read whole, or NULL. */
static char *read_record(int shard_fd, const char *name, size_t *size, struct stat *st)
{
	int fd = openat(shard_fd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	char *buf = NULL;
	if (fstat(fd, st) == 0 && S_ISREG(st->st_mode) &&
	    st->st_size <= GPUCC_PRELUDE_RECORD_MAX_BYTES)
		buf = malloc((size_t)st->st_size + 1);
	size_t used = 0;
	while (buf && used < (size_t)st->st_size) {
		ssize_t n = read(fd, buf + used, (size_t)st->st_size - used);
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	if (buf && used != (size_t)st->st_size) {
		free(buf);
		return NULL;
	}
	if (buf) {
		buf[used] = '\0';
		*size = used;
	}
	return buf;
}

/* The other half's name of a prelude whose stem is hex. */
static void other_half(char *out, size_t size, const char *name, prelude_file kind)
{
	snprintf(out, size, "%.64s%s", name, kind == PRELUDE_RECORD ? ".pch" : ".prelude");
}

/* ---- gc and clear ------------------------------------------------------------- */

typedef struct collect_ctx {
	gpucc_cache_prelude_fn fn;
	void *fn_ctx;
	bool all;
	time_t now;
	int rc;
} collect_ctx;

static void collect_one(void *ctx, int shard_fd, const char *name, const char *shard)
{
	collect_ctx *g = ctx;
	(void)shard;
	if (g->rc)
		return;
	if (gpucc_temp_file_is_any(name)) {
		gpucc_atomic_file_remove_abandoned(shard_fd, name, g->now, GPUCC_ABANDONED_SECONDS);
		return;
	}
	gpucc_digest stem;
	prelude_file kind = file_kind(name, &stem);
	char twin[80];
	struct stat st, pch_st;
	if (kind == PRELUDE_OTHER) {
		unlinkat(shard_fd, name, 0);
		return;
	}
	other_half(twin, sizeof twin, name, kind);
	if (kind == PRELUDE_PCH) {
		/* Its record judges it; a PCH without one goes, unless it is
		 * younger than an hour (its record is being written). */
		if (fstatat(shard_fd, twin, &st, AT_SYMLINK_NOFOLLOW) != 0 &&
		    fstatat(shard_fd, name, &pch_st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (g->all || pch_st.st_mtime + GPUCC_ABANDONED_SECONDS < g->now))
			unlinkat(shard_fd, name, 0);
		return;
	}
	if (g->all) {
		unlinkat(shard_fd, name, 0);
		unlinkat(shard_fd, twin, 0);
		return;
	}
	size_t size = 0;
	char *text = read_record(shard_fd, name, &size, &st);
	gpucc_prelude_record r;
	if (!text) {
		/* Unreadable now (a writer's rename in between): kept, unless it
		 * is no regular file or too large ever to be read. */
		if (fstatat(shard_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (!S_ISREG(st.st_mode) || st.st_size > GPUCC_PRELUDE_RECORD_MAX_BYTES))
			unlinkat(shard_fd, name, 0);
		return;
	}
	const char *why = gpucc_prelude_record_parse(text, size, &r);
	free(text);
	bool whole = !why && fstatat(shard_fd, twin, &pch_st, AT_SYMLINK_NOFOLLOW) == 0 &&
	             S_ISREG(pch_st.st_mode) && (uint64_t)pch_st.st_size == r.pch_size;
	if (!whole) {
		unlinkat(shard_fd, name, 0);
		if (!why)
			unlinkat(shard_fd, twin, 0);
		return;
	}
	g->rc = g->fn(g->fn_ctx, &stem, &st, (uint64_t)st.st_size + r.pch_size);
}

int gpucc_cache_pch_collect(gpucc_cache *c, bool all, gpucc_cache_prelude_fn fn, void *ctx)
{
	collect_ctx g = {fn, ctx, all, time(NULL), 0};
	gpucc_cache_walk_shards(c, "pch", collect_one, &g, all);
	return g.rc;
}

/* CACHE/v1/pch/ab/NAME with the suffix. */
static char *prelude_path(gpucc_cache *c, const gpucc_digest *name, const char *suffix)
{
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, name);
	size_t size = strlen(gpucc_cache_dir(c)) + 128;
	char *path = malloc(size);
	if (path)
		snprintf(path, size, "%s/" GPUCC_CACHE_LAYOUT_DIR "/pch/%.2s/%s%s", gpucc_cache_dir(c),
		         hex, hex, suffix);
	return path;
}

bool gpucc_cache_pch_remove(gpucc_cache *c, const gpucc_digest *name, int64_t mtime_sec,
                            long mtime_nsec, bool any_time)
{
	char *record = prelude_path(c, name, ".prelude");
	char *pch = prelude_path(c, name, ".pch");
	bool removed = false;
	struct stat st;
	/* Used since the walk (another mtime): recent now, and kept. */
	if (record && pch && stat(record, &st) == 0 &&
	    (any_time || ((int64_t)st.st_mtim.tv_sec == mtime_sec && st.st_mtim.tv_nsec == mtime_nsec)) &&
	    unlink(record) == 0) {
		unlink(pch);
		removed = true;
	}
	free(record);
	free(pch);
	return removed;
}

/* ---- verify ------------------------------------------------------------------- */

typedef struct verify_preludes {
	gpucc_cache_defect_fn fn;
	void *ctx;
	uint64_t damaged;
} verify_preludes;

static void report(verify_preludes *v, const char *shard, const char *name, const char *why)
{
	v->damaged++;
	if (!v->fn)
		return;
	char path[8192], message[9000], shown[9000];
	snprintf(path, sizeof path, "%s/%s", shard, name);
	snprintf(message, sizeof message, "precompiled prelude '%s' is damaged: %s (%s)", path, why,
	         "a compile makes it again");
	gpucc_escape_controls(shown, sizeof shown, message);
	v->fn(v->ctx, path, shown);
}

static void verify_one(void *ctx, int shard_fd, const char *name, const char *shard)
{
	verify_preludes *v = ctx;
	gpucc_digest stem;
	if (file_kind(name, &stem) != PRELUDE_RECORD)
		return; /* temporaries, and what gc removes */
	size_t size = 0;
	struct stat st;
	char *text = read_record(shard_fd, name, &size, &st);
	gpucc_prelude_record r;
	const char *why = text ? gpucc_prelude_record_parse(text, size, &r)
	                  : fstatat(shard_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 ? NULL
	                  : !S_ISREG(st.st_mode)                                   ? "it is not a regular file"
	                  : st.st_size > GPUCC_PRELUDE_RECORD_MAX_BYTES            ? "it is larger than 16 MiB"
	                                                                : "it cannot be read";
	free(text);
	if (!text) {
		if (why)
			report(v, shard, name, why);
		return;
	}
	if (why) {
		report(v, shard, name, why);
		return;
	}
	char twin[80], path[8192];
	other_half(twin, sizeof twin, name, PRELUDE_RECORD);
	snprintf(path, sizeof path, "%s/%s", shard, twin);
	gpucc_digest got;
	uint64_t got_size = 0;
	if (fstatat(shard_fd, twin, &st, AT_SYMLINK_NOFOLLOW) != 0)
		report(v, shard, name, "its PCH is missing");
	else if (!S_ISREG(st.st_mode))
		report(v, shard, twin, "it is not a regular file");
	else if (gpucc_digest_file(&got, &got_size, path) != 0) {
		gpucc_error_clear();
		report(v, shard, twin, "it cannot be read");
	} else if (got_size != r.pch_size || gpucc_digest_compare(&got, &r.pch) != 0)
		report(v, shard, twin, "its SHA-256 is not the one its record holds");
}

uint64_t gpucc_cache_pch_verify(gpucc_cache *c, gpucc_cache_defect_fn fn, void *ctx)
{
	verify_preludes v = {fn, ctx, 0};
	gpucc_cache_walk_shards(c, "pch", verify_one, &v, false);
	return v.damaged;
}

/* ---- prune -------------------------------------------------------------------- */

typedef struct prune_preludes {
	gpucc_cache *c;
	bool dry;
	gpucc_cache_prelude_judge_fn judge;
	void *ctx;
	uint64_t removed;
} prune_preludes;

static void prune_one(void *ctx, int shard_fd, const char *name, const char *shard)
{
	prune_preludes *p = ctx;
	(void)shard;
	gpucc_digest stem;
	if (file_kind(name, &stem) != PRELUDE_RECORD)
		return; /* gc's */
	size_t size = 0;
	struct stat st;
	char *text = read_record(shard_fd, name, &size, &st);
	gpucc_prelude_record r;
	if (text && !gpucc_prelude_record_parse(text, size, &r) && p->judge(p->ctx, &r, &st) &&
	    (p->dry || gpucc_cache_pch_remove(p->c, &stem, (int64_t)st.st_mtim.tv_sec,
	                                      st.st_mtim.tv_nsec, false)))
		p->removed++;
	free(text);
}

uint64_t gpucc_cache_pch_prune(gpucc_cache *c, bool dry, gpucc_cache_prelude_judge_fn judge,
                               void *ctx)
{
	prune_preludes p = {c, dry, judge, ctx, 0};
	gpucc_cache_walk_shards(c, "pch", prune_one, &p, false);
	return p.removed;
}
