/*
 * lib/cache/cache_walk.c -- reading the local cache's entries (formats/cache.md):
 * walking them all, listing their keys, and opening one, which a lookup
 * checks completely and counts as a hit or a miss.
 */
#include "cache_impl.h"

#include "errors.h"
#include "hex.h"
#include "image_internal.h"
#include "temp_name.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- walking the entries ------------------------------------------------ */

/* The key an entry file name spells, or false when it is no entry's name. */
static bool key_of_name(gpucc_digest *key, const char *name, const char *shard)
{
	size_t len = strlen(name);
	if (len != 64 + strlen(ENTRY_SUFFIX) || strcmp(name + 64, ENTRY_SUFFIX) != 0 ||
	    name[0] != shard[0] || name[1] != shard[1])
		return false;
	return gpucc_hex_decode(key->bytes, name, 32, true); /* gpucc writes lowercase */
}

/* An entry written, not yet published (pending_path). */
bool gpucc_cache_is_pending_name(const char *name)
{
	return name[0] == '.' && !gpucc_temp_file_is_any(name) &&
	       strstr(name, ENTRY_SUFFIX PENDING_INFIX);
}

int gpucc_cache_walk_entries(gpucc_cache *c, walk_fn fn, void *ctx)
{
	if (!c->exists)
		return 0;
	char *layout = gpucc_cache_path_join(c->dir, LAYOUT_DIR);
	if (!layout)
		return gpucc_error_oom();
	int rc = 0;
	for (int s = 0; s < 257 && rc == 0; s++) {
		char shard[8];
		if (s == 256)
			snprintf(shard, sizeof shard, "tmp");
		else
			snprintf(shard, sizeof shard, "%02x", s);
		char *path = gpucc_cache_path_join(layout, shard);
		if (!path) {
			rc = gpucc_error_oom();
			break;
		}
		DIR *d = opendir(path);
		if (!d) {
			if (errno != ENOENT && errno != ENOTDIR)
				rc = gpucc_error_set_errno("cannot read cache directory '%s'", path);
			free(path);
			continue;
		}
		struct dirent *de;
		while (rc == 0 && (de = readdir(d)) != NULL) {
			gpucc_digest key;
			if (s < 256 && key_of_name(&key, de->d_name, shard))
				rc = fn(ctx, &key, dirfd(d), de->d_name);
			else if (gpucc_temp_file_is_any(de->d_name) ||
			         gpucc_cache_is_pending_name(de->d_name) || (s == 256 && de->d_name[0] != '.'))
				rc = fn(ctx, NULL, dirfd(d), de->d_name);
		}
		closedir(d);
		free(path);
	}
	free(layout);
	return rc;
}

typedef struct foreach_ctx {
	gpucc_cache_entry_fn fn;
	void *ctx;
} foreach_ctx;

static int foreach_one(void *ctx, const gpucc_digest *key, int shard_fd, const char *name)
{
	foreach_ctx *f = ctx;
	(void)shard_fd;
	(void)name;
	return key ? f->fn(f->ctx, key) : 0;
}

typedef struct key_list {
	gpucc_digest *keys;
	size_t count, capacity;
} key_list;

static int collect_key(void *ctx, const gpucc_digest *key)
{
	key_list *l = ctx;
	if (l->count == l->capacity) {
		size_t capacity = l->capacity ? l->capacity * 2 : 256;
		gpucc_digest *grown = realloc(l->keys, capacity * sizeof *grown);
		if (!grown)
			return gpucc_error_oom();
		l->keys = grown;
		l->capacity = capacity;
	}
	l->keys[l->count++] = *key;
	return 0;
}

static int key_compare(const void *a, const void *b)
{
	return memcmp(a, b, GPUCC_DIGEST_SIZE);
}

int gpucc_cache_sorted_keys(gpucc_digest **out, size_t *count, gpucc_cache *c)
{
	key_list keys = {0};
	int rc = gpucc_cache_foreach(c, collect_key, &keys);
	if (rc) {
		free(keys.keys);
		return rc;
	}
	if (keys.count > 1) /* an empty cache has no array at all */
		qsort(keys.keys, keys.count, sizeof *keys.keys, key_compare);
	*out = keys.keys;
	*count = keys.count;
	return 0;
}

int gpucc_cache_foreach(gpucc_cache *c, gpucc_cache_entry_fn fn, void *ctx)
{
	GPUCC_REQUIRE(c);
	GPUCC_REQUIRE(fn);
	foreach_ctx f = {fn, ctx};
	return gpucc_cache_walk_entries(c, foreach_one, &f);
}

/* ---- lookup -------------------------------------------------------------- */

/* Remove a corrupt entry file, unless it is no longer the file we read
 * (another process replaced it meanwhile); a symbolic link is removed, not
 * what it names.  -1 (errno set) when it is still there; 0 when it is gone,
 * or is another file now. */
int gpucc_cache_remove_if_same(gpucc_cache *c, const char *path, const struct stat *read_st)
{
	struct stat now;
	if (!c->writable) {
		errno = EROFS;
		return -1;
	}
	if (lstat(path, &now) != 0 || now.st_ino != read_st->st_ino || now.st_dev != read_st->st_dev)
		return 0;
	if (unlink(path) != 0 && errno != ENOENT)
		return -1;
	gpucc_cache_remove_warnings_of(path);
	return 0;
}

