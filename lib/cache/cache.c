/*
 * lib/cache/cache.c -- the local cache (gpucc/cache.h, formats/cache.md).
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
 *
 * This file opens and closes a cache and keeps its stats and config files
 * and its counters; lib/cache/cache_impl.h lists the others.
 */
#include "cache_impl.h"

#include "atomic_file.h"
#include "config_internal.h"
#include "errors.h"
#include "escape.h"
#include "gpucc/remote.h" /* gpucc_cache_config_remotes */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STATS_MAGIC "gpucc-cache-stats 1"

/* ---- small helpers ------------------------------------------------------- */

char *gpucc_cache_path_join(const char *a, const char *b)
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
char *gpucc_cache_entry_path(const gpucc_cache *c, const gpucc_digest *key, bool shard_only)
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

char *gpucc_cache_warnings_path(const gpucc_cache *c, const gpucc_digest *key)
{
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, key);
	size_t n = strlen(c->dir) + 120;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/" LAYOUT_DIR "/%.2s/%s" WARNINGS_SUFFIX, c->dir, hex, hex);
	return p;
}

void gpucc_cache_remove_warnings_of(const char *entry_path)
{
	size_t len = strlen(entry_path), suffix = strlen(ENTRY_SUFFIX);
	if (len < suffix || strcmp(entry_path + len - suffix, ENTRY_SUFFIX) != 0)
		return;
	char *path = malloc(len - suffix + sizeof WARNINGS_SUFFIX);
	if (!path)
		return;
	memcpy(path, entry_path, len - suffix);
	memcpy(path + len - suffix, WARNINGS_SUFFIX, sizeof WARNINGS_SUFFIX);
	unlink(path);
	free(path);
}

int gpucc_cache_make_directory(const char *path)
{
	if (mkdir(path, 0777) == 0 || errno == EEXIST)
		return 0;
	return -1;
}

/* mkdir -p, for the cache directory itself.  The directory itself first:
 * there (EEXIST), or made, its parents are there, which is every open of
 * a cache that exists (one mkdir, not one per component); else, unless a
 * parent is missing, its failure is what the walk from the root would
 * meet too. */
