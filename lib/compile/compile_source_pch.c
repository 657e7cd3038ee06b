/*
 * lib/compile/compile_source_pch.c -- the vendor prelude, precompiled once
 * (lib/compile/compile_source.h, "the prelude"; docs/compile.md, "The
 * precompiled prelude").
 *
 * Before it reads a line of a CUDA or HIP unit, clang's front end parses
 * the runtime wrapper its driver includes implicitly (-include
 * __clang_cuda_runtime_wrapper.h, which pulls in the toolkit's runtime
 * headers, or HIP's): most of a small unit's front-end time.  A run groups
 * its clang command lines by everything but the unit's own parts (the
 * input, the outputs, -v, HIP's -cuid), and gets, the first time a group
 * needs it, a precompiled header of a unit compiled with the group's
 * command line: that prelude, and for HIP redeclarations (prelude_text);
 * for a HIP unit whose first directive is #include <hip/hip_runtime.h>,
 * the extended prelude, that header too (gpucc_source_prelude_runtime: a
 * group of its own).  Every unit of the group then reads it with
 * -include-pch; the wrapper's -include that follows, and the extended
 * prelude's include, are skipped by their include guards.  A unit of a
 * group smaller than GPUCC_PCH_GROUP_MIN reads the cache's, but makes none
 * (it would cost more than it saves).  The PCH embeds the files it read
 * (-fmodules-embed-all-files), so that it does not need the run's
 * temporary directory (the CUDA stubs) once that is gone.
 *
 * With a cache, a PCH is a record of the cache's (formats/cache.md,
 * "Precompiled preludes"; gc and verify: lib/cache/cache_pch.c), named by
 * the clang version, the language, the target, every keyed argument of
 * the group and the variables clang reads, and listing every file its
 * making read with its SHA-256 and every place its include search found
 * empty, as a source's direct-mode record does (record_prepare, checked
 * by files_unchanged).  A later run uses it when each still is so and the
 * PCH still has its SHA-256; else it makes a new one and stores it in its
 * place.  Without a cache (or for a making clang ran while a file
 * changed), the PCH is the run's, in its temporary directory.
 *
 * What holds, and why the rule is narrow (gpucc_source_pch_applies):
 *  - The bitcode is byte-identical to the compile without the PCH
 *    (checked against --no-pch runs by cmd/tests/compile_sources_pch.sh):
 *    for CUDA, whose wrapper defines nothing a unit must emit, and for HIP
 *    (clang 19 and 22) through the redeclarations of prelude_text, which
 *    keep the order of the definitions HIP's wrapper and runtime header
 *    make every unit emit.  Each PCH is proven so before it is used or
 *    stored: its probe (make_pch) compiles to the same bitcode with it as
 *    without.  OpenCL C has no such prelude.
 *  - IR with inline assembly names its source offsets (!srcloc), which a
 *    PCH moves: the caller makes such IR again without the PCH
 *    (gpucc_source_pch_ir_trusted), and a unit whose text shows inline
 *    assembly, or a library made of it, is not tried with one
 *    (gpucc_source_pch_worth).
 *  - Debug info (DWARF of types read from a PCH), relocatable device code
 *    (statics named after the unit) and a -include of the user's (which
 *    would land in the PCH) are not shown to keep the IR: none of those
 *    compiles uses one.
 *  - A PCH clang refuses (a header's size or mtime changed under it) fails
 *    the unit's compile: the caller compiles it again without one and
 *    reports it here (gpucc_source_pch_refused); the group's next unit
 *    makes a new one (not from the cache), and a group refused twice in a
 *    run gets no PCH.
 *
 * Thread safety: every function but _new and _free may be called from many
 * threads at once; the first thread of a group gets its PCH while the
 * others of that group wait.
 */
#include "compile_source_run.h"

#include "atomic_file.h"
#include "cache_internal.h"
#include "errors.h"
#include "input_file.h"
#include "sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* STALE: clang refused its PCH once; the next unit makes another. */
typedef enum group_state { GROUP_MAKING, GROUP_READY, GROUP_STALE, GROUP_FAILED } group_state;

typedef struct pch_group {
	unsigned char digest[32]; /* of the command line, as pch_group_digest takes it */
	group_state state;
	unsigned refusals;        /* units that failed with the PCH and compiled without it */
	unsigned made;            /* PCHs made for it, to name the next */
	bool skip_cache;          /* the cache's was refused: make a new one */
	bool cached;              /* path is the cache's PCH, not the run's */
	char *path;               /* GROUP_READY: the PCH */
} pch_group;

