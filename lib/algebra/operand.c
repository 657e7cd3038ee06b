/*
 * lib/algebra/operand.c -- the operands snapshot, delta and merge read
 * (gpucc/snapshot.h): an image, a cache or a snapshot file, told apart by
 * what path holds; how many of them, and of a cache's entries, stay open
 * (the budget of open files); whether image inputs are whole; and the
 * snapshot of what an operand holds.
 */
#include "gpucc/snapshot.h"

#include "algebra.h"
#include "cache_internal.h"
#include "errors.h"
#include "file_identity.h"
#include "image_internal.h"
#include "input_file.h"
#include "parallel.h"
#include "snapshot_format.h"
#include "snapshot_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

struct gpucc_operand {
	gpucc_operand_kind kind;
	char *name;
	gpucc_image *image;
	gpucc_cache *cache;
	gpucc_snapshot *snapshot;
	bool owned; /* image or cache opened by gpucc_operand_open */
	bool has_identity; /* dev and ino: the file or directory it opened */
	dev_t dev;
	ino_t ino;
};

/* ---- the budget of open files ------------------------------------------ */

size_t gpucc_entry_budget_limit(void)
{
	struct rlimit rl;
	return getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
	               ? (size_t)rl.rlim_cur / 2
	               : SIZE_MAX;
}

void gpucc_entry_budget_init(gpucc_entry_budget *b)
{
	b->open = 0;
	b->limit = gpucc_entry_budget_limit();
}

int gpucc_algebra_open_entry(gpucc_image **out, gpucc_cache *c, const gpucc_digest *key,
                             gpucc_entry_budget *budget)
{
	int rc = gpucc_cache_open_entry(out, c, key);
	if (rc == GPUCC_ENOTFOUND)
		return GPUCC_OTHER_PATH;
	if (rc == GPUCC_ECORRUPT || rc == GPUCC_EVERSION) {
		gpucc_cache_warn(c, "skipping corrupt cache entry: %s", gpucc_error_last()->message);
		return GPUCC_OTHER_PATH;
	}
	if (rc) /* anything else (I/O, too many open files) is a failure, not a loss */
		return rc;
	if (budget->open < budget->limit) {
		budget->open++;
		return 0;
	}
	/* A cache entry image is named by its path. */
	if ((rc = gpucc_image_park(*out, gpucc_image_name(*out))) != 0) {
		gpucc_image_free(*out);
		*out = NULL;
	}
	return rc;
}

/* ---- image inputs whole ----------------------------------------------------- */

int gpucc_algebra_check_whole(gpucc_operand *const *sources, size_t count, bool compressed)
{
	for (size_t i = 0; i < count; i++) {
		gpucc_image *img = gpucc_operand_image(sources[i]);
		if (!img || gpucc_image_is_compressed(img) != compressed)
			continue;
		int rc = gpucc_image_check_whole(img);
		if (rc)
			return rc;
	}
	return 0;
}

int gpucc_algebra_check_compressed(void *inputs)
{
	const gpucc_algebra_inputs *in = inputs;
	return gpucc_algebra_check_whole(in->sources, in->count, true);
}

/* ---- sources --------------------------------------------------------------- */

static int source_new(gpucc_operand **out, gpucc_operand_kind kind, const char *name)
{
	*out = NULL;
	gpucc_operand *s = calloc(1, sizeof *s);
	if (!s)
		return gpucc_error_oom();
	s->kind = kind;
	s->name = strdup(name);
	if (!s->name) {
		free(s);
		return gpucc_error_oom();
	}
	*out = s;
	return 0;
}

