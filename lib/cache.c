/*
 * lib/cache.c -- the local cache (gpucc/cache.h, formats/cache.md).
 *
 * Every entry is a single-entry image at DIR/v1/<xx>/<key>.gpucc, written by
 * the image writer under a pending name beside it and published by a rename
 * that does not replace (RENAME_NOREPLACE, else link), so the cache needs no
 * lock to insert or look up: renames, links and unlinks are the only
 * mutations, all atomic for readers, and of two inserts of one key the later
 * finds the earlier's entry (a duplicate or a conflict, never overwritten).
 * Locks guard only the counters file (stats) and keep two gc runs from
 * racing each other.  Assumes a POSIX file system with atomic rename within
 * a directory.
 */
#include "cache_internal.h"

#include "atomic_file.h"
#include "errors.h"
#include "escape.h"
#include "image_internal.h"
#include "gpucc/remote.h" /* gpucc_cache_config_remotes */
#include "manifest.h" /* gpucc_entry_validate */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LAYOUT_DIR GPUCC_CACHE_LAYOUT_DIR
#define STAGING_DIR "v1/tmp"
#define ENTRY_SUFFIX ".gpucc"
#define PENDING_INFIX ".new."
#define STATS_MAGIC "gpucc-cache-stats 1"
/* Warnings found while opening, kept until a handler is set. */
#define OPEN_WARNINGS_MAX 8

struct gpucc_cache {
	char *dir;
	bool writable;
	int read_only_errno; /* why it is not writable: 0 when opened read-only */
	bool insert_failed;  /* an insert failed: its caller said why */
	bool gc_skip_warned; /* automatic gc could not lock, and said so */
	bool exists; /* the directory exists (read-only opens may find none) */
	uint64_t max_size;
	/* Counted by this handle, not yet added to DIR/stats. */
	uint64_t hits, misses, corrupt;
	int64_t bytes_added; /* change in entry bytes caused by this handle */
	uint64_t bytes_base; /* DIR/stats "bytes" when opened or last gc'd */
	gpucc_cache_warning_fn warn;
	void *warn_ctx;
	char *open_warnings[OPEN_WARNINGS_MAX]; /* not yet delivered */
	int open_warning_count;
	char *config_remotes;   /* DIR/config's "remote" values, joined by blanks */
	void *remotes;          /* lib/remote.c's, released by remotes_release */
	void (*remotes_release)(gpucc_cache *c, void *remotes);
};

typedef struct stats_record {
	uint64_t hits, misses, corrupt, bytes;
	int64_t reset;
} stats_record;

/* ---- small helpers ------------------------------------------------------- */

/* 64 random bits for names no other process picks, whatever its pid. */
static uint64_t random_u64(void)
{
	uint64_t random = 0;
	if (getrandom(&random, sizeof random, GRND_NONBLOCK) != (ssize_t)sizeof random) {
		static atomic_uint calls;
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		random = ((uint64_t)now.tv_sec * 1000000007u) ^ (uint64_t)now.tv_nsec ^
		         ((uint64_t)getpid() << 32) ^ atomic_fetch_add(&calls, 1);
	}
	return random;
}

static char *path_join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", a, b);
	return p;
}

/* Report a warning through the handler, one line with its control
 * characters spelt as error messages spell them (formats/escape.h): the paths
 * it quotes hold the cache's name.  With keep, one met while no handler is
 * set (while opening) is kept for gpucc_cache_set_warning_handler to
 * deliver. */
static void warn_v(gpucc_cache *c, bool keep, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
static void warn_v(gpucc_cache *c, bool keep, const char *fmt, va_list ap)
{
	char raw[1024], message[1024];
	vsnprintf(raw, sizeof raw, fmt, ap);
	gpucc_escape_controls(message, sizeof message, raw);
	if (c->warn)
		c->warn(c->warn_ctx, message);
	else if (keep && c->open_warning_count < OPEN_WARNINGS_MAX &&
	         (c->open_warnings[c->open_warning_count] = strdup(message)) != NULL)
		c->open_warning_count++;
}

void gpucc_cache_warn(gpucc_cache *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	warn_v(c, false, fmt, ap);
	va_end(ap);
}

static void warn_when_handled(gpucc_cache *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void warn_when_handled(gpucc_cache *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	warn_v(c, true, fmt, ap);
	va_end(ap);
}


/* Whether the directory open as dir_fd (which stays open) holds no name
 * but "." and "..". */
static bool directory_is_empty(int dir_fd)
{
	int copy = dup(dir_fd); /* fdopendir takes the descriptor */
	DIR *d = copy < 0 ? NULL : fdopendir(copy);
	if (!d) {
		if (copy >= 0)
			close(copy);
		return false;
	}
	bool empty = true;
	for (struct dirent *e; empty && (e = readdir(d)) != NULL;)
		empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
	closedir(d);
	return empty;
}

bool gpucc_cache_directory_at(int dir_fd)
{
	return gpucc_cache_layout_at(dir_fd) || directory_is_empty(dir_fd);
}

int gpucc_cache_not_a_cache(const char *path)
{
	return gpucc_error_set(GPUCC_EINVALID,
	                       "'%s' is a directory but not a gpucc cache (no v1/ in it)", path);
}

/* The check GPUCC_CACHE_EXISTING asks for, before anything is created. */
static int check_existing(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return gpucc_error_set(GPUCC_ENOTFOUND, "cache '%s' does not exist", dir);
		if (errno == ENOTDIR)
			return gpucc_error_set(GPUCC_EINVALID, "cache '%s' is not a directory", dir);
		return 0; /* one it may not read: the checks that follow say so */
	}
	/* A v1 that is no directory makes a broken cache, which the checks
	 * that follow name, rather than no cache. */
	bool is_cache = faccessat(fd, LAYOUT_DIR, F_OK, AT_SYMLINK_NOFOLLOW) == 0 ||
	                directory_is_empty(fd);
	close(fd);
	return is_cache ? 0 : gpucc_cache_not_a_cache(dir);
}

/* DIR/v1/<xx>/<key>.gpucc, or the shard directory when shard_only. */
static char *entry_path(const gpucc_cache *c, const gpucc_digest *key, bool shard_only)
{
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, key);
	size_t n = strlen(c->dir) + 120;
	char *p = malloc(n);
	if (!p)
		return NULL;
	if (shard_only)
		snprintf(p, n, "%s/" LAYOUT_DIR "/%.2s", c->dir, hex);
	else
		snprintf(p, n, "%s/" LAYOUT_DIR "/%.2s/%s" ENTRY_SUFFIX, c->dir, hex, hex);
	return p;
}

static int make_directory(const char *path)
{
	if (mkdir(path, 0777) == 0 || errno == EEXIST)
		return 0;
	return -1;
}

/* mkdir -p, for the cache directory itself. */
static int make_directories(const char *path)
{
	char *copy = strdup(path);
	if (!copy)
		return -1;
	for (char *p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (make_directory(copy) != 0 && errno != EEXIST) {
			free(copy);
			return -1;
		}
		*p = '/';
	}
	int rc = make_directory(copy);
	free(copy);
	return rc;
}


/* ---- stats and config files ---------------------------------------------- */

/* The counters of a stats line (cache.md, "stats"); a line of another
 * version, or with a value that is not digits, is no record: all zeros,
 * counting starts over (a cache problem never breaks a build). */
static void stats_parse(stats_record *r, const char *text)
{
	memset(r, 0, sizeof *r);
	size_t magic = strlen(STATS_MAGIC);
	if (strncmp(text, STATS_MAGIC, magic) != 0 || (text[magic] != ' ' && text[magic] != '\n'))
		return;
	const char *p = text + magic;
	while (*p && *p != '\n') {
		while (*p == ' ')
			p++;
		const char *eq = strchr(p, '=');
		if (!eq)
			break;
		char *end;
		errno = 0;
		unsigned long long v = strtoull(eq + 1, &end, 10);
		size_t len = (size_t)(eq - p);
		bool reset = len == 5 && strncmp(p, "reset", 5) == 0;
		if (eq[1] < '0' || eq[1] > '9' || errno == ERANGE || (*end && *end != ' ' && *end != '\n') ||
		    (reset && v > INT64_MAX)) {
			memset(r, 0, sizeof *r);
			return;
		}
		if (len == 4 && strncmp(p, "hits", 4) == 0)
			r->hits = v;
		else if (len == 6 && strncmp(p, "misses", 6) == 0)
			r->misses = v;
		else if (len == 7 && strncmp(p, "corrupt", 7) == 0)
			r->corrupt = v;
		else if (len == 5 && strncmp(p, "bytes", 5) == 0)
			r->bytes = v;
		else if (reset)
			r->reset = (int64_t)v;
		p = end;
		while (*p && *p != ' ')
			p++;
	}
}

