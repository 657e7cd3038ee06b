/*
 * lib/compile/compile_source_check.c -- what a direct-mode record checks
 * (lib/compile/compile_source.c): paths as a record and a key name them
 * (relative to the working directory, but under the system's directories);
 * the digests of the files a compile read, through the toolchain's memos;
 * whether every file a record lists is unchanged, every place it found
 * empty still empty and every variable it names the same (a hit); and what
 * a record lists of a compile clang ran: the -MD list, the files its
 * arguments name, and the places its include search and HIP's
 * installation search tried and found empty, grouped under the deepest
 * directory above each that exists.  A lookup stats each such directory
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
static bool system_path(const context *x, const char *path)
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
static int file_digest(context *x, const char *path, gpucc_digest *out, int64_t since_ns,
                       bool *changed_since)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return GPUCC_ENOTFOUND;
	return file_digest_stat(x, path, &st, out, since_ns, changed_since);
}

/* What a directory's stat says of its entries: its identity, and its
 * mtime and ctime (ns), which an entry made or removed in it moves. */
typedef struct dir_stamp {
	unsigned long long dev, ino;
	int64_t mtime, ctime;
} dir_stamp;

static dir_stamp dir_stamp_of(const struct stat *st)
{
	return (dir_stamp){(unsigned long long)st->st_dev, (unsigned long long)st->st_ino,
	                   ns_of(st->st_mtim), ns_of(st->st_ctim)};
}

static bool dir_stamp_equal(dir_stamp a, dir_stamp b)
{
	return a.dev == b.dev && a.ino == b.ino && a.mtime == b.mtime && a.ctime == b.ctime;
}

/* A record's line for a place that must not exist: 64 zeros, no file's
 * SHA-256. */
static const char absent_digest[] = "0000000000000000000000000000000000000000000000000000000000000000";

/* The SHA-256 of "NAME=VALUE", or of "NAME" when the variable is unset. */
static void environment_digest(gpucc_digest *out, const char *name)
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

/* What clang read of a compile, gathered for its record: files with their
 * digests, and places the compile looked for something that were empty. */
typedef struct reads {
	gpucc_strlist files;   /* as clang (or the arguments) spell them */
	gpucc_strlist absent;
	gpucc_strlist has_include; /* names __has_include asked for */
	const char *time_macro;
	char *time_file;
} reads;

static void reads_release(reads *rd)
{
	gpucc_strlist_release(&rd->files);
	gpucc_strlist_release(&rd->absent);
	gpucc_strlist_release(&rd->has_include);
	free(rd->time_file);
}

/* dir + "/" + name (owned), or NULL. */
static char *path_join(const char *dir, const char *name)
{
	size_t len = strlen(dir);
	return string_printf("%s%s%s", dir, len && dir[len - 1] == '/' ? "" : "/", name);
}

/* The directory clang searches first for #include "..." in the source: its
 * own. */
static char *source_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? strndup(path, (size_t)(slash - path + (slash == path))) : strdup(".");
}

/* Why a place the include search tried, empty when clang looked, is not
 * recorded as such (NULL: it is, or it need not be): something is there
 * now that was not, or that changed while clang ran. */
static char *probe(reads *rd, const char *candidate, int64_t since_ns)
{
	struct stat st;
	if (stat(candidate, &st) != 0) {
		gpucc_strlist_push_new(&rd->absent, candidate);
		return NULL;
	}
	/* There: clang read it (it is in the list), or passed it over for one
	 * earlier (an #include_next, or a guess of gpucc's wider than clang's
	 * search); unless it came while clang ran. */
	int64_t newest = ns_of(st.st_mtim) > ns_of(st.st_ctim) ? ns_of(st.st_mtim) : ns_of(st.st_ctim);
	return newest >= since_ns ? string_printf("not recorded: '%s' changed while clang ran", candidate)
	                          : NULL;
}

/* The places the include search tried before the one where it found dep
 * (each directory of the search before one dep is under, and before them
 * the directories #include "..." tries first), and for each name
 * __has_include asked for, every place it could be. */
