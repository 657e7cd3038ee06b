/*
 * lib/compile/compile_toolchain.c -- finding the device toolchain (libdevice, the
 * ROCm device libraries, ptxas, ld.lld) and remembering what is expensive to
 * learn about it.  None of this loads LLVM: it runs for every compile, hits
 * included.
 *
 * Memos: DIR/compile-toolchain (DIR being the cache directory) holds lines
 *   KIND \t SIZE \t MTIME_NS \t CTIME_NS \t INODE \t DEVICE \t VALUE \t PATH
 * for device library digests ("sha256") and tool versions ("ptxas-version",
 * "nvjitlink-version", "ld.lld-version").  A memo is used only while stat()
 * still reports that identity for the file: size and mtime alone would keep
 * the old digest of a library replaced by a copy that restores its mtime
 * (cp -p, rsync -t, tar x), which cannot restore the ctime or the inode.  The file is
 * rewritten atomically when a memo changes; a missing or garbled file, or
 * lines of an older layout, just mean hashing again.
 */
#include "compile_impl.h"
#include "compile_source.h" /* gpucc_read_small_file */

#include "atomic_file.h"
#include "config_internal.h"
#include "errors.h"
#include "gpucc_build_config.h"
#include "hex.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MEMO_FILE "compile-toolchain"

static bool is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_executable(const char *path)
{
	return is_file(path) && access(path, X_OK) == 0;
}

/* dir + "/" + name when that is a file (executable when asked), else NULL. */
static char *join_if(const char *dir, const char *name, bool executable)
{
	if (!dir || !*dir)
		return NULL;
	size_t len = strlen(dir) + strlen(name) + 2;
	char *path = malloc(len);
	if (!path)
		return NULL;
	snprintf(path, len, "%s/%s", dir, name);
	if (executable ? is_executable(path) : is_file(path))
		return path;
	free(path);
	return NULL;
}

static char *search_path(const char *name)
{
	const char *path = gpucc_config_current()->path;
	if (!path)
		return NULL;
	while (*path) {
		size_t len = strcspn(path, ":");
		char dir[4096];
		if (len && len < sizeof dir) {
			memcpy(dir, path, len);
			dir[len] = '\0';
			char *found = join_if(dir, name, true);
			if (found)
				return found;
		}
		path += len + (path[len] == ':');
	}
	return NULL;
}

static char *cuda_file(const char *relative, bool executable)
{
	const char *cuda = gpucc_config_current()->cuda_path;
	char *found = NULL;
	if (cuda && *cuda) {
		char dir[4096];
		snprintf(dir, sizeof dir, "%s", cuda);
		found = join_if(dir, relative, executable);
	}
	if (!found)
		found = join_if("/usr/local/cuda", relative, executable);
	return found;
}

#define MEMO_FIELDS 8

/* The memos are found through an open-addressed hash table of (kind,
 * path): a source's record checks hundreds of header digests, each a
 * lookup. */