static int make_directories(const char *path)
{
	if (gpucc_cache_make_directory(path) == 0)
		return 0;
	if (errno != ENOENT)
		return -1;
	char *copy = strdup(path);
	if (!copy)
		return -1;
	for (char *p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (gpucc_cache_make_directory(copy) != 0 && errno != EEXIST) {
			free(copy);
			return -1;
		}
		*p = '/';
	}
	int rc = gpucc_cache_make_directory(copy);
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

/* ---- the counters' files (DIR/stats, DIR/remote-stats) ------------------------ */

/* Each is one line, rewritten in place (gpucc_cache_counters_update), so
 * a reader holds a shared flock on DIR/stats.lock, which writers hold
 * exclusively: it never reads a line half written.  Where the lock file
 * cannot be opened (no writer has made it, or the cache is another user's
 * and not for us to write), no writer can be counting either way, and the
 * file is read without it. */
void gpucc_cache_counters_read(const gpucc_cache *c, const char *name,
                               char line[GPUCC_COUNTERS_MAX_BYTES])
{
	char *path = gpucc_cache_path_join(c->dir, name);
	char *lock_path = gpucc_cache_path_join(c->dir, "stats.lock");
	int lock = lock_path ? open(lock_path, O_RDONLY | O_CLOEXEC) : -1;
	while (lock >= 0 && flock(lock, LOCK_SH) != 0 && errno == EINTR)
		;
	if (!path || read_small_file(path, line, GPUCC_COUNTERS_MAX_BYTES) != 0)
		line[0] = '\0'; /* unreadable or too long: no counters' line */
	if (lock >= 0)
		close(lock);
	free(lock_path);
	free(path);
}

void gpucc_cache_stats_read(const gpucc_cache *c, stats_record *r)
{
	char line[GPUCC_COUNTERS_MAX_BYTES];
	gpucc_cache_counters_read(c, "stats", line);
	stats_parse(r, line);
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

/* The counters' line for r, in line (GPUCC_COUNTERS_MAX_BYTES); its length. */
static size_t stats_format(char *line, const stats_record *r)
{
	int n = snprintf(line, GPUCC_COUNTERS_MAX_BYTES,
	                 STATS_MAGIC " hits=%" PRIu64 " misses=%" PRIu64 " corrupt=%" PRIu64
	                             " reset=%" PRId64 " bytes=%" PRIu64 "\n",
	                 r->hits, r->misses, r->corrupt, r->reset, r->bytes);
	return (size_t)n;
}

/* The line is rewritten in place: one pwrite of under 512 bytes into the
 * file's first block, which readers read under the shared lock
 * (gpucc_cache_counters_read).  A new file renamed over the old one cost
 * every counted run (every cache hit, every remote hit) a new inode, the
 * old one's release and, on ext4, the flush that a rename over an existing
 * file starts.  A crash between the write and the truncation of a longer
 * old line leaves that line's tail after the new line's end, which no
 * reader reads; a line cut short reads as zeros, as any line that is not
 * the counters' (cache.md, "stats"; remote.md).  Anything but a plain file
 * with one name (a symlink, a FIFO, a hard link) is read as
 * gpucc_cache_counters_read reads it and replaced by a new file renamed
 * into place. */
int gpucc_cache_counters_update(gpucc_cache *c, const char *name,
                                size_t (*update)(char *line, void *ctx), void *ctx)
{
	char *path = gpucc_cache_path_join(c->dir, name);
	char *lock_path = gpucc_cache_path_join(c->dir, "stats.lock");
	int lock = path && lock_path ? gpucc_lock_file(lock_path, LOCK_EX) : gpucc_error_oom();
	free(lock_path);
	if (lock < 0) {
		free(path);
		return lock;
	}
	char line[GPUCC_COUNTERS_MAX_BYTES];
	int rc = 0;
	int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1) {
		ssize_t got =
		        st.st_size < GPUCC_COUNTERS_MAX_BYTES ? pread(fd, line, sizeof line - 1, 0) : -1;
		line[got > 0 ? got : 0] = '\0'; /* too long or unreadable: "" */
		size_t n = update(line, ctx);
		if (pwrite(fd, line, n, 0) != (ssize_t)n ||
		    ((uint64_t)st.st_size > n && ftruncate(fd, (off_t)n) != 0))
			rc = gpucc_error_set_errno("cannot write '%s'", path);
	} else {
		if (read_small_file(path, line, sizeof line) != 0)
			line[0] = '\0';
		size_t n = update(line, ctx);
		rc = publish_small_file(path, line, n);
	}
	if (fd >= 0)
		close(fd);
	gpucc_lock_release(lock);
	free(path);
	return rc;
}

typedef struct stats_change {
	void (*update)(stats_record *, void *);
	void *ctx;
} stats_change;

static size_t stats_apply(char *line, void *ctx)
{
	const stats_change *change = ctx;
	stats_record r;
	stats_parse(&r, line);
	change->update(&r, change->ctx);
	return stats_format(line, &r);
}

int gpucc_cache_stats_update(gpucc_cache *c, void (*update)(stats_record *, void *), void *ctx)
{
	if (!c->writable)
		return gpucc_cache_refuse_read_only(c, "update the counters of");
	stats_change change = {update, ctx};
	return gpucc_cache_counters_update(c, "stats", stats_apply, &change);
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
 * (the remote layer parses them, lib/remote/remote_spec.c). */
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
	char *path = gpucc_cache_path_join(c->dir, "config");
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
	const char *env = gpucc_config_current()->cache_max_size;
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
	const gpucc_config *cfg = gpucc_config_current();
	const char *env = cfg->cache_dir;
	char *dir = NULL;
	if (env && *env) {
		dir = strdup(env);
	} else if ((env = cfg->xdg_cache_home) && env[0] == '/') {
		dir = gpucc_cache_path_join(env, "gpucc");
	} else if ((env = cfg->home) && env[0] == '/') {
		/* A relative HOME is ignored as a relative XDG_CACHE_HOME is: the
		 * cache would move with the working directory. */
		dir = gpucc_cache_path_join(env, ".cache/gpucc");
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
	char *layout = gpucc_cache_path_join(c->dir, LAYOUT_DIR);
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
	/* bytes_base is read when an insert first needs it
	 * (gpucc_cache_maybe_gc): a lookup never does. */
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
	char *path = gpucc_cache_path_join(c->dir, "config");
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
	int rc = gpucc_cache_stats_update(c, add_counts, c);
	if (rc == 0) {
		/* Unread, it is read from DIR/stats, which holds these now. */
		if (c->bytes_base_known)
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
	return gpucc_cache_stats_update(c, zero_counts, NULL);
}