struct gpucc_source_pch_set {
	pthread_mutex_t lock;
	pthread_cond_t changed; /* a group left GROUP_MAKING */
	pch_group *groups;
	size_t count, capacity;
	gpucc_source_tool_runner run;
	unsigned timeout_seconds;
};

int gpucc_source_pch_set_new(gpucc_source_pch_set **out, gpucc_source_tool_runner run,
                             unsigned timeout_seconds)
{
	*out = calloc(1, sizeof **out);
	if (!*out)
		return -1;
	pthread_mutex_init(&(*out)->lock, NULL);
	pthread_cond_init(&(*out)->changed, NULL);
	(*out)->run = run;
	(*out)->timeout_seconds = timeout_seconds;
	return 0;
}

void gpucc_source_pch_set_free(gpucc_source_pch_set *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->count; i++)
		free(set->groups[i].path);
	free(set->groups);
	pthread_cond_destroy(&set->changed);
	pthread_mutex_destroy(&set->lock);
	free(set);
}

bool gpucc_source_pch_applies(gpucc_source_language language, bool debug_info, bool relocatable,
                              const char *const *user_args, size_t count)
{
	if ((language != GPUCC_LANGUAGE_CUDA && language != GPUCC_LANGUAGE_HIP) || debug_info ||
	    relocatable)
		return false;
	for (size_t i = 0; i < count; i++) {
		const char *v = user_args[i];
		if (strncmp(v, "-include", 8) == 0 || strncmp(v, "--include", 9) == 0 ||
		    strncmp(v, "-imacros", 8) == 0 || strncmp(v, "--imacros", 9) == 0 ||
		    strncmp(v, "-g", 2) == 0 || strcmp(v, "-fgpu-rdc") == 0)
			return false;
	}
	return true;
}

static bool text_has(const unsigned char *text, size_t size, const char *needle)
{
	size_t n = strlen(needle);
	for (size_t i = 0; i + n <= size; i++)
		if (text[i] == (unsigned char)needle[0] && memcmp(text + i, needle, n) == 0)
			return true;
	return false;
}

bool gpucc_source_pch_worth(const unsigned char *text, size_t size)
{
	/* Inline assembly of the unit's own, and the libraries made of it. */
	static const char *const asm_heavy[] = {"asm", "<cub/", "\"cub/", "<thrust/", "\"thrust/",
	                                        "cooperative_groups", "<cuda/", "\"cuda/", "mma.h"};
	for (size_t i = 0; i < sizeof asm_heavy / sizeof asm_heavy[0]; i++)
		if (text_has(text, size, asm_heavy[i]))
			return false;
	return true;
}

/* The include the extended prelude takes from a HIP unit's first line. */
#define RUNTIME_INCLUDE "#include <hip/hip_runtime.h>"

/* s past white space and comments (line breaks too when lines), or NULL
 * at a backslash-newline or an unended comment (not read: no extended
 * prelude). */
static const unsigned char *skip_blank(const unsigned char *s, const unsigned char *end,
                                       bool lines)
{
	while (s < end) {
		if (*s == ' ' || *s == '\t' || *s == '\f' || *s == '\v' || *s == '\r' ||
		    (lines && *s == '\n')) {
			s++;
		} else if (*s == '\\') {
			return NULL;
		} else if (end - s >= 2 && s[0] == '/' && s[1] == '/') {
			while (s < end && *s != '\n')
				if (*s++ == '\\')
					return NULL;
		} else if (end - s >= 2 && s[0] == '/' && s[1] == '*') {
			const unsigned char *close = NULL;
			for (const unsigned char *t = s + 2; t + 1 < end && !close; t++)
				if (t[0] == '*' && t[1] == '/')
					close = t;
			if (!close)
				return NULL;
			s = close + 2;
		} else {
			break;
		}
	}
	return s;
}

bool gpucc_source_prelude_runtime(gpucc_source_language language, const unsigned char *text,
                                  size_t size)
{
	if (language != GPUCC_LANGUAGE_HIP)
		return false;
	const unsigned char *end = text + size;
	const unsigned char *s = skip_blank(text, end, true);
	if (!s || s == end || *s != '#')
		return false;
	s = skip_blank(s + 1, end, false);
	static const char include[] = "include", header[] = "<hip/hip_runtime.h>";
	if (!s || (size_t)(end - s) < sizeof include - 1 || memcmp(s, include, sizeof include - 1) != 0)
		return false;
	s = skip_blank(s + sizeof include - 1, end, false);
	if (!s || (size_t)(end - s) < sizeof header - 1 || memcmp(s, header, sizeof header - 1) != 0)
		return false;
	s = skip_blank(s + sizeof header - 1, end, false);
	return s && (s == end || *s == '\n');
}

