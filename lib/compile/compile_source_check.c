/*
 * lib/compile/compile_source_check.c -- what a direct-mode record checks
 * (lib/compile/compile_source.c): paths as a record and a key name them
 * (relative to the working directory, but under the system's directories);
 * the digests of the files a compile read, through the toolchain's memos;
 * whether every file a record lists is unchanged, every place it found
 * empty still empty and every variable it names the same (a hit).  What a
 * record lists of a compile clang ran, places grouped under the deepest
 * directory above each that exists: lib/compile/compile_source_prepare.c.
 * A lookup stats each such directory
 * once: its identity, mtime and ctime as they were, and nothing was made
 * in it or below it since (a file or directory made or removed moves its
 * directory's mtime and ctime), so every place under it is still empty
 * without a stat of its own; moved, and each place is stat'ed as it is.
 *
 * A file changed while clang ran (its mtime or ctime not older than clang's
 * start, less the clock's granularity) leaves no record: the IR may be of
 * either version of it.  A directory as new proves nothing: its places
 * are recorded alone, each stat'ed by every lookup.
 */
#include "compile_source_run.h"

#include "config_internal.h"
#include "errors.h"
#include "escape.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- paths as keys name them ------------------------------------------------ */

bool under(const char *path, const char *dir)
{
	size_t len = strlen(dir);
	while (len > 1 && dir[len - 1] == '/')
		len--;
	return strncmp(path, dir, len) == 0 && (path[len] == '/' || path[len] == '\0');
}

/* Directories whose files are the system's, the same wherever a build tree
 * lives: paths under them are keyed as they are. */
bool system_path(const context *x, const char *path)
{
	static const char *const dirs[] = {"/usr", "/opt", "/etc", "/lib", "/lib32", "/lib64",
	                                   "/bin", "/sbin", "/nix", "/gnu"};
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		if (under(path, dirs[i]))
			return true;
	return x->cuda_dir && under(path, x->cuda_dir);
}

/* The components of a path as written ("." and ".." kept, empty ones
 * dropped).  Returns the count; parts point into buf. */
static size_t split_path(const char *path, char *buf, size_t size, char **parts, size_t max)
{
	snprintf(buf, size, "%s", path);
	size_t n = 0;
	for (char *save = NULL, *p = strtok_r(buf, "/", &save); p && n < max;
	     p = strtok_r(NULL, "/", &save))
		parts[n++] = p;
	return n;
}

/* path as a key names it and clang is given it (owned), or NULL when out
 * of memory: relative paths as they are (they are relative to the
 * working directory already), absolute ones under a system directory too,
 * other absolute ones relative to the working directory.  Only the
 * leading components the path shares with the working directory become
 * "..": that directory is a physical path (getcwd), so its ancestors are
 * the ones ".." reaches; what follows is kept as written, ".." and links
 * included, so that the path names the file it named (never
 * "a/link/../b" as "a/b"). */
char *normalise_path(const context *x, const char *path)
{
	if (path[0] != '/' || system_path(x, path))
		return strdup(path);
	enum { MAX_PARTS = 512 };
	char path_buf[PATH_MAX], cwd_buf[PATH_MAX];
	char *p[MAX_PARTS], *c[MAX_PARTS];
	if (strlen(path) >= sizeof path_buf)
		return strdup(path);
	size_t np = split_path(path, path_buf, sizeof path_buf, p, MAX_PARTS);
	size_t nc = split_path(x->cwd, cwd_buf, sizeof cwd_buf, c, MAX_PARTS);
	if (np == MAX_PARTS || nc == MAX_PARTS)
		return strdup(path);
	size_t common = 0;
	while (common < np && common < nc && strcmp(p[common], c[common]) == 0 &&
	       strcmp(p[common], ".") != 0 && strcmp(p[common], "..") != 0)
		common++;
	size_t len = 2;
	for (size_t i = common; i < nc; i++)
		len += 3;
	for (size_t i = common; i < np; i++)
		len += strlen(p[i]) + 1;
	char *out = malloc(len);
	if (!out)
		return NULL;
	out[0] = '\0';
	for (size_t i = common; i < nc; i++)
		strcat(out, i + 1 < nc || common < np ? "../" : "..");
	for (size_t i = common; i < np; i++) {
		strcat(out, p[i]);
		if (i + 1 < np)
			strcat(out, "/");
	}
	if (!out[0])
		strcpy(out, ".");
	return out;
}

/* ---- the digests of the files a compile read ------------------------------- */

int64_t ns_of(struct timespec t)
{
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return ns_of(t);
}