static size_t memo_hash(const char *kind, const char *path)
{
	uint64_t h = 14695981039346656037ULL; /* FNV-1a */
	for (const char *p = kind; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	h = (h ^ 0xff) * 1099511628211ULL; /* between the two: no byte of either */
	for (const char *p = path; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	return (size_t)(h ^ (h >> 32));
}

static gpucc_file_memo *memo_lookup(gpucc_toolchain *tc, const char *kind, const char *path)
{
	if (!tc->memo_slot_count)
		return NULL;
	size_t mask = tc->memo_slot_count - 1;
	for (size_t i = memo_hash(kind, path) & mask; tc->memo_slots[i]; i = (i + 1) & mask) {
		gpucc_file_memo *m = &tc->memos[tc->memo_slots[i] - 1];
		if (strcmp(m->path, path) == 0 && strcmp(m->kind, kind) == 0)
			return m;
	}
	return NULL;
}

static void memo_slot_put(gpucc_toolchain *tc, size_t index)
{
	size_t mask = tc->memo_slot_count - 1;
	size_t i = memo_hash(tc->memos[index].kind, tc->memos[index].path) & mask;
	while (tc->memo_slots[i])
		i = (i + 1) & mask;
	tc->memo_slots[i] = index + 1;
}

/* Enter memos[index] (its kind and path set; not yet counted when it is
 * the newest) into the table, growing it first when it would be more than
 * half full.  False when out of memory. */
static bool memo_index(gpucc_toolchain *tc, size_t index)
{
	if (2 * (index + 1) > tc->memo_slot_count) {
		size_t count = tc->memo_slot_count ? 2 * tc->memo_slot_count : 64;
		size_t *slots = calloc(count, sizeof *slots);
		if (!slots)
			return false;
		free(tc->memo_slots);
		tc->memo_slots = slots;
		tc->memo_slot_count = count;
		for (size_t i = 0; i < index; i++)
			memo_slot_put(tc, i);
	}
	memo_slot_put(tc, index);
	return true;
}


/* The decimal number (an optional '-' first) of the field [p, end), as
 * strtoll and strtoull read the numbers memo_save writes; a field that is
 * not one reads as 0, which no identity of a real file matches. */
static uint64_t memo_number(const char *p, const char *end)
{
	bool negative = p < end && *p == '-';
	uint64_t v = 0;
	for (p += negative; p < end && *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (uint64_t)(*p - '0');
	return negative ? (uint64_t)0 - v : v;
}

/* The memo file read whole and parsed in one pass: a source's hit reads
 * it for the digests of hundreds of headers, so the table is sized once
 * for every line and no line is copied but its three strings. */
static void memo_load(gpucc_toolchain *tc)
{
	/* Only a regular file (gpucc_read_small_file): a FIFO in the cache
	 * would block every compile. */
	size_t used = 0;
	char *text = gpucc_read_small_file(tc->memo_path, ((size_t)1 << 30) - 1, &used);
	if (!text)
		return;
	size_t lines = 0;
	for (const char *p = text; (p = memchr(p, '\n', used - (size_t)(p - text))) != NULL; p++)
		lines++;
	/* Room for each line (and a last one without its line break), in the
	 * memos and in a table at most half full. */
	size_t most = tc->memo_count + lines + 1;
	gpucc_file_memo *grown = realloc(tc->memos, sizeof *grown * most);
	if (!grown) {
		free(text);
		return;
	}
	tc->memos = grown;
	size_t slots = tc->memo_slot_count ? tc->memo_slot_count : 64;
	while (slots < 2 * most)
		slots *= 2;
	size_t *table = slots != tc->memo_slot_count ? calloc(slots, sizeof *table) : NULL;
	if (table) { /* else memo_index grows it as it must */
		free(tc->memo_slots);
		tc->memo_slots = table;
		tc->memo_slot_count = slots;
		for (size_t i = 0; i < tc->memo_count; i++)
			memo_slot_put(tc, i);
	}
	for (char *line = text; line < text + used;) {
		char *end = memchr(line, '\n', (size_t)(text + used - line));
		if (!end)
			end = text + used;
		*end = '\0';
		char *next = end + 1;
		/* Seven tab-separated fields, then the path (the rest). */
		char *fields[MEMO_FIELDS];
		char *p = line;
		int n = 0;
		for (; n < MEMO_FIELDS && p; n++) {
			fields[n] = p;
			p = n < MEMO_FIELDS - 1 ? memchr(p, '\t', (size_t)(end - p)) : NULL;
			if (p)
				*p++ = '\0';
		}
		line = next;
		if (n != MEMO_FIELDS || !*fields[0] || !*fields[MEMO_FIELDS - 1])
			continue;
		/* The table has room (sized above, or grown by memo_index): one
		 * probe finds a repeated line, or the slot for this one. */
		size_t mask = tc->memo_slot_count - 1, slot = 0;
		bool repeated = false;
		if (tc->memo_slot_count >= 2 * (tc->memo_count + 1)) {
			for (slot = memo_hash(fields[0], fields[MEMO_FIELDS - 1]) & mask;
			     tc->memo_slots[slot] && !repeated; slot = (slot + 1) & mask) {
				const gpucc_file_memo *o = &tc->memos[tc->memo_slots[slot] - 1];
				repeated = strcmp(o->path, fields[MEMO_FIELDS - 1]) == 0 &&
				           strcmp(o->kind, fields[0]) == 0;
			}
		} else {
			repeated = memo_lookup(tc, fields[0], fields[MEMO_FIELDS - 1]) != NULL;
			slot = SIZE_MAX;
		}
		if (repeated)
			continue; /* the first one stands */
		gpucc_file_memo *m = &tc->memos[tc->memo_count];
		m->kind = strdup(fields[0]);
		m->identity.size = memo_number(fields[1], fields[2] - 1);
		m->identity.mtime_ns = (int64_t)memo_number(fields[2], fields[3] - 1);
		m->identity.ctime_ns = (int64_t)memo_number(fields[3], fields[4] - 1);
		m->identity.inode = memo_number(fields[4], fields[5] - 1);
		m->identity.device = memo_number(fields[5], fields[6] - 1);
		m->value = strdup(fields[6]);
		m->path = strdup(fields[7]);
		if (!m->kind || !m->value || !m->path ||
		    (slot == SIZE_MAX && !memo_index(tc, tc->memo_count))) {
			free(m->kind);
			free(m->value);
			free(m->path);
			break;
		}
		if (slot != SIZE_MAX)
			tc->memo_slots[slot] = tc->memo_count + 1;
		tc->memo_count++;
	}
	free(text);
}

static void memo_save(gpucc_toolchain *tc)
{
	gpucc_atomic_file f;
	if (gpucc_atomic_file_open(&f, tc->memo_path) != 0) {
		gpucc_error_clear();
		return;
	}
	bool ok = true;
	for (size_t i = 0; i < tc->memo_count && ok; i++) {
		const gpucc_file_memo *m = &tc->memos[i];
		/* A path or value a line cannot hold is remembered in memory only. */
		if (strpbrk(m->path, "\t\n") || strpbrk(m->value, "\t\n"))
			continue;
		const gpucc_file_identity *id = &m->identity;
		char line[8400];
		int n = snprintf(line, sizeof line, "%s\t%llu\t%lld\t%lld\t%llu\t%llu\t%s\t%s\n", m->kind,
		                 (unsigned long long)id->size, (long long)id->mtime_ns,
		                 (long long)id->ctime_ns, (unsigned long long)id->inode,
		                 (unsigned long long)id->device, m->value, m->path);
		if (n > 0 && (size_t)n < sizeof line)
			ok = gpucc_write_all(f.fd, line, (size_t)n) == 0;
	}
	if (ok)
		gpucc_atomic_file_commit(&f);
	else
		gpucc_atomic_file_abort(&f);
	gpucc_error_clear();
}

/* A copy of the first of dirs (NULL entries skipped) that holds file, or
 * NULL. */
static char *first_dir_with(const char *const *dirs, size_t count, const char *file)
{
	for (size_t i = 0; i < count; i++) {
		char *path = join_if(dirs[i], file, false);
		if (path) {
			free(path);
			return strdup(dirs[i]);
		}
	}
	return NULL;
}

int gpucc_toolchain_init(gpucc_toolchain *tc, const char *memo_dir)
{
	memset(tc, 0, sizeof *tc);
	tc->libdevice = cuda_file("nvvm/libdevice/libdevice.10.bc", false);
	const gpucc_config *cfg = gpucc_config_current();
	const char *rocm_dirs[] = {cfg->rocm_device_libs,
	                           "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode",
	                           "/opt/rocm/amdgcn/bitcode"};
	tc->rocm_dir = first_dir_with(rocm_dirs, sizeof rocm_dirs / sizeof rocm_dirs[0], "ocml.bc");
	/* Debian's libclc-19 (nvptx64--nvidiacl.bc, amdgcn--amdhsa.bc). */
	const char *clc_dirs[] = {cfg->libclc_dir, "/usr/lib/clc",
	                          "/usr/lib/llvm-19/lib/clc"};
	tc->libclc_dir =
		first_dir_with(clc_dirs, sizeof clc_dirs / sizeof clc_dirs[0], "amdgcn--amdhsa.bc");
	tc->ptxas = cuda_file("bin/ptxas", true);
	if (!tc->ptxas)
		tc->ptxas = search_path("ptxas");
	tc->nvjitlink = gpucc_nvjitlink_find(cfg->nvjitlink);
	if (memo_dir) {
		size_t len = strlen(memo_dir) + sizeof MEMO_FILE + 2;
		tc->memo_path = malloc(len);
		if (!tc->memo_path)
			return gpucc_error_oom();
		snprintf(tc->memo_path, len, "%s/%s", memo_dir, MEMO_FILE);
		memo_load(tc);
	}
	return 0;
}

void gpucc_toolchain_save(gpucc_toolchain *tc)
{
	if (tc->memo_dirty && tc->memo_path)
		memo_save(tc);
	tc->memo_dirty = false;
}

void gpucc_toolchain_release(gpucc_toolchain *tc)
{
	for (size_t i = 0; i < tc->probe_count; i++) { /* started ahead, never asked for */
		int status;
		gpucc_process_kill(&tc->probes[i].process);
		close(tc->probes[i].process.pipes[1]);
		gpucc_process_wait(&tc->probes[i].process, 0, &status, NULL);
		free(tc->probes[i].kind);
		free(tc->probes[i].tool);
	}
	for (size_t i = 0; i < tc->memo_count; i++) {
		free(tc->memos[i].kind);
		free(tc->memos[i].path);
		free(tc->memos[i].value);
	}
	free(tc->memos);
	free(tc->memo_slots);
	free(tc->libdevice);
	free(tc->rocm_dir);
	free(tc->libclc_dir);
	free(tc->ptxas);
	free(tc->nvjitlink);
	for (size_t i = 0; i < tc->ld_lld_count; i++)
		free(tc->ld_llds[i].path);
	free(tc->memo_path);
	memset(tc, 0, sizeof *tc);
}

static int64_t nanoseconds(struct timespec t)
{
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static bool same_identity(const gpucc_file_identity *a, const gpucc_file_identity *b)
{
	return a->size == b->size && a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns &&
	       a->inode == b->inode && a->device == b->device;
}

/* The memo of kind for path, or NULL; *stale tells whether the file has
 * changed since (or cannot be read: then *id is zeroed). */
static gpucc_file_memo *memo_find_stat(gpucc_toolchain *tc, const char *kind, const char *path,
                                       const struct stat *st, gpucc_file_identity *id, bool *stale)
{
	id->size = (uint64_t)st->st_size;
	id->mtime_ns = nanoseconds(st->st_mtim);
	id->ctime_ns = nanoseconds(st->st_ctim);
	id->inode = (uint64_t)st->st_ino;
	id->device = (uint64_t)st->st_dev;
	gpucc_file_memo *m = memo_lookup(tc, kind, path);
	*stale = !m || !same_identity(&m->identity, id);
	return m;
}

static gpucc_file_memo *memo_find(gpucc_toolchain *tc, const char *kind, const char *path,
                                  gpucc_file_identity *id, bool *stale)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		memset(id, 0, sizeof *id);
		*stale = true;
		return NULL;
	}
	return memo_find_stat(tc, kind, path, &st, id, stale);
}

/* Remember value for (kind, path) as of identity id; the memo, or NULL when
 * out of memory. */
static gpucc_file_memo *memo_put(gpucc_toolchain *tc, const char *kind, const char *path,
                                 const gpucc_file_identity *id, const char *value)
{
	gpucc_file_memo *m = memo_lookup(tc, kind, path);
	char *copy = strdup(value);
	if (!copy)
		return NULL;
	if (!m) {
		gpucc_file_memo *grown = realloc(tc->memos, sizeof *grown * (tc->memo_count + 1));
		char *k = strdup(kind), *p = strdup(path);
		if (!grown || !k || !p) {
			if (grown)
				tc->memos = grown;
			free(k);
			free(p);
			free(copy);
			return NULL;
		}
		tc->memos = grown;
		m = &grown[tc->memo_count];
		m->kind = k;
		m->path = p;
		if (!memo_index(tc, tc->memo_count)) {
			free(k);
			free(p);
			free(copy);
			return NULL;
		}
		tc->memo_count++;
		m->value = NULL;
	}
	free(m->value);
	m->value = copy;
	m->identity = *id;
	tc->memo_dirty = true;
	return m;
}

int gpucc_toolchain_digest(gpucc_toolchain *tc, const char *path, gpucc_digest *out)
{
	struct stat st;
	if (stat(path, &st) != 0)
		memset(&st, 0, sizeof st); /* reading it fails below, with the reason */
	return gpucc_toolchain_digest_stat(tc, path, &st, out);
}

int gpucc_toolchain_digest_stat(gpucc_toolchain *tc, const char *path, const struct stat *st,
                                gpucc_digest *out)
{
	gpucc_file_identity id;
	bool stale;
	gpucc_file_memo *m = memo_find_stat(tc, "sha256", path, st, &id, &stale);
	/* 64 hex digits (as gpucc_digest_from_hex asks), decoded in one pass:
	 * a source's hit reads hundreds. */
	if (m && !stale && strlen(m->value) == 2 * GPUCC_DIGEST_SIZE &&
	    gpucc_hex_decode(out->bytes, m->value, GPUCC_DIGEST_SIZE, false))
		return 0;
	int rc = gpucc_digest_file(out, NULL, path);
	if (rc != 0)
		return gpucc_error_prefix("device library");
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, out);
	memo_put(tc, "sha256", path, &id, hex); /* out of memory: hashed again next time */
	return 0;
}

/* How long `tool --version` may take: a hung tool must not hang a build. */
#define VERSION_TIMEOUT_MS 10000

/* Start `tool --version` with stdin and stderr on /dev/null, its standard
 * output on the pipe p->pipes[1], in a process group of its own. */
static int version_start(const char *tool, gpucc_process *p, struct timespec *start)
{
	char *argv[] = {(char *)tool, (char *)"--version", NULL};
	gpucc_process_options o = {
		.streams = {{.kind = GPUCC_PROCESS_NULL},
		            {.kind = GPUCC_PROCESS_PIPE},
		            {.kind = GPUCC_PROCESS_NULL}},
		.own_group = true,
	};
	int err = gpucc_process_start(p, argv, &o);
	if (err) {
		errno = err;
		return gpucc_error_set_errno("cannot run '%s'", tool);
	}
	clock_gettime(CLOCK_MONOTONIC, start);
	return 0;
}

/* The start of what a version_start'ed tool prints, NUL-terminated, in
 * text; the tool is killed (its whole group) when it does not answer
 * within VERSION_TIMEOUT_MS of its start, and waited for either way. */
static int version_finish(const char *tool, gpucc_process *p, const struct timespec *start,
                          char *text, size_t size)
{
	int fd = p->pipes[1];
	size_t used = 0;
	bool timed_out = false;
	for (;;) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long long left = VERSION_TIMEOUT_MS - ((long long)(now.tv_sec - start->tv_sec) * 1000 +
		                                       (now.tv_nsec - start->tv_nsec) / 1000000);
		struct pollfd readable = {fd, POLLIN, 0};
		int ready = left > 0 ? poll(&readable, 1, (int)left) : 0;
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready == 0) {
			timed_out = true;
			break;
		}
		ssize_t n = read(fd, text + used, size - 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
		if (used == size - 1)
			break;
	}
	text[used] = '\0';
	close(fd);
	if (timed_out)
		gpucc_process_kill(p);
	int status;
	gpucc_process_wait(p, 0, &status, NULL);
	if (timed_out)
		return gpucc_error_set(GPUCC_EUNAVAILABLE, "'%s --version' did not answer in %d s",
		                       tool, VERSION_TIMEOUT_MS / 1000);
	return 0;
}

