/*
 * lib/algebra/snapshot.c -- snapshots (gpucc/snapshot.h, formats/snapshot.md):
 * building them from items, reading and writing their files, writing their
 * text form, and the delta of two.  (Sorting items: lib/algebra/snapshot_sort.c;
 * parsing the text form: lib/algebra/snapshot_text.c; snapshots of images and
 * caches: lib/algebra/operand.c.)
 *
 * An in-memory snapshot is one array of gpucc_snapshot_item sorted by key;
 * a snapshot read from a file is that file's bytes, checked, with the array
 * pointing into them (the on-disk items have the in-memory layout).
 */
#include "gpucc/snapshot.h"

#include "snapshot_impl.h"
#include "atomic_file.h"
#include "cache_internal.h"
#include "errors.h"
#include "hex.h"
#include "input_file.h"
#include "snapshot_format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

_Static_assert(sizeof(gpucc_snapshot_item) == GPUCC_SNAPSHOT_ITEM_SIZE,
               "snapshot items are laid out as on disk");

struct gpucc_snapshot {
	size_t count;
	gpucc_snapshot_item *items; /* into buffer, or its own array */
	void *buffer;               /* what to free */
};

/* ---- building ------------------------------------------------------------ */

/* Take ownership of items (malloc'd) as a new snapshot. */
static int snapshot_adopt(gpucc_snapshot **out, gpucc_snapshot_item *items, size_t count)
{
	gpucc_snapshot *s = calloc(1, sizeof *s);
	if (!s) {
		free(items);
		return gpucc_error_oom();
	}
	s->items = items;
	s->buffer = items;
	s->count = count;
	*out = s;
	return 0;
}

int gpucc_snapshot_from_items(gpucc_snapshot **out, gpucc_snapshot_item *items, size_t count,
                              const char *what)
{
	int rc = gpucc_snapshot_items_normalise(&items, &count, what);
	if (rc) {
		free(items);
		return rc;
	}
	return snapshot_adopt(out, items, count);
}

int gpucc_snapshot_new(gpucc_snapshot **out, const gpucc_snapshot_item *items, size_t count)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	if (count != 0)
		GPUCC_REQUIRE(items);
	gpucc_snapshot_item *copy = gpucc_snapshot_items_alloc(count);
	if (!copy)
		return gpucc_error_oom();
	if (count)
		memcpy(copy, items, count * sizeof *copy);
	return gpucc_snapshot_from_items(out, copy, count, "the snapshot's items");
}

void gpucc_snapshot_free(gpucc_snapshot *s)
{
	if (!s)
		return;
	free(s->buffer);
	free(s);
}

size_t gpucc_snapshot_count(const gpucc_snapshot *s)
{
	GPUCC_REQUIRE_OR(s, 0);
	return s->count;
}

const gpucc_snapshot_item *gpucc_snapshot_items(const gpucc_snapshot *s)
{
	GPUCC_REQUIRE_OR(s, NULL);
	return s->items;
}