static char *search_misses(context *x, const gpucc_source_pair *p, const gpucc_clang_search *search,
                           reads *rd, const gpucc_depfile *deps, int64_t since_ns)
{
	/* #include "..." tries the including file's directory first: which
	 * file included which, -MD does not say, so the source's and each
	 * directory of the user's files read (not the system's) stand in;
	 * and -include (clang's own, for HIP's runtime wrapper, too) tries the
	 * working directory first. */
	gpucc_strlist first = {0}, dirs = {0};
	gpucc_strlist_push_new(&first, ".");
	char *own = source_dir(p->path);
	if (own)
		gpucc_strlist_push_new(&first, own);
	else
		first.failed = true;
	free(own);
	for (size_t i = 0; i < deps->count; i++) {
		const char *dep = deps->paths[i];
		if ((dep[0] == '/' && system_path(x, dep)) || (x->temp_dir[0] && under(dep, x->temp_dir)))
			continue;
		char *dir = source_dir(dep);
		if (dir)
			gpucc_strlist_push_new(&first, dir);
		else
			first.failed = true;
		free(dir);
	}
	for (size_t i = 0; i < search->quote.count; i++)
		gpucc_strlist_push(&dirs, search->quote.items[i], strlen(search->quote.items[i]));
	for (size_t i = 0; i < search->angle.count; i++)
		gpucc_strlist_push(&dirs, search->angle.items[i], strlen(search->angle.items[i]));
	char *why = first.failed || dirs.failed ? strdup("not recorded: out of memory") : NULL;
	for (size_t i = 0; i < search->missing.count && !why; i++)
		why = probe(rd, search->missing.items[i], since_ns);
	for (size_t i = 0; i < deps->count && !why; i++) {
		const char *dep = deps->paths[i];
		for (size_t j = 0; j < dirs.count && !why; j++) {
			const char *dir = dirs.items[j];
			size_t len = strlen(dir);
			while (len > 1 && dir[len - 1] == '/')
				len--;
			if (strncmp(dep, dir, len) != 0 || dep[len] != '/' || !dep[len + 1])
				continue;
			const char *name = dep + len + 1;
			for (size_t k = 0; k < first.count + j && !why; k++) {
				const char *before = k < first.count ? first.items[k] : dirs.items[k - first.count];
				char *candidate = path_join(before, name);
				if (!candidate)
					why = strdup("not recorded: out of memory");
				else if (strcmp(candidate, dep) != 0 && !gpucc_strlist_has(&rd->files, candidate))
					why = probe(rd, candidate, since_ns);
				free(candidate);
			}
		}
	}
	for (size_t i = 0; i < rd->has_include.count && !why; i++) {
		for (size_t k = 0; k < first.count + dirs.count && !why; k++) {
			const char *dir = k < first.count ? first.items[k] : dirs.items[k - first.count];
			char *candidate = path_join(dir, rd->has_include.items[i]);
			struct stat st;
			if (!candidate)
				why = strdup("not recorded: out of memory");
			else if (stat(candidate, &st) == 0 && S_ISREG(st.st_mode))
				gpucc_strlist_push_new(&rd->files, candidate); /* its answer was yes */
			else if (stat(candidate, &st) != 0)
				gpucc_strlist_push_new(&rd->absent, candidate); /* no */
			free(candidate);
		}
	}
	gpucc_strlist_release(&first);
	gpucc_strlist_release(&dirs);
	return why;
}

/* The line "HEX $NAME\n" into body: the variable's value (or its
 * absence), which a lookup checks (environment_digest). */
static void environment_line(gpucc_buffer *body, const char *name)
{
	gpucc_digest d;
	char dh[GPUCC_DIGEST_HEX_SIZE];
	environment_digest(&d, name);
	gpucc_digest_to_hex(dh, &d);
	gpucc_buffer_append_string(body, dh);
	gpucc_buffer_append_string(body, " $");
	gpucc_buffer_append_string(body, name);
	gpucc_buffer_append_string(body, "\n");
}