/* What `tool --version` prints (the start of it), from the probe started
 * ahead for (kind, tool) when there is one. */
static int version_output(gpucc_toolchain *tc, const char *kind, const char *tool, char *text,
                          size_t size)
{
	for (size_t i = 0; i < tc->probe_count; i++) {
		struct gpucc_version_probe p = tc->probes[i];
		if (strcmp(p.kind, kind) != 0 || strcmp(p.tool, tool) != 0)
			continue;
		tc->probes[i] = tc->probes[--tc->probe_count];
		int rc = version_finish(tool, &p.process, &p.start, text, size);
		free(p.kind);
		free(p.tool);
		return rc;
	}
	gpucc_process p;
	struct timespec start;
	int rc = version_start(tool, &p, &start);
	return rc != 0 ? rc : version_finish(tool, &p, &start, text, size);
}

/* The version number ("13.0.88") that follows marker in text, into out;
 * false when there is none. */
static bool version_after(const char *text, const char *marker, char *out, size_t size)
{
	const char *v = strstr(text, marker);
	if (!v)
		return false;
	v += strlen(marker);
	size_t len = strspn(v, "0123456789.");
	if (len == 0 || len >= size)
		return false;
	snprintf(out, size, "%.*s", (int)len, v);
	return true;
}

/* Per LLVM backend built, the LLD linked into its worker and the
 * ld.lld-N the build found, with that file's identity then and the version
 * it printed (meson.build). */
