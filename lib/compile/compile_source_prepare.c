/*
 * lib/compile/compile_source_prepare.c -- what a direct-mode record lists of
 * a compile clang ran (lib/compile/compile_source.c writes it): the -MD
 * list, the files its arguments name, the variables clang reads, and the
 * places its include search and HIP's installation search tried and found
 * empty, grouped under the deepest directory above each that exists, with
 * that directory's stamp (what a lookup checks:
 * lib/compile/compile_source_check.c).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
