/*
 * lib/compile/compile_source_records.c -- the direct-mode records' files in
 * the cache (formats/cache.md, "Sources"): where a record lives,
 * CACHE/v1/sources/<name[0:2]>/<name>.record; reading and parsing one (for
 * a lookup, from a mapping of its file); and writing one, atomically, with
 * the earlier results it keeps, newest first.
 * What a record's name hashes and what a lookup checks:
 * lib/compile/compile_source.c and lib/compile/compile_source_check.c.
 *
 * These stay in lib/compile/ rather than lib/cache/: they read through
 * gpucc_read_small_file and store a gpucc_source_result, both of
 * lib/compile/compile_source.h.
 */
#include "compile_source_run.h"

#include "atomic_file.h"
#include "cache_internal.h"
#include "errors.h"
#include "escape.h"
#include "sigbus_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define RECORD_RESULTS 8            /* keys one record keeps, newest first */

/* A name's field: its length (8 bytes, big-endian), then its bytes; the
 * names of source records (compile_source.c) and of preludes
 * (compile_source_pch.c) are made of them. */
void name_field(gpucc_sha256 *h, const void *data, size_t size)
{
	unsigned char len[8];
	for (int i = 0; i < 8; i++)
		len[i] = (unsigned char)((uint64_t)size >> (56 - 8 * i));
	gpucc_sha256_update(h, len, sizeof len);
	gpucc_sha256_update(h, data, size);
}

void name_text(gpucc_sha256 *h, const char *text)
{
	name_field(h, text, strlen(text));
}

/* RECORDS_DIR/ab/NAME.record */
char *record_path(const char *records_dir, const gpucc_digest *name)
{
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, name);
	return string_printf("%s/%.2s/%s.record", records_dir, hex, hex);
}

static void collect_result(void *ctx, const gpucc_digest *key, const char *lines, size_t size,
                           unsigned long count)
{
	record_results *rs = ctx;
	if (rs->count == rs->capacity) {
		size_t n = rs->capacity ? 2 * rs->capacity : RECORD_RESULTS;
		record_result *grown = realloc(rs->items, n * sizeof *grown);
		if (!grown) {
			rs->failed = true;
			return;
		}
		rs->items = grown;
		rs->capacity = n;
	}
	rs->items[rs->count++] = (record_result){*key, lines, size, count};
}

/* The record at path, read and parsed: its text (free it) and results
 * (free rs->items), or NULL with why (a static string) when there is none
 * or it is damaged. */
char *record_read(const char *path, record_results *rs, const char **why)
{
	memset(rs, 0, sizeof *rs);
	size_t size = 0;
	char *text = path ? gpucc_read_small_file(path, RECORD_MAX_BYTES, &size) : NULL;
	*why = text ? gpucc_source_record_parse(text, size, collect_result, rs) : "no record";
	if (!*why && rs->failed)
		*why = "out of memory";
	if (*why) {
		free(text);
		free(rs->items);
		memset(rs, 0, sizeof *rs);
		return NULL;
	}
	return text;
}

/* A lookup reads the record from a read-only mapping of its file, under a
 * SIGBUS guard (lib/image/sigbus_guard.h: the file may be cut short
 * meanwhile), where the program turned guards on; else, or where no guard
 * or mapping can be had, into memory.  A HIP unit's record is some 400 KB:
 * read, as many fresh pages of memory, each faulted in and filled with a
 * copy; mapped, the page cache's pages as they are.  The mapping reaches
 * a byte past the file's end, so that a scan for a line break in a file
 * changed in place stops at a zero there, or at a guarded fault where the
 * file ends on a page's end, never past the mapping. */
struct record_mapping {
	void *start;
	size_t size;
	gpucc_sigbus_guard guard; /* over [start, start + size) */
};