int gpucc_operand_open(gpucc_operand **out, const char *path, gpucc_cache_warning_fn warn,
                      void *warn_ctx)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(path);
	/* O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused
	 * below); it changes nothing for files and directories. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return gpucc_error_set_open(NULL, path);
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int rc = gpucc_error_set_errno("cannot read '%s'", path);
		close(fd);
		return rc;
	}
	gpucc_operand *s = NULL;
	int rc;
	if (S_ISDIR(st.st_mode)) {
		bool is_cache = gpucc_cache_directory_at(fd);
		close(fd);
		if (!is_cache)
			return gpucc_cache_not_a_cache(path);
		if ((rc = source_new(&s, GPUCC_OPERAND_CACHE, path)) != 0)
			return rc;
		rc = gpucc_cache_open(&s->cache, path, GPUCC_CACHE_READ_ONLY);
		if (rc == 0)
			gpucc_cache_set_warning_handler(s->cache, warn, warn_ctx);
	} else if (!S_ISREG(st.st_mode)) {
		/* Telling a snapshot from an image reads the first bytes, which a
		 * pipe would not give again to the reader that follows. */
		close(fd);
		return gpucc_error_set(GPUCC_EINVALID,
		                       "'%s' is not a regular file (images and snapshots are read from "
		                       "files, caches from directories)",
		                       path);
	} else {
		unsigned char magic[GPUCC_SNAPSHOT_MAGIC_SIZE];
		ssize_t n;
		do
			n = pread(fd, magic, sizeof magic, 0);
		while (n < 0 && errno == EINTR);
		int saved = errno;
		close(fd);
		if (n < 0) {
			errno = saved;
			return gpucc_error_set_errno("cannot read '%s'", path);
		}
		if (gpucc_snapshot_format_is_snapshot(magic, (size_t)n)) {
			if ((rc = source_new(&s, GPUCC_OPERAND_SNAPSHOT, path)) != 0)
				return rc;
			rc = gpucc_snapshot_read(&s->snapshot, path);
		} else {
			if ((rc = source_new(&s, GPUCC_OPERAND_IMAGE, path)) != 0)
				return rc;
			rc = gpucc_image_open(&s->image, path);
		}
	}
	s->owned = true;
	s->has_identity = true;
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	if (rc) {
		gpucc_operand_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

typedef struct open_job {
	gpucc_operand **out;
	const char *const *paths;
	gpucc_cache_warning_fn warn;
	void *warn_ctx;
	size_t keep_open; /* images before this index keep their descriptors */
	int *codes;      /* per path: 0 or the error's code ... */
	char **messages; /* ... and message (NULL when out of memory) */
} open_job;

static void open_one(void *ctx, size_t i)
{
	open_job *job = ctx;
	job->codes[i] = gpucc_operand_open(&job->out[i], job->paths[i], job->warn, job->warn_ctx);
	gpucc_image *img = job->codes[i] ? NULL : job->out[i]->image;
	if (img) {
		gpucc_image_prepare_payloads(img); /* merge and import read them */
		if (i >= job->keep_open)
			job->codes[i] = gpucc_image_park(img, job->paths[i]);
	}
	if (job->codes[i])
		job->messages[i] = strdup(gpucc_error_last()->message);
}

int gpucc_operands_open(gpucc_operand **out, const char *const *paths, size_t n,
                       gpucc_cache_warning_fn warn, void *warn_ctx)
{
	if (n != 0)
		GPUCC_REQUIRE(out);
	for (size_t i = 0; i < n; i++)
		out[i] = NULL;
	GPUCC_REQUIRE_EACH(paths, n);
	/* Images past half the limit on open files are parked as soon as they
	 * are open (algebra.h), so that any number of inputs can be merged;
	 * the threads, each holding a descriptor or two while it opens one,
	 * stay within a quarter of it. */
	size_t budget = gpucc_entry_budget_limit(), threads = gpucc_cpu_count();
	if (threads > budget / 2)
		threads = budget / 2 ? budget / 2 : 1;
	open_job job = {out, paths, warn, warn_ctx, budget, calloc(n + 1, sizeof *job.codes),
	                calloc(n + 1, sizeof *job.messages)};
	if (!job.codes || !job.messages) {
		free(job.codes);
		free(job.messages);
		return gpucc_error_oom();
	}
	/* Parsing the manifests of the 32 inputs of a 50,000-entry merge
	 * takes a tenth of a second on one core. */
	gpucc_parallel_for(n, threads, open_one, &job);
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		if (job.codes[i])
			rc = job.messages[i] ? gpucc_error_set(job.codes[i], "%s", job.messages[i])
			                     : gpucc_error_oom();
	for (size_t i = 0; i < n; i++) {
		free(job.messages[i]);
		if (rc) {
			gpucc_operand_free(out[i]);
			out[i] = NULL;
		}
	}
	free(job.codes);
	free(job.messages);
	return rc;
}

int gpucc_operand_from_cache(gpucc_operand **out, gpucc_cache *c)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(c);
	int rc = source_new(out, GPUCC_OPERAND_CACHE, gpucc_cache_dir(c));
	if (rc == 0)
		(*out)->cache = c;
	return rc;
}

int gpucc_operand_from_image(gpucc_operand **out, gpucc_image *img)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(img);
	int rc = source_new(out, GPUCC_OPERAND_IMAGE, gpucc_image_name(img));
	if (rc == 0)
		(*out)->image = img;
	return rc;
}

void gpucc_operand_free(gpucc_operand *s)
{
	if (!s)
		return;
	if (s->owned) {
		gpucc_image_free(s->image);
		gpucc_cache_free(s->cache);
	}
	gpucc_snapshot_free(s->snapshot);
	free(s->name);
	free(s);
}