/* Now as the file system's times read it: the coarse clock, which stamps
 * a file's mtime and ctime.  On an idle machine it may lag the precise
 * clock by more than its resolution (until the next tick updates it), so
 * a file written just after a precise "now" can carry an earlier time;
 * a write after this reading never does. */
int64_t file_clock_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME_COARSE, &t);
	return ns_of(t);
}

/* The SHA-256 of the file at path (relative to the working directory, as
 * clang opened it).  Through the toolchain's memos, except for a file
 * changed in the last two seconds, whose times may not yet tell its next
 * change from this one.  *changed_since (when not NULL) says whether its
 * mtime or ctime is at or after since_ns.  *stp: its stat(). */
static int file_digest_stat(context *x, const char *path, const struct stat *stp,
                            gpucc_digest *out, int64_t since_ns, bool *changed_since)
{
	if (!S_ISREG(stp->st_mode))
		return GPUCC_ENOTFOUND;
	int64_t mtime = ns_of(stp->st_mtim), ctime = ns_of(stp->st_ctim);
	int64_t newest = mtime > ctime ? mtime : ctime;
	if (changed_since)
		*changed_since = newest >= since_ns;
	if (newest >= now_ns() - 2000000000LL || !x->s->toolchain)
		return gpucc_digest_file(out, NULL, path) == 0 ? 0 : GPUCC_ERROR;
	/* The memos name files by absolute paths: cwd "/" path, unless path
	 * is one (a hit joins hundreds, hence no snprintf). */
	char absolute[PATH_MAX * 2];
	const char *memo_path = path;
	if (path[0] != '/') {
		size_t cwd_len = strlen(x->cwd), path_len = strlen(path);
		if (cwd_len + 1 + path_len >= sizeof absolute)
			return gpucc_digest_file(out, NULL, path) == 0 ? 0 : GPUCC_ERROR;
		memcpy(absolute, x->cwd, cwd_len);
		absolute[cwd_len] = '/';
		memcpy(absolute + cwd_len + 1, path, path_len + 1);
		memo_path = absolute;
	}
	pthread_mutex_lock(&x->lock);
	int rc = gpucc_toolchain_digest_stat(x->s->toolchain, memo_path, stp, out);
	pthread_mutex_unlock(&x->lock);
	return rc == 0 ? 0 : GPUCC_ERROR;
}

/* file_digest_stat of the file at path. */
int file_digest(context *x, const char *path, gpucc_digest *out, int64_t since_ns,
                bool *changed_since)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return GPUCC_ENOTFOUND;
	return file_digest_stat(x, path, &st, out, since_ns, changed_since);
}

dir_stamp dir_stamp_of(const struct stat *st)
{
	return (dir_stamp){(unsigned long long)st->st_dev, (unsigned long long)st->st_ino,
	                   ns_of(st->st_mtim), ns_of(st->st_ctim)};
}

static bool dir_stamp_equal(dir_stamp a, dir_stamp b)
{
	return a.dev == b.dev && a.ino == b.ino && a.mtime == b.mtime && a.ctime == b.ctime;
}

const char absent_digest[] = "0000000000000000000000000000000000000000000000000000000000000000";

/* The SHA-256 of "NAME=VALUE", or of "NAME" when the variable is unset. */
void environment_digest(gpucc_digest *out, const char *name)
{
	const char *value = gpucc_tool_environment(name);
	if (!value) {
		gpucc_digest_buffer(out, name, strlen(name));
		return;
	}
	char *text = string_printf("%s=%s", name, value);
	if (text)
		gpucc_digest_buffer(out, text, strlen(text));
	else
		memset(out, 0xff, sizeof *out); /* out of memory: matches no record */
	free(text);
}

/* The directory line "dir DEV INO MTIME CTIME PATH" at l (NUL-terminated)
 * into *stamp and *path (inside l); false when it is not one. */
static bool directory_line(char *l, dir_stamp *stamp, const char **path)
{
	if (strncmp(l, "dir ", 4) != 0)
		return false;
	unsigned long long v[4];
	char *p = l + 4;
	for (int i = 0; i < 4; i++) {
		if (*p < '0' || *p > '9')
			return false;
		char *end;
		v[i] = strtoull(p, &end, 10);
		if (*end != ' ')
			return false;
		p = end + 1;
	}
	if (!*p)
		return false;
	*stamp = (dir_stamp){v[0], v[1], (int64_t)v[2], (int64_t)v[3]};
	*path = p;
	return true;
}

/* Where in place (len bytes, not NUL-terminated) its names under dir
 * (dir_len bytes) start, when it lies under dir by name: dir, "/", then
 * names none of which is "." or ".." ("." holds the relative places that
 * do not climb out of it); else NULL. */