char *gpucc_cache_warnings_load(gpucc_cache *c, const gpucc_digest *key)
{
	char *path = c->exists ? gpucc_cache_warnings_path(c, key) : NULL;
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) : -1;
	free(path);
	struct stat st;
	char *text = NULL;
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    st.st_size <= GPUCC_CACHE_WARNINGS_MAX && (text = malloc((size_t)st.st_size + 1))) {
		ssize_t n = pread(fd, text, (size_t)st.st_size, 0);
		if (n != st.st_size || memchr(text, '\0', (size_t)n)) {
			free(text);
			text = NULL;
		} else {
			text[n] = '\0';
		}
	}
	if (fd >= 0)
		close(fd);
	return text;
}

/* The entry file at path, checked as a lookup checks it; st gets its
 * identity.  Only a regular file is an entry (gc and stats count nothing
 * else): a link, FIFO, device or directory under an entry's name is
 * corrupt, refused without being followed or read, lest a FIFO block the
 * lookup, and with it a compile, for ever. */
int gpucc_cache_open_entry_file(gpucc_image **out, gpucc_cache *c, const gpucc_digest *key,
                                const char *path, struct stat *st, bool verify)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return gpucc_error_set(GPUCC_ENOTFOUND, "no entry in cache '%s'", c->dir);
		if (errno == ELOOP && lstat(path, st) == 0 && S_ISLNK(st->st_mode))
			return gpucc_error_set(GPUCC_ECORRUPT, "'%s' is a symbolic link, not a cache entry",
			                       path);
		return gpucc_error_set_errno("cannot open cache entry '%s'", path);
	}
	if (fstat(fd, st) != 0) {
		int rc = gpucc_error_set_errno("cannot open cache entry '%s'", path);
		close(fd);
		return rc;
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s' is a %s, not a cache entry", path,
		                       S_ISDIR(st->st_mode)    ? "directory"
		                       : S_ISFIFO(st->st_mode) ? "FIFO"
		                       : S_ISSOCK(st->st_mode) ? "socket"
		                                               : "device");
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	gpucc_image *img = NULL;
	int rc = gpucc_image_open_fd(&img, fd, path);
	close(fd);
	if (rc)
		return rc == GPUCC_ENOTFOUND ? gpucc_error_set(GPUCC_ECORRUPT, "cache entry '%s': %s",
		                                               path, gpucc_error_last()->message)
		                             : rc;
	if (gpucc_image_entry_count(img) != 1 ||
	    gpucc_digest_compare(&gpucc_image_entry(img, 0)->key, key) != 0) {
		gpucc_image_free(img);
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "cache entry '%s' does not hold exactly the entry its name says",
		                       path);
	}
	if (verify && (rc = gpucc_image_verify(img)) != 0) {
		gpucc_image_free(img);
		return rc;
	}
	*out = img;
	return 0;
}

int gpucc_cache_open_entry(gpucc_image **out, gpucc_cache *c, const gpucc_digest *key)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(c);
	GPUCC_REQUIRE(key);
	if (!c->exists)
		return gpucc_error_set(GPUCC_ENOTFOUND, "no entry in cache '%s'", c->dir);
	char *path = gpucc_cache_entry_path(c, key, false);
	if (!path)
		return gpucc_error_oom();
	struct stat st;
	int rc = gpucc_cache_open_entry_file(out, c, key, path, &st, false);
	free(path);
	return rc;
}

int gpucc_cache_lookup(gpucc_image **out, gpucc_cache *c, const gpucc_digest *key)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(c);
	GPUCC_REQUIRE(key);
	if (!c->exists) {
		c->misses++;
		return gpucc_error_set(GPUCC_ENOTFOUND, "no entry in cache '%s'", c->dir);
	}
	char *path = gpucc_cache_entry_path(c, key, false);
	if (!path)
		return gpucc_error_oom();
	struct stat st;
	memset(&st, 0, sizeof st);
	int rc = gpucc_cache_open_entry_file(out, c, key, path, &st, true);
	if (rc == 0) {
		c->hits++;
		/* Recency for LRU; a read-only cache simply does not record it. */
		if (c->writable)
			utimensat(AT_FDCWD, path, NULL, 0);
	} else if (rc == GPUCC_ENOTFOUND) {
		c->misses++;
	} else {
		/* Corrupt (removed, so that the next insert repairs it) or
		 * unreadable (kept: an I/O error is no verdict on the entry). */
		bool corrupt = rc == GPUCC_ECORRUPT || rc == GPUCC_EVERSION;
		c->misses++;
		if (corrupt)
			c->corrupt++;
		gpucc_cache_warn(c, "cache entry '%s' is %s, treated as a miss: %s", path,
		                 corrupt ? "corrupt" : "unreadable", gpucc_error_last()->message);
		if (corrupt)
			gpucc_cache_remove_if_same(c, path, &st);
		rc = gpucc_error_set(GPUCC_ENOTFOUND, "no usable entry in cache '%s'", c->dir);
	}
	free(path);
	return rc;
}