static const struct {
	unsigned major;
	const char *lld_version;  /* the worker's LLD's; "": the worker has none */
	const char *ld_lld;       /* "": the build found none */
	gpucc_file_identity identity;
	const char *seen_version; /* "": it printed none */
} built_ld_llds[] = {GPUCC_BUILD_LD_LLDS {0, NULL, NULL, {0, 0, 0, 0, 0}, NULL}};

/* The version the build saw an ld.lld it found print, when id is that
 * file's identity then and kind asks for it; else NULL.  The build's memo,
 * as it were: a file replaced or touched since has another identity, and
 * is asked. */
static const char *build_memo(const char *kind, const gpucc_file_identity *id)
{
	if (strcmp(kind, "ld.lld-version") != 0)
		return NULL;
	for (size_t i = 0; built_ld_llds[i].ld_lld; i++)
		if (*built_ld_llds[i].seen_version && same_identity(&built_ld_llds[i].identity, id))
			return built_ld_llds[i].seen_version;
	return NULL;
}

bool gpucc_toolchain_ld_lld_built_in(unsigned major, const char *path, const char *version)
{
	size_t i = 0;
	while (built_ld_llds[i].ld_lld && built_ld_llds[i].major != major)
		i++;
	if (!built_ld_llds[i].ld_lld || !*built_ld_llds[i].lld_version ||
	    !*built_ld_llds[i].ld_lld || !path || strcmp(version, built_ld_llds[i].lld_version) != 0)
		return false;
	/* One path (the PATH's ld.lld is the one the build found, as a rule)
	 * names one file: resolved once. */
	char *found = realpath(path, NULL);
	if (strcmp(path, built_ld_llds[i].ld_lld) == 0) {
		bool resolved = found != NULL;
		free(found);
		return resolved;
	}
	char *built = realpath(built_ld_llds[i].ld_lld, NULL);
	bool same = found && built && strcmp(found, built) == 0;
	free(found);
	free(built);
	return same;
}

