/*
 * lib/compile_toolchain.c -- finding the device toolchain (libdevice, the
 * ROCm device libraries, ptxas, ld.lld) and remembering what is expensive to
 * learn about it, and reading a module's triple and library needs from its
 * bytes.  None of this loads LLVM: it runs for every compile, hits included.
 *
 * Memos: DIR/compile-toolchain (DIR being the cache directory) holds lines
 *   KIND \t SIZE \t MTIME_NS \t VALUE \t PATH
 * for device library digests ("sha256") and ptxas versions
 * ("ptxas-version").  A memo is used only while the file's size and mtime
 * are unchanged; the file is rewritten atomically when a memo changes, and a
 * missing or garbled file just means hashing again.
 */
#include "compile_internal.h"

#include "atomic_file.h"
#include "errors.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

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
	const char *path = getenv("PATH");
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
	const char *cuda = getenv("CUDA_PATH");
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

static void memo_load(gpucc_toolchain *tc)
{
	FILE *f = fopen(tc->memo_path, "r");
	if (!f)
		return;
	char line[8192];
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		char *fields[5];
		char *p = line;
		int n = 0;
		for (; n < 5 && p; n++) {
			fields[n] = p;
			p = n < 4 ? strchr(p, '\t') : NULL;
			if (p)
				*p++ = '\0';
		}
		if (n != 5 || !*fields[0] || !*fields[4])
			continue;
		gpucc_file_memo *grown = realloc(tc->memos, sizeof *grown * (tc->memo_count + 1));
		if (!grown)
			break;
		tc->memos = grown;
		gpucc_file_memo *m = &grown[tc->memo_count];
		m->kind = strdup(fields[0]);
		m->size = strtoull(fields[1], NULL, 10);
		m->mtime_ns = strtoll(fields[2], NULL, 10);
		m->value = strdup(fields[3]);
		m->path = strdup(fields[4]);
		if (!m->kind || !m->value || !m->path) {
			free(m->kind);
			free(m->value);
			free(m->path);
			break;
		}
		tc->memo_count++;
	}
	fclose(f);
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
		char line[8400];
		int n = snprintf(line, sizeof line, "%s\t%llu\t%lld\t%s\t%s\n", m->kind,
		                 (unsigned long long)m->size, (long long)m->mtime_ns, m->value, m->path);
		if (n > 0 && (size_t)n < sizeof line)
			ok = gpucc_write_all(f.fd, line, (size_t)n) == 0;
	}
	if (ok)
		gpucc_atomic_file_commit(&f);
	else
		gpucc_atomic_file_abort(&f);
	gpucc_error_clear();
}

int gpucc_toolchain_init(gpucc_toolchain *tc, const char *memo_dir)
{
	memset(tc, 0, sizeof *tc);
	tc->libdevice = cuda_file("nvvm/libdevice/libdevice.10.bc", false);
	const char *rocm_dirs[] = {getenv("GPUCC_ROCM_DEVICE_LIBS"),
	                           "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode",
	                           "/opt/rocm/amdgcn/bitcode"};
	for (size_t i = 0; i < sizeof rocm_dirs / sizeof rocm_dirs[0] && !tc->rocm_dir; i++) {
		char *ocml = join_if(rocm_dirs[i], "ocml.bc", false);
		if (ocml) {
			free(ocml);
			tc->rocm_dir = strdup(rocm_dirs[i]);
		}
	}
	tc->ptxas = cuda_file("bin/ptxas", true);
	if (!tc->ptxas)
		tc->ptxas = search_path("ptxas");
	tc->ld_lld = search_path("ld.lld-19");
	if (!tc->ld_lld)
		tc->ld_lld = search_path("ld.lld");
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
	for (size_t i = 0; i < tc->memo_count; i++) {
		free(tc->memos[i].kind);
		free(tc->memos[i].path);
		free(tc->memos[i].value);
	}
	free(tc->memos);
	free(tc->libdevice);
	free(tc->rocm_dir);
	free(tc->ptxas);
	free(tc->ld_lld);
	free(tc->memo_path);
	memset(tc, 0, sizeof *tc);
}

/* The memo of kind for path when it still holds, else NULL; *st receives
 * the file's status (st_size 0 and -1 return when it cannot be read). */
static gpucc_file_memo *memo_find(gpucc_toolchain *tc, const char *kind, const char *path,
                                  struct stat *st, bool *stale)
{
	*stale = false;
	if (stat(path, st) != 0)
		return NULL;
	int64_t mtime = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	for (size_t i = 0; i < tc->memo_count; i++) {
		gpucc_file_memo *m = &tc->memos[i];
		if (strcmp(m->kind, kind) != 0 || strcmp(m->path, path) != 0)
			continue;
		if (m->size == (uint64_t)st->st_size && m->mtime_ns == mtime)
			return m;
		*stale = true;
		return m;
	}
	return NULL;
}

static void memo_put(gpucc_toolchain *tc, const char *kind, const char *path,
                     const struct stat *st, const char *value)
{
	if (!tc->memo_path || strchr(path, '\n') || strchr(path, '\t'))
		return;
	int64_t mtime = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	bool stale;
	struct stat ignored;
	gpucc_file_memo *m = memo_find(tc, kind, path, &ignored, &stale);
	char *copy = strdup(value);
	if (!copy)
		return;
	if (!m) {
		gpucc_file_memo *grown = realloc(tc->memos, sizeof *grown * (tc->memo_count + 1));
		char *k = strdup(kind), *p = strdup(path);
		if (!grown || !k || !p) {
			if (grown)
				tc->memos = grown;
			free(k);
			free(p);
			free(copy);
			return;
		}
		tc->memos = grown;
		m = &grown[tc->memo_count++];
		m->kind = k;
		m->path = p;
		m->value = NULL;
	}
	free(m->value);
	m->value = copy;
	m->size = (uint64_t)st->st_size;
	m->mtime_ns = mtime;
	tc->memo_dirty = true;
}