/* The arguments of argv that are the unit's own, which neither the group
 * nor the PCH's command line takes: how many to skip at argv[i] (0: none;
 * (size_t)-1: this and every later one, the input after "--"). */
static size_t unit_own(char *const *argv, size_t i)
{
	const char *v = argv[i];
	if (strcmp(v, "--") == 0)
		return (size_t)-1;
	if (strcmp(v, "-v") == 0 || strcmp(v, "-MD") == 0 || strncmp(v, "-cuid=", 6) == 0)
		return 1;
	if ((strcmp(v, "-MF") == 0 || strcmp(v, "-o") == 0) && argv[i + 1])
		return 2;
	return 0;
}

/* The index of the first argument from i on that the group shares (not
 * the unit's own: unit_own), or (size_t)-1 at the end. */
static size_t next_group_arg(char *const *argv, size_t i)
{
	while (argv[i]) {
		size_t skip = unit_own(argv, i);
		if (skip == (size_t)-1)
			return (size_t)-1;
		if (!skip)
			return i;
		i += skip;
	}
	return (size_t)-1;
}

static void pch_group_digest(unsigned char out[32], char *const *argv, bool runtime)
{
	gpucc_sha256 h;
	gpucc_sha256_init(&h);
	unsigned char prelude = runtime; /* the plain and the extended prelude: two groups */
	gpucc_sha256_update(&h, &prelude, 1);
	for (size_t i = 0; (i = next_group_arg(argv, i)) != (size_t)-1; i++) {
		/* Length-prefixed, so that no two lists hash alike. */
		unsigned long long len = strlen(argv[i]);
		gpucc_sha256_update(&h, &len, sizeof len);
		gpucc_sha256_update(&h, argv[i], len);
	}
	gpucc_sha256_final(&h, out);
}

/* The text of the unit a group's PCH is made of, after the wrapper clang
 * includes implicitly.  HIP's wrapper defines __cxa_pure_virtual and
 * __cxa_deleted_virtual inside extern "C" { }, and hip/hip_runtime.h
 * defines __assert_fail and __assertfail so: definitions every unit emits.
 * A unit emits the definitions a PCH holds in the order of their
 * declarations' IDs there, and clang's writer numbers a declaration whose
 * lexical home is not the translation unit (a linkage specification's)
 * when the translation unit's lookup table, sorted by name, first names
 * it: in name order, not the source's.  A redeclaration at the top level
 * is what that table names instead, and the definitions are numbered with
 * their extern "C" block, in the source's order: the unit's IR is the IR
 * without a PCH again.  The redeclarations spell the types of Debian's HIP
 * (5.2); a HIP whose types differ fails to make the PCH, and one that
 * defines more such functions fails the probe (make_pch): no PCH either
 * way, never another IR.  CUDA's wrapper defines nothing a unit emits: an
 * empty unit. */
static const char *prelude_text(gpucc_source_language language, bool runtime)
{
	if (language != GPUCC_LANGUAGE_HIP)
		return "";
	return runtime ? RUNTIME_INCLUDE "\n"
	                 "__device__ void __cxa_pure_virtual(void);\n"
	                 "__device__ void __cxa_deleted_virtual(void);\n"
	                 "__device__ void __assert_fail(const char *, const char *, unsigned int, "
	                 "const char *);\n"
	                 "__device__ void __assertfail(const char *, const char *, unsigned int, "
	                 "const char *, size_t);\n"
	               : "__device__ void __cxa_pure_virtual(void);\n"
	                 "__device__ void __cxa_deleted_virtual(void);\n";
}

/* What the probe compiles (make_pch): a unit that is the prelude and
 * nothing else, which emits exactly the definitions every unit reading
 * the PCH emits from it. */
static const char *probe_text(bool runtime)
{
	return runtime ? RUNTIME_INCLUDE "\n" : "";
}

/* ---- the cache's preludes ------------------------------------------------------ */

/* The name of the group's prelude in the cache (formats/cache.md,
 * "Precompiled preludes"); false when there is none (no clang version). */