static const char *dir_covers_span(const char *dir, size_t dir_len, const char *place, size_t len)
{
	const char *rest;
	if (len > dir_len && memcmp(place, dir, dir_len) == 0 && place[dir_len] == '/')
		rest = place + dir_len + 1;
	else if (dir_len == 1 && dir[0] == '/' && len > 0 && place[0] == '/')
		rest = place + 1;
	else if (dir_len == 1 && dir[0] == '.' && len > 0 && place[0] != '/')
		rest = place;
	else
		return NULL;
	const char *end = place + len;
	if (rest == end)
		return NULL;
	for (const char *c = rest; c < end;) {
		const char *slash = memchr(c, '/', (size_t)(end - c));
		size_t n = slash ? (size_t)(slash - c) : (size_t)(end - c);
		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return NULL;
		c += n + (slash ? 1 : 0);
	}
	return rest;
}

static const char *dir_covers(const char *dir, const char *place)
{
	return dir_covers_span(dir, strlen(dir), place, strlen(place));
}

/* Whether a place still holds nothing (stat fails).  Under a directory
 * whose stamp moved, its first name there is looked at first, once for
 * all the places under it (missing: in gone, else in there): a path
 * whose leading part does not resolve does not either. */
static bool place_empty(const char *dir, const char *place, gpucc_strlist *gone,
                        gpucc_strlist *there)
{
	const char *rest = dir ? dir_covers(dir, place) : NULL;
	const char *slash = rest ? strchr(rest, '/') : NULL;
	if (slash) {
		size_t len = (size_t)(slash - place);
		char first[PATH_MAX];
		if (len < sizeof first) {
			memcpy(first, place, len);
			first[len] = '\0';
			if (gpucc_strlist_has(gone, first))
				return true;
			if (!gpucc_strlist_has(there, first)) {
				struct stat st;
				bool missing = stat(first, &st) != 0;
				gpucc_strlist_push(missing ? gone : there, first, len);
				if (missing)
					return true;
			}
		}
	}
	struct stat st;
	return stat(place, &st) != 0;
}

/* Descriptors of the directories of the files a record lists, so that
 * each file is stat'ed by its name in its directory: a path of a dozen
 * components (/usr/lib/gcc/x86_64-linux-gnu/12/../../../../include/...)
 * walked once per directory rather than once per file (path walks were a
 * good part of the kernel's time in a hit).  The same answer as
 * stat(path): the directory is opened by the path as written (links and
 * ".." as the walk takes them), and the name in it followed as stat
 * follows it.  A directory renamed or replaced meanwhile is seen as it
 * was when it was opened, earlier in the same lookup, as a lookup sees
 * any file it has already checked. */
enum { DIR_HANDLES_MAX = 64 };

typedef struct dir_handles {
	struct {
		char *path;
		size_t len;
		int fd; /* -1: could not be opened; its files are stat'ed by path */
	} items[DIR_HANDLES_MAX];
	size_t count;
} dir_handles;

static void dir_handles_release(dir_handles *h)
{
	for (size_t i = 0; i < h->count; i++) {
		free(h->items[i].path);
		if (h->items[i].fd >= 0)
			close(h->items[i].fd);
	}
	h->count = 0;
}

/* stat(path, st), through the descriptor of path's directory. */
static int stat_in_dir(dir_handles *h, const char *path, struct stat *st)
{
	const char *slash = strrchr(path, '/');
	if (!slash || slash == path || !slash[1])
		return stat(path, st);
	size_t len = (size_t)(slash - path);
	int fd = -1;
	size_t i = h->count;
	/* The files of one directory mostly follow each other: newest first. */
	while (i-- > 0)
		if (h->items[i].len == len && memcmp(h->items[i].path, path, len) == 0)
			break;
	if (i < h->count) {
		fd = h->items[i].fd;
	} else {
		char *dir = h->count < DIR_HANDLES_MAX ? strndup(path, len) : NULL;
		if (!dir)
			return stat(path, st);
		fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		h->items[h->count].path = dir;
		h->items[h->count].len = len;
		h->items[h->count].fd = fd;
		h->count++;
	}
	return fd >= 0 ? fstatat(fd, slash + 1, st, 0) : stat(path, st);
}

/* Whether every one of the count lines from *line on names a file that
 * still has its digest, a variable that still has its value, a place that
 * is still empty and a directory that still has its stamp, or else the
 * places after it (which lie under it) still empty each; *line moves past
 * them.  The first that does not goes into *why (when still NULL).  False
 * too when the lines are cut short or damaged.  The lines are only read
 * (a record's may be a read-only mapping of its file): each is copied to
 * be cut into its fields. */