/* The version of tool (the number after marker in what `tool --version`
 * prints), remembered as a memo of kind; owned by tc. */
static int tool_version(gpucc_toolchain *tc, const char *kind, const char *tool,
                        const char *marker, const char **out)
{
	gpucc_file_identity id;
	bool stale;
	gpucc_file_memo *m = memo_find(tc, kind, tool, &id, &stale);
	if (m && !stale) {
		*out = m->value;
		return 0;
	}
	char text[4096], version[64];
	const char *known = build_memo(kind, &id);
	if (known) {
		snprintf(version, sizeof version, "%s", known);
	} else {
		int rc = version_output(tc, kind, tool, text, sizeof text);
		if (rc != 0)
			return rc;
		if (!version_after(text, marker, version, sizeof version))
			return gpucc_error_set(GPUCC_EUNAVAILABLE, "'%s --version' printed no version", tool);
	}
	if (!(m = memo_put(tc, kind, tool, &id, version)))
		return gpucc_error_oom();
	*out = m->value;
	return 0;
}

int gpucc_toolchain_ptxas_version(gpucc_toolchain *tc, const char **out)
{
	if (!tc->ptxas) {
		*out = "none";
		return 0;
	}
	/* "Cuda compilation tools, release 13.0, V13.0.88" */
	return tool_version(tc, "ptxas-version", tc->ptxas, ", V", out);
}