static bool prelude_name(gpucc_digest *out, const context *x, const gpucc_source_pair *p,
                         const arglist *a, bool runtime)
{
	const char *version = pair_clang22(p) ? x->clang22_version : x->clang_version;
	if (!version || !x->env_key)
		return false;
	gpucc_sha256 h;
	gpucc_sha256_init(&h);
	name_text(&h, GPUCC_PRELUDE_MAGIC);
	name_text(&h, gpucc_version());
	name_text(&h, version);
	/* As gpucc_source_language_name spells them (compile_source.c, which
	 * calls this file: not called back). */
	name_text(&h, p->language == GPUCC_LANGUAGE_HIP ? "HIP" : "CUDA");
	name_text(&h, p->target_name);
	for (size_t i = 0; (i = next_group_arg(a->real, i)) != (size_t)-1; i++)
		if (a->keyed[i])
			name_text(&h, a->keyed[i]);
	name_text(&h, "--");
	name_text(&h, x->env_key);
	name_text(&h, prelude_text(p->language, runtime));
	gpucc_sha256_final(&h, out->bytes);
	return true;
}

/* CACHE/v1/pch/ab/NAME.SUFFIX, or NULL. */
static char *prelude_path(const context *x, const gpucc_digest *name, const char *suffix)
{
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, name);
	return string_printf("%s/" GPUCC_CACHE_LAYOUT_DIR "/pch/%.2s/%s.%s",
	                     gpucc_cache_dir(x->s->cache), hex, hex, suffix);
}

/* The cache's PCH for name when its record holds, every file it lists is
 * unchanged and the PCH has its SHA-256 (owned), else NULL: a miss, made
 * anew. */
static char *cached_prelude(context *x, const gpucc_digest *name)
{
	char *record = prelude_path(x, name, "prelude");
	char *pch = prelude_path(x, name, "pch");
	size_t size = 0;
	char *text = record && pch ? gpucc_read_small_file(record, GPUCC_PRELUDE_RECORD_MAX_BYTES, &size)
	                           : NULL;
	gpucc_prelude_record r;
	bool ok = text && !gpucc_prelude_record_parse(text, size, &r);
	gpucc_error_clear();
	if (ok) {
		char *line = (char *)r.lines; /* files_unchanged ends its lines */
		char *why = NULL;
		gpucc_strlist files = {0};
		ok = files_unchanged(x, &line, r.count, &why, &files);
		gpucc_strlist_release(&files);
		free(why);
	}
	gpucc_digest got;
	uint64_t got_size = 0;
	struct stat st;
	ok = ok && stat(pch, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == r.pch_size &&
	     gpucc_digest_file(&got, &got_size, pch) == 0 && got_size == r.pch_size &&
	     gpucc_digest_compare(&got, &r.pch) == 0;
	gpucc_error_clear();
	/* A use: the record's mtime is the prelude's recency, as an entry's. */
	if (ok && x->records_writable)
		utimensat(AT_FDCWD, record, NULL, 0);
	free(text);
	free(record);
	if (!ok) {
		free(pch);
		return NULL;
	}
	return pch;
}

static int sink_to_fd(void *ctx, const void *data, size_t size)
{
	return gpucc_write_all(*(int *)ctx, data, size) == 0 ? 0 : gpucc_error_set_errno("cannot write");
}

/* Make CACHE/v1/pch and its shard for path, CACHE/v1/pch/ab/NAME (v1
 * exists in a cache that takes records). */
static int mkdir_parent(const char *path)
{
	char *dir = strdup(path);
	if (!dir)
		return -1;
	*strrchr(dir, '/') = '\0';
	char *shard = strrchr(dir, '/');
	*shard = '\0';
	int rc = mkdir(dir, 0777) == 0 || errno == EEXIST ? 0 : -1;
	*shard = '/';
	if (rc == 0 && mkdir(dir, 0777) != 0 && errno != EEXIST)
		rc = -1;
	free(dir);
	return rc;
}

/* Publish the PCH at made and its record (the files, as record_prepare
 * lists them: "N\n" and N lines) as the cache's prelude name: the PCH
 * first, so that a record is never ahead of its PCH.  Silent: a prelude not
 * stored is made again next time. */
static void store_prelude(context *x, const gpucc_digest *name, const char *made, const char *files)
{
	char *record = prelude_path(x, name, "prelude");
	char *pch = prelude_path(x, name, "pch");
	char *count_end = strchr(files, '\n');
	gpucc_atomic_file f;
	gpucc_digest digest;
	uint64_t size = 0;
	if (!record || !pch || !count_end || mkdir_parent(pch) != 0 ||
	    gpucc_atomic_file_open(&f, pch) != 0)
		goto done;
	f.no_sync = true; /* a prelude lost to a crash is made again: never a wrong one */
	f.no_sweep = true;
	if (gpucc_digest_file_to(&digest, &size, made, sink_to_fd, &f.fd) != 0) {
		gpucc_atomic_file_abort(&f);
		goto done;
	}
	if (gpucc_atomic_file_commit(&f) != 0)
		goto done;
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &digest);
	gpucc_buffer t = GPUCC_BUFFER_INIT;
	char head[256];
	snprintf(head, sizeof head, "%s\npch %s %llu\nfiles %.*s\n", GPUCC_PRELUDE_MAGIC, hex,
	         (unsigned long long)size, (int)(count_end - files), files);
	gpucc_buffer_append_string(&t, head);
	gpucc_buffer_append_string(&t, count_end + 1);
	if (!t.failed && gpucc_atomic_file_open(&f, record) == 0) {
		f.no_sync = true;
		f.no_sweep = true;
		if (gpucc_write_all(f.fd, t.data, t.size) == 0)
			gpucc_atomic_file_commit(&f);
		else
			gpucc_atomic_file_abort(&f);
	}
	free(t.data);
done:
	gpucc_error_clear();
	free(record);
	free(pch);
}