bool files_unchanged(context *x, char **line, unsigned long count, char **why,
                            gpucc_strlist *files)
{
	bool all = true;
	size_t i = 0;
	/* The directory of the places that follow, and whether it still has
	 * its stamp: then it holds what it held, so none of them appeared. */
	char *dir = NULL;
	bool dir_held = false, damaged = false;
	gpucc_strlist gone = {0}, there = {0}; /* under dir: place_empty's */
	dir_handles handles;
	handles.count = 0;
	char small[1024];
	char *copy = small;
	size_t copy_size = sizeof small;
	size_t dir_len = 0;
	for (; i < count && **line; i++) {
		const char *end = strchr(*line, '\n');
		if (!end)
			break;
		size_t len = (size_t)(end - *line);
		/* Most lines are places under a directory that still has its
		 * stamp: passed where they are, uncopied. */
		if (dir_held && len > 65 && (*line)[64] == ' ' && (*line)[65] != '$' &&
		    memcmp(*line, absent_digest, 64) == 0 &&
		    dir_covers_span(dir, dir_len, *line + 65, len - 65)) {
			*line += len + 1;
			continue;
		}
		if (len >= copy_size) {
			char *grown = malloc(len + 1);
			if (!grown) {
				damaged = true; /* out of memory: no hit */
				break;
			}
			if (copy != small)
				free(copy);
			copy = grown;
			copy_size = len + 1;
		}
		memcpy(copy, *line, len);
		copy[len] = '\0';
		char *l = copy;
		*line += len + 1;
		dir_stamp want_stamp;
		const char *dir_path;
		if (l[0] == 'd' && directory_line(l, &want_stamp, &dir_path)) {
			struct stat st;
			free(dir);
			dir = strdup(dir_path);
			if (!dir) {
				damaged = true; /* out of memory: no hit */
				break;
			}
			dir_len = strlen(dir);
			dir_held = all && stat(dir_path, &st) == 0 && S_ISDIR(st.st_mode) &&
			           dir_stamp_equal(dir_stamp_of(&st), want_stamp);
			gpucc_strlist_release(&gone);
			gpucc_strlist_release(&there);
			continue;
		}
		gpucc_digest want, got;
		if (len < 66 || l[64] != ' ') {
			damaged = true;
			break;
		}
		l[64] = '\0';
		/* Most lines are places: their zeros are not decoded.  A file's
		 * digest is decoded only when it differs from the line's
		 * lowercase hex, as a record writes it: to tell a damaged line
		 * from a changed file.  Past the first miss, a line's digest
		 * can change nothing. */
		bool absent = l[65] != '$' && memcmp(l, absent_digest, 64) == 0;
		if (!absent && l[65] == '$' && gpucc_digest_from_hex(&want, l) != 0) {
			damaged = true;
			break;
		}
		if (!all)
			continue;
		const char *dep = l + 65;
		if (absent) {
			/* A place the include search tried: still empty? */
			if (dir_held && dir_covers_span(dir, dir_len, dep, len - 65))
				continue;
			if (!place_empty(dir, dep, &gone, &there)) {
				all = false;
				if (!*why)
					*why = string_printf("miss: '%s' appeared", dep);
			}
			continue;
		}
		if (dep[0] == '$') {
			/* An environment variable's value, as environment_line wrote it. */
			environment_digest(&got, dep + 1);
			if (memcmp(&want, &got, sizeof want) != 0) {
				all = false;
				if (!*why)
					*why = string_printf("miss: %s changed", dep);
			}
			continue;
		}
		/* Each once in a record; and gpucc_depfile_write names each once. */
		gpucc_strlist_push(files, dep, strlen(dep));
		struct stat st;
		int rc = stat_in_dir(&handles, dep, &st) == 0 ? file_digest_stat(x, dep, &st, &got, 0, NULL)
		                                                : GPUCC_ENOTFOUND;
		char got_hex[GPUCC_DIGEST_HEX_SIZE];
		if (rc == 0)
			gpucc_digest_to_hex(got_hex, &got);
		if (rc == 0 && memcmp(got_hex, l, 64) == 0)
			continue;
		if (gpucc_digest_from_hex(&want, l) != 0) {
			damaged = true;
			break;
		}
		if (rc != 0 || memcmp(&want, &got, sizeof want) != 0) {
			all = false;
			if (!*why)
				*why = string_printf(rc == GPUCC_ENOTFOUND ? "miss: '%s' is gone"
				                                           : "miss: '%s' changed", dep);
		}
	}
	dir_handles_release(&handles);
	gpucc_strlist_release(&gone);
	gpucc_strlist_release(&there);
	free(dir);
	if (copy != small)
		free(copy);
	/* A listing names the source at least. */
	return !damaged && all && i == count && count > 0;
}