/* path's directory (owned): "/" for "/x", NULL when out of memory. */
static char *parent_dir(const char *path)
{
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	while (len > 0 && path[len - 1] != '/')
		len--;
	while (len > 1 && path[len - 1] == '/')
		len--;
	return len ? strndup(path, len) : strdup(".");
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* A HIP source's headers come from the HIP installation clang's driver
 * finds by itself, unless HIP_PATH or ROCM_PATH (keyed) or --hip-path or
 * --rocm-path (arguments) name one: it tries, in order (clang 19's
 * RocmInstallationDetector), the prefix of its own directory (bin and an
 * "llvm" or "aomp" component above it stripped), that directory's
 * parent, its resource directory, /opt/rocm, the newest /opt/rocm-*,
 * /usr/local and /usr, and takes the first that exists and holds a
 * version file: share/hip/version, ../share/hip/version (not for
 * /usr/local) or bin/.hipVersion.  Every candidate before the one it took
 * (clang -v names it) is recorded as it was: gone, or its version files
 * gone, each a place found empty (a file there, which clang passed over,
 * with its digest).  The newest /opt/rocm-* is not followed. */
static char *hip_install_misses(context *x, const gpucc_clang_search *search, reads *rd,
                                int64_t since_ns)
{
	static const char *const pinned[] = {"HIP_PATH", "ROCM_PATH"};
	for (size_t i = 0; i < 2; i++)
		if (gpucc_tool_environment(pinned[i]) && gpucc_tool_environment(pinned[i])[0])
			return NULL;
	for (size_t i = 0; i < x->s->arg_count; i++)
		if (strncmp(x->s->args[i], "--hip-path", 10) == 0 ||
		    strncmp(x->s->args[i], "--rocm-path", 11) == 0)
			return NULL;
	if (!search->installed_dir)
		return strdup("not recorded: clang -v did not say where it is installed");
	gpucc_strlist candidates = {0};
	char *prefix = parent_dir(search->installed_dir);
	if (prefix && strcmp(base_name(prefix), "bin") == 0) {
		char *up = parent_dir(prefix);
		free(prefix);
		prefix = up;
	}
	if (prefix && (strcmp(base_name(prefix), "llvm") == 0 ||
	               strncmp(base_name(prefix), "aomp", 4) == 0)) {
		char *up = parent_dir(prefix);
		free(prefix);
		prefix = up;
	}
	char *root = parent_dir(search->installed_dir);
	if (!prefix || !root)
		candidates.failed = true;
	else {
		gpucc_strlist_push_new(&candidates, prefix);
		gpucc_strlist_push_new(&candidates, root);
	}
	free(prefix);
	free(root);
	if (search->resource_dir)
		gpucc_strlist_push_new(&candidates, search->resource_dir);
	gpucc_strlist_push_new(&candidates, "/opt/rocm");
	gpucc_strlist_push_new(&candidates, "/usr/local");
	gpucc_strlist_push_new(&candidates, "/usr");
	char *why = candidates.failed ? strdup("not recorded: out of memory") : NULL;
	for (size_t i = 0; i < candidates.count && !why; i++) {
		const char *c = candidates.items[i];
		if (search->hip_found && strcmp(c, search->hip_found) == 0)
			break;
		struct stat st;
		if (stat(c, &st) != 0) {
			why = probe(rd, c, since_ns);
			continue;
		}
		char *up = parent_dir(c);
		char *files[3] = {path_join(c, "share/hip/version"),
		                  strcmp(c, "/usr/local") != 0 && up ? path_join(up, "share/hip/version")
		                                                     : NULL,
		                  path_join(c, "bin/.hipVersion")};
		free(up);
		for (size_t k = 0; k < 3; k++) {
			if (!files[k])
				continue;
			if (stat(files[k], &st) == 0)
				gpucc_strlist_push_new(&rd->files, files[k]); /* passed over: as it was */
			else if (!why)
				why = probe(rd, files[k], since_ns);
			free(files[k]);
		}
	}
	gpucc_strlist_release(&candidates);
	return why;
}

/* path as a record's line names it (owned): normalised, "./$NAME" for a
 * "$NAME" (which is a variable's line); or NULL with why not. */
static char *record_name_of(context *x, const char *path, char **why)
{
	char *norm = normalise_path(x, path);
	if (!norm || strchr(norm, '\n')) {
		*why = strdup(norm ? "not recorded: a file's name holds a line break"
		                   : "not recorded: out of memory");
		free(norm);
		return NULL;
	}
	if (norm[0] == '$') { /* "$NAME" is a variable's line: "./$NAME" the file */
		char *dotted = string_printf("./%s", norm);
		free(norm);
		if (!dotted)
			*why = strdup("not recorded: out of memory");
		norm = dotted;
	}
	return norm;
}

/* ---- the places found empty, by directory --------------------------------- */

/* A directory the places under it are recorded with: while it has its
 * stamp, nothing was made in it, nor, by way of its missing
 * subdirectories, under it. */
typedef struct place_dir {
	char *path;            /* as the record names it */
	dir_stamp stamp;
	gpucc_buffer lines;    /* its places' lines */
	size_t count;
} place_dir;

/* The places of a compile, each under the deepest directory above it that
 * exists, or alone where none proves its absence. */
typedef struct place_groups {
	place_dir *dirs;
	size_t count, capacity;
	gpucc_strlist missing;  /* paths found missing on the way up */
	gpucc_strlist alone_at; /* paths at which the way up stops: places under
	                           them are listed alone */
	gpucc_buffer alone;     /* lines of the places listed alone */
	size_t alone_count;
	bool failed;
} place_groups;

static void place_groups_release(place_groups *g)
{
	for (size_t i = 0; i < g->count; i++) {
		free(g->dirs[i].path);
		free(g->dirs[i].lines.data);
	}
	free(g->dirs);
	gpucc_strlist_release(&g->missing);
	gpucc_strlist_release(&g->alone_at);
	free(g->alone.data);
}

static void place_line(gpucc_buffer *b, const char *name)
{
	gpucc_buffer_append_string(b, absent_digest);
	gpucc_buffer_append_string(b, " ");
	gpucc_buffer_append_string(b, name);
	gpucc_buffer_append_string(b, "\n");
}

/* The length of name's directory part: what remains once its last
 * component is dropped ("a/b" -> "a", "/a" -> "/", "a" -> ""), and that
 * component in *last, *last_len.  Trailing slashes are not a component. */
static size_t split_last(const char *name, const char **last, size_t *last_len)
{
	size_t len = strlen(name);
	while (len > 1 && name[len - 1] == '/')
		len--;
	size_t start = len;
	while (start > 0 && name[start - 1] != '/')
		start--;
	*last = name + start;
	*last_len = len - start;
	size_t dir = start;
	while (dir > 1 && name[dir - 1] == '/')
		dir--;
	return dir;
}

/* Add the place (named as the record names it) under the deepest
 * directory above it that exists, found by climbing from it one name at a
 * time while each name is missing (lstat: nothing there, not even a
 * dangling link, which a later file at its target would fill without a
 * directory of the path moving).  Alone when the climb meets anything
 * else: a name that is "." or "..", which is not the last of the
 * directory it is in; a link that leads nowhere; a file; an error; or a
 * directory whose mtime or ctime is not older than since_ns (changed as
 * clang ran, or so late that a change within the clock's tick would not
 * move it). */
static void place_add(place_groups *g, const char *place, int64_t since_ns)
{
	struct stat st;
	char *at = NULL;
	place_dir *found = NULL;
	bool alone = lstat(place, &st) == 0 || errno != ENOENT; /* a dangling link, an error */
	const char *cur = place;
	while (!alone && !found) {
		const char *last;
		size_t last_len, dir_len = split_last(cur, &last, &last_len);
		if (last_len == 0 || (last_len == 1 && last[0] == '.') ||
		    (last_len == 2 && last[0] == '.' && last[1] == '.')) {
			alone = true;
			break;
		}
		char *parent = dir_len ? strndup(cur, dir_len) : strdup(".");
		free(at);
		at = parent;
		if (!parent) {
			g->failed = true;
			return;
		}
		cur = parent;
		for (size_t i = 0; i < g->count && !found; i++)
			if (strcmp(g->dirs[i].path, parent) == 0)
				found = &g->dirs[i];
		if (found)
			break;
		if (gpucc_strlist_has(&g->alone_at, parent)) {
			alone = true;
			break;
		}
		if (gpucc_strlist_has(&g->missing, parent))
			continue;
		if (stat(parent, &st) != 0) {
			struct stat lst;
			if (errno == ENOENT && lstat(parent, &lst) != 0 && errno == ENOENT) {
				gpucc_strlist_push_new(&g->missing, parent);
				continue;
			}
			alone = true;
		} else if (!S_ISDIR(st.st_mode) || ns_of(st.st_mtim) >= since_ns ||
		           ns_of(st.st_ctim) >= since_ns) {
			alone = true;
		} else {
			if (g->count == g->capacity) {
				size_t n = g->capacity ? 2 * g->capacity : 16;
				place_dir *grown = realloc(g->dirs, n * sizeof *grown);
				if (!grown) {
					g->failed = true;
					break;
				}
				g->dirs = grown;
				g->capacity = n;
			}
			found = &g->dirs[g->count++];
			*found = (place_dir){.path = parent, .stamp = dir_stamp_of(&st),
			                     .lines = GPUCC_BUFFER_INIT};
			at = NULL; /* the group's now */
		}
	}
	if (alone && at)
		gpucc_strlist_push_new(&g->alone_at, at);
	free(at);
	if (found) {
		place_line(&found->lines, place);
		found->count++;
		g->failed |= found->lines.failed;
	} else if (alone) {
		place_line(&g->alone, place);
		g->alone_count++;
		g->failed |= g->alone.failed;
	}
}

/* The groups' lines into body: the places alone, then each directory's
 * line and its places' lines.  How many lines. */
static size_t place_groups_write(const place_groups *g, gpucc_buffer *body)
{
	size_t lines = g->alone_count;
	if (g->alone.data)
		gpucc_buffer_append(body, g->alone.data, g->alone.size);
	for (size_t i = 0; i < g->count; i++) {
		const place_dir *d = &g->dirs[i];
		char head[128];
		snprintf(head, sizeof head, "dir %llu %llu %lld %lld ", d->stamp.dev, d->stamp.ino,
		         (long long)d->stamp.mtime, (long long)d->stamp.ctime);
		gpucc_buffer_append_string(body, head);
		gpucc_buffer_append_string(body, d->path);
		gpucc_buffer_append_string(body, "\n");
		gpucc_buffer_append(body, d->lines.data, d->lines.size);
		lines += 1 + d->count;
	}
	return lines;
}

/* One "HEX PATH\n" line for the file at path into body: its digest.  Why
 * it cannot be, or NULL. */
static char *record_line(context *x, gpucc_buffer *body, const char *path, int64_t since_ns)
{
	char *why = NULL;
	char *norm = record_name_of(x, path, &why);
	if (!norm)
		return why;
	gpucc_digest d;
	bool changed = false;
	int rc = file_digest(x, path, &d, since_ns, &changed);
	if (rc != 0 || changed) {
		why = string_printf(rc != 0 ? "not recorded: '%s' cannot be read"
		                            : "not recorded: '%s' changed while clang ran",
		                    norm);
		free(norm);
		return why;
	}
	char dh[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(dh, &d);
	gpucc_buffer_append_string(body, dh);
	gpucc_buffer_append_string(body, " ");
	gpucc_buffer_append_string(body, norm);
	gpucc_buffer_append_string(body, "\n");
	free(norm);
	return NULL;
}

/* What a record will list of a compile clang ran, into r->record: the count
 * first as "N\n", then "HEX PATH\n" for every file the compile read (the
 * -MD list, the files its arguments name) and, with absent's zeros for HEX,
 * every place its include search tried and found empty: first those no
 * directory's stamp covers, then for each directory that does, "dir DEV
 * INO MTIME CTIME PATH\n" and its places.  Returns NULL, or why nothing
 * will be recorded. */
char *record_prepare(context *x, const gpucc_source_pair *p, const gpucc_depfile *deps,
                            const gpucc_clang_search *search, int64_t clang_start_ns,
                            gpucc_source_result *r)
{
	int64_t since = clang_start_ns - x->clock_granularity_ns;
	reads rd = {0};
	char *why = NULL;
	for (size_t i = 0; i < deps->count && !why; i++) {
		const char *dep = deps->paths[i];
		/* gpucc's own files (the CUDA stubs) are the same for a gpucc
		 * version, which names the record. */
		if (x->temp_dir[0] && under(dep, x->temp_dir))
			continue;
		gpucc_strlist_push_new(&rd.files, dep);
		/* The time macros, and the names __has_include asks for. */
		size_t size = 0;
		char *text = gpucc_read_small_file(dep, (size_t)1 << 30, &size);
		if (!text) {
			why = string_printf("not recorded: '%s' cannot be read", dep);
			break;
		}
		const char *macro = rd.time_macro;
		gpucc_source_text_scan(text, size, &rd.time_macro, &rd.has_include);
		if (!macro && rd.time_macro)
			rd.time_file = strdup(dep);
		free(text);
	}
	/* clang's __DATE__ and friends are SOURCE_DATE_EPOCH's when it is set
	 * (the record's name holds it), else the clock's: no record. */
	if (!why && rd.time_macro && !gpucc_tool_environment("SOURCE_DATE_EPOCH"))
		why = string_printf("not recorded: '%s' uses %s and SOURCE_DATE_EPOCH is not set",
		                    rd.time_file ? rd.time_file : "?", rd.time_macro);
	gpucc_buffer body = GPUCC_BUFFER_INIT;
	size_t kept = 0;
	if (!why && rd.time_macro) {
		environment_line(&body, "SOURCE_DATE_EPOCH");
		kept++;
	}
	if (!why)
		gpucc_argument_files(x->s->args, x->s->arg_count, &search->configs, &rd.files, &rd.absent);
	if (!why)
		why = search_misses(x, p, search, &rd, deps, since);
	if (!why && p->language == GPUCC_LANGUAGE_HIP)
		why = hip_install_misses(x, search, &rd, since);
	if (!why && (rd.files.failed || rd.absent.failed || rd.has_include.failed))
		why = strdup("not recorded: out of memory");
	for (size_t i = 0; i < rd.files.count && !why; i++)
		why = record_line(x, &body, rd.files.items[i], since);
	kept += rd.files.count;
	/* The places found empty, each under the directory whose stamp proves
	 * it still is; none under the run's temporary directory, which gpucc
	 * makes anew for each run with the CUDA stub alone in it. */
	place_groups g = {0};
	for (size_t i = 0; i < rd.absent.count && !why; i++) {
		if (x->temp_dir[0] && under(rd.absent.items[i], x->temp_dir))
			continue;
		char *norm = record_name_of(x, rd.absent.items[i], &why);
		if (norm)
			place_add(&g, norm, since);
		free(norm);
	}
	if (!why && (g.failed || g.missing.failed || g.alone_at.failed))
		why = strdup("not recorded: out of memory");
	if (!why)
		kept += place_groups_write(&g, &body);
	place_groups_release(&g);
	reads_release(&rd);
	if (why) {
		free(body.data);
		return why;
	}
	char count[32];
	snprintf(count, sizeof count, "%zu\n", kept);
	gpucc_buffer t = GPUCC_BUFFER_INIT;
	gpucc_buffer_append_string(&t, count);
	if (body.data)
		gpucc_buffer_append_string(&t, body.data);
	free(body.data);
	if (t.failed || body.failed) {
		free(t.data);
		return strdup("not recorded: out of memory");
	}
	r->record = t.data;
	return NULL;
}