const char *record_view_open(record_view *v, const char *path)
{
	memset(v, 0, sizeof *v);
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return "no record";
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > RECORD_MAX_BYTES) {
		close(fd);
		return "no record";
	}
	size_t size = (size_t)st.st_size;
	struct record_mapping *m = size > 0 && gpucc_sigbus_guard_enabled() ? malloc(sizeof *m) : NULL;
	if (m) {
		m->size = size + 1;
		m->start = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
		if (m->start != MAP_FAILED && gpucc_sigbus_guard_begin(&m->guard, m->start, m->size) == 0) {
			v->mapping = m;
			v->text = m->start;
		} else {
			if (m->start != MAP_FAILED)
				munmap(m->start, m->size);
			free(m);
		}
	}
	close(fd);
	if (!v->mapping) {
		v->text = gpucc_read_small_file(path, RECORD_MAX_BYTES, &size);
		if (!v->text)
			return "no record";
	}
	const char *why = gpucc_source_record_parse(v->text, size, collect_result, &v->rs);
	if (!why && v->rs.failed)
		why = "out of memory";
	if (why)
		record_view_close(v);
	return why;
}

bool record_view_close(record_view *v)
{
	bool cut = false;
	if (v->mapping) {
		cut = gpucc_sigbus_guard_end(&v->mapping->guard);
		munmap(v->mapping->start, v->mapping->size);
		free(v->mapping);
	} else {
		free((char *)v->text);
	}
	free(v->rs.items);
	memset(v, 0, sizeof *v);
	return cut;
}

static int mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0777) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0777) == 0 || errno == EEXIST ? 0 : -1;
}

static int write_atomic(const char *path, const void *data, size_t size)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	if (mkdir_p(dir) != 0)
		return -1;
	gpucc_atomic_file f;
	if (gpucc_atomic_file_open(&f, path) != 0) {
		gpucc_error_clear();
		return -1;
	}
	f.no_sync = true; /* a record lost to a crash is a miss, never a wrong hit */
	if (gpucc_write_all(f.fd, data, size) != 0) {
		gpucc_atomic_file_abort(&f);
		return -1;
	}
	int rc = gpucc_atomic_file_commit(&f);
	gpucc_error_clear();
	return rc == 0 ? 0 : -1;
}

/* The earlier results of the record at path, but those of key, after t's
 * first: RECORD_RESULTS in all.  A damaged record keeps none. */
static void keep_earlier(gpucc_buffer *t, const char *path, const gpucc_digest *key)
{
	record_results rs;
	const char *why;
	char *old = record_read(path, &rs, &why);
	size_t results = 1;
	for (size_t i = 0; old && i < rs.count && results < RECORD_RESULTS; i++) {
		if (gpucc_digest_compare(&rs.items[i].key, key) == 0)
			continue;
		char line[GPUCC_DIGEST_HEX_SIZE + 48];
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &rs.items[i].key);
		snprintf(line, sizeof line, "entry %s %lu\n", hex, rs.items[i].count);
		gpucc_buffer_append_string(t, line);
		gpucc_buffer_append(t, rs.items[i].lines, rs.items[i].size);
		results++;
	}
	free(rs.items);
	free(old);
}

void gpucc_source_record_store(gpucc_cache *cache, const gpucc_source_result *r,
                               const gpucc_digest *key)
{
	if (!r->record || !cache || !gpucc_cache_writable(cache))
		return;
	char *dir = string_printf("%s/v1/sources", gpucc_cache_dir(cache));
	char *path = dir ? record_path(dir, &r->record_name) : NULL;
	free(dir);
	if (!path)
		return;
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, key);
	gpucc_buffer t = GPUCC_BUFFER_INIT;
	gpucc_buffer_append_string(&t, RECORD_MAGIC "\nentry ");
	gpucc_buffer_append_string(&t, hex);
	gpucc_buffer_append_string(&t, " ");
	gpucc_buffer_append_string(&t, r->record); /* "N\n" and the N files */
	keep_earlier(&t, path, key);
	if (!t.failed)
		write_atomic(path, t.data, t.size); /* not written: a later miss */
	free(path);
	free(t.data);
}