#define SMALL_FILE_NOT_REGULAR (-2)
#define SMALL_FILE_TOO_LONG (-3)

/* Read a small file into buf (NUL-terminated); an absent file reads empty.
 * 0; -1 (errno set) when it cannot be read; SMALL_FILE_NOT_REGULAR for a
 * FIFO, device or directory, never read: a FIFO would block every process
 * that opens the cache; SMALL_FILE_TOO_LONG when it does not fit in buf,
 * so that no caller takes its start for the whole (a value cut short is
 * another value). */
static int read_small_file(const char *path, char *buf, size_t size)
{
	buf[0] = '\0';
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	struct stat st;
	int rc = fstat(fd, &st) != 0 ? -1 : !S_ISREG(st.st_mode) ? SMALL_FILE_NOT_REGULAR : 0;
	size_t used = 0;
	while (rc == 0) {
		char past; /* a byte past the buffer: the file is too long */
		bool full = used + 1 >= size;
		ssize_t n = full ? read(fd, &past, 1) : read(fd, buf + used, size - 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = -1;
		else if (n > 0 && full)
			rc = SMALL_FILE_TOO_LONG;
		if (n <= 0 || full)
			break;
		used += (size_t)n;
	}
	buf[used] = '\0';
	int saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

static void stats_read(const gpucc_cache *c, stats_record *r)
{
	char buf[512];
	char *path = path_join(c->dir, "stats");
	memset(r, 0, sizeof *r);
	if (path && read_small_file(path, buf, sizeof buf) == 0)
		stats_parse(r, buf);
	free(path);
}

/* Replace the small file at path with text: renamed into place, so readers
 * see the old or the new one, but not flushed to disk.  Its contents
 * (counters, settings) are cheap to lose in a power cut, and two fsyncs were
 * a third of a cache hit's time. */
static int publish_small_file(const char *path, const char *text, size_t size)
{
	gpucc_atomic_file f;
	int rc = gpucc_atomic_file_open(&f, path);
	if (rc)
		return rc;
	f.no_sync = true;
	f.no_sweep = true;
	if (gpucc_write_all(f.fd, text, size) != 0) {
		rc = gpucc_error_set_errno("cannot write '%s'", path);
		gpucc_atomic_file_abort(&f);
		return rc;
	}
	return gpucc_atomic_file_commit(&f);
}

static int stats_write(const gpucc_cache *c, const stats_record *r)
{
	char *path = path_join(c->dir, "stats");
	if (!path)
		return gpucc_error_oom();
	char line[256];
	int n = snprintf(line, sizeof line,
	                 STATS_MAGIC " hits=%" PRIu64 " misses=%" PRIu64 " corrupt=%" PRIu64
	                             " reset=%" PRId64 " bytes=%" PRIu64 "\n",
	                 r->hits, r->misses, r->corrupt, r->reset, r->bytes);
	int rc = publish_small_file(path, line, (size_t)n);
	free(path);
	return rc;
}

/* Apply update to DIR/stats under the stats lock. */
static int stats_update(gpucc_cache *c, void (*update)(stats_record *, void *), void *ctx)
{
	if (!c->writable)
		return gpucc_cache_refuse_read_only(c, "update the counters of");
	char *path = path_join(c->dir, "stats");
	if (!path)
		return gpucc_error_oom();
	int lock = gpucc_lock_acquire(path, true);
	free(path);
	if (lock < 0)
		return lock;
	stats_record r;
	stats_read(c, &r);
	update(&r, ctx);
	int rc = stats_write(c, &r);
	gpucc_lock_release(lock);
	return rc;
}

/* text without the blanks around it (in place). */
static char *trim(char *text)
{
	while (*text == ' ' || *text == '\t')
		text++;
	char *end = text + strlen(text);
	while (end > text && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		*--end = '\0';
	return text;
}

/* Why a bound of 0 is refused: a cache bounded so would drop every entry
 * it takes, and ccache users read 0 as "no bound". */
#define ZERO_BOUND_REASON \
	"a bound of 0 would keep no entry (0 is not \"no limit\"; give a large size instead)"

/* The most of DIR/config that is read: room for comments aplenty.  A
 * longer file is ignored whole, with a warning. */
#define CONFIG_MAX_BYTES (64 * 1024)

/* A "remote = URL..." line: its URLs join those of the lines before it
 * (the remote layer parses them, lib/remote.c). */
static void config_add_remotes(gpucc_cache *c, const char *value)
{
	if (!*value)
		return;
	size_t old = c->config_remotes ? strlen(c->config_remotes) : 0;
	char *grown = realloc(c->config_remotes, old + strlen(value) + 2);
	if (!grown)
		return;
	if (old)
		grown[old++] = ' ';
	strcpy(grown + old, value);
	c->config_remotes = grown;
}

const char *gpucc_cache_config_remotes(const gpucc_cache *c)
{
	GPUCC_REQUIRE_OR(c, NULL);
	return c->config_remotes;
}

void gpucc_cache_attach_remotes(gpucc_cache *c, void *remotes,
                                void (*release)(gpucc_cache *c, void *remotes))
{
	c->remotes = remotes;
	c->remotes_release = release;
}

void *gpucc_cache_remotes(const gpucc_cache *c)
{
	return c->remotes;
}

/* The bound: DIR/config's max-size, else $GPUCC_CACHE_MAX_SIZE, else the
 * default.  A line that is no setting, an unknown name and a value that is
 * no size or 0 are reported (warn_when_handled) and ignored: a cache problem
 * never breaks a build. */
static uint64_t config_max_size(gpucc_cache *c)
{
	char *path = path_join(c->dir, "config");
	char *buf = malloc(CONFIG_MAX_BYTES + 1);
	bool found = false;
	uint64_t value = GPUCC_CACHE_DEFAULT_MAX_SIZE, v;
	int read = path && buf ? read_small_file(path, buf, CONFIG_MAX_BYTES + 1) : 0;
	if (read == SMALL_FILE_TOO_LONG)
		warn_when_handled(c, "'%s' is longer than %d KiB, its settings are ignored", path,
		                  CONFIG_MAX_BYTES / 1024);
	else if (read != 0)
		warn_when_handled(c, "cannot read '%s', its settings are ignored: %s", path,
		                  read == SMALL_FILE_NOT_REGULAR ? "not a regular file" : strerror(errno));
	else if (path && buf) {
		char *next = buf;
		for (int number = 1; next && *next; number++) {
			char *line = next;
			if ((next = strchr(line, '\n')) != NULL)
				*next++ = '\0';
			char *hash = strchr(line, '#');
			if (hash)
				*hash = '\0';
			char *eq = strchr(line, '=');
			if (eq)
				*eq = '\0';
			char *name = trim(line);
			if (!*name && !eq)
				continue; /* blank or comment */
			if (!eq)
				warn_when_handled(c, "'%s', line %d: not 'name = value'; ignored", path, number);
			else if (strcmp(name, "remote") == 0)
				config_add_remotes(c, trim(eq + 1));
			else if (strcmp(name, "max-size") != 0)
				warn_when_handled(c, "'%s', line %d: unknown setting '%s' (known: max-size, remote); ignored",
				                  path, number, name);
			else if (gpucc_size_parse(&v, trim(eq + 1)) != 0)
				warn_when_handled(c, "'%s', line %d: max-size ignored: %s", path, number,
				                  gpucc_error_last()->message);
			else if (v == 0)
				warn_when_handled(c, "'%s', line %d: max-size 0 ignored: %s", path, number,
				                  ZERO_BOUND_REASON);
			else {
				value = v;
				found = true;
			}
		}
	}
	free(buf);
	free(path);
	const char *env = getenv("GPUCC_CACHE_MAX_SIZE");
	if (!found && env && *env) {
		if (gpucc_size_parse(&v, env) != 0)
			warn_when_handled(c, "GPUCC_CACHE_MAX_SIZE ignored: %s", gpucc_error_last()->message);
		else if (v == 0)
			warn_when_handled(c, "GPUCC_CACHE_MAX_SIZE=0 ignored: %s", ZERO_BOUND_REASON);
		else
			value = v;
	}
	gpucc_error_clear();
	return value;
}

/* ---- opening ----------------------------------------------------------- */

int gpucc_cache_default_dir(char **out)
{
	GPUCC_REQUIRE(out);
	*out = NULL; /* as every **out of the API on failure */
	const char *env = getenv("GPUCC_CACHE_DIR");
	char *dir = NULL;
	if (env && *env) {
		dir = strdup(env);
	} else if ((env = getenv("XDG_CACHE_HOME")) && env[0] == '/') {
		dir = path_join(env, "gpucc");
	} else if ((env = getenv("HOME")) && env[0] == '/') {
		/* A relative HOME is ignored as a relative XDG_CACHE_HOME is: the
		 * cache would move with the working directory. */
		dir = path_join(env, ".cache/gpucc");
	} else {
		return gpucc_error_set(GPUCC_ENOTFOUND,
		                       "no cache directory: set GPUCC_CACHE_DIR, or an absolute "
		                       "XDG_CACHE_HOME or HOME%s",
		                       env && *env ? " (HOME is not an absolute path)" : "");
	}
	if (!dir)
		return gpucc_error_oom();
	*out = dir;
	return 0;
}

/* Why this process cannot write the cache (an errno), or 0 when it can. */
static int write_access_error(const char *dir, const char *layout)
{
	struct stat st;
	if (access(dir, W_OK) != 0 || stat(layout, &st) != 0 || access(layout, W_OK) != 0)
		return errno ? errno : EACCES;
	return 0;
}

/* A cache directory (or its layout directory, when there is one) that this
 * process may not search holds nothing it can use, not even its config: one
 * error naming it, rather than a warning about the config and then another
 * error, or a warning per entry looked up.  Returns 0 when both can be
 * searched. */
static int search_access_error(const char *dir, const char *layout)
{
	struct stat st;
	if (access(dir, X_OK) != 0)
		return gpucc_error_set_errno("cannot read cache '%s'", dir);
	if (stat(layout, &st) == 0 && S_ISDIR(st.st_mode) && access(layout, X_OK) != 0)
		return gpucc_error_set_errno("cannot read cache '%s': '%s'", dir, layout);
	return 0;
}

int gpucc_cache_open(gpucc_cache **out, const char *dir, unsigned flags)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	/* "" is no directory, and not the default either: a caller's unset
	 * variable must not open (and let it clear) the user's own cache. */
	if (dir && !*dir)
		return gpucc_error_set(GPUCC_EINVALID, "the cache directory is an empty string");
	gpucc_cache *c = calloc(1, sizeof *c);
	if (!c)
		return gpucc_error_oom();
	int rc = 0;
	if (dir) {
		c->dir = strdup(dir);
		if (!c->dir)
			rc = gpucc_error_oom();
	} else {
		rc = gpucc_cache_default_dir(&c->dir);
	}
	if (rc) {
		free(c);
		return rc;
	}
	/* Strip trailing slashes so that paths we print read well. */
	for (size_t n = strlen(c->dir); n > 1 && c->dir[n - 1] == '/'; n--)
		c->dir[n - 1] = '\0';

	if ((flags & GPUCC_CACHE_EXISTING) && (rc = check_existing(c->dir)) != 0) {
		gpucc_cache_free(c);
		return rc;
	}
	char *layout = path_join(c->dir, LAYOUT_DIR);
	if (!layout) {
		gpucc_cache_free(c);
		return gpucc_error_oom();
	}
	/* A failure is judged below: the directory may exist all the same. */
	int create_errno = 0;
	if (!(flags & GPUCC_CACHE_READ_ONLY) && make_directories(layout) != 0)
		create_errno = errno;
	struct stat st;
	if (stat(c->dir, &st) != 0) {
		if (errno == ENOENT && (flags & GPUCC_CACHE_READ_ONLY)) {
			c->exists = false; /* an empty cache */
		} else {
			if (errno == ENOENT && create_errno) {
				errno = create_errno; /* why it is not there */
				rc = gpucc_error_set_errno("cannot create cache '%s'", c->dir);
			} else {
				rc = gpucc_error_set_errno("cannot open cache '%s'", c->dir);
			}
			free(layout);
			gpucc_cache_free(c);
			return rc;
		}
	} else if (!S_ISDIR(st.st_mode)) {
		rc = gpucc_error_set(GPUCC_EINVALID, "cache '%s' is not a directory", c->dir);
		free(layout);
		gpucc_cache_free(c);
		return rc;
	} else if ((rc = search_access_error(c->dir, layout)) != 0) {
		free(layout);
		gpucc_cache_free(c);
		return rc;
	} else {
		c->exists = true;
		if (!(flags & GPUCC_CACHE_READ_ONLY)) {
			c->read_only_errno = write_access_error(c->dir, layout);
			c->writable = c->read_only_errno == 0;
		}
	}
	free(layout);
	c->max_size = config_max_size(c);
	stats_record r;
	stats_read(c, &r);
	c->bytes_base = r.bytes;
	*out = c;
	return 0;
}

void gpucc_cache_free(gpucc_cache *c)
{
	if (!c)
		return;
	if (c->writable && (c->hits || c->misses || c->corrupt || c->bytes_added)) {
		gpucc_error save = *gpucc_error_last();
		char message[1024];
		snprintf(message, sizeof message, "%s", save.message);
		/* Not a second message about a failure the caller reports
		 * already (a full disk fails the counters too). */
		if (gpucc_cache_flush(c) != 0 && !save.code && !c->insert_failed)
			gpucc_cache_warn(c, "cannot save cache counters: %s", gpucc_error_last()->message);
		gpucc_error_set(save.code, "%s", message); /* keep the caller's error */
		if (!save.code)
			gpucc_error_clear();
	}
	if (c->remotes_release)
		c->remotes_release(c, c->remotes);
	for (int i = 0; i < c->open_warning_count; i++)
		free(c->open_warnings[i]);
	free(c->config_remotes);
	free(c->dir);
	free(c);
}

const char *gpucc_cache_dir(const gpucc_cache *c)
{
	GPUCC_REQUIRE_OR(c, NULL);
	return c->dir;
}

bool gpucc_cache_writable(const gpucc_cache *c)
{
	GPUCC_REQUIRE_OR(c, false);
	return c->writable;
}

const char *gpucc_cache_read_only_reason(const gpucc_cache *c)
{
	if (c->writable)
		return NULL;
	return c->read_only_errno ? strerror(c->read_only_errno) : "opened read-only";
}

bool gpucc_cache_read_only_requested(const gpucc_cache *c)
{
	return !c->writable && c->read_only_errno == 0;
}

int gpucc_cache_refuse_read_only(const gpucc_cache *c, const char *doing)
{
	return gpucc_error_set(GPUCC_ERROR, "cannot %s cache '%s': it is read-only (%s)", doing,
	                       c->dir, gpucc_cache_read_only_reason(c));
}

void gpucc_cache_set_warning_handler(gpucc_cache *c, gpucc_cache_warning_fn fn, void *ctx)
{
	GPUCC_REQUIRE_VOID(c);
	c->warn = fn;
	c->warn_ctx = ctx;
	if (!fn)
		return;
	for (int i = 0; i < c->open_warning_count; i++) {
		fn(ctx, c->open_warnings[i]);
		free(c->open_warnings[i]);
	}
	c->open_warning_count = 0;
}

uint64_t gpucc_cache_max_size(const gpucc_cache *c)
{
	GPUCC_REQUIRE_OR(c, 0);
	return c->max_size;
}

int gpucc_cache_set_max_size(gpucc_cache *c, uint64_t bytes)
{
	GPUCC_REQUIRE(c);
	if (!c->writable)
		return gpucc_cache_refuse_read_only(c, "save the bound of");
	if (bytes > INT64_MAX)
		return gpucc_error_set(GPUCC_EINVALID, "size %" PRIu64 " is too large (at most 8 EiB)",
		                       bytes);
	if (bytes == 0)
		return gpucc_error_set(GPUCC_EINVALID, "%s", ZERO_BOUND_REASON);
	char *path = path_join(c->dir, "config");
	char *old = malloc(CONFIG_MAX_BYTES + 1);
	char *text = NULL;
	size_t size = 0;
	FILE *out = path && old ? open_memstream(&text, &size) : NULL;
	if (!out) {
		free(path);
		free(old);
		return gpucc_error_oom();
	}
	/* The file as it is, but for its bound: comments and other lines
	 * stay; the first max-size line takes the new value, later ones (the
	 * last would win) go.  A file that cannot be read is written anew. */
	if (read_small_file(path, old, CONFIG_MAX_BYTES + 1) != 0 || !*old)
		snprintf(old, CONFIG_MAX_BYTES + 1, "# gpucc cache settings (formats/cache.md)\n");
	bool set = false;
	for (char *line = old, *next; line && *line; line = next) {
		size_t len = strcspn(line, "\n");
		next = line[len] ? line + len + 1 : NULL;
		char name[64];
		snprintf(name, sizeof name, "%.*s", (int)strcspn(line, "=#\n"), line);
		if (line[strcspn(line, "=#\n")] == '=' && strcmp(trim(name), "max-size") == 0) {
			if (!set)
				fprintf(out, "max-size = %" PRIu64 "\n", bytes);
			set = true;
		} else {
			fprintf(out, "%.*s\n", (int)len, line);
		}
	}
	if (!set)
		fprintf(out, "max-size = %" PRIu64 "\n", bytes);
	int rc = fclose(out) != 0 ? gpucc_error_oom() : publish_small_file(path, text, size);
	free(text);
	free(old);
	free(path);
	if (rc == 0)
		c->max_size = bytes;
	return rc;
}

/* ---- counters ---------------------------------------------------------- */

static void add_counts(stats_record *r, void *ctx)
{
	gpucc_cache *c = ctx;
	r->hits += c->hits;
	r->misses += c->misses;
	r->corrupt += c->corrupt;
	if (c->bytes_added < 0 && (uint64_t)-c->bytes_added > r->bytes)
		r->bytes = 0;
	else
		r->bytes += (uint64_t)c->bytes_added;
}

int gpucc_cache_flush(gpucc_cache *c)
{
	GPUCC_REQUIRE(c);
	if (!c->hits && !c->misses && !c->corrupt && !c->bytes_added)
		return 0;
	int rc = stats_update(c, add_counts, c);
	if (rc == 0) {
		c->bytes_base += (uint64_t)c->bytes_added;
		c->hits = c->misses = c->corrupt = 0;
		c->bytes_added = 0;
	}
	return rc;
}

static void zero_counts(stats_record *r, void *ctx)
{
	(void)ctx;
	r->hits = r->misses = r->corrupt = 0;
	r->reset = (int64_t)time(NULL);
}

int gpucc_cache_stats_reset(gpucc_cache *c)
{
	GPUCC_REQUIRE(c);
	c->hits = c->misses = c->corrupt = 0;
	return stats_update(c, zero_counts, NULL);
}

/* ---- walking the entries ------------------------------------------------ */

static int hex_value(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* The key an entry file name spells, or false when it is no entry's name. */
static bool key_of_name(gpucc_digest *key, const char *name, const char *shard)
{
	size_t len = strlen(name);
	if (len != 64 + strlen(ENTRY_SUFFIX) || strcmp(name + 64, ENTRY_SUFFIX) != 0 ||
	    name[0] != shard[0] || name[1] != shard[1])
		return false;
	for (int i = 0; i < 32; i++) {
		int hi = hex_value(name[2 * i]), lo = hex_value(name[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		key->bytes[i] = (unsigned char)(hi << 4 | lo);
	}
	return true;
}

static bool is_temp_name(const char *name)
{
	return name[0] == '.' && strstr(name, ".tmp.") != NULL;
}

/* An entry written, not yet published (pending_path). */
static bool is_pending_name(const char *name)
{
	return name[0] == '.' && !is_temp_name(name) && strstr(name, ENTRY_SUFFIX PENDING_INFIX);
}

/* Called per entry file: its key, the shard's directory fd and the name.
 * Also given temporary files (key NULL), for gc to remove stale ones. */
typedef int (*walk_fn)(void *ctx, const gpucc_digest *key, int shard_fd, const char *name);

static int walk_entries(gpucc_cache *c, walk_fn fn, void *ctx)
{
	if (!c->exists)
		return 0;
	char *layout = path_join(c->dir, LAYOUT_DIR);
	if (!layout)
		return gpucc_error_oom();
	int rc = 0;
	for (int s = 0; s < 257 && rc == 0; s++) {
		char shard[8];
		if (s == 256)
			snprintf(shard, sizeof shard, "tmp");
		else
			snprintf(shard, sizeof shard, "%02x", s);
		char *path = path_join(layout, shard);
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
			else if (is_temp_name(de->d_name) || is_pending_name(de->d_name) ||
			         (s == 256 && de->d_name[0] != '.'))
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
	return walk_entries(c, foreach_one, &f);
}

/* ---- lookup -------------------------------------------------------------- */

/* Remove a corrupt entry file, unless it is no longer the file we read
 * (another process replaced it meanwhile); a symbolic link is removed, not
 * what it names.  -1 (errno set) when it is still there; 0 when it is gone,
 * or is another file now. */
static int remove_if_same(gpucc_cache *c, const char *path, const struct stat *read_st)
{
	struct stat now;
	if (!c->writable) {
		errno = EROFS;
		return -1;
	}
	if (lstat(path, &now) != 0 || now.st_ino != read_st->st_ino || now.st_dev != read_st->st_dev)
		return 0;
	return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
}

/* The entry file at path, checked as a lookup checks it; st gets its
 * identity.  Only a regular file is an entry (gc and stats count nothing
 * else): a link, FIFO, device or directory under an entry's name is
 * corrupt, refused without being followed or read, lest a FIFO block the
 * lookup, and with it a compile, for ever. */
static int open_entry_file(gpucc_image **out, gpucc_cache *c, const gpucc_digest *key,
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
	char *path = entry_path(c, key, false);
	if (!path)
		return gpucc_error_oom();
	struct stat st;
	int rc = open_entry_file(out, c, key, path, &st, false);
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
	char *path = entry_path(c, key, false);
	if (!path)
		return gpucc_error_oom();
	struct stat st;
	memset(&st, 0, sizeof st);
	int rc = open_entry_file(out, c, key, path, &st, true);
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
			remove_if_same(c, path, &st);
		rc = gpucc_error_set(GPUCC_ENOTFOUND, "no usable entry in cache '%s'", c->dir);
	}
	free(path);
	return rc;
}

/* ---- insertion ------------------------------------------------------------ */

#ifdef GPUCC_TEST_HOOKS
void (*gpucc_cache_test_before_publish)(gpucc_cache *c, const gpucc_digest *key);
#endif

static void maybe_gc(gpucc_cache *c);

static int shard_ready(gpucc_cache *c, const gpucc_digest *key)
{
	char *shard = entry_path(c, key, true);
	if (!shard)
		return gpucc_error_oom();
	int rc = 0;
	if (make_directory(shard) != 0)
		rc = gpucc_error_set_errno("cannot create cache directory '%s'", shard);
	free(shard);
	return rc;
}

static int64_t file_size_or_zero(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

/* What an insert finds at an entry's name. */
typedef enum held_kind {
	HELD_NOTHING,
	HELD_SAME,   /* the arriving entry's contents: a duplicate */
	HELD_RENAME, /* a duplicate under a larger module name: replaced, so
	              * that a cache, as an image, keeps the smallest name of
	              * identical copies whatever their order of arrival */
	HELD_OTHER,  /* other contents: a conflict */
	HELD_CORRUPT /* a file that fails its checks: as good as absent */
} held_kind;

/* What the cache holds at path (key's entry file) now, against the
 * arriving entry's content digest and module name (module, "" for none).
 * Checked completely, as a lookup does, so that a duplicate never keeps a
 * file whose payloads are bad.  A corrupt file is reported; st gets its
 * identity and size. */
static int judge_held(held_kind *out, gpucc_cache *c, const gpucc_digest *key, const char *path,
                      const gpucc_digest *arriving, const char *module, struct stat *st)
{
	gpucc_image *old = NULL;
	memset(st, 0, sizeof *st);
	int rc = open_entry_file(&old, c, key, path, st, true);
	if (rc == GPUCC_ENOTFOUND) {
		gpucc_error_clear(); /* expected: no error for gpucc_cache_free to keep */
		*out = HELD_NOTHING;
		return 0;
	}
	if (rc == GPUCC_ECORRUPT || rc == GPUCC_EVERSION) {
		/* Said before the replacing, which may fail (a directory there
		 * cannot be unlinked): the failure then says so. */
		gpucc_cache_warn(c, "cache entry '%s' is corrupt, to be replaced by the arriving one: %s",
		                 path, gpucc_error_last()->message);
		gpucc_error_clear();
		*out = HELD_CORRUPT;
		return 0;
	}
	if (rc)
		return rc;
	gpucc_digest held;
	const gpucc_entry *e = gpucc_image_entry(old, 0);
	rc = gpucc_entry_content_digest(&held, e);
	/* Byte order, as the image writer compares module names. */
	bool larger_name = rc == 0 && strcmp(e->module ? e->module : "", module) > 0;
	gpucc_image_free(old);
	if (rc)
		return rc;
	*out = gpucc_digest_compare(&held, arriving) != 0 ? HELD_OTHER
	       : larger_name                               ? HELD_RENAME
	                                                   : HELD_SAME;
	return 0;
}

/* A conflict with key's entry in the cache: tell fn, then GPUCC_ECONFLICT
 * under the fail policy, else 0 (the caller applies first or last). */
int gpucc_cache_report_conflict(gpucc_cache *c, const gpucc_digest *key, const char *src_name,
                                gpucc_conflict_policy policy, gpucc_conflict_fn fn, void *fn_ctx)
{
	if (fn) /* a cache is named by its directory, as a source of a merge is */
		fn(fn_ctx, key, c->dir, src_name);
	if (policy != GPUCC_CONFLICT_FAIL)
		return 0;
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, key);
	return gpucc_error_set(GPUCC_ECONFLICT,
	                       "conflict: key %s has different contents in cache '%s' and '%s'", hex,
	                       c->dir, src_name);
}

/* What held decides with nothing to publish: a duplicate (touched, for
 * LRU), or a conflict that the policy fails or keeps.  1 with *outcome when
 * it decides; 0 when the arriving entry is to be published (a duplicate
 * under a smaller module name too); or an error. */
static int settled_by_held(held_kind held, gpucc_cache *c, const gpucc_digest *key,
                           const char *path, const char *src_name, gpucc_conflict_policy policy,
                           gpucc_conflict_fn fn, void *fn_ctx, cache_insert_outcome *outcome)
{
	if (held == HELD_SAME) {
		utimensat(AT_FDCWD, path, NULL, 0);
		*outcome = CACHE_INSERT_DUPLICATE;
		return 1;
	}
	if (held != HELD_OTHER)
		return 0;
	int rc = gpucc_cache_report_conflict(c, key, src_name, policy, fn, fn_ctx);
	if (rc)
		return rc;
	if (policy != GPUCC_CONFLICT_FIRST)
		return 0;
	*outcome = CACHE_INSERT_KEPT;
	return 1;
}

/* Rename from to to unless to exists (failing with EEXIST then):
 * RENAME_NOREPLACE where the file system has it, else link and unlink, else
 * (no hard links either) a check and a rename, which two racing writers
 * can slip between. */
static int rename_no_replace(const char *from, const char *to)
{
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
		return -1;
	if (link(from, to) == 0) {
		unlink(from);
		return 0;
	}
	if (errno != EPERM && errno != ENOSYS && errno != EOPNOTSUPP)
		return -1;
	if (access(to, F_OK) == 0) {
		errno = EEXIST;
		return -1;
	}
	return rename(from, to);
}

/* What an insert's publish did: the outcome, whether the written file is
 * now the entry, and the bytes of entry files it removed or replaced. */
typedef struct publish_result {
	cache_insert_outcome outcome;
	bool published;
	uint64_t gone_bytes;
} publish_result;

/* Publish the entry written at pending as path.  held is what the check
 * before writing found there (st its file).  Replaces only a conflicting
 * entry that policy last lets go, an identical one under a larger module
 * name, or a corrupt file (removed first); otherwise publishes only while
 * the name is free, so that an entry another process published meanwhile
 * is judged again, as a duplicate or a conflict (invariant 3), never
 * overwritten.  (A replacing rename replaces what is there by then: an
 * entry another process put there since it was judged goes too.) */
static int publish(publish_result *r, gpucc_cache *c, const gpucc_digest *key, const char *path,
                   const char *pending, const gpucc_digest *arriving, const char *module,
                   held_kind held, struct stat *st, const char *src_name,
                   gpucc_conflict_policy policy, gpucc_conflict_fn fn, void *fn_ctx)
{
	for (int attempt = 0; attempt < 16; attempt++) {
		int published;
		if (held == HELD_OTHER || held == HELD_RENAME) { /* other: the policy is last */
			if ((published = rename(pending, path)) == 0) {
				r->outcome = held == HELD_OTHER ? CACHE_INSERT_REPLACED : CACHE_INSERT_DUPLICATE;
				r->gone_bytes += (uint64_t)st->st_size;
			}
		} else {
			if (held == HELD_CORRUPT) {
				if (remove_if_same(c, path, st) != 0)
					return gpucc_error_set_errno("cannot replace corrupt cache entry '%s'", path);
				r->gone_bytes += (uint64_t)st->st_size;
			}
			if ((published = rename_no_replace(pending, path)) == 0)
				r->outcome = CACHE_INSERT_ADDED;
		}
		if (published == 0) {
			r->published = true;
			return 0;
		}
		if (errno != EEXIST) {
			int rc = gpucc_error_set_errno("cannot insert into cache '%s': cannot publish '%s'",
			                               c->dir, path);
			return rc == GPUCC_ENOTFOUND ? GPUCC_ERROR : rc;
		}
		int rc = judge_held(&held, c, key, path, arriving, module, st);
		if (rc == 0)
			rc = settled_by_held(held, c, key, path, src_name, policy, fn, fn_ctx, &r->outcome);
		if (rc)
			return rc < 0 ? rc : 0;
	}
	return gpucc_error_set(GPUCC_ERROR, "cannot insert into cache '%s': '%s' keeps changing",
	                       c->dir, path);
}

/* The last error, about the pending file, said of the entry it was to be:
 * "cannot insert into cache 'DIR': ..." with pending spelled as path. */
static int name_entry_in_error(gpucc_cache *c, const char *pending, const char *path)
{
	const gpucc_error *e = gpucc_error_last();
	const char *hit = strstr(e->message, pending);
	if (!hit)
		return gpucc_error_prefix("cannot insert into cache '%s'", c->dir);
	char message[2048];
	snprintf(message, sizeof message, "%.*s%s%s", (int)(hit - e->message), e->message, path,
	         hit + strlen(pending));
	int sys_errno = gpucc_error_last_errno(); /* ENOSPC or not: compile.c asks */
	int rc = gpucc_error_set(e->code, "cannot insert into cache '%s': %s", c->dir, message);
	gpucc_error_keep_errno(sys_errno);
	return rc;
}

/* The common part of both inserts: w already holds the arriving entry, to
 * be written at pending and published as path. */
static int insert_with_writer(gpucc_cache *c, gpucc_image_writer *w, const gpucc_digest *key,
                              const char *path, const char *pending, const char *src_name,
                              gpucc_conflict_policy policy, gpucc_conflict_fn fn, void *fn_ctx,
                              cache_insert_outcome *outcome)
{
	const gpucc_entry *arriving = gpucc_image_writer_find(w, key);
	gpucc_digest new_digest;
	int rc = arriving ? gpucc_entry_content_digest(&new_digest, arriving)
	                  : gpucc_error_set(GPUCC_ERROR, "image writer lost the entry being inserted");
	if (rc)
		return rc;
	const char *module = arriving->module ? arriving->module : "";

	/* Decided before writing, so that a duplicate or a kept entry costs
	 * no write; publish decides again if another process was quicker. */
	held_kind held;
	struct stat st;
	if ((rc = judge_held(&held, c, key, path, &new_digest, module, &st)) == 0)
		rc = settled_by_held(held, c, key, path, src_name, policy, fn, fn_ctx, outcome);
	if (rc)
		return rc < 0 ? rc : 0;

	rc = gpucc_image_writer_commit(w);
	if (rc)
		return name_entry_in_error(c, pending, path);
	int64_t size = file_size_or_zero(pending);
#ifdef GPUCC_TEST_HOOKS
	if (gpucc_cache_test_before_publish)
		gpucc_cache_test_before_publish(c, key);
#endif
	publish_result r = {CACHE_INSERT_ADDED, false, 0};
	rc = publish(&r, c, key, path, pending, &new_digest, module, held, &st, src_name, policy, fn,
	             fn_ctx);
	if (!r.published)
		unlink(pending);
	c->bytes_added += (r.published ? size : 0) - (int64_t)r.gone_bytes;
	if (rc)
		return rc;
	*outcome = r.outcome;
	maybe_gc(c);
	return 0;
}

/* ".<key>.gpucc.new.<pid>.<random>" beside path: where an insert writes its
 * entry before publishing it (gc removes one a killed process left). */
static char *pending_path(const char *path)
{
	const char *base = strrchr(path, '/') + 1;
	size_t n = strlen(path) + 64;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%.*s.%s" PENDING_INFIX "%ld.%016" PRIx64, (int)(base - path), path, base,
		         (long)getpid(), random_u64());
	return p;
}

/* An arriving entry: e with payloads from sources, or from the image src. */
typedef struct arriving_entry {
	const gpucc_entry *e;
	const gpucc_payload_source *sources;
	size_t source_count;
	gpucc_image *src;
} arriving_entry;

int gpucc_conflict_policy_check(gpucc_conflict_policy policy)
{
	if (policy == GPUCC_CONFLICT_FAIL || policy == GPUCC_CONFLICT_FIRST ||
	    policy == GPUCC_CONFLICT_LAST)
		return 0;
	return gpucc_error_set(GPUCC_EINVALID,
	                       "unknown conflict policy %d (expected GPUCC_CONFLICT_FAIL, _FIRST "
	                       "or _LAST)",
	                       (int)policy);
}

/* Both inserts. */
static int insert_arriving(gpucc_cache *c, const arriving_entry *a, const char *src_name,
                           gpucc_conflict_policy policy, gpucc_conflict_fn fn, void *fn_ctx,
                           cache_insert_outcome *outcome)
{
	int rc = gpucc_conflict_policy_check(policy);
	if (rc)
		return rc;
	if (!c->writable) {
		c->insert_failed = true;
		return gpucc_cache_refuse_read_only(c, "insert into");
	}
	/* A described entry is the caller's: its defect is named with the
	 * cache, not with the temporary file the writer would have named.
	 * (An image's entry the writer names as the image's defect.) */
	if (!a->src && gpucc_entry_validate(a->e) != 0) {
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &a->e->key);
		c->insert_failed = true;
		return gpucc_error_prefix("cannot insert entry %.12s into cache '%s'", hex, c->dir);
	}
	gpucc_image_writer *w = NULL;
	char *path = entry_path(c, &a->e->key, false);
	char *pending = path ? pending_path(path) : NULL;
	rc = pending ? shard_ready(c, &a->e->key) : gpucc_error_oom();
	gpucc_write_options opts = GPUCC_WRITE_OPTIONS_INIT; /* uncompressed: random access on lookup */
	opts.use_mtime = true;
	opts.mtime = 0;
	/* No fsync: an entry cut short by a power loss fails verification
	 * and is a miss (invariant 7), and fsync per entry made importing
	 * 2,000 entries take 9 s instead of well under one. */
	opts.no_sync = true;
	if (rc == 0 && (rc = gpucc_image_writer_new(&w, pending, &opts)) == 0) {
		gpucc_image_writer_leave_leftovers(w); /* gc sweeps the cache */
		rc = a->src ? gpucc_image_writer_add_from(w, a->src, a->e)
		            : gpucc_image_writer_add(w, a->e, a->sources, a->source_count);
	}
	if (rc == 0)
		rc = insert_with_writer(c, w, &a->e->key, path, pending, src_name, policy, fn, fn_ctx,
		                        outcome);
	gpucc_image_writer_free(w);
	free(path);
	free(pending);
	c->insert_failed |= rc != 0;
	return rc;
}

int gpucc_cache_insert(gpucc_cache *c, const gpucc_entry *e, const gpucc_payload_source *sources,
                       size_t source_count, gpucc_conflict_policy policy)
{
	GPUCC_REQUIRE(c);
	GPUCC_REQUIRE(e);
	if (source_count != 0)
		GPUCC_REQUIRE(sources);
	arriving_entry a = {e, sources, source_count, NULL};
	cache_insert_outcome outcome;
	return insert_arriving(c, &a, "new entry", policy, NULL, NULL, &outcome);
}

int gpucc_cache_insert_entry_from(gpucc_cache *c, gpucc_image *src, const gpucc_entry *e,
                                  const char *src_name, gpucc_conflict_policy policy,
                                  gpucc_conflict_fn fn, void *fn_ctx,
                                  cache_insert_outcome *outcome)
{
	arriving_entry a = {e, NULL, 0, src};
	return insert_arriving(c, &a, src_name, policy, fn, fn_ctx, outcome);
}

int gpucc_cache_insert_from(gpucc_cache *c, gpucc_image *src, const gpucc_entry *e,
                            gpucc_conflict_policy policy)
{
	GPUCC_REQUIRE(c);
	GPUCC_REQUIRE(src);
	GPUCC_REQUIRE(e);
	cache_insert_outcome outcome;
	return gpucc_cache_insert_entry_from(c, src, e, gpucc_image_name(src), policy, NULL, NULL,
	                                     &outcome);
}

int gpucc_cache_staging_path(char **out, gpucc_cache *c, const char *suffix)
{
	static atomic_uint counter;
	*out = NULL;
	if (!c->writable)
		return gpucc_cache_refuse_read_only(c, "stage an image in");
	char *dir = path_join(c->dir, STAGING_DIR);
	if (!dir)
		return gpucc_error_oom();
	if (make_directory(dir) != 0) {
		int rc = gpucc_error_set_errno("cannot create cache directory '%s'", dir);
		free(dir);
		return rc;
	}
	/* stage.<pid>.<random>.<n>: the pid lets gc tell a live importer's
	 * file; the random part keeps apart processes of one pid in other PID
	 * namespaces (PID 1 of containers that share a cache). */
	size_t n = strlen(dir) + strlen(suffix) + 64;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/stage.%ld.%016" PRIx64 ".%u%s", dir, (long)getpid(), random_u64(),
		         atomic_fetch_add(&counter, 1), suffix);
	free(dir);
	if (!p)
		return gpucc_error_oom();
	*out = p;
	return 0;
}

/* ---- stats -------------------------------------------------------------- */

typedef struct count_ctx {
	uint64_t entries, bytes;
} count_ctx;

static int count_one(void *ctx, const gpucc_digest *key, int shard_fd, const char *name)
{
	count_ctx *cc = ctx;
	struct stat st;
	if (!key || fstatat(shard_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
		return 0; /* gone meanwhile, or not an entry */
	cc->entries++;
	cc->bytes += (uint64_t)st.st_size;
	return 0;
}

int gpucc_cache_stats_get(gpucc_cache_stats *out, gpucc_cache *c)
{
	GPUCC_REQUIRE(out);
	GPUCC_REQUIRE(c);
	memset(out, 0, sizeof *out);
	count_ctx cc = {0, 0};
	int rc = walk_entries(c, count_one, &cc);
	if (rc)
		return rc;
	stats_record r;
	stats_read(c, &r);
	out->entries = cc.entries;
	out->bytes = cc.bytes;
	out->max_bytes = c->max_size;
	out->hits = r.hits + c->hits;
	out->misses = r.misses + c->misses;
	out->corrupt = r.corrupt + c->corrupt;
	out->reset_time = r.reset;
	return 0;
}

/* ---- verify --------------------------------------------------------------- */

typedef struct verify_ctx {
	gpucc_cache *c;
	gpucc_cache_defect_fn fn;
	void *fn_ctx;
	gpucc_cache_verify_result r;
} verify_ctx;

static int verify_one(void *ctx, const gpucc_digest *key, int shard_fd, const char *name)
{
	verify_ctx *v = ctx;
	(void)shard_fd;
	(void)name;
	if (!key) {
		v->r.temporaries++;
		return 0;
	}
	char *path = entry_path(v->c, key, false);
	if (!path)
		return gpucc_error_oom();
	gpucc_image *img = NULL;
	struct stat st;
	int rc = open_entry_file(&img, v->c, key, path, &st, true);
	gpucc_image_free(img);
	if (rc == 0) {
		v->r.entries++;
		v->r.bytes += (uint64_t)st.st_size;
	} else if (rc != GPUCC_ENOTFOUND) { /* (not found: evicted since the listing) */
		if (rc == GPUCC_ECORRUPT || rc == GPUCC_EVERSION)
			v->r.corrupt++;
		else
			v->r.unreadable++;
		if (v->fn)
			v->fn(v->fn_ctx, path, gpucc_error_last()->message);
	}
	free(path);
	gpucc_error_clear();
	return 0;
}

/* Whether path, when it exists, is not a directory: reported to fn. */
static bool not_a_directory(verify_ctx *v, const char *path, const char *consequence)
{
	struct stat st;
	if (!path || stat(path, &st) != 0 || S_ISDIR(st.st_mode))
		return false;
	char message[1024];
	snprintf(message, sizeof message, "'%s' is not a directory: %s", path, consequence);
	if (v->fn) {
		char shown[1024];
		gpucc_escape_controls(shown, sizeof shown, message);
		v->fn(v->fn_ctx, path, shown);
	}
	return true;
}

/* Files where the layout has directories (v1/, a shard, v1/tmp): every
 * insert there fails and every lookup misses, while the walk, which skips
 * them, would find nothing wrong.  How many, each reported to v->fn. */
static uint64_t verify_layout(verify_ctx *v)
{
	if (!v->c->exists)
		return 0;
	char *layout = path_join(v->c->dir, LAYOUT_DIR);
	if (!layout || not_a_directory(v, layout, "no entry can be stored")) {
		free(layout);
		return layout ? 1 : 0;
	}
	uint64_t found = 0;
	for (int s = 0; s < 257; s++) {
		char shard[8], consequence[64];
		if (s == 256) {
			snprintf(shard, sizeof shard, "tmp");
			snprintf(consequence, sizeof consequence, "no compressed image can be imported");
		} else {
			snprintf(shard, sizeof shard, "%02x", s);
			snprintf(consequence, sizeof consequence, "no entry whose key starts with %s can be stored",
			         shard);
		}
		char *path = path_join(layout, shard);
		found += not_a_directory(v, path, consequence);
		free(path);
	}
	free(layout);
	return found;
}

int gpucc_cache_verify(gpucc_cache *c, gpucc_cache_defect_fn fn, void *ctx,
                       gpucc_cache_verify_result *out)
{
	GPUCC_REQUIRE(c);
	verify_ctx v = {c, fn, ctx, {0}};
	uint64_t misplaced = verify_layout(&v);
	int rc = walk_entries(c, verify_one, &v);
	v.r.corrupt += misplaced;
	if (out)
		*out = v.r;
	if (rc)
		return rc;
	if (misplaced)
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "cache '%s': %" PRIu64 " corrupt %s, %" PRIu64 " %s where a "
		                       "directory belongs",
		                       c->dir, v.r.corrupt - misplaced,
		                       v.r.corrupt - misplaced == 1 ? "entry" : "entries", misplaced,
		                       misplaced == 1 ? "file" : "files");
	if (v.r.corrupt)
		return gpucc_error_set(GPUCC_ECORRUPT, "cache '%s': %" PRIu64 " corrupt %s", c->dir,
		                       v.r.corrupt, v.r.corrupt == 1 ? "entry" : "entries");
	if (v.r.unreadable)
		return gpucc_error_set(GPUCC_ERROR, "cache '%s': %" PRIu64 " unreadable %s", c->dir,
		                       v.r.unreadable, v.r.unreadable == 1 ? "entry" : "entries");
	return 0;
}

/* ---- gc -------------------------------------------------------------------- */

typedef struct gc_item {
	gpucc_digest key;
	int64_t mtime_sec;
	long mtime_nsec;
	uint64_t size;
} gc_item;

typedef struct gc_ctx {
	gc_item *items;
	size_t count, capacity;
	uint64_t bytes;
	time_t now;
	uint64_t removed_temporaries;
	int rc;
} gc_ctx;

/* Whether a staged image in v1/tmp ("stage.<pid>.<random>.<n>...", which its
 * importer unlinks as soon as it has opened it) was left by a process that
 * is gone, or is old enough to be a leftover whatever its name says.  (A
 * process in another PID namespace looks gone; at worst its import then
 * fails cleanly in the moment between writing and opening the copy.) */
static bool stage_abandoned(const char *name, const struct stat *st, time_t now)
{
	long pid;
	if (st->st_mtime + GPUCC_ABANDONED_SECONDS < now)
		return true;
	return sscanf(name, "stage.%ld.", &pid) == 1 && pid > 0 && kill((pid_t)pid, 0) != 0 &&
	       errno == ESRCH;
}

/* Remove what killed processes left in dir_fd: temporary files no live
 * writer holds (lib/atomic_file.h) and abandoned staged images. */
static void gc_temporary(gc_ctx *g, int dir_fd, const char *name)
{
	struct stat st;
	if (is_temp_name(name)) {
		if (gpucc_atomic_file_remove_abandoned(dir_fd, name, g->now, GPUCC_ABANDONED_SECONDS))
			g->removed_temporaries++;
	} else if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	           (is_pending_name(name) ? st.st_mtime + GPUCC_ABANDONED_SECONDS < g->now
	                                  : stage_abandoned(name, &st, g->now)) &&
	           unlinkat(dir_fd, name, 0) == 0) {
		g->removed_temporaries++;
	}
}

/* Temporary files of the small files at the top (stats, config, memos). */
static void gc_top_temporaries(gpucc_cache *c, gc_ctx *g)
{
	DIR *d = opendir(c->dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		if (is_temp_name(de->d_name))
			gc_temporary(g, dirfd(d), de->d_name);
	closedir(d);
}

static int gc_collect(void *ctx, const gpucc_digest *key, int shard_fd, const char *name)
{
	gc_ctx *g = ctx;
	if (!key) {
		gc_temporary(g, shard_fd, name);
		return 0;
	}
	struct stat st;
	if (fstatat(shard_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
		return 0;
	if (g->count == g->capacity) {
		size_t capacity = g->capacity ? g->capacity * 2 : 1024;
		gc_item *grown = realloc(g->items, capacity * sizeof *grown);
		if (!grown)
			return gpucc_error_oom();
		g->items = grown;
		g->capacity = capacity;
	}
	gc_item *it = &g->items[g->count++];
	it->key = *key;
	it->mtime_sec = (int64_t)st.st_mtim.tv_sec;
	it->mtime_nsec = st.st_mtim.tv_nsec;
	it->size = (uint64_t)st.st_size;
	g->bytes += it->size;
	return 0;
}

static int gc_item_compare(const void *a, const void *b)
{
	const gc_item *x = a, *y = b;
	if (x->mtime_sec != y->mtime_sec)
		return x->mtime_sec < y->mtime_sec ? -1 : 1;
	if (x->mtime_nsec != y->mtime_nsec)
		return x->mtime_nsec < y->mtime_nsec ? -1 : 1;
	return gpucc_digest_compare(&x->key, &y->key);
}

static void set_bytes(stats_record *r, void *ctx)
{
	r->bytes = *(uint64_t *)ctx;
}

/* After a walk that removed entries: the entries' size, as counted, is the
 * estimate inserts keep from now on (in DIR/stats: best effort). */
static void record_bytes(gpucc_cache *c, uint64_t bytes)
{
	stats_update(c, set_bytes, &bytes);
	gpucc_error_clear();
	c->bytes_base = bytes;
	c->bytes_added = 0;
}

/* A lock on DIR/gc.lock; wait, or give up (GPUCC_LOCK_BUSY) when busy.  As
 * gpucc_lock_acquire does, a lock file that another user created and this
 * one may not write is locked through a read-only descriptor. */
static int gc_lock(gpucc_cache *c, bool wait)
{
	char *path = path_join(c->dir, "gc.lock");
	if (!path)
		return gpucc_error_oom();
	int fd = gpucc_lock_file(path, LOCK_EX | (wait ? 0 : LOCK_NB));
	free(path);
	return fd;
}

/* Where gc of the bound evicts down to: 90% of it, so that the inserts
 * after a gc do not each walk the whole cache again (ccache does the same). */
static uint64_t low_water(uint64_t bound)
{
	return bound - bound / 10;
}

/* The entries gc meant to evict and could not (unlink refused: a shard
 * directory of another user, a read-only file system, an immutable file):
 * how many, and the first one's path and errno, for the error. */
typedef struct gc_kept {
	uint64_t count;
	char *first_path;
	int first_errno;
} gc_kept;

/* Count the entry at path that unlink could not remove (errno err). */
static void gc_note_kept(gc_kept *k, char *path, int err)
{
	if (k->count++ == 0) {
		k->first_path = path; /* kept for the message; freed by the caller */
		k->first_errno = err;
	} else {
		free(path);
	}
}

/* Evict down to max_bytes; with all, every entry goes, used recently or not.
 * Entries that cannot be removed are passed over (the others still go);
 * when the cache stays above max_bytes because of them, the result is
 * GPUCC_ERROR naming how many and the first one, after *out (may be NULL)
 * has the counts and the bytes left are recorded, as on success. */
static int gc_locked(gpucc_cache *c, uint64_t max_bytes, bool all, gpucc_cache_gc_result *out)
{
	gc_ctx g = {0};
	g.now = time(NULL);
	gc_top_temporaries(c, &g);
	int rc = walk_entries(c, gc_collect, &g);
	if (rc) {
		free(g.items);
		return rc;
	}
	gpucc_cache_gc_result result = {0, 0, g.count, g.bytes, 0};
	gc_kept kept = {0, NULL, 0};
	if (g.bytes > max_bytes) {
		qsort(g.items, g.count, sizeof *g.items, gc_item_compare);
		for (size_t i = 0; i < g.count && result.bytes > max_bytes; i++) {
			char *path = entry_path(c, &g.items[i].key, false);
			if (!path) {
				rc = gpucc_error_oom();
				break;
			}
			struct stat st;
			/* Skip an entry used or replaced since the walk: it is recent
			 * now.  One gone meanwhile (another gc) is gone. */
			if (stat(path, &st) != 0 ||
			    !(all || (st.st_mtim.tv_sec == g.items[i].mtime_sec &&
			              st.st_mtim.tv_nsec == g.items[i].mtime_nsec))) {
				free(path);
				continue;
			}
			if (unlink(path) != 0) {
				if (errno != ENOENT)
					gc_note_kept(&kept, path, errno);
				else
					free(path);
				continue;
			}
			result.removed_entries++;
			result.removed_bytes += (uint64_t)st.st_size;
			result.entries--;
			result.bytes -= g.items[i].size <= result.bytes ? g.items[i].size : result.bytes;
			free(path);
		}
	}
	free(g.items);
	if (rc) {
		free(kept.first_path);
		return rc;
	}
	result.removed_temporaries = g.removed_temporaries;
	record_bytes(c, result.bytes);
	if (out)
		*out = result;
	if (kept.count && result.bytes > max_bytes)
		rc = gpucc_error_set(GPUCC_ERROR,
		                     "cache '%s': %" PRIu64 " %s could not be removed; the first, '%s': %s",
		                     c->dir, kept.count, kept.count == 1 ? "entry" : "entries",
		                     kept.first_path, strerror(kept.first_errno));
	if (rc)
		gpucc_error_keep_errno(kept.first_errno);
	free(kept.first_path);
	return rc;
}

int gpucc_cache_gc(gpucc_cache *c, uint64_t max_bytes, gpucc_cache_gc_result *out)
{
	GPUCC_REQUIRE(c);
	if (!c->writable)
		return gpucc_cache_refuse_read_only(c, "gc");
	int lock = gc_lock(c, true);
	if (lock < 0)
		return lock;
	int rc = gc_locked(c, max_bytes ? max_bytes : low_water(c->max_size), false, out);
	close(lock);
	return rc;
}

static void maybe_gc(gpucc_cache *c)
{
	uint64_t removed = c->bytes_added < 0 ? -(uint64_t)c->bytes_added : 0;
	uint64_t estimate = removed ? (c->bytes_base > removed ? c->bytes_base - removed : 0)
	                            : c->bytes_base + (uint64_t)c->bytes_added;
	if (estimate <= c->max_size)
		return;
	int lock = gc_lock(c, false);
	if (lock == GPUCC_LOCK_BUSY) {
		gpucc_error_clear();
		return; /* another process is collecting */
	}
	if (lock < 0) { /* said once: every insert past the bound meets it */
		if (!c->gc_skip_warned)
			gpucc_cache_warn(c, "cache gc skipped: %s", gpucc_error_last()->message);
		c->gc_skip_warned = true;
		gpucc_error_clear();
		return;
	}
	if (gc_locked(c, low_water(c->max_size), false, NULL) != 0)
		gpucc_cache_warn(c, "cache gc failed: %s", gpucc_error_last()->message);
	close(lock);
	gpucc_error_clear();
}

/* ---- removal of judged entries (prune) ------------------------------------ */

typedef struct judged_ctx {
	gpucc_cache *c;
	bool dry;
	gpucc_cache_judge_fn judge;
	void *judge_ctx;
	gpucc_cache_prune_fn fn;
	void *fn_ctx;
	gpucc_cache_prune_result r;
} judged_ctx;

/* Whether path is still the file read (st) and unused since: then unlink. */
static bool remove_if_untouched(const char *path, const struct stat *st)
{
	struct stat now;
	return stat(path, &now) == 0 && now.st_ino == st->st_ino && now.st_dev == st->st_dev &&
	       now.st_mtim.tv_sec == st->st_mtim.tv_sec &&
	       now.st_mtim.tv_nsec == st->st_mtim.tv_nsec && unlink(path) == 0;
}

static int judge_one(void *ctx, const gpucc_digest *key, int shard_fd, const char *name)
{
	judged_ctx *j = ctx;
	(void)shard_fd;
	(void)name;
	if (!key)
		return 0;
	char *path = entry_path(j->c, key, false);
	if (!path)
		return gpucc_error_oom();
	gpucc_image *img = NULL;
	struct stat st;
	int rc = open_entry_file(&img, j->c, key, path, &st, false);
	if (rc != 0) { /* evicted since the listing, or unreadable: kept */
		j->r.unreadable += rc != GPUCC_ENOTFOUND;
		gpucc_error_clear();
		free(path);
		return 0;
	}
	const gpucc_entry *e = gpucc_image_entry(img, 0);
	uint64_t size = (uint64_t)st.st_size;
	const char *reason = j->judge(j->judge_ctx, e, &st);
	if (reason && (j->dry || remove_if_untouched(path, &st))) {
		j->r.removed_entries++;
		j->r.removed_bytes += size;
		if (j->fn)
			j->fn(j->fn_ctx, e, size, reason);
	} else {
		j->r.entries++;
		j->r.bytes += size;
	}
	gpucc_image_free(img);
	free(path);
	return 0;
}

int gpucc_cache_remove_judged(gpucc_cache *c, bool dry, gpucc_cache_judge_fn judge,
                              void *judge_ctx, gpucc_cache_prune_fn fn, void *fn_ctx,
                              gpucc_cache_prune_result *out)
{
	if (!dry && !c->writable)
		return gpucc_cache_refuse_read_only(c, "prune");
	int lock = -1;
	if (!dry && (lock = gc_lock(c, true)) < 0)
		return lock;
	judged_ctx j = {c, dry, judge, judge_ctx, fn, fn_ctx, {0}};
	int rc = walk_entries(c, judge_one, &j);
	if (lock >= 0)
		close(lock);
	if (out)
		*out = j.r;
	if (rc == 0 && !dry && j.r.removed_bytes)
		record_bytes(c, j.r.bytes);
	return rc;
}

int gpucc_cache_clear(gpucc_cache *c)
{
	GPUCC_REQUIRE(c);
	if (!c->writable)
		return gpucc_cache_refuse_read_only(c, "clear");
	int lock = gc_lock(c, true);
	if (lock < 0)
		return lock;
	gpucc_cache_gc_result result;
	int rc = gc_locked(c, 0, true, &result);
	close(lock);
	if (rc == 0)
		return gpucc_cache_stats_reset(c);
	/* Entries that could not be removed fail the clear, named by the
	 * error; the counters are zeroed all the same, as far as they can be
	 * (a failure to do so is the lesser news, and not reported). */
	char message[2048];
	snprintf(message, sizeof message, "%s", gpucc_error_last()->message);
	gpucc_cache_stats_reset(c);
	return gpucc_error_set(rc, "%s", message);
}