const gpucc_snapshot_item *gpucc_snapshot_find(const gpucc_snapshot *s, const gpucc_digest *key)
{
	GPUCC_REQUIRE_OR(s, NULL);
	GPUCC_REQUIRE_OR(key, NULL);
	size_t lo = 0, hi = s->count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = memcmp(&s->items[mid].key, key, GPUCC_DIGEST_SIZE);
		if (c == 0)
			return &s->items[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* ---- files ---------------------------------------------------------------- */

/* Read exactly size bytes: 0; 1 when the file ends first; -1 (errno set)
 * on an error. */
static int read_all(int fd, void *buf, size_t size)
{
	char *p = buf;
	while (size > 0) {
		ssize_t n = read(fd, p, size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return 1;
		p += n;
		size -= (size_t)n;
	}
	return 0;
}

/* The error for read_all's result rc on the snapshot at path, which had
 * size bytes when opened. */
static int read_error(int rc, const char *path, off_t size)
{
	if (rc > 0)
		return gpucc_error_set(GPUCC_ERROR,
		                       "'%s': snapshot changed while being read (shorter than its %lld "
		                       "bytes; a snapshot is replaced by rename, never rewritten)",
		                       path, (long long)size);
	return gpucc_error_set_errno("cannot read snapshot '%s'", path);
}

int gpucc_snapshot_read(gpucc_snapshot **out, const char *path)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(path);
	/* O_NONBLOCK: a FIFO is refused below, not waited on. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return gpucc_error_set_open("snapshot", path);
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int rc = gpucc_error_set_errno("cannot read snapshot '%s'", path);
		close(fd);
		return rc;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return gpucc_error_set(GPUCC_EINVALID, "'%s' is not a regular file", path);
	}
	/* Check the header before trusting the size enough to allocate it. */
	unsigned char header[GPUCC_SNAPSHOT_HEADER_SIZE] = {0};
	size_t head = st.st_size < (off_t)sizeof header ? (size_t)st.st_size : sizeof header;
	uint64_t count;
	int rc = read_all(fd, header, head);
	if (rc != 0)
		rc = read_error(rc, path, st.st_size);
	else
		rc = gpucc_snapshot_format_check_header(&count, header, (uint64_t)st.st_size, path);
	if (rc) {
		close(fd);
		return rc;
	}
	size_t size = (size_t)st.st_size;
	unsigned char *buffer = gpucc_snapshot_alloc(size);
	if (!buffer) {
		close(fd);
		return gpucc_error_oom();
	}
	memcpy(buffer, header, sizeof header);
	rc = read_all(fd, buffer + sizeof header, size - sizeof header);
	char more;
	if (rc != 0) {
		rc = read_error(rc, path, st.st_size);
	} else if ((rc = read_all(fd, &more, 1)) < 0) {
		rc = read_error(rc, path, st.st_size);
	} else if (rc == 0) {
		/* It must end where it did when opened: a prefix of a growing
		 * file could pass every check and be taken for the whole. */
		rc = gpucc_error_set(GPUCC_ERROR,
		                     "'%s': snapshot changed while being read (longer than its %lld "
		                     "bytes; a snapshot is replaced by rename, never rewritten)",
		                     path, (long long)st.st_size);
	} else {
		rc = 0; /* it ended there */
	}
	close(fd);
	if (rc) {
		free(buffer);
		return rc;
	}
	const unsigned char *items;
	rc = gpucc_snapshot_format_decode(&items, &count, buffer, size, path);
	if (rc) {
		free(buffer);
		return rc;
	}
	gpucc_snapshot *s = calloc(1, sizeof *s);
	if (!s) {
		free(buffer);
		return gpucc_error_oom();
	}
	s->buffer = buffer;
	s->items = (gpucc_snapshot_item *)(void *)(buffer + GPUCC_SNAPSHOT_HEADER_SIZE);
	s->count = (size_t)count;
	*out = s;
	return 0;
}

int gpucc_snapshot_write(const gpucc_snapshot *s, const char *path)
{
	unsigned char header[GPUCC_SNAPSHOT_HEADER_SIZE], trailer[GPUCC_SNAPSHOT_TRAILER_SIZE];
	GPUCC_REQUIRE(s);
	GPUCC_REQUIRE(path);
	const unsigned char *items = (const unsigned char *)s->items;
	gpucc_snapshot_format_header(header, s->count);
	gpucc_snapshot_format_trailer(trailer, header, items, s->count);
	gpucc_atomic_file f;
	int rc = gpucc_atomic_file_open(&f, path);
	if (rc)
		return rc;
	if (gpucc_write_all(f.fd, header, sizeof header) != 0 ||
	    gpucc_write_all(f.fd, items, s->count * sizeof *s->items) != 0 ||
	    gpucc_write_all(f.fd, trailer, sizeof trailer) != 0) {
		rc = gpucc_error_set_errno("cannot write snapshot '%s'", path);
		gpucc_atomic_file_abort(&f);
		return rc;
	}
	return gpucc_atomic_file_commit(&f);
}

/* ---- text form ------------------------------------------------------------ */

int gpucc_snapshot_write_text(const gpucc_snapshot *s, int fd)
{
	enum { LINE = 130, BATCH = 4096 };
	GPUCC_REQUIRE(s);
	char *buf = malloc((size_t)LINE * BATCH);
	if (!buf)
		return gpucc_error_oom();
	size_t used = 0;
	for (size_t i = 0; i < s->count; i++) {
		char *line = buf + used;
		gpucc_hex_encode(line, s->items[i].key.bytes, 32);
		gpucc_hex_encode(line + 65, s->items[i].content.bytes, 32);
		line[64] = ' ';
		line[129] = '\n';
		used += LINE;
		if (used == (size_t)LINE * BATCH || i + 1 == s->count) {
			if (gpucc_write_all(fd, buf, used) != 0) {
				free(buf);
				return gpucc_error_set_errno("cannot write snapshot text");
			}
			used = 0;
		}
	}
	free(buf);
	return 0;
}

/* ---- deltas of snapshots --------------------------------------------------- */

int gpucc_snapshot_delta(gpucc_snapshot **out, const gpucc_snapshot *source,
                         const char *source_name, const gpucc_snapshot *base,
                         const char *base_name, const gpucc_algebra_options *opts,
                         gpucc_algebra_counts *counts)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(source);
	GPUCC_REQUIRE(base);
	if (!source_name)
		source_name = "source";
	if (!base_name)
		base_name = "base";
	gpucc_algebra_counts local = {0};
	gpucc_conflict_policy policy = opts ? opts->on_conflict : GPUCC_CONFLICT_FAIL;
	if (gpucc_conflict_policy_check(policy) != 0)
		return GPUCC_EINVALID;
	gpucc_snapshot_item *items = gpucc_snapshot_items_alloc(source->count);
	if (!items)
		return gpucc_error_oom();
	size_t n = 0, j = 0;
	for (size_t i = 0; i < source->count; i++) {
		const gpucc_snapshot_item *it = &source->items[i];
		while (j < base->count && memcmp(&base->items[j].key, &it->key, GPUCC_DIGEST_SIZE) < 0)
			j++;
		local.entries_read++;
		if (j < base->count && memcmp(&base->items[j].key, &it->key, GPUCC_DIGEST_SIZE) == 0) {
			if (memcmp(&base->items[j].content, &it->content, GPUCC_DIGEST_SIZE) == 0) {
				local.duplicates++;
				continue;
			}
			local.conflicts++;
			if (opts && opts->conflict_fn)
				opts->conflict_fn(opts->conflict_ctx, &it->key, base_name, source_name);
			if (policy == GPUCC_CONFLICT_FAIL) {
				char hex[GPUCC_DIGEST_HEX_SIZE];
				gpucc_digest_to_hex(hex, &it->key);
				free(items);
				return gpucc_error_set(GPUCC_ECONFLICT,
				                       "conflict: key %s has different contents in '%s' and '%s'",
				                       hex, base_name, source_name);
			}
			if (policy == GPUCC_CONFLICT_FIRST)
				continue;
		}
		items[n++] = *it;
	}
	local.entries_out = n;
	if (counts)
		*counts = local;
	return snapshot_adopt(out, items, n);
}