/* ---- making one --------------------------------------------------------------- */

/* A probe's compile: the group's arguments (argv, as next_group_arg
 * takes them), a fixed -cuid (else HIP's names itself after the command
 * line), and with_pch's -include-pch when not NULL, or with bare no
 * prelude at all (-nocudainc: no wrapper, no runtime headers); the
 * bitcode to out.  Whether clang wrote it. */
typedef struct probe_run {
	gpucc_source_pch_set *set;
	char *const *argv;
	const char *unit, *out, *err, *with_pch;
	bool bare;
	bool ok;
} probe_run;

static void *run_probe(void *arg)
{
	probe_run *r = arg;
	r->ok = false;
	unlink(r->out); /* an earlier probe's, when run again */
	size_t n = 0;
	while (r->argv[n])
		n++;
	char **args = calloc(n + 12, sizeof *args);
	int err_fd = args ? open(r->err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
	if (err_fd >= 0) {
		size_t k = 0;
		for (size_t i = 0; (i = next_group_arg(r->argv, i)) != (size_t)-1; i++)
			args[k++] = r->argv[i];
		args[k++] = "-cuid=gpucc-prelude-probe";
		if (r->bare)
			args[k++] = "-nocudainc";
		if (r->with_pch) {
			args[k++] = "-Xclang";
			args[k++] = "-include-pch";
			args[k++] = "-Xclang";
			args[k++] = (char *)r->with_pch;
		}
		args[k++] = "-o";
		args[k++] = (char *)r->out;
		args[k++] = "--";
		args[k++] = (char *)r->unit;
		args[k] = NULL;
		int status = 0;
		bool timed_out = false;
		int rc = r->set->run(args, err_fd, r->set->timeout_seconds, &status, &timed_out);
		close(err_fd);
		if (rc != 0)
			gpucc_error_clear();
		struct stat st;
		r->ok = rc == 0 && !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
		        stat(r->out, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
	}
	free(args);
	return NULL;
}

/* Whether the files at a and b hold the same bytes. */
static bool same_bytes(const char *a, const char *b)
{
	size_t a_size = 0, b_size = 0;
	char *a_text = gpucc_read_small_file(a, (size_t)1 << 30, &a_size);
	char *b_text = a_text ? gpucc_read_small_file(b, (size_t)1 << 30, &b_size) : NULL;
	bool same = a_text && b_text && a_size == b_size && memcmp(a_text, b_text, a_size) == 0;
	if (!same)
		gpucc_error_clear();
	free(a_text);
	free(b_text);
	return same;
}

/* Make the group's PCH at pch_path from a unit of prelude_text's, beside
 * it, with the group's command line, and prove it: the probe, a unit that
 * is the prelude and nothing else (probe_text), compiled with the PCH is
 * the bitcode it is without (compiled on another thread while the PCH is
 * made), or, for CUDA, first the bitcode it is with no prelude at all
 * (-nocudainc): then the PCH makes a unit emit nothing of its own, and the
 * parse of the prelude without it is saved.  What the probe emits is what
 * the PCH makes every unit emit, in
 * the order it makes them emit it (the definitions of the prelude a unit
 * emits whether it uses them or not); what a unit emits for its own uses
 * comes in the order of its uses, with or without a PCH.  With name (a
 * cache that takes it), store a proven PCH there too, with the files its
 * making read.  Whether clang made it and the probe proved it. */
static bool make_pch(gpucc_source_pch_set *set, context *x, const gpucc_source_pair *p,
                     char *const *argv, const char *pch_path, const gpucc_digest *name,
                     bool runtime)
{
	size_t n = 0;
	while (argv[n])
		n++;
	char *err = NULL, *dep = NULL, *unit_path = NULL, *probe_path = NULL;
	char *probe_out[2] = {NULL, NULL}, *probe_err[2] = {NULL, NULL};
	char **args = calloc(n + 16, sizeof *args);
	bool made = false, probing = false;
	probe_run without = {0};
	pthread_t without_thread;
	if (!args || asprintf(&err, "%s.err", pch_path) < 0 ||
	    asprintf(&dep, "%s.d", pch_path) < 0 || asprintf(&unit_path, "%s.unit", pch_path) < 0 ||
	    asprintf(&probe_path, "%s.probe", pch_path) < 0 ||
	    asprintf(&probe_out[0], "%s.probe.0.bc", pch_path) < 0 ||
	    asprintf(&probe_out[1], "%s.probe.1.bc", pch_path) < 0 ||
	    asprintf(&probe_err[0], "%s.probe.0.err", pch_path) < 0 ||
	    asprintf(&probe_err[1], "%s.probe.1.err", pch_path) < 0)
		goto cleanup;
	/* The PCH embeds it (below): it may go once the PCH is made. */
	const char *text = prelude_text(p->language, runtime);
	const char *probe = probe_text(runtime);
	int unit_fd = open(unit_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (unit_fd < 0)
		goto cleanup;
	bool written = gpucc_write_all(unit_fd, text, strlen(text)) == 0;
	if (close(unit_fd) != 0 || !written)
		goto cleanup;
	int probe_fd = open(probe_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (probe_fd < 0)
		goto cleanup;
	written = gpucc_write_all(probe_fd, probe, strlen(probe)) == 0;
	if (close(probe_fd) != 0 || !written)
		goto cleanup;
	/* CUDA's prelude defines nothing a unit emits: the probe with the
	 * PCH is first held against the probe with no prelude at all, a
	 * twentieth of a parse of the prelude; HIP's defines functions every
	 * unit emits, whose order is what is to be proven. */
	bool bare_first = p->language == GPUCC_LANGUAGE_CUDA;
	without = (probe_run){.set = set, .argv = argv, .unit = probe_path, .out = probe_out[0],
	                      .err = probe_err[0], .bare = bare_first};
	probing = pthread_create(&without_thread, NULL, run_probe, &without) == 0;
	if (!probing)
		goto cleanup;
	size_t k = 0;
	for (size_t i = 0; (i = next_group_arg(argv, i)) != (size_t)-1; i++)
		args[k++] = argv[i];
	if (name) { /* what the record lists: the include search, the files read */
		args[k++] = "-v";
		args[k++] = "-MD";
		args[k++] = "-MF";
		args[k++] = dep;
	}
	/* The files it read, inside it: it outlives the run's stubs. */
	args[k++] = "-Xclang";
	args[k++] = "-fmodules-embed-all-files";
	/* -emit-pch, the front end's last action, replaces -emit-llvm's. */
	args[k++] = "-Xclang";
	args[k++] = "-emit-pch";
	args[k++] = "-o";
	args[k++] = (char *)pch_path;
	args[k++] = "--";
	args[k++] = unit_path;
	args[k] = NULL;
	int err_fd = open(err, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (err_fd < 0)
		goto cleanup;
	int status = 0;
	bool timed_out = false;
	int64_t start = file_clock_ns();
	int rc = set->run(args, err_fd, set->timeout_seconds, &status, &timed_out);
	close(err_fd);
	struct stat st;
	made = rc == 0 && !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	       stat(pch_path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
	if (rc != 0)
		gpucc_error_clear();
	pthread_join(without_thread, NULL);
	probing = false;
	if (made) {
		probe_run with = {.set = set, .argv = argv, .unit = probe_path, .out = probe_out[1],
		                  .err = probe_err[1], .with_pch = pch_path};
		run_probe(&with);
		made = without.ok && with.ok && same_bytes(probe_out[0], probe_out[1]);
		if (!made && with.ok && bare_first) { /* it emits something: the probe without it */
			without.bare = false;
			run_probe(&without);
			made = without.ok && same_bytes(probe_out[0], probe_out[1]);
		}
	}
	if (made && name) {
		size_t err_size = 0, dep_size = 0;
		char *err_text = gpucc_read_small_file(err, 1 << 20, &err_size);
		char *dep_text = gpucc_read_small_file(dep, RECORD_MAX_BYTES, &dep_size);
		gpucc_clang_search search = {0};
		gpucc_depfile deps = {0};
		if (err_text)
			gpucc_clang_verbose_take(err_text, &search);
		bool have = err_text && dep_text && gpucc_depfile_parse(&deps, dep_text, dep_size) == 0;
		gpucc_source_pair unit = *p; /* its directory is the run's: "." instead */
		unit.path = "-";
		gpucc_source_result listed = {0};
		char *why = have && search.angle.count
		                ? record_prepare(x, &unit, &deps, &search, start, &listed)
		                : NULL;
		if (have && search.angle.count && !why && listed.record)
			store_prelude(x, name, pch_path, listed.record);
		gpucc_error_clear();
		free(why);
		free(listed.record);
		if (have)
			gpucc_depfile_release(&deps);
		gpucc_clang_search_release(&search);
		free(err_text);
		free(dep_text);
	}
cleanup:
	if (probing)
		pthread_join(without_thread, NULL);
	const char *temporary[] = {err, dep, unit_path, probe_path, probe_out[0], probe_out[1],
	                           probe_err[0], probe_err[1]};
	for (size_t i = 0; i < sizeof temporary / sizeof temporary[0]; i++)
		if (temporary[i])
			unlink(temporary[i]);
	if (!made && pch_path)
		unlink(pch_path);
	free(err);
	free(dep);
	free(unit_path);
	free(probe_path);
	for (int i = 0; i < 2; i++) {
		free(probe_out[i]);
		free(probe_err[i]);
	}
	free(args);
	return made;
}

/* The group's PCH, with the plain or the extended prelude (runtime): as
 * gpucc_source_pch_get says. */
static char *group_pch(gpucc_source_pch_set *set, context *x, const gpucc_source_pair *p,
                       const arglist *a, bool may_make, bool runtime)
{
	char *const *argv = a->real;
	unsigned char digest[32];
	pch_group_digest(digest, argv, runtime);
	pthread_mutex_lock(&set->lock);
	pch_group *g = NULL;
	for (;;) {
		g = NULL;
		for (size_t i = 0; i < set->count && !g; i++)
			if (memcmp(set->groups[i].digest, digest, sizeof digest) == 0)
				g = &set->groups[i];
		if (!g || g->state != GROUP_MAKING)
			break;
		pthread_cond_wait(&set->changed, &set->lock);
	}
	char *out = NULL;
	if (g && g->state == GROUP_READY) {
		out = strdup(g->path);
		pthread_mutex_unlock(&set->lock);
		return out;
	}
	if (g && g->state == GROUP_FAILED) {
		pthread_mutex_unlock(&set->lock);
		return NULL;
	}
	if (!g) {
		if (set->count == set->capacity) {
			size_t cap = set->capacity ? 2 * set->capacity : 8;
			pch_group *more = realloc(set->groups, cap * sizeof *more);
			if (!more) {
				pthread_mutex_unlock(&set->lock);
				return NULL;
			}
			set->groups = more;
			set->capacity = cap;
		}
		g = &set->groups[set->count];
		memset(g, 0, sizeof *g);
		memcpy(g->digest, digest, sizeof digest);
		g->state = GROUP_MAKING;
		set->count++;
	}
	g->state = GROUP_MAKING;
	size_t index = (size_t)(g - set->groups);
	unsigned made = g->made++;
	bool skip_cache = g->skip_cache;
	pthread_mutex_unlock(&set->lock);

	gpucc_digest name;
	bool named = x->records_dir && x->s->cache && prelude_name(&name, x, p, a, runtime);
	char *path = named && !skip_cache ? cached_prelude(x, &name) : NULL;
	bool cached = path != NULL, ok = cached;
	if (!cached && may_make) {
		if (asprintf(&path, "%s/prelude-%zu-%u.pch", x->temp_dir, index, made) < 0)
			path = NULL;
		ok = path && make_pch(set, x, p, argv, path,
		                      named && x->records_writable ? &name : NULL, runtime);
	}

	pthread_mutex_lock(&set->lock);
	g = &set->groups[index]; /* the array may have moved */
	free(g->path);
	g->path = ok ? path : NULL;
	g->cached = cached;
	/* Not made here (a lone unit, none cached): a later unit may make it. */
	g->state = ok ? GROUP_READY : cached || may_make ? GROUP_FAILED : GROUP_STALE;
	if (ok)
		out = strdup(path);
	else
		free(path);
	pthread_cond_broadcast(&set->changed);
	pthread_mutex_unlock(&set->lock);
	return out;
}

char *gpucc_source_pch_get(gpucc_source_pch_set *set, struct context *x,
                           const gpucc_source_pair *p, const struct arglist *a, bool may_make,
                           bool *runtime)
{
	/* A unit whose extended prelude has none (its PCH failed the probe,
	 * say) reads the plain one. */
	char *out = NULL;
	*runtime = gpucc_source_prelude_runtime(p->language, p->data, p->size);
	if (*runtime)
		out = group_pch(set, x, p, a, may_make, true);
	if (!out) {
		*runtime = false;
		out = group_pch(set, x, p, a, may_make, false);
	}
	return out;
}

void gpucc_source_pch_refused(gpucc_source_pch_set *set, const char *path)
{
	pthread_mutex_lock(&set->lock);
	for (size_t i = 0; i < set->count; i++) {
		pch_group *g = &set->groups[i];
		if (g->state != GROUP_READY || !g->path || strcmp(g->path, path) != 0)
			continue;
		/* The next unit of the group makes a new one (a header may have
		 * changed since), and stores it in the cache's place; a second
		 * refusal ends the group's PCH. */
		g->refusals++;
		if (!g->cached) {
			unlink(g->path);
		} else {
			/* No later run reads it: its record goes, and gc takes the
			 * PCH left alone unless a new one replaces it first. */
			size_t len = strlen(g->path);
			char *record = string_printf("%.*s.prelude", (int)(len - 4), g->path);
			if (record)
				unlink(record);
			free(record);
		}
		g->skip_cache = true;
		free(g->path);
		g->path = NULL;
		g->state = g->refusals >= 2 ? GROUP_FAILED : GROUP_STALE;
		break;
	}
	pthread_mutex_unlock(&set->lock);
}

/* Whether path is a unit make_pch wrote: DIR/prelude-N-M.pch.unit. */
static bool is_pch_unit(const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t len = strlen(path);
	return slash && strncmp(slash + 1, "prelude-", 8) == 0 && len > 9 &&
	       strcmp(path + len - 9, ".pch.unit") == 0;
}

void gpucc_source_pch_rehome(gpucc_depfile *deps, const char *temp_dir)
{
	char *dir = NULL; /* "DIR/": the making run's temporary directory */
	for (size_t i = 0; i < deps->count && !dir; i++)
		if (is_pch_unit(deps->paths[i]))
			dir = strndup(deps->paths[i],
			              (size_t)(strrchr(deps->paths[i], '/') - deps->paths[i]) + 1);
	if (!dir)
		return;
	size_t len = strlen(dir);
	for (size_t i = 0; i < deps->count; i++) {
		if (strncmp(deps->paths[i], dir, len) != 0)
			continue;
		char *moved = string_printf("%s/%s", temp_dir, deps->paths[i] + len);
		if (moved) { /* out of memory: left, and the unit is not recorded */
			free(deps->paths[i]);
			deps->paths[i] = moved;
		}
	}
	free(dir);
}

/* The bits of "srcloc" as the name of an unabbreviated METADATA_KIND
 * record writes it: one 6-bit VBR field per character, least significant
 * bit first; into bits[], returns how many. */
static size_t srcloc_pattern(unsigned char bits[96])
{
	static const char name[] = "srcloc";
	size_t n = 0;
	for (const char *c = name; *c; c++) {
		unsigned v = (unsigned char)*c;
		do {
			unsigned chunk = v & 31;
			v >>= 5;
			if (v)
				chunk |= 32;
			for (int b = 0; b < 6; b++)
				bits[n++] = (chunk >> b) & 1;
		} while (v);
	}
	return n;
}

static unsigned bit_at(const unsigned char *data, size_t i)
{
	return (data[i >> 3] >> (i & 7)) & 1;
}

bool gpucc_source_pch_ir_trusted(const unsigned char *ir, size_t size)
{
	unsigned char pattern[96];
	size_t n = srcloc_pattern(pattern);
	uint64_t first = 0; /* the pattern's first 48 bits, the first at bit 0 */
	for (size_t b = 0; b < 48; b++)
		first |= (uint64_t)pattern[b] << b;
	const uint64_t mask = ((uint64_t)1 << 48) - 1;
	if (size < 16)
		return true;
	size_t bits = size * 8;
	for (size_t byte = 0; byte * 8 + n <= bits; byte++) {
		uint64_t w = 0;
		size_t have = size - byte < 8 ? size - byte : 8;
		for (size_t k = 0; k < have; k++)
			w |= (uint64_t)ir[byte + k] << (8 * k);
		for (unsigned shift = 0; shift < 8; shift++) {
			size_t s = byte * 8 + shift;
			if (s + n > bits)
				break;
			if (((w >> shift) & mask) != first)
				continue;
			size_t b = 48;
			while (b < n && bit_at(ir, s + b) == pattern[b])
				b++;
			if (b == n)
				return false;
		}
	}
	return true;
}