int gpucc_toolchain_nvjitlink_version(gpucc_toolchain *tc, const char **out)
{
	if (!tc->nvjitlink) {
		*out = "none";
		return 0;
	}
	gpucc_file_identity id;
	bool stale;
	gpucc_file_memo *m = memo_find(tc, "nvjitlink-version", tc->nvjitlink, &id, &stale);
	if (m && !stale) {
		*out = m->value;
		return 0;
	}
	char version[64];
	int rc = gpucc_nvjitlink_scan_version(tc->nvjitlink, version, sizeof version);
	if (rc != 0)
		return rc;
	if (!(m = memo_put(tc, "nvjitlink-version", tc->nvjitlink, &id, version)))
		return gpucc_error_oom();
	*out = m->value;
	return 0;
}

/* Keep path as the ld.lld of major in tc (taking it), or free it when tc
 * keeps that path already; the kept copy, or NULL when tc is full. */
static const char *keep_ld_lld(gpucc_toolchain *tc, unsigned major, char *path)
{
	size_t i = 0;
	while (i < tc->ld_lld_count && tc->ld_llds[i].major != major)
		i++;
	if (i < tc->ld_lld_count && strcmp(tc->ld_llds[i].path, path) == 0) {
		free(path); /* the one a caller may hold already */
		return tc->ld_llds[i].path;
	}
	if (i == sizeof tc->ld_llds / sizeof tc->ld_llds[0]) {
		free(path);
		return NULL;
	}
	if (i == tc->ld_lld_count)
		tc->ld_lld_count++;
	else
		free(tc->ld_llds[i].path);
	tc->ld_llds[i] = (struct gpucc_ld_lld){major, path};
	return path;
}