gpucc_operand_kind gpucc_operand_kind_of(const gpucc_operand *s)
{
	GPUCC_REQUIRE_OR(s, (gpucc_operand_kind)0);
	return s->kind;
}

const char *gpucc_operand_name(const gpucc_operand *s)
{
	GPUCC_REQUIRE_OR(s, NULL);
	return s->name;
}

gpucc_image *gpucc_operand_image(const gpucc_operand *s)
{
	return s->image;
}

gpucc_cache *gpucc_operand_cache(const gpucc_operand *s)
{
	return s->cache;
}

const gpucc_snapshot *gpucc_operand_snapshot(const gpucc_operand *s)
{
	GPUCC_REQUIRE_OR(s, NULL);
	return s->snapshot;
}

int gpucc_operand_check_whole(gpucc_operand *s)
{
	GPUCC_REQUIRE(s);
	return s->image ? gpucc_image_check_whole(s->image) : 0;
}

bool gpucc_operand_is_file(const gpucc_operand *s, const char *path)
{
	GPUCC_REQUIRE_OR(s, false);
	GPUCC_REQUIRE_OR(path, false);
	struct stat file = {.st_dev = s->dev, .st_ino = s->ino};
	return s->has_identity && gpucc_path_names_file(path, &file);
}

/* ---- snapshots of sources ------------------------------------------------ */

typedef struct collect_ctx {
	gpucc_cache *cache;
	gpucc_snapshot_item *items;
	size_t count, capacity;
} collect_ctx;

static int collect_key(void *ctx, const gpucc_digest *key)
{
	collect_ctx *cc = ctx;
	gpucc_image *img;
	int rc = gpucc_cache_open_entry(&img, cc->cache, key);
	if (rc == GPUCC_ENOTFOUND)
		return 0; /* evicted since the directory was listed */
	if (rc == GPUCC_ECORRUPT || rc == GPUCC_EVERSION) {
		/* A corrupt entry is a miss for lookups, so it is not in the
		 * cache as far as snapshots go either. */
		gpucc_cache_warn(cc->cache, "skipping corrupt cache entry: %s",
		                 gpucc_error_last()->message);
		return 0;
	}
	if (rc)
		return rc;
	if (cc->count == cc->capacity) {
		size_t capacity = cc->capacity ? cc->capacity * 2 : 1024;
		gpucc_snapshot_item *grown = realloc(cc->items, capacity * sizeof *grown);
		if (!grown) {
			gpucc_image_free(img);
			return gpucc_error_oom();
		}
		cc->items = grown;
		cc->capacity = capacity;
	}
	gpucc_snapshot_item *it = &cc->items[cc->count];
	it->key = *key;
	rc = gpucc_entry_content_digest(&it->content, gpucc_image_entry(img, 0));
	gpucc_image_free(img);
	if (rc == 0)
		cc->count++;
	return rc;
}

int gpucc_snapshot_of(gpucc_snapshot **out, gpucc_operand *s)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(s);
	if (s->kind == GPUCC_OPERAND_SNAPSHOT) {
		/* Read and checked: sorted and unique already, so a plain copy. */
		size_t n = gpucc_snapshot_count(s->snapshot);
		gpucc_snapshot_item *items = malloc((n ? n : 1) * sizeof *items);
		if (!items)
			return gpucc_error_oom();
		if (n)
			memcpy(items, gpucc_snapshot_items(s->snapshot), n * sizeof *items);
		return gpucc_snapshot_from_items(out, items, n, s->name);
	}
	if (s->kind == GPUCC_OPERAND_IMAGE) {
		size_t n = gpucc_image_entry_count(s->image);
		gpucc_snapshot_item *items = malloc((n ? n : 1) * sizeof *items);
		if (!items)
			return gpucc_error_oom();
		for (size_t i = 0; i < n; i++) {
			const gpucc_entry *e = gpucc_image_entry(s->image, i);
			items[i].key = e->key;
			int rc = gpucc_entry_content_digest(&items[i].content, e);
			if (rc) {
				free(items);
				return rc;
			}
		}
		char what[1100];
		snprintf(what, sizeof what, "'%s'", s->name);
		return gpucc_snapshot_from_items(out, items, n, what); /* images are sorted; be sure */
	}
	collect_ctx cc = {s->cache, NULL, 0, 0};
	int rc = gpucc_cache_foreach(s->cache, collect_key, &cc);
	if (rc) {
		free(cc.items);
		return rc;
	}
	if (!cc.items && !(cc.items = malloc(sizeof *cc.items)))
		return gpucc_error_oom();
	char what[1100];
	snprintf(what, sizeof what, "cache '%s'", s->name);
	return gpucc_snapshot_from_items(out, cc.items, cc.count, what);
}