int gpucc_toolchain_digest(gpucc_toolchain *tc, const char *path, gpucc_digest *out)
{
	struct stat st;
	bool stale;
	gpucc_file_memo *m = memo_find(tc, "sha256", path, &st, &stale);
	if (m && !stale && gpucc_digest_from_hex(out, m->value) == 0)
		return 0;
	int rc = gpucc_digest_file(out, NULL, path);
	if (rc != 0)
		return gpucc_error_prefix("device library");
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, out);
	memo_put(tc, "sha256", path, &st, hex);
	return 0;
}

/* Run `ptxas --version` and take the "V13.0.88" token. */
static int ptxas_version_now(const char *ptxas, char *out, size_t size)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0)
		return gpucc_error_set_errno("cannot run '%s'", ptxas);
	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
	posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
	char *argv[] = {(char *)ptxas, (char *)"--version", NULL};
	pid_t pid;
	int rc = posix_spawn(&pid, ptxas, &actions, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	close(fds[1]);
	if (rc != 0) {
		close(fds[0]);
		errno = rc;
		return gpucc_error_set_errno("cannot run '%s'", ptxas);
	}
	char text[4096];
	size_t used = 0;
	for (;;) {
		ssize_t n = read(fds[0], text + used, sizeof text - 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
		if (used == sizeof text - 1)
			break;
	}
	text[used] = '\0';
	close(fds[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	const char *v = strstr(text, ", V");
	if (!v)
		return gpucc_error_set(GPUCC_EUNAVAILABLE, "'%s --version' printed no version", ptxas);
	v += 3;
	size_t len = strspn(v, "0123456789.");
	if (len == 0 || len >= size)
		return gpucc_error_set(GPUCC_EUNAVAILABLE, "'%s --version' printed no version", ptxas);
	snprintf(out, size, "%.*s", (int)len, v);
	return 0;
}

int gpucc_toolchain_ptxas_version(gpucc_toolchain *tc, const char **out)
{
	if (!tc->ptxas) {
		*out = "none";
		return 0;
	}
	struct stat st;
	bool stale;
	gpucc_file_memo *m = memo_find(tc, "ptxas-version", tc->ptxas, &st, &stale);
	if (m && !stale) {
		*out = m->value;
		return 0;
	}
	char version[64];
	int rc = ptxas_version_now(tc->ptxas, version, sizeof version);
	if (rc != 0)
		return rc;
	memo_put(tc, "ptxas-version", tc->ptxas, &st, version);
	m = memo_find(tc, "ptxas-version", tc->ptxas, &st, &stale);
	if (!m || !tc->memo_path) {
		/* Not kept: remember it for this process in a memo nobody saves. */
		static _Thread_local char kept[64];
		snprintf(kept, sizeof kept, "%s", version);
		*out = kept;
		return 0;
	}
	*out = m->value;
	return 0;
}

/* ---- module facts ------------------------------------------------------------ */

static bool contains(const unsigned char *data, size_t size, const char *needle)
{
	size_t n = strlen(needle);
	for (size_t i = 0; i + n <= size; i++) {
		const unsigned char *hit = memchr(data + i, needle[0], size - i - n + 1);
		if (!hit)
			return false;
		i = (size_t)(hit - data);
		if (memcmp(hit, needle, n) == 0)
			return true;
	}
	return false;
}

/* `target triple = "..."` at the start of a line of .ll text. */
static void text_triple(gpucc_module_facts *out, const unsigned char *data, size_t size)
{
	static const char prefix[] = "target triple";
	out->triple_known = true;
	size_t i = 0;
	while (i < size) {
		size_t end = i;
		while (end < size && data[end] != '\n')
			end++;
		size_t p = i;
		while (p < end && (data[p] == ' ' || data[p] == '\t'))
			p++;
		if (end - p > sizeof prefix && memcmp(data + p, prefix, sizeof prefix - 1) == 0) {
			const unsigned char *q = memchr(data + p, '"', end - p);
			const unsigned char *r = q ? memchr(q + 1, '"', (size_t)(data + end - q - 1)) : NULL;
			if (q && r && (size_t)(r - q - 1) < sizeof out->triple) {
				snprintf(out->triple, sizeof out->triple, "%.*s", (int)(r - q - 1),
				         (const char *)q + 1);
				return;
			}
		}
		i = end + 1;
	}
}

void gpucc_module_facts_read(gpucc_module_facts *out, const unsigned char *data, size_t size)
{
	memset(out, 0, sizeof *out);
	out->bitcode = (size >= 4 && memcmp(data, "BC\xc0\xde", 4) == 0) ||
	               (size >= 4 && memcmp(data, "\xde\xc0\x17\x0b", 4) == 0);
	/* Function names are plain bytes in .ll text and in bitcode's string
	 * table, so a scan finds every library call (and, rarely, a name in a
	 * comment: then a library is linked for nothing). */
	out->calls_libdevice = contains(data, size, "__nv_");
	out->calls_rocm = contains(data, size, "__ocml_") || contains(data, size, "__ockl_");
	if (out->bitcode)
		gpucc_bitcode_triple(out, data, size);
	else
		text_triple(out, data, size);
}