int gpucc_toolchain_ld_lld(gpucc_toolchain *tc, unsigned major, const char **path,
                           const char **version)
{
	char versioned[32], prefix[16];
	snprintf(versioned, sizeof versioned, "ld.lld-%u", major);
	snprintf(prefix, sizeof prefix, "%u.", major);
	const char *const names[] = {versioned, "ld.lld"};
	char refused[1024] = "";
	size_t used = 0;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char *found = search_path(names[i]);
		if (!found)
			continue;
		/* "Debian LLD 19.1.7 (compatible with GNU linkers)" */
		const char *v = NULL;
		int rc = tool_version(tc, "ld.lld-version", found, "LLD ", &v);
		if (rc == 0 && strncmp(v, prefix, strlen(prefix)) == 0) {
			if (!(*path = keep_ld_lld(tc, major, found)))
				return gpucc_error_set(GPUCC_ERROR, "ld.lld of too many LLVM majors asked for");
			*version = v;
			return 0;
		}
		int n = snprintf(refused + used, sizeof refused - used, "%s'%s' (%s%s)", used ? ", " : "",
		                 found, rc == 0 ? "LLD " : "", rc == 0 ? v : gpucc_error_last()->message);
		if (n > 0 && (size_t)n < sizeof refused - used)
			used += (size_t)n;
		free(found);
	}
	gpucc_error_clear();
	if (!used)
		return gpucc_error_set(GPUCC_EUNAVAILABLE,
		                       "%s was not found on PATH: LLD %u links LLVM %u's AMDGPU code "
		                       "objects (install lld-%u)",
		                       versioned, major, major, major);
	return gpucc_error_set(GPUCC_EUNAVAILABLE,
	                       "no LLD %u on PATH, which LLVM %u's AMDGPU code objects are linked "
	                       "with: found %s (install lld-%u)",
	                       major, major, refused, major);
}

bool gpucc_toolchain_has_kind(const gpucc_toolchain *tc, const char *kind)
{
	for (size_t i = 0; i < tc->memo_count; i++)
		if (strcmp(tc->memos[i].kind, kind) == 0)
			return true;
	return false;
}

void gpucc_toolchain_prefetch_version(gpucc_toolchain *tc, const char *kind, const char *tool)
{
	gpucc_file_identity id;
	bool stale;
	gpucc_file_memo *m = memo_find(tc, kind, tool, &id, &stale);
	if ((m && !stale) || tc->probe_count == sizeof tc->probes / sizeof tc->probes[0])
		return;
	for (size_t i = 0; i < tc->probe_count; i++)
		if (strcmp(tc->probes[i].kind, kind) == 0 && strcmp(tc->probes[i].tool, tool) == 0)
			return;
	struct gpucc_version_probe *p = &tc->probes[tc->probe_count];
	p->kind = strdup(kind);
	p->tool = strdup(tool);
	if (p->kind && p->tool && version_start(tool, &p->process, &p->start) == 0) {
		tc->probe_count++;
		return;
	}
	free(p->kind);
	free(p->tool);
	gpucc_error_clear(); /* asked again, and reported, when needed */
}

int gpucc_toolchain_tool_version(gpucc_toolchain *tc, const char *kind, const char *tool,
                                 const char *marker, const char **out)
{
	return tool_version(tc, kind, tool, marker, out);
}
