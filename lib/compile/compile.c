/*
 * lib/compile/compile.c -- compile sessions (gpucc/compile.h): plan every module x
 * target job without LLVM (read modules, choose device libraries, compute
 * keys, look them up), then compile the misses on a pool of threads, each
 * with its compile worker process (lib/compile/compile_worker.c), insert new entries
 * into the cache as they arrive, and hand every entry to the image writer in
 * job order.
 *
 * Determinism: each job is compiled on its own (one module, one LLVMContext
 * per thread, device libraries cloned from a pristine copy), so a result does
 * not depend on which thread compiled it or what it compiled before; results
 * and writer additions are in job order, whatever the order of completion.
 *
 * Threads share the session under one mutex: cache insertion, counters and
 * the progress callback run under it; compiling does not.
 */
#include "gpucc/compile.h"

#include "backend.h"
#include "cache_internal.h"
#include "gpucc/remote.h"
#include "compile_internal.h"
#include "compile_source.h"
#include "compile_worker.h"
#include "compile_worker_protocol.h"
#include "errors.h"
#include "escape.h"
#include "input_file.h"
#include "key.h"
#include "manifest.h"
#include "parallel.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpucc_build_config.h"

#define MAX_DEVICE_LIBS 12
#define OPTION_COUNT 7

typedef struct module {
	char *name;
	char *shown; /* name as messages quote it: control characters escaped */
	char *entry_name; /* its entries' module name: the base name, spelt as a manifest
	                     carries names (formats/manifest.md, Names) */
	unsigned char *data;
	size_t size;
	gpucc_digest sha256;
	gpucc_module_facts facts;
	bool from_file;     /* dev and ino name the file it was read from */
	dev_t dev;
	ino_t ino;
	/* The module of link_modules: the others linked in order (data NULL). */
	size_t member_count;
	const void **member_data;
	size_t *member_sizes;
	const char **member_names;
	/* A source (gpucc_compile_add_source) until planned; then the modules
	 * clang made of it, each for one target (lib/compile/compile_source.c). */
	gpucc_source_language language; /* FROM_NAME: a module of IR */
	bool one_target;    /* jobs for targets[only_target] alone */
	bool from_source;   /* made by clang of a source unit (or found through its record) */
	size_t only_target;
	int fail_code;      /* nonzero: no module could be made; fail_message says why */
	char *fail_message;
	char *source_note;  /* how the IR was found (gpucc_compile_result.source) */
	char *source_warnings; /* clang's warnings */
	char *source_diagnostics; /* clang's lines on failure */
	/* Of the source's direct-mode record (lib/compile/compile_source.h): the entry
	 * it led to (hit: the module has no IR), or what a record of clang's
	 * IR will hold once its key is known, and a key already missed. */
	gpucc_source_result recorded;
} module;

typedef struct target {
	gpucc_target parsed;
	char name[GPUCC_TARGET_NAME_SIZE];
	char cpu[32];
	char features[64];
	bool ptx_explicit; /* NVIDIA: the spelling named a PTX ISA (":ptxNN") */
	unsigned parts;    /* NVIDIA: PARTS_PTX, PARTS_CUBIN or both (CMake's "90-virtual",
	                      "90-real", "90") */
	/* For messages about a source before clang made its module: NVIDIA
	 * without ptx_explicit, the processor alone ("sm_75": the PTX ISA is the
	 * one clang's IR will ask for, not name's default); else name. */
	char open_name[GPUCC_TARGET_NAME_SIZE];
} target;

/* What an NVIDIA target's entries hold. */
enum { PARTS_PTX = 1, PARTS_CUBIN = 2, PARTS_ALL = PARTS_PTX | PARTS_CUBIN };

typedef struct job {
	gpucc_compile_result r;
	size_t module, target;
	char *error;        /* owned message for r.error */
	char *diagnostics;  /* owned text for r.diagnostics */
	char *warnings;     /* owned text for r.warnings */
	/* The target as this module makes it (compile_target.c): the PTX ISA or
	 * code object version the module asks for where the run left it open. */
	char target_name[GPUCC_TARGET_NAME_SIZE];
	char features[64];
	int code_object_version; /* AMD: 4, 5 or 6 (a module's) */
	gpucc_option options[OPTION_COUNT];
	size_t option_count;
	gpucc_generated_lib isa_lib; /* AMD: oclc_isa_version, made for the processor */
	gpucc_entry entry;
	char *lib_paths[MAX_DEVICE_LIBS];   /* in link order */
	const void *lib_data[MAX_DEVICE_LIBS]; /* in memory (generated), else NULL: read the path */
	size_t lib_sizes[MAX_DEVICE_LIBS];
	gpucc_device_lib libs[MAX_DEVICE_LIBS]; /* sorted by name */
	size_t lib_count;
	gpucc_key_component components[GPUCC_KEY_COMPONENTS];
	gpucc_compile_key_part parts[GPUCC_KEY_COMPONENTS];
	bool have_components;
	gpucc_image *hit;   /* the cache's entry, open for the writer */
	gpucc_entry hit_entry; /* its entry under this job's module name (r.entry) */
	const gpucc_backend_info *backend; /* the LLVM that compiles it (compile_backend.c) */
	gpucc_backend_result out;
	bool have_out;
	bool no_kernels;    /* SKIPPED: a source unit that defines no kernel */
	char *refused;      /* the warning that the cubin tool refused the target, unprefixed */
	size_t warnings_before_no_kernels; /* strlen(warnings) before it said so */
	gpucc_kernel *kernels;
	gpucc_payload payloads[GPUCC_PART_COUNT];
	gpucc_payload_source sources[GPUCC_PART_COUNT];
	size_t payload_count;
} job;

struct gpucc_compile {
	gpucc_compile_options o;
	module *modules;
	size_t module_count;
	size_t first_job_module; /* jobs are for modules[first_job_module..]: link_modules adds one */
	target *targets;
	size_t target_count;
	job *jobs;
	size_t job_count;
	bool planned, ran;
	gpucc_toolchain toolchain;
	bool have_toolchain;
	gpucc_option nvidia_options[OPTION_COUNT], amd_options[OPTION_COUNT];
	size_t nvidia_option_count, amd_option_count;
	char *ld_lld_error; /* why AMD jobs cannot be keyed (no LLD 19), or NULL */
	bool ld_lld_in_process; /* the workers link with their own LLD (lld_is_built_in) */
	char *ptxas_error;  /* why NVIDIA jobs cannot be keyed (a ptxas that gives no version) */
	int ptxas_error_code;
	const char *ptxas_version; /* "13.0.88", "none"; owned by the toolchain */
	/* The cubin tool of the run's NVIDIA jobs (choose_cubin_tool): nvjitlink
	 * (the library's path, owned by the toolchain) or NULL for ptxas. */
	gpucc_cubin_tool cubin_tool;
	bool (*before_clang)(void *ctx); /* gpucc_compile_set_before_clang */
	void *before_clang_ctx;
	const char *nvjitlink;
	const char *nvjitlink_version; /* "13.0.88" with nvjitlink */
	char *nvjitlink_error; /* why NVIDIA jobs cannot be keyed (--cubin-with nvjitlink
	                          without a usable library), or NULL */
	unsigned threads_used;
	bool backend_loaded;
	bool cache_failed; /* the cache is full or read-only: no more inserts are tried */
	/* while running */
	pthread_mutex_t lock;
	size_t done, hits, failed;
	struct timespec start;
};

static double seconds_since(const struct timespec *start)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

void gpucc_compile_options_init(gpucc_compile_options *opts)
{
	GPUCC_REQUIRE_VOID(opts);
	memset(opts, 0, sizeof *opts);
	opts->version = GPUCC_COMPILE_OPTIONS_VERSION;
	opts->opt_level = 2;
	opts->job_timeout_seconds = GPUCC_DEFAULT_JOB_TIMEOUT;
}

int gpucc_compile_new(gpucc_compile **out, const gpucc_compile_options *opts)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	gpucc_compile_options o;
	gpucc_compile_options_init(&o);
	if (opts && opts->version == 1) /* a caller built before link_modules */
		memcpy(&o, opts, offsetof(gpucc_compile_options, link_modules));
	else if (opts && opts->version == 2) /* before sources */
		memcpy(&o, opts, offsetof(gpucc_compile_options, clang));
	else if (opts && opts->version == 3) /* before llvm_major */
		memcpy(&o, opts, offsetof(gpucc_compile_options, llvm_major));
	else if (opts && opts->version == 4) /* before no_pch */
		memcpy(&o, opts, offsetof(gpucc_compile_options, no_pch));
	else if (opts)
		o = *opts;
	if (o.version < 1 || o.version > GPUCC_COMPILE_OPTIONS_VERSION)
		return gpucc_error_set(GPUCC_EINVALID, "compile options of version %u, expected 1 to %d",
		                       o.version, GPUCC_COMPILE_OPTIONS_VERSION);
	if (o.opt_level < 0 || o.opt_level > 3)
		return gpucc_error_set(GPUCC_EINVALID, "optimisation level %d: expected 0 to 3",
		                       o.opt_level);
	/* 0: each module's own, else GPUCC_DEFAULT_CODE_OBJECT_VERSION. */
	if (o.code_object_version != 0 && o.code_object_version != 4 && o.code_object_version != 5)
		return gpucc_error_set(GPUCC_EINVALID,
		                       "AMDGPU code object version %d: expected 4 or 5",
		                       o.code_object_version);
	gpucc_compile *c = calloc(1, sizeof *c);
	if (!c)
		return gpucc_error_oom();
	c->o = o;
	pthread_mutex_init(&c->lock, NULL);
	*out = c;
	return 0;
}

static void job_release(gpucc_compile *c, job *j)
{
	free(j->error);
	free(j->diagnostics);
	free(j->refused);
	free(j->warnings);
	for (size_t i = 0; i < j->lib_count; i++)
		free(j->lib_paths[i]);
	if (j->have_components)
		gpucc_key_components_free(j->components);
	gpucc_image_free(j->hit);
	if (j->have_out)
		gpucc_wire_result_release(&j->out);
	free(j->kernels);
	(void)c;
}

static void module_release(module *m)
{
	free(m->name);
	free(m->shown);
	free(m->entry_name);
	free(m->data);
	free(m->member_data);
	free(m->member_sizes);
	free(m->member_names);
	free(m->fail_message);
	free(m->source_note);
	free(m->source_warnings);
	free(m->source_diagnostics);
	gpucc_source_result_release(&m->recorded);
}

void gpucc_compile_free(gpucc_compile *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->job_count; i++)
		job_release(c, &c->jobs[i]);
	free(c->jobs);
	for (size_t i = 0; i < c->module_count; i++)
		module_release(&c->modules[i]);
	free(c->modules);
	free(c->targets);
	free(c->ld_lld_error);
	free(c->ptxas_error);
	free(c->nvjitlink_error);
	if (c->have_toolchain)
		gpucc_toolchain_release(&c->toolchain);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

int gpucc_compile_set_cubin_tool(gpucc_compile *c, gpucc_cubin_tool tool)
{
	GPUCC_REQUIRE(c);
	if (c->planned)
		return gpucc_error_set(GPUCC_EINVALID, "the cubin tool must be chosen before planning");
	if (tool != GPUCC_CUBIN_AUTO && tool != GPUCC_CUBIN_PTXAS && tool != GPUCC_CUBIN_NVJITLINK)
		return gpucc_error_set(GPUCC_EINVALID, "cubin tool %d: expected auto, ptxas or nvjitlink",
		                       (int)tool);
	c->cubin_tool = tool;
	return 0;
}

int gpucc_compile_set_before_clang(gpucc_compile *c, bool (*fn)(void *ctx), void *ctx)
{
	GPUCC_REQUIRE(c);
	if (c->planned)
		return gpucc_error_set(GPUCC_EINVALID, "the hook before clang must be set before planning");
	c->before_clang = fn;
	c->before_clang_ctx = ctx;
	return 0;
}

/* The spellings users already write for NVIDIA processors, as CMake's
 * CMAKE_CUDA_ARCHITECTURES has them: a compute capability ("90", "90a",
 * "100f") for sm_XY, and "-real" (a cubin only) or "-virtual" (PTX only)
 * after it or after sm_XY.  Into buf gpucc's spelling, *parts what the
 * entries hold.  GPUCC_EINVALID for a suffix after anything else. */
static int user_spelling(const char *spelling, char *buf, size_t size, unsigned *parts)
{
	size_t len = strlen(spelling);
	*parts = PARTS_ALL;
	static const struct {
		const char *suffix;
		unsigned parts;
	} suffixes[] = {{"-real", PARTS_CUBIN}, {"-virtual", PARTS_PTX}};
	for (size_t i = 0; i < 2; i++) {
		size_t n = strlen(suffixes[i].suffix);
		if (len > n && strcmp(spelling + len - n, suffixes[i].suffix) == 0) {
			len -= n;
			*parts = suffixes[i].parts;
		}
	}
	size_t digits = strspn(spelling, "0123456789");
	bool capability = digits >= 2 && digits <= 3 &&
	                  (digits == len || (digits + 1 == len && (spelling[digits] == 'a' ||
	                                                           spelling[digits] == 'f')));
	if (*parts != PARTS_ALL && !capability && strncmp(spelling, "sm_", 3) != 0)
		return gpucc_error_set(GPUCC_EINVALID,
		                       "'%s': -real and -virtual follow an NVIDIA compute capability "
		                       "(90-real, sm_90-virtual)",
		                       spelling);
	if (*parts != PARTS_ALL && memchr(spelling, ':', len))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "'%s': a PTX ISA and -real or -virtual exclude each other",
		                       spelling);
	if ((int)len >= (int)size - 4)
		return gpucc_error_set(GPUCC_EINVALID, "unknown target '%s'", spelling);
	snprintf(buf, size, "%s%.*s", capability ? "sm_" : "", (int)len, spelling);
	return 0;
}

int gpucc_compile_add_target(gpucc_compile *c, const char *spelling)
{
	GPUCC_REQUIRE(c);
	if (c->planned)
		return gpucc_error_set(GPUCC_EINVALID, "targets must be added before planning");
	target t;
	memset(&t, 0, sizeof t);
	if (!spelling) /* gpucc_target_parse's refusal, "empty target" */
		return gpucc_target_parse(&t.parsed, spelling);
	char written[GPUCC_TARGET_NAME_SIZE + 16];
	int rc = user_spelling(spelling, written, sizeof written, &t.parts);
	if (rc != 0)
		return rc;
	rc = gpucc_target_parse(&t.parsed, written);
	if (rc != 0)
		return rc;
	if (t.parts != PARTS_ALL && t.parsed.vendor != GPUCC_VENDOR_NVIDIA)
		return gpucc_error_set(GPUCC_EINVALID, "'%s': -real and -virtual are NVIDIA's",
		                       spelling);
	gpucc_target_format(t.name, &t.parsed);
	snprintf(t.cpu, sizeof t.cpu, "%s", gpucc_target_cpu(&t.parsed));
	gpucc_target_llvm_features(t.features, &t.parsed);
	t.ptx_explicit = t.parsed.vendor == GPUCC_VENDOR_NVIDIA && strstr(spelling, ":ptx") != NULL;
	snprintf(t.open_name, sizeof t.open_name, "%.*s",
	         t.parsed.vendor == GPUCC_VENDOR_NVIDIA && !t.ptx_explicit ? (int)strcspn(t.name, ":")
	                                                                   : (int)strlen(t.name),
	         t.name);
	/* A target no backend knows (sm_100 with LLVM 19 alone) is refused
	 * here, as an unknown one is. */
	const gpucc_backend_info *b;
	char needer[GPUCC_TARGET_NAME_SIZE + 8];
	snprintf(needer, sizeof needer, "'%s'", spelling);
	unsigned last, needs = gpucc_target_llvm_major(&t.parsed, &last);
	if ((rc = gpucc_backend_choose(&b, needs, last, needer, c->o.llvm_major)) != 0)
		return rc;
	/* One target however often given; "90-real" and "90-virtual" are
	 * "90". */
	for (size_t i = 0; i < c->target_count; i++)
		if (strcmp(c->targets[i].name, t.name) == 0) {
			c->targets[i].parts |= t.parts;
			return 0;
		}
	target *grown = realloc(c->targets, sizeof *grown * (c->target_count + 1));
	if (!grown)
		return gpucc_error_oom();
	c->targets = grown;
	c->targets[c->target_count++] = t;
	return 0;
}

/* The module name of a module's entries: its base name (an image's bytes
 * must not depend on where it was built), spelt so that a manifest can
 * carry it.  NULL when out of memory. */
static char *entry_name_of(const char *name)
{
	const char *slash = strrchr(name, '/');
	return gpucc_manifest_spell_name(slash && slash[1] ? slash + 1 : name);
}

int gpucc_compile_add_memory(gpucc_compile *c, const char *name, const void *data, size_t size)
{
	GPUCC_REQUIRE(c);
	if (size != 0)
		GPUCC_REQUIRE(data);
	if (c->planned)
		return gpucc_error_set(GPUCC_EINVALID, "modules must be added before planning");
	module m;
	memset(&m, 0, sizeof m);
	m.name = strdup(name && *name ? name : "<memory>");
	/* Each byte is spelt in at most 4 ("\\xHH"). */
	size_t shown_size = m.name ? 4 * strlen(m.name) + 1 : 0;
	m.shown = m.name ? malloc(shown_size) : NULL;
	if (m.shown)
		gpucc_escape_controls(m.shown, shown_size, m.name);
	m.data = malloc(size ? size : 1);
	m.entry_name = m.name ? entry_name_of(m.name) : NULL;
	module *grown = realloc(c->modules, sizeof *grown * (c->module_count + 1));
	if (grown)
		c->modules = grown;
	if (!m.name || !m.shown || !m.data || !m.entry_name || !grown) {
		module_release(&m);
		return gpucc_error_oom();
	}
	if (size)
		memcpy(m.data, data, size);
	m.size = size;
	gpucc_digest_buffer(&m.sha256, m.data, m.size);
	gpucc_module_facts_read(&m.facts, m.data, m.size);
	c->modules[c->module_count++] = m;
	return 0;
}

int gpucc_compile_add_file(gpucc_compile *c, const char *path)
{
	GPUCC_REQUIRE(c);
	GPUCC_REQUIRE(path);
	if (c->planned)
		return gpucc_error_set(GPUCC_EINVALID, "modules must be added before planning");
	int fd;
	struct stat st;
	int rc = gpucc_open_input_file(&fd, &st, path, "module", "a regular file", GPUCC_EINVALID);
	if (rc)
		return rc;
	/* One file named twice (the same path, another path, a link) is one
	 * module, under the name it was first given. */
	for (size_t i = 0; i < c->module_count; i++) {
		const module *m = &c->modules[i];
		if (m->from_file && m->dev == st.st_dev && m->ino == st.st_ino) {
			close(fd);
			return 0;
		}
	}
	size_t size = (size_t)st.st_size, used = 0;
	unsigned char *data = malloc(size ? size : 1);
	if (!data) {
		close(fd);
		return gpucc_error_oom();
	}
	while (used < size) {
		ssize_t n = read(fd, data + used, size - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			char shown[GPUCC_SHOWN_PATH_SIZE];
			gpucc_escape_controls(shown, sizeof shown, path);
			rc = gpucc_error_set_errno("cannot read module '%s'", shown);
			free(data);
			close(fd);
			return rc;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	rc = gpucc_compile_add_memory(c, path, data, used);
	free(data);
	if (rc == 0) {
		module *m = &c->modules[c->module_count - 1];
		m->from_file = true;
		m->dev = st.st_dev;
		m->ino = st.st_ino;
	}
	return rc;
}

int gpucc_compile_add_source(gpucc_compile *c, const char *path, gpucc_source_language language)
{
	GPUCC_REQUIRE(c);
	GPUCC_REQUIRE(path);
	if (language == GPUCC_LANGUAGE_FROM_NAME)
		language = gpucc_source_language_of(path);
	if (language != GPUCC_LANGUAGE_HIP && language != GPUCC_LANGUAGE_CUDA &&
	    language != GPUCC_LANGUAGE_OPENCL) {
		char shown[GPUCC_SHOWN_PATH_SIZE];
		gpucc_escape_controls(shown, sizeof shown, path);
		return gpucc_error_set(GPUCC_EINVALID,
		                       "source '%s': its name ends in none of .hip, .cu and .cl: name "
		                       "its language", shown);
	}
	size_t before = c->module_count;
	int rc = gpucc_compile_add_file(c, path);
	if (rc == 0 && c->module_count > before)
		c->modules[before].language = language;
	return rc;
}

size_t gpucc_compile_result_count(const gpucc_compile *c)
{
	GPUCC_REQUIRE_OR(c, 0);
	return c->job_count;
}

const gpucc_compile_result *gpucc_compile_result_at(const gpucc_compile *c, size_t index)
{
	GPUCC_REQUIRE_OR(c, NULL);
	return index < c->job_count ? &c->jobs[index].r : NULL;
}

unsigned gpucc_compile_threads_used(const gpucc_compile *c)
{
	GPUCC_REQUIRE_OR(c, 0);
	return c->threads_used;
}

bool gpucc_compile_backend_loaded(const gpucc_compile *c)
{
	GPUCC_REQUIRE_OR(c, false);
	return c->backend_loaded;
}

/* ---- planning ------------------------------------------------------------------ */

static const char *const level_names[] = {"0", "1", "2", "3"};

/* The cubin tool of NVIDIA jobs: libnvJitLink when asked for, or, by
 * default, when the toolkit has one whose version can be told; else ptxas.
 * The rule depends on the machine's toolkit alone, never on how many jobs
 * a run has or misses: a key must not change with the size of the run.
 * A worker loads libnvJitLink while LLVM compiles its first job, so that
 * job costs about what a ptxas process does, and every further PTX a
 * fraction of one (scripts/bench/compile). */
static int choose_cubin_tool(gpucc_compile *c)
{
	const char *version = NULL;
	if (c->o.no_cubin || c->cubin_tool == GPUCC_CUBIN_PTXAS)
		return 0;
	const char *why = "no libnvJitLink was found in the CUDA toolkit (set CUDA_PATH, or "
	                  "GPUCC_NVJITLINK to its path)";
	if (c->toolchain.nvjitlink &&
	    gpucc_toolchain_nvjitlink_version(&c->toolchain, &version) != 0)
		why = gpucc_error_last()->message;
	if (c->toolchain.nvjitlink && version) {
		c->nvjitlink = c->toolchain.nvjitlink;
		c->nvjitlink_version = version;
		return 0;
	}
	if (c->cubin_tool == GPUCC_CUBIN_NVJITLINK)
		c->nvjitlink_error = strdup(why);
	gpucc_error_clear();
	if (c->cubin_tool == GPUCC_CUBIN_NVJITLINK && !c->nvjitlink_error)
		return gpucc_error_oom();
	return 0;
}

/* Whether the worker's own LLD (lib/backend_llvm/lld_link.h) is the ld.lld
 * found, at path with version: the ld.lld-19 the build found (one file,
 * however reached) and of the LLVM version the worker's LLD was built from.
 * Then it links, in process, what that ld.lld would, byte for byte; another
 * ld.lld (one put first on PATH) runs as a process, as asked. */
static bool lld_is_built_in(const char *path, const char *version)
{
	if (!*GPUCC_BUILD_LLD_VERSION || !*GPUCC_BUILD_LD_LLD || !path ||
	    strcmp(version, GPUCC_BUILD_LLD_VERSION) != 0)
		return false;
	char *found = realpath(path, NULL), *built = realpath(GPUCC_BUILD_LD_LLD, NULL);
	bool same = found && built && strcmp(found, built) == 0;
	free(found);
	free(built);
	return same;
}

/* The normalised options of each vendor, sorted by name (formats/key.md):
 * only those that can change that vendor's output, the versions of the
 * tools that make the payloads included (ptxas's and, when it makes the
 * cubins, libnvJitLink's; ld.lld's for code objects).  Without LLD 19 the
 * AMD jobs fail when planned, with the reason kept in ld_lld_error, and the
 * NVIDIA ones go on; so do the AMD jobs when the ptxas found gives no
 * version (ptxas_error). */
static int build_options(gpucc_compile *c)
{
	const char *ptxas = "none", *ld_lld = "none";
	bool nvidia = false, amd = false;
	int rc;
	for (size_t i = 0; i < c->target_count; i++) {
		nvidia |= c->targets[i].parsed.vendor == GPUCC_VENDOR_NVIDIA;
		amd |= c->targets[i].parsed.vendor == GPUCC_VENDOR_AMD;
	}
	if (nvidia && (c->ptxas_error_code = gpucc_toolchain_ptxas_version(&c->toolchain, &ptxas))) {
		c->ptxas_error = strdup(gpucc_error_last()->message);
		gpucc_error_clear();
		if (!c->ptxas_error)
			return gpucc_error_oom();
	}
	if (amd && gpucc_toolchain_ld_lld(&c->toolchain, &ld_lld) != 0) {
		c->ld_lld_error = strdup(gpucc_error_last()->message);
		gpucc_error_clear();
		if (!c->ld_lld_error)
			return gpucc_error_oom();
	}
	c->ld_lld_in_process = amd && !c->ld_lld_error && lld_is_built_in(c->toolchain.ld_lld, ld_lld);
	const char *on_off[] = {"off", "on"};
	gpucc_option *n = c->nvidia_options;
	n[0] = (gpucc_option){"debug-info", on_off[c->o.debug_info]};
	n[1] = (gpucc_option){"fast-math", on_off[c->o.fast_math]};
	n[2] = (gpucc_option){"ftz", on_off[c->o.ftz]};
	/* With libnvJitLink, its version and ptxas's (which makes the cubin of
	 * PTX that libnvJitLink cannot link alone): sorted by name. */
	size_t k = 3;
	if (nvidia && (rc = choose_cubin_tool(c)) != 0)
		return rc;
	if (c->nvjitlink)
		n[k++] = (gpucc_option){"nvjitlink", c->nvjitlink_version};
	n[k++] = (gpucc_option){"opt-level", level_names[c->o.opt_level]};
	n[k++] = (gpucc_option){"ptxas", ptxas};
	c->ptxas_version = ptxas;
	c->nvidia_option_count = k;
	gpucc_option *a = c->amd_options;
	a[0] = (gpucc_option){"code-object", "4"}; /* each job's own (plan_job) */
	a[1] = (gpucc_option){"debug-info", on_off[c->o.debug_info]};
	a[2] = (gpucc_option){"fast-math", on_off[c->o.fast_math]};
	a[3] = (gpucc_option){"ftz", on_off[c->o.ftz]};
	a[4] = (gpucc_option){"ld.lld", ld_lld};
	a[5] = (gpucc_option){"opt-level", level_names[c->o.opt_level]};
	c->amd_option_count = 6;
	return 0;
}

static int job_fail(job *j, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Record why job j failed (or, for the caller, is skipped): r.error is
 * the message on one line, its control characters spelt as in libgpucc's
 * error messages (formats/escape.h), whatever it quotes (a module's triple,
 * the backend's words). */
/* A message of job_fail's or add_warning's: formatted, its control
 * characters spelt as in libgpucc's error messages (formats/escape.h). */
static char *spell_message(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Whole, however long (a C++ name, a tool's line): NULL when out of memory. */
static char *spell_message(const char *fmt, va_list ap)
{
	char *raw = NULL;
	if (vasprintf(&raw, fmt, ap) < 0)
		return NULL;
	size_t size = strlen(raw) * GPUCC_ESCAPED_BYTE_MAX + 1;
	char *out = malloc(size);
	if (out)
		gpucc_escape_controls(out, size, raw);
	free(raw);
	return out;
}

static int job_fail(job *j, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *message = spell_message(fmt, ap);
	va_end(ap);
	free(j->error);
	j->error = message;
	j->r.error = j->error ? j->error : "out of memory";
	j->r.error_code = code;
	j->r.status = GPUCC_COMPILE_FAILED;
	j->r.entry = NULL;
	return code;
}

static int add_lib(job *j, const char *dir, const char *file)
{
	if (j->lib_count == MAX_DEVICE_LIBS)
		return GPUCC_ERROR;
	size_t len = strlen(dir) + strlen(file) + 2;
	char *path = malloc(len);
	if (!path)
		return gpucc_error_oom();
	snprintf(path, len, "%s/%s", dir, file);
	j->lib_paths[j->lib_count++] = path;
	return 0;
}

/* A library held in memory: its name stands for a path (the backend keeps
 * parsed libraries by it). */
static int add_generated_lib(job *j, const gpucc_generated_lib *lib)
{
	if (j->lib_count == MAX_DEVICE_LIBS)
		return GPUCC_ERROR;
	char *name = strdup(lib->name);
	if (!name)
		return gpucc_error_oom();
	j->lib_data[j->lib_count] = lib->text;
	j->lib_sizes[j->lib_count] = lib->size;
	j->lib_paths[j->lib_count++] = name;
	return 0;
}

static int compare_libs(const void *a, const void *b)
{
	return strcmp(((const gpucc_device_lib *)a)->name, ((const gpucc_device_lib *)b)->name);
}

/* libclc for OpenCL C modules that call its builtins, either vendor. */
static int choose_libclc(gpucc_compile *c, job *j)
{
	const module *m = &c->modules[j->module];
	const target *t = &c->targets[j->target];
	if (!m->facts.opencl || !m->facts.calls_mangled)
		return 0;
	if (!c->toolchain.libclc_dir)
		return job_fail(j, GPUCC_EUNAVAILABLE,
		                "%s: %s: the OpenCL module calls builtins (_Z* functions) that libclc "
		                "defines, but libclc was not found: install libclc-19 or set "
		                "GPUCC_LIBCLC_DIR",
		                m->shown, j->target_name);
	return add_lib(j, c->toolchain.libclc_dir,
	               t->parsed.vendor == GPUCC_VENDOR_NVIDIA ? "nvptx64--nvidiacl.bc"
	                                                       : "amdgcn--amdhsa.bc");
}

/* The ROCm device libraries, as clang's HIP toolchain links them: hip.bc
 * for the HIP headers' fences, ocml and ockl, and the oclc control
 * libraries that answer their questions (code object ABI, rounding,
 * denormals, wave size: the module's own on gfx10 and later, where
 * "+wavefrontsize64" picks wave64; ISA version: written for the processor). */
static int choose_rocm(gpucc_compile *c, job *j)
{
	const module *m = &c->modules[j->module];
	const target *t = &c->targets[j->target];
	const char *dir = c->toolchain.rocm_dir;
	if (!m->facts.calls_rocm && !m->facts.calls_hip)
		return 0;
	if (!dir)
		return job_fail(j, GPUCC_EUNAVAILABLE,
		                "%s: %s: the module calls the ROCm device libraries (__ocml_*, "
		                "__ockl_*, __atomic_work_item_fence) but they were not found: install "
		                "rocm-device-libs or set GPUCC_ROCM_DEVICE_LIBS",
		                m->shown, j->target_name);
	int rc = 0;
	if (m->facts.calls_hip)
		rc = add_lib(j, dir, "hip.bc");
	if (!m->facts.calls_rocm || rc != 0)
		return rc;
	const char *p = t->parsed.processor;
	/* gfx6..gfx9 run wave64 only; gfx10 and later wave32 unless asked. */
	bool wave64 = strlen(p) == 6 || m->facts.wavefront64;
	if ((rc = gpucc_isa_version_lib(&j->isa_lib, p)) != 0)
		return job_fail(j, rc, "%s: %s: %s", m->shown, j->target_name, gpucc_error_last()->message);
	const char *files[] = {
		"ocml.bc",
		"ockl.bc",
		j->code_object_version >= 5 ? "oclc_abi_version_500.bc" : "oclc_abi_version_400.bc",
		c->o.fast_math ? "oclc_correctly_rounded_sqrt_off.bc" : "oclc_correctly_rounded_sqrt_on.bc",
		c->o.ftz ? "oclc_daz_opt_on.bc" : "oclc_daz_opt_off.bc",
		c->o.fast_math ? "oclc_finite_only_on.bc" : "oclc_finite_only_off.bc",
		c->o.fast_math ? "oclc_unsafe_math_on.bc" : "oclc_unsafe_math_off.bc",
		wave64 ? "oclc_wavefrontsize64_on.bc" : "oclc_wavefrontsize64_off.bc",
	};
	for (size_t i = 0; i < sizeof files / sizeof files[0] && rc == 0; i++)
		rc = add_lib(j, dir, files[i]);
	return rc ? rc : add_generated_lib(j, &j->isa_lib);
}

static int choose_libdevice(gpucc_compile *c, job *j)
{
	const module *m = &c->modules[j->module];
	const char *libdevice = c->toolchain.libdevice;
	if (!m->facts.calls_libdevice)
		return 0;
	if (!libdevice)
		return job_fail(j, GPUCC_EUNAVAILABLE,
		                "%s: %s: the module calls libdevice (__nv_*) but no CUDA toolkit "
		                "was found: set CUDA_PATH",
		                m->shown, j->target_name);
	const char *slash = strrchr(libdevice, '/');
	char dir[4096];
	snprintf(dir, sizeof dir, "%.*s", (int)(slash - libdevice), libdevice);
	return add_lib(j, dir, slash + 1);
}

/* Choose the device libraries job j links, in link order, and their
 * digests for the key (sorted by name). */
static int choose_libs(gpucc_compile *c, job *j)
{
	const module *m = &c->modules[j->module];
	const target *t = &c->targets[j->target];
	int rc = t->parsed.vendor == GPUCC_VENDOR_NVIDIA ? choose_libdevice(c, j) : choose_rocm(c, j);
	if (rc == 0 && j->r.status != GPUCC_COMPILE_FAILED)
		rc = choose_libclc(c, j);
	if (rc != 0 || j->r.status == GPUCC_COMPILE_FAILED)
		return rc;
	for (size_t i = 0; i < j->lib_count; i++) {
		const char *name = strrchr(j->lib_paths[i], '/');
		j->libs[i].name = name ? name + 1 : j->lib_paths[i];
		if (j->lib_data[i]) {
			j->libs[i].sha256 = j->isa_lib.sha256;
			continue;
		}
		struct stat st;
		if (stat(j->lib_paths[i], &st) != 0)
			return job_fail(j, GPUCC_EUNAVAILABLE,
			                "%s: %s: device library '%s' is missing (no such file for this target)",
			                m->shown, j->target_name, j->lib_paths[i]);
		rc = gpucc_toolchain_digest(&c->toolchain, j->lib_paths[i], &j->libs[i].sha256);
		if (rc != 0)
			return job_fail(j, rc, "%s: %s: %s", m->shown, j->target_name, gpucc_error_last()->message);
	}
	if (j->lib_count > 1)
		qsort(j->libs, j->lib_count, sizeof j->libs[0], compare_libs);
	return 0;
}

static bool triple_fits(const char *triple, gpucc_vendor vendor)
{
	if (vendor == GPUCC_VENDOR_NVIDIA)
		return strncmp(triple, "nvptx64-", 8) == 0;
	return strncmp(triple, "amdgcn-", 7) == 0;
}

static void report_progress(gpucc_compile *c, job *j)
{
	/* Under c->lock, or on the planning thread before workers start. */
	c->done++;
	if (j->r.status == GPUCC_COMPILE_HIT)
		c->hits++;
	if (j->r.status == GPUCC_COMPILE_FAILED)
		c->failed++;
	if (!c->o.progress)
		return;
	gpucc_compile_progress p = {c->done, c->job_count, c->hits, c->failed, seconds_since(&c->start),
	                            &j->r, 0, 0};
	c->o.progress(c->o.progress_ctx, &p);
}

static void add_warning(job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_diagnostic(job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Append one warning line ("MODULE: TARGET: warning: ...") to the job's. */
static void add_warning(job *j, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *line = spell_message(fmt, ap);
	va_end(ap);
	if (!line)
		return;
	size_t old = j->warnings ? strlen(j->warnings) : 0;
	char *grown = realloc(j->warnings, old + strlen(line) + 2);
	if (!grown) {
		free(line);
		return;
	}
	memcpy(grown + old, line, strlen(line));
	memcpy(grown + old + strlen(line), "\n", 2);
	free(line);
	j->warnings = grown;
	j->r.warnings = grown;
}

/* Append one line of the tools' own ("MODULE: TARGET: ...") to the job's
 * diagnostics, as the backend gives them. */
static void add_diagnostic(job *j, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *line = NULL;
	int n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	size_t old = j->diagnostics ? strlen(j->diagnostics) : 0;
	char *grown = realloc(j->diagnostics, old + (size_t)n + 2);
	if (grown) {
		memcpy(grown + old, line, (size_t)n);
		memcpy(grown + old + (size_t)n, "\n", 2);
		j->diagnostics = grown;
		j->r.diagnostics = grown;
	}
	free(line);
}

/* The target job j names in its messages: as the module fits it, except
 * that a source's module that asks for no PTX ISA (no function: host code
 * only) leaves an NVIDIA target's open ("sm_75"), clang's choice, rather
 * than naming the target's default. */
static const char *job_shown_target(const gpucc_compile *c, const job *j)
{
	const module *m = &c->modules[j->module];
	const target *t = &c->targets[j->target];
	if (m->from_source && !t->ptx_explicit && m->facts.ptx_isa == 0)
		return t->open_name;
	return j->target_name[0] ? j->target_name : t->name;
}

/* For a triple that is not the target's: ", written for NVIDIA targets
 * (sm_XY)" when it is the other vendor's, else "". */
static const char *other_vendor_clause(const char *triple)
{
	if (strncmp(triple, "nvptx", 5) == 0)
		return ": the module is written for NVIDIA targets (sm_XY)";
	if (strncmp(triple, "amdgcn", 6) == 0)
		return ": the module is written for AMD targets (gfxNNN)";
	return "";
}

/* Skip job j when the module is for another target of the run: its triple
 * names the other vendor, or its functions' "target-cpu" another processor
 * of this vendor (clang's IR is always for one).  Fails it when no target
 * of the run fits the module.  Returns true when j is done with. */
static bool skip_unfit(gpucc_compile *c, job *j)
{
	const module *m = &c->modules[j->module];
	const target *t = &c->targets[j->target];
	const gpucc_module_facts *f = &m->facts;
	if (f->triple_known && f->triple[0] && !triple_fits(f->triple, t->parsed.vendor)) {
		bool fits_another = false;
		for (size_t i = 0; i < c->target_count; i++)
			fits_another |= triple_fits(f->triple, c->targets[i].parsed.vendor);
		if (!fits_another) {
			job_fail(j, GPUCC_ECOMPILE, "%s: %s: module triple '%s' does not fit target %s (%s)%s",
			         m->shown, t->name, f->triple, t->name, gpucc_target_triple(&t->parsed),
			         other_vendor_clause(f->triple));
			return true;
		}
		job_fail(j, 0, "%s: %s: skipped: the module's triple '%s' is for the run's other targets",
		         m->shown, t->name, f->triple);
		j->r.status = GPUCC_COMPILE_SKIPPED;
		return true;
	}
	if (gpucc_module_fits_cpu(f, t->cpu))
		return false;
	bool fits_another = false;
	for (size_t i = 0; i < c->target_count; i++)
		fits_another |= c->targets[i].parsed.vendor == t->parsed.vendor &&
		                gpucc_module_fits_cpu(f, c->targets[i].cpu);
	if (!fits_another) {
		job_fail(j, GPUCC_ECOMPILE,
		         "%s: %s: the module's functions are for \"target-cpu\" %s%s, which no target "
		         "of the run is: compile it for target %s too",
		         m->shown, t->name, f->cpus[0], f->cpu_count > 1 ? " and others" : "",
		         f->cpus[0]);
		return true;
	}
	job_fail(j, 0, "%s: %s: skipped: the module's functions are for \"target-cpu\" %s, another "
	         "target of the run", m->shown, t->name, f->cpus[0]);
	j->r.status = GPUCC_COMPILE_SKIPPED;
	return true;
}

/* The "parts" option of an NVIDIA target's entries ("ptx": PTX alone,
 * "cubin": a cubin alone), or NULL when they hold both. */
static const char *parts_option(const target *t)
{
	return t->parts == PARTS_PTX ? "ptx" : t->parts == PARTS_CUBIN ? "cubin" : NULL;
}

/* The target as this module makes it, and the options its key names. */
static int fit_target(gpucc_compile *c, job *j)
{
	const module *m = &c->modules[j->module];
	const target *t = &c->targets[j->target];
	gpucc_job_target fitted;
	int rc = gpucc_target_for_module(&fitted, &t->parsed, t->ptx_explicit,
	                                 c->o.code_object_version, &m->facts);
	if (rc != 0)
		return job_fail(j, rc, "%s: %s: %s", m->shown, t->name, gpucc_error_last()->message);
	memcpy(j->target_name, fitted.name, sizeof j->target_name);
	memcpy(j->features, fitted.features, sizeof j->features);
	j->code_object_version = fitted.code_object_version;
	j->r.target = j->target_name;
	bool nvidia = t->parsed.vendor == GPUCC_VENDOR_NVIDIA;
	size_t count = nvidia ? c->nvidia_option_count : c->amd_option_count;
	memcpy(j->options, nvidia ? c->nvidia_options : c->amd_options, count * sizeof j->options[0]);
	if (!nvidia) /* options are sorted by name: "code-object" is first */
		j->options[0].value = fitted.code_object_version == 6   ? "6"
		                      : fitted.code_object_version == 5 ? "5" : "4";
	/* An entry of PTX or a cubin alone is another entry: "parts" in its
	 * options, in name order (before "ptxas"). */
	if (nvidia && t->parts != PARTS_ALL) {
		size_t at = 0;
		while (at < count && strcmp(j->options[at].name, "parts") < 0)
			at++;
		memmove(j->options + at + 1, j->options + at, (count - at) * sizeof j->options[0]);
		j->options[at] = (gpucc_option){"parts", parts_option(t)};
		count++;
	}
	j->option_count = count;
	return 0;
}

/* The backend of job j (lib/compile/compile_backend.c): the newest that knows
 * its target as the module makes it, unless the run pins one. */
static int choose_backend(gpucc_compile *c, job *j)
{
	const module *m = &c->modules[j->module];
	gpucc_target fitted;
	unsigned last = 0;
	unsigned needs = gpucc_target_parse(&fitted, j->target_name) == 0
	                     ? gpucc_target_llvm_major(&fitted, &last) : 0;
	gpucc_error_clear();
	char needer[GPUCC_TARGET_NAME_SIZE + 96];
	snprintf(needer, sizeof needer, "'%s'", j->target_name);
	/* Bitcode is read by its writer's LLVM or a newer one, never
	 * converted down (LLVM 19 refuses LLVM 22's attributes). */
	if (m->facts.producer_major && m->facts.producer_major >= needs) {
		needs = m->facts.producer_major;
		snprintf(needer, sizeof needer, "the module, bitcode written by '%s',",
		         m->facts.producer);
	}
	if (gpucc_backend_choose(&j->backend, needs, last, needer, c->o.llvm_major) != 0) {
		int rc = gpucc_error_last()->code;
		return job_fail(j, rc, "%s: %s: %s", m->shown, j->target_name,
		                gpucc_error_last()->message);
	}
	return 0;
}

/* Append each line of text to *out as "KIND BODY\n", BODY what follows
 * prefix in the line (the whole line when it lacks the prefix), or what
 * follows mark in it when mark is given (lines without it are left out). */
static void add_kind_lines(char **out, size_t *size, char kind, const char *text,
                           const char *prefix, const char *mark)
{
	for (const char *p = text; p && *p;) {
		size_t len = strcspn(p, "\n");
		const char *body = p;
		size_t body_len = len;
		if (mark) {
			const char *at = memmem(p, len, mark, strlen(mark));
			body = at ? at + strlen(mark) : NULL;
			body_len = at ? len - (size_t)(body - p) : 0;
		} else if (len >= strlen(prefix) && memcmp(p, prefix, strlen(prefix)) == 0) {
			body = p + strlen(prefix);
			body_len = len - strlen(prefix);
		}
		char *grown = body && len ? realloc(*out, *size + body_len + 4) : NULL;
		if (grown) {
			grown[(*size)++] = kind;
			grown[(*size)++] = ' ';
			memcpy(grown + *size, body, body_len);
			*size += body_len;
			grown[(*size)++] = '\n';
			grown[*size] = '\0';
			*out = grown;
		}
		p += len + (p[len] == '\n');
	}
}

/* Keep beside a compiled entry in the cache what its compile said that a
 * hit would not say again, for hits to replay (replay_warnings): clang's
 * warnings ("c"), the tools' lines ("d": ptxas's or nvJitLink's warnings),
 * and the cubin tool's refusal of the target ("w").  Without the
 * "MODULE: TARGET: " prefix, which the hit gives its own.  Under c->lock. */
static void store_warnings(gpucc_compile *c, job *j)
{
	const module *m = &c->modules[j->module];
	char *prefix = NULL;
	if (asprintf(&prefix, "%s: %s: ", m->shown, j->target_name) < 0)
		return;
	char *text = NULL;
	size_t size = 0;
	add_kind_lines(&text, &size, 'c', m->source_warnings, prefix, ": clang: ");
	add_kind_lines(&text, &size, 'd', j->out.diagnostics, prefix, NULL);
	add_kind_lines(&text, &size, 'w', j->refused, prefix, NULL);
	gpucc_cache_warnings_store(c->o.cache, &j->entry.key, text);
	free(text);
	free(prefix);
}

/* A hit says what the compile that made its entry said (store_warnings), as
 * a ccache hit replays the compiler's stderr: the tools' lines and
 * warnings, and clang's warnings when clang did not run now (with_clang: a
 * source's record led to the entry). */
static void replay_warnings(gpucc_compile *c, job *j, bool with_clang)
{
	if (!c->o.cache || j->r.status != GPUCC_COMPILE_HIT)
		return;
	const module *m = &c->modules[j->module];
	char *text = gpucc_cache_warnings_load(c->o.cache, &j->r.key);
	for (const char *p = text; p && *p;) {
		size_t len = strcspn(p, "\n");
		int body_len = len >= 2 ? (int)len - 2 : 0;
		const char *body = p + (len >= 2 ? 2 : len);
		if (p[0] == 'c' && with_clang)
			add_warning(j, "%s: %s: clang: %.*s", m->shown, j->target_name, body_len, body);
		else if (p[0] == 'w')
			add_warning(j, "%s: %s: %.*s", m->shown, j->target_name, body_len, body);
		else if (p[0] == 'd')
			add_diagnostic(j, "%s: %s: %.*s", m->shown, j->target_name, body_len, body);
		p += len + (p[len] == '\n');
	}
	free(text);
}

/* A lookup's result (rc, img) makes the job a hit, or leaves it pending. */
static void take_hit(job *j, int rc, gpucc_image *img)
{
	if (rc == 0 && gpucc_image_entry_count(img) >= 1) {
		j->hit = img;
		/* The module name is metadata, in neither the key nor the
		 * content digest: the entry carries this job's name, not
		 * that of the compile that filled the cache, so that a hit
		 * writes the same image as a compile. */
		j->hit_entry = *gpucc_image_entry(img, 0);
		j->hit_entry.module = j->entry.module;
		j->r.entry = &j->hit_entry;
		j->r.status = GPUCC_COMPILE_HIT;
	} else {
		gpucc_image_free(img);
		gpucc_error_clear(); /* a miss, or a cache problem: compile (it never breaks a build) */
	}
}

/* The job's key and, for --explain, its components, from entry e. */
static void set_key(job *j, const gpucc_entry *e)
{
	j->r.key = e->key;
	j->r.key_known = true;
	if (gpucc_key_components(j->components, e) == 0) {
		j->have_components = true;
		for (size_t i = 0; i < GPUCC_KEY_COMPONENTS; i++) {
			j->parts[i].name = j->components[i].name;
			j->parts[i].value = j->components[i].value;
		}
		j->r.key_part_count = GPUCC_KEY_COMPONENTS;
		j->r.key_parts = j->parts;
	}
}

/* A job of a source whose record led to a cached entry: a hit, its key,
 * target and components the entry's, no IR read. */
static int plan_recorded(gpucc_compile *c, job *j)
{
	module *m = &c->modules[j->module];
	gpucc_image *img = m->recorded.hit;
	m->recorded.hit = NULL;
	const gpucc_entry *e = gpucc_image_entry(img, 0);
	snprintf(j->target_name, sizeof j->target_name, "%s", e->target);
	j->entry.module = m->entry_name;
	j->entry.key = e->key;
	take_hit(j, 0, img);
	j->r.target = j->target_name;
	set_key(j, &j->hit_entry);
	replay_warnings(c, j, true);
	return 0;
}

static int plan_job(gpucc_compile *c, job *j)
{
	const module *m = &c->modules[j->module];
	const target *t = &c->targets[j->target];
	j->r.module = m->name;
	j->r.target = t->name;
	j->r.status = GPUCC_COMPILE_PENDING;
	j->r.source = m->source_note;
	for (const char *w = m->source_warnings; w && *w;) { /* clang's, one line each */
		size_t len = strcspn(w, "\n");
		add_warning(j, "%.*s", (int)len, w);
		w += len + (w[len] == '\n');
	}
	if (m->fail_code) { /* a source clang could not turn into a module */
		if (m->source_diagnostics && (j->diagnostics = strdup(m->source_diagnostics)))
			j->r.diagnostics = j->diagnostics;
		return job_fail(j, m->fail_code, "%s", m->fail_message ? m->fail_message : "out of memory");
	}
	if (skip_unfit(c, j))
		return 0;
	if (t->parsed.vendor == GPUCC_VENDOR_AMD && c->ld_lld_error)
		return job_fail(j, GPUCC_EUNAVAILABLE, "%s: %s: %s", m->shown, t->name, c->ld_lld_error);
	if (t->parsed.vendor == GPUCC_VENDOR_NVIDIA && c->ptxas_error)
		return job_fail(j, c->ptxas_error_code, "%s: %s: %s", m->shown, t->name, c->ptxas_error);
	if (t->parsed.vendor == GPUCC_VENDOR_NVIDIA && c->nvjitlink_error)
		return job_fail(j, GPUCC_EUNAVAILABLE, "%s: %s: %s", m->shown, t->name,
		                c->nvjitlink_error);
	if (m->recorded.hit)
		return plan_recorded(c, j);
	int rc = fit_target(c, j);
	if (rc == 0 && j->r.status != GPUCC_COMPILE_FAILED)
		rc = choose_libs(c, j);
	if (rc != 0 || j->r.status == GPUCC_COMPILE_FAILED)
		return rc;
	if ((rc = choose_backend(c, j)) != 0 || j->r.status == GPUCC_COMPILE_FAILED)
		return rc;
	if (m->facts.optnone && c->o.opt_level > 0)
		add_warning(j, "%s: %s: the module's functions are optnone (clang -O0 output): "
		            "-O%d leaves them unoptimised; give clang -O1 or higher, or -Xclang "
		            "-disable-O0-optnone", m->shown, j->target_name, c->o.opt_level);

	gpucc_entry *e = &j->entry;
	e->key_schema = GPUCC_KEY_SCHEMA;
	e->module = m->entry_name;
	e->module_sha256 = m->sha256;
	e->target = j->target_name;
	e->triple = gpucc_target_triple(&t->parsed);
	e->gpucc_version = gpucc_version();
	e->llvm_version = j->backend->version;
	e->device_lib_count = j->lib_count;
	e->device_libs = j->libs;
	e->option_count = j->option_count;
	e->options = j->options;
	if ((rc = gpucc_key_compute(&e->key, e)) != 0)
		return job_fail(j, rc, "%s: %s: %s", m->shown, j->target_name, gpucc_error_last()->message);
	set_key(j, e);
	/* A key the source's record led to, just missed, is not asked again. */
	bool missed = m->recorded.missed_key &&
	              memcmp(&m->recorded.missed, &e->key, sizeof e->key) == 0;
	if (c->o.cache && !missed) {
		gpucc_image *img = NULL;
		rc = gpucc_cache_lookup(&img, c->o.cache, &e->key);
		take_hit(j, rc, img);
		replay_warnings(c, j, false);
	}
	return 0;
}

/* The local misses of a plan, looked up in the cache's remotes in one batch
 * per remote before anything is compiled (gpucc/remote.h): what a remote
 * holds is verified and stored in the local cache, and the job hits.  No
 * remote, no cost: a plan whose every key hit locally asks nothing. */
static void fetch_from_remotes(gpucc_compile *c)
{
	if (!c->o.cache || gpucc_cache_remote_count(c->o.cache) == 0)
		return;
	size_t n = 0;
	for (size_t i = 0; i < c->job_count; i++)
		n += c->jobs[i].r.status == GPUCC_COMPILE_PENDING && c->jobs[i].r.key_known;
	gpucc_digest *keys = malloc((n ? n : 1) * sizeof *keys);
	size_t *which = malloc((n ? n : 1) * sizeof *which);
	bool *found = calloc(n ? n : 1, sizeof *found);
	if (n && keys && which && found) {
		n = 0;
		for (size_t i = 0; i < c->job_count; i++) {
			if (c->jobs[i].r.status == GPUCC_COMPILE_PENDING && c->jobs[i].r.key_known) {
				keys[n] = c->jobs[i].entry.key;
				which[n++] = i;
			}
		}
		gpucc_cache_remote_fetch(c->o.cache, keys, n, found);
		for (size_t k = 0; k < n; k++) {
			if (!found[k])
				continue;
			job *j = &c->jobs[which[k]];
			gpucc_image *img = NULL;
			/* Verified completely as it arrived; counted as the
			 * remote's hit, not the local cache's. */
			int rc = gpucc_cache_open_entry(&img, c->o.cache, &j->entry.key);
			take_hit(j, rc, img);
			j->r.from_remote = j->r.status == GPUCC_COMPILE_HIT;
			if (j->r.status != GPUCC_COMPILE_PENDING)
				report_progress(c, j);
		}
	}
	free(keys);
	free(which);
	free(found);
	gpucc_error_clear();
}

/* Facts of modules linked into one: what any of them says (the highest PTX
 * ISA, every processor, any library call), the first one's triple and
 * module flags. */
static void merge_facts(gpucc_module_facts *into, const gpucc_module_facts *f)
{
	if (!into->triple[0] && f->triple[0]) {
		memcpy(into->triple, f->triple, sizeof into->triple);
		into->triple_known = f->triple_known;
	}
	into->calls_libdevice |= f->calls_libdevice;
	into->calls_rocm |= f->calls_rocm;
	into->calls_hip |= f->calls_hip;
	into->opencl |= f->opencl;
	into->calls_mangled |= f->calls_mangled;
	into->attributes_known &= f->attributes_known;
	for (size_t i = 0; i < f->cpu_count; i++) {
		bool seen = false;
		for (size_t k = 0; k < into->cpu_count; k++)
			seen |= strcmp(into->cpus[k], f->cpus[i]) == 0;
		if (!seen && into->cpu_count < GPUCC_MODULE_MAX_CPUS)
			memcpy(into->cpus[into->cpu_count++], f->cpus[i], sizeof into->cpus[0]);
	}
	if (f->ptx_isa > into->ptx_isa)
		into->ptx_isa = f->ptx_isa;
	into->wavefront64 |= f->wavefront64;
	if (into->xnack == GPUCC_FEATURE_ANY)
		into->xnack = f->xnack;
	if (into->sramecc == GPUCC_FEATURE_ANY)
		into->sramecc = f->sramecc;
	into->optnone |= f->optnone;
	if (!into->code_object_version)
		into->code_object_version = f->code_object_version;
	if (f->producer_major > into->producer_major) { /* the newest writer's */
		into->producer_major = f->producer_major;
		memcpy(into->producer, f->producer, sizeof into->producer);
	}
}

/* The module of modules[members[0..n)] linked in that order, into *out.
 * Its name joins theirs with '+'; its digest (the key's module component)
 * is the SHA-256 of "gpucc-link\n" and their digests, in order
 * (formats/key.md). */
static int link_group(gpucc_compile *c, const size_t *members, size_t n, module *out)
{
	size_t name_size = 1;
	for (size_t i = 0; i < n; i++) {
		const char *slash = strrchr(c->modules[members[i]].name, '/');
		name_size += strlen(slash && slash[1] ? slash + 1 : c->modules[members[i]].name) + 1;
	}
	module linked;
	memset(&linked, 0, sizeof linked);
	linked.name = malloc(name_size);
	linked.shown = malloc(4 * name_size);
	linked.data = malloc(1);
	linked.member_data = calloc(n, sizeof *linked.member_data);
	linked.member_sizes = calloc(n, sizeof *linked.member_sizes);
	linked.member_names = calloc(n, sizeof *linked.member_names);
	unsigned char *digests = malloc(11 + n * sizeof(gpucc_digest));
	if (!linked.name || !linked.shown || !linked.data || !linked.member_data ||
	    !linked.member_sizes || !linked.member_names || !digests) {
		module_release(&linked);
		free(digests);
		return gpucc_error_oom();
	}
	linked.name[0] = '\0';
	memcpy(digests, "gpucc-link\n", 11);
	linked.facts = c->modules[members[0]].facts;
	for (size_t i = 0; i < n; i++) {
		const module *m = &c->modules[members[i]];
		const char *slash = strrchr(m->name, '/');
		if (i)
			strcat(linked.name, "+");
		strcat(linked.name, slash && slash[1] ? slash + 1 : m->name);
		memcpy(digests + 11 + i * sizeof(gpucc_digest), &m->sha256, sizeof(gpucc_digest));
		linked.member_data[i] = m->data;
		linked.member_sizes[i] = m->size;
		linked.member_names[i] = m->shown;
		if (i)
			merge_facts(&linked.facts, &m->facts);
		/* A source clang could not compile fails the linked module. */
		if (m->fail_code && !linked.fail_code) {
			linked.fail_code = m->fail_code;
			linked.fail_message = m->fail_message ? strdup(m->fail_message) : NULL;
			linked.source_diagnostics = m->source_diagnostics ? strdup(m->source_diagnostics) : NULL;
		}
	}
	gpucc_escape_controls(linked.shown, 4 * name_size, linked.name);
	linked.entry_name = gpucc_manifest_spell_name(linked.name);
	gpucc_digest_buffer(&linked.sha256, digests, 11 + n * sizeof(gpucc_digest));
	free(digests);
	if (!linked.entry_name) {
		module_release(&linked);
		return gpucc_error_oom();
	}
	linked.member_count = n;
	*out = linked;
	return 0;
}

/* link_modules: modules linked in the order given, the only ones jobs are
 * made for: one, or, when sources made modules for one target each, one
 * per target of the run, linking that target's modules of sources and
 * every module of IR. */
static int link_modules(gpucc_compile *c)
{
	size_t n = c->module_count;
	bool per_target = false;
	for (size_t i = 0; i < n; i++)
		per_target |= c->modules[i].one_target;
	size_t groups = per_target ? c->target_count : 1;
	module *grown = realloc(c->modules, sizeof *grown * (n + groups));
	size_t *members = calloc(n, sizeof *members);
	if (grown)
		c->modules = grown;
	if (!grown || !members) {
		free(members);
		return gpucc_error_oom();
	}
	size_t added = 0;
	for (size_t g = 0; g < groups; g++) {
		size_t count = 0;
		for (size_t i = 0; i < n; i++)
			if (!per_target || !c->modules[i].one_target || c->modules[i].only_target == g)
				members[count++] = i;
		bool any_source = false;
		for (size_t i = 0; i < count; i++)
			any_source |= c->modules[members[i]].one_target;
		if (count == 0 || (per_target && !any_source))
			continue; /* no source serves this target */
		module *linked = &c->modules[n + added];
		int rc = link_group(c, members, count, linked);
		if (rc != 0) {
			free(members);
			c->module_count = n + added;
			return rc;
		}
		linked->one_target = per_target;
		linked->only_target = g;
		added++;
	}
	free(members);
	c->module_count = n + added;
	c->first_job_module = n;
	return 0;
}

/* A module made of a source for targets[target]: clang's IR or the
 * entry its record led to (taken from r), or, when there is neither, a
 * module that fails with r's error. */
static int source_module(module *out, const module *source, size_t target_index,
                         gpucc_source_result *r)
{
	memset(out, 0, sizeof *out);
	out->name = strdup(source->name);
	out->shown = strdup(source->shown);
	out->entry_name = strdup(source->entry_name);
	out->one_target = true;
	out->from_source = true;
	out->only_target = target_index;
	bool made = r->ir || r->hit;
	out->data = r->ir ? r->ir : malloc(1);
	out->size = r->ir ? r->ir_size : 0;
	r->ir = NULL;
	out->fail_code = made ? 0 : r->error_code ? r->error_code : GPUCC_ERROR;
	out->fail_message = r->error;
	out->source_note = r->note;
	out->source_warnings = r->warnings;
	out->source_diagnostics = r->diagnostics;
	r->error = r->note = r->warnings = r->diagnostics = NULL;
	out->recorded = *r; /* hit, record and missed key: the rest are NULL now */
	memset(r, 0, sizeof *r);
	if (!out->name || !out->shown || !out->entry_name || !out->data)
		return gpucc_error_oom();
	gpucc_digest_buffer(&out->sha256, out->data, out->size);
	if (out->size)
		gpucc_module_facts_read(&out->facts, out->data, out->size);
	return 0;
}

/* What an entry's key names besides the IR, for jobs of the vendor's
 * targets, as the run knows it before any IR (formats/key.md): the key
 * schema, gpucc's and LLVM's versions, the options (code-object as the run
 * asks for it: the IR settles the rest), the tools' versions or that they
 * are missing, and the digest of every device library a job of the vendor
 * may link.  A source record's name takes it, so that a toolchain changed
 * since a record was written never leads to a key of the old one. */
typedef struct identity_text {
	char text[4096];
	size_t used;
} identity_text;

static void identity_add(identity_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void identity_add(identity_text *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t->text + t->used, sizeof t->text - t->used, fmt, ap);
	va_end(ap);
	if (n > 0)
		t->used += (size_t)n < sizeof t->text - t->used ? (size_t)n : sizeof t->text - 1 - t->used;
}

/* The device libraries a source's IR may be linked with, for the vendor's
 * targets: each a directory (NULL: none found) and a file name.  What
 * names a source's record (source_identity) and what a dependency file
 * lists of a source's entries, hit or miss. */
static void each_source_lib(const gpucc_compile *c, gpucc_vendor vendor,
                            void (*fn)(void *ctx, const char *dir, const char *file), void *ctx)
{
	static const char *const rocm[] = {
		"hip.bc", "ocml.bc", "ockl.bc", "oclc_abi_version_400.bc", "oclc_abi_version_500.bc",
		"oclc_correctly_rounded_sqrt_off.bc", "oclc_correctly_rounded_sqrt_on.bc",
		"oclc_daz_opt_off.bc", "oclc_daz_opt_on.bc", "oclc_finite_only_off.bc",
		"oclc_finite_only_on.bc", "oclc_unsafe_math_off.bc", "oclc_unsafe_math_on.bc",
		"oclc_wavefrontsize64_off.bc", "oclc_wavefrontsize64_on.bc"};
	bool nvidia = vendor == GPUCC_VENDOR_NVIDIA;
	if (nvidia) {
		const char *lib = c->toolchain.libdevice;
		const char *slash = lib ? strrchr(lib, '/') : NULL;
		char dir[4096];
		snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - lib) : 0, lib ? lib : "");
		fn(ctx, slash ? dir : NULL, slash ? slash + 1 : "libdevice.10.bc");
	}
	for (size_t i = 0; !nvidia && i < sizeof rocm / sizeof rocm[0]; i++)
		fn(ctx, c->toolchain.rocm_dir, rocm[i]);
	fn(ctx, c->toolchain.libclc_dir, nvidia ? "nvptx64--nvidiacl.bc" : "amdgcn--amdhsa.bc");
}

typedef struct identity_libs {
	gpucc_compile *c;
	identity_text *t;
} identity_libs;

/* A device library's name and digest ("absent" when there is none). */
static void identity_lib(void *ctx, const char *dir, const char *file)
{
	identity_libs *x = ctx;
	char path[8192], hex[GPUCC_DIGEST_HEX_SIZE] = "absent";
	gpucc_digest d;
	snprintf(path, sizeof path, "%s/%s", dir ? dir : "", file);
	if (dir && gpucc_toolchain_digest(&x->c->toolchain, path, &d) == 0)
		gpucc_digest_to_hex(hex, &d);
	gpucc_error_clear();
	identity_add(x->t, "%s %s\n", file, hex);
}

static void source_identity(gpucc_compile *c, gpucc_vendor vendor, gpucc_digest *out)
{
	bool nvidia = vendor == GPUCC_VENDOR_NVIDIA;
	identity_text t = {.used = 0};
	identity_add(&t, "schema=%d\ngpucc=%s\ncode-object=%d\nmissing=%d%d%d\n",
	             GPUCC_KEY_SCHEMA, gpucc_version(), c->o.code_object_version,
	             c->ptxas_error != NULL, c->nvjitlink_error != NULL, c->ld_lld_error != NULL);
	/* Which backend compiles a target (so which LLVM its entry's key
	 * names) follows from the target, which names the record too, the
	 * backends there are and the one --llvm pins. */
	const gpucc_backend_info *backends;
	size_t backend_count = gpucc_backends(&backends);
	identity_add(&t, "llvm-pinned=%u\n", c->o.llvm_major);
	for (size_t i = 0; i < backend_count; i++)
		identity_add(&t, "llvm=%s\n", backends[i].version);
	const gpucc_option *o = nvidia ? c->nvidia_options : c->amd_options;
	size_t count = nvidia ? c->nvidia_option_count : c->amd_option_count;
	for (size_t i = nvidia ? 0 : 1; i < count; i++) /* AMD's first is code-object */
		identity_add(&t, "%s=%s\n", o[i].name, o[i].value);
	identity_libs x = {c, &t};
	each_source_lib(c, vendor, identity_lib, &x);
	gpucc_digest_buffer(out, t.text, t.used);
}

/* Write the records of the sources whose IR clang made, now that the jobs
 * have keys: for a job that hit or was compiled. */
static void store_records(gpucc_compile *c)
{
	for (size_t i = 0; i < c->job_count; i++) {
		const job *j = &c->jobs[i];
		const module *m = &c->modules[j->module];
		if (m->recorded.record && (j->r.status == GPUCC_COMPILE_HIT ||
		                           j->r.status == GPUCC_COMPILE_COMPILED))
			gpucc_source_record_store(c->o.cache, &m->recorded, &j->entry.key);
	}
}

/* The progress of the sources' pairs, before any job: reported as
 * gpucc/compile.h says. */
static void source_progress(void *ctx, const gpucc_source_pair *p, size_t done, size_t total)
{
	gpucc_compile *c = ctx;
	gpucc_compile_result r;
	memset(&r, 0, sizeof r);
	r.module = p->path;
	r.target = p->target_name;
	r.status = GPUCC_COMPILE_PENDING;
	r.source = p->result.note;
	gpucc_compile_progress pr = {0, 0, 0, 0, seconds_since(&c->start), &r, done, total};
	c->o.progress(c->o.progress_ctx, &pr);
}

/* Sources: in each one's place among the modules, one module per target of
 * the run that its language serves, made by clang or found through a
 * direct-mode record (lib/compile/compile_source.c).  A source whose language
 * serves no target of the run is one failed module. */
static int expand_sources(gpucc_compile *c)
{
	size_t sources = 0, pair_count = 0;
	for (size_t i = 0; i < c->module_count; i++) {
		const module *m = &c->modules[i];
		if (m->language == GPUCC_LANGUAGE_FROM_NAME)
			continue;
		sources++;
		for (size_t t = 0; t < c->target_count; t++)
			pair_count += gpucc_source_language_serves(m->language,
			                                           c->targets[t].parsed.vendor);
	}
	if (sources == 0)
		return 0;
	gpucc_source_pair *pairs = calloc(pair_count ? pair_count : 1, sizeof *pairs);
	size_t *pair_target = calloc(pair_count ? pair_count : 1, sizeof *pair_target);
	module *grown = calloc(c->module_count - sources + pair_count + sources, sizeof *grown);
	if (!pairs || !pair_target || !grown) {
		free(pairs);
		free(pair_target);
		free(grown);
		return gpucc_error_oom();
	}
	size_t k = 0;
	for (size_t i = 0; i < c->module_count; i++) {
		const module *m = &c->modules[i];
		if (m->language == GPUCC_LANGUAGE_FROM_NAME)
			continue;
		for (size_t t = 0; t < c->target_count; t++) {
			if (!gpucc_source_language_serves(m->language, c->targets[t].parsed.vendor))
				continue;
			pairs[k] = (gpucc_source_pair){.path = m->name, .shown = m->shown,
			                               .data = m->data, .size = m->size,
			                               .language = m->language,
			                               .target = &c->targets[t].parsed,
			                               .target_name = c->targets[t].name,
			                               .target_shown = c->targets[t].open_name,
			                               .parts = parts_option(&c->targets[t]),
			                               .ptx_explicit = c->targets[t].ptx_explicit};
			pair_target[k++] = t;
		}
	}
	size_t cpus = gpucc_cpu_count();
	gpucc_source_settings settings = {
		.opt_level = c->o.opt_level,
		.code_object_version = c->o.code_object_version,
		.debug_info = c->o.debug_info,
		.fast_math = c->o.fast_math,
		.ftz = c->o.ftz,
		.relocatable = c->o.link_modules,
		.no_pch = c->o.no_pch,
		.identity = {{{0}}},
		.clang = c->o.clang,
		.args = c->o.clang_args,
		.arg_count = c->o.clang_arg_count,
		.timeout_seconds = c->o.job_timeout_seconds,
		.jobs = c->o.jobs ? c->o.jobs : (unsigned)(cpus && cpus < 256 ? cpus : 1),
		.cache = c->o.cache,
		.toolchain = &c->toolchain,
		.pair_done = c->o.progress ? source_progress : NULL,
		.pair_done_ctx = c,
		.before_clang = c->before_clang,
		.before_clang_ctx = c->before_clang_ctx,
	};
	bool known[3] = {false, false, false};
	for (size_t t = 0; t < c->target_count && c->o.cache; t++) {
		gpucc_vendor v = c->targets[t].parsed.vendor;
		if ((v == GPUCC_VENDOR_NVIDIA || v == GPUCC_VENDOR_AMD) && !known[v]) {
			source_identity(c, v, &settings.identity[v]);
			known[v] = true;
		}
	}
	int rc = gpucc_sources_resolve(pairs, pair_count, &settings);
	size_t n = 0;
	k = 0;
	for (size_t i = 0; i < c->module_count; i++) {
		module *m = &c->modules[i];
		if (m->language == GPUCC_LANGUAGE_FROM_NAME) {
			grown[n++] = *m;
			continue;
		}
		size_t made = 0;
		for (; k < pair_count && pairs[k].path == m->name; k++, made++)
			if (rc == 0)
				rc = source_module(&grown[n++], m, pair_target[k], &pairs[k].result);
		if (made == 0 && rc == 0) {
			gpucc_source_result none = {0};
			none.error_code = GPUCC_ECOMPILE;
			bool hip = m->language == GPUCC_LANGUAGE_HIP;
			char why[1024];
			snprintf(why, sizeof why, "%s: %s: %s sources compile for %s targets (%s) only, "
			         "and the run has none", m->shown, c->targets[0].name,
			         gpucc_source_language_name(m->language), hip ? "AMD" : "NVIDIA",
			         hip ? "gfxNNN" : "sm_XY");
			none.error = strdup(why);
			rc = source_module(&grown[n++], m, 0, &none);
			gpucc_source_result_release(&none);
		}
		module_release(m);
	}
	for (size_t i = 0; i < pair_count; i++)
		gpucc_source_result_release(&pairs[i].result);
	free(pairs);
	free(pair_target);
	free(c->modules);
	c->modules = grown;
	c->module_count = n;
	return rc;
}

int gpucc_compile_plan(gpucc_compile *c)
{
	GPUCC_REQUIRE(c);
	if (c->planned)
		return 0;
	if (c->module_count == 0)
		return gpucc_error_set(GPUCC_EINVALID, "no modules to compile");
	if (c->target_count == 0)
		return gpucc_error_set(GPUCC_EINVALID, "no targets to compile for");
	clock_gettime(CLOCK_MONOTONIC, &c->start);
	if (c->o.cache && !gpucc_cache_writable(c->o.cache) &&
	    !gpucc_cache_read_only_requested(c->o.cache))
		/* Once per run, not per entry: hits still count, nothing is
		 * stored.  A caller that asked for a read-only cache (a dry run)
		 * knows. */
		gpucc_cache_warn(c->o.cache, "'%s' is read-only (%s): compiled entries are not stored",
		                 gpucc_cache_dir(c->o.cache), gpucc_cache_read_only_reason(c->o.cache));
	const char *memo_dir = c->o.cache ? gpucc_cache_dir(c->o.cache) : NULL;
	int rc = gpucc_toolchain_init(&c->toolchain, memo_dir);
	if (rc != 0)
		return rc;
	c->have_toolchain = true;
	if (c->o.no_cubin) {
		/* Exactly what a machine without ptxas does, key included. */
		free(c->toolchain.ptxas);
		c->toolchain.ptxas = NULL;
	}
	/* The tools' `--version` probes of a run with an empty memo (a new
	 * cache) run side by side: clang's, for sources, beside ld.lld's and
	 * ptxas's, which build_options waits for. */
	for (size_t i = 0; i < c->module_count; i++)
		if (c->modules[i].language != GPUCC_LANGUAGE_FROM_NAME) {
			gpucc_sources_prefetch(&c->toolchain, c->o.clang);
			break;
		}
	if ((rc = build_options(c)) != 0)
		return rc;
	if ((rc = expand_sources(c)) != 0)
		return rc;
	bool any_source = false;
	for (size_t i = 0; i < c->module_count; i++)
		any_source |= c->modules[i].one_target;
	if (c->o.link_modules && (c->module_count > 1 || any_source) && (rc = link_modules(c)) != 0)
		return rc;
	/* A module made of a source is for one target only. */
	c->job_count = 0;
	for (size_t m = c->first_job_module; m < c->module_count; m++)
		c->job_count += c->modules[m].one_target ? 1 : c->target_count;
	c->jobs = calloc(c->job_count ? c->job_count : 1, sizeof *c->jobs);
	if (!c->jobs)
		return gpucc_error_oom();
	size_t next_job = 0;
	for (size_t m = c->first_job_module; m < c->module_count; m++) {
		for (size_t t = 0; t < c->target_count; t++) {
			if (c->modules[m].one_target && c->modules[m].only_target != t)
				continue;
			job *j = &c->jobs[next_job++];
			j->module = m;
			j->target = t;
			plan_job(c, j);
			if (j->r.status != GPUCC_COMPILE_PENDING)
				report_progress(c, j);
		}
	}
	fetch_from_remotes(c);
	/* Remember digests now: a run that only hits still saves its memos. */
	if (c->o.cache && gpucc_cache_writable(c->o.cache))
		gpucc_toolchain_save(&c->toolchain);
	c->planned = true;
	return 0;
}

/* ---- compiling ------------------------------------------------------------------ */

typedef struct pool {
	gpucc_compile *c;
	size_t *misses;
	size_t miss_count;
	size_t next;       /* under c->lock */
} pool;

static int build_entry(gpucc_compile *c, job *j)
{
	gpucc_backend_result *out = &j->out;
	j->kernels = calloc(out->kernel_count ? out->kernel_count : 1, sizeof *j->kernels);
	if (!j->kernels)
		return gpucc_error_oom();
	for (size_t i = 0; i < out->kernel_count; i++) {
		j->kernels[i].name = out->kernels[i].name;
		j->kernels[i].registers = out->kernels[i].registers;
		j->kernels[i].shared_bytes = out->kernels[i].shared_bytes;
		j->kernels[i].scratch_bytes = out->kernels[i].scratch_bytes;
	}
	/* An entry of a cubin alone ("90-real") keeps no PTX, and is no entry
	 * without its cubin. */
	bool cubin_only = c->targets[j->target].parts == PARTS_CUBIN;
	if (cubin_only && !out->payloads[GPUCC_PART_CUBIN])
		return job_fail(j, GPUCC_EUNAVAILABLE,
		                "%s: %s: %s-real asks for a cubin alone, and %s", c->modules[j->module].shown,
		                j->target_name, c->targets[j->target].open_name,
		                out->ptxas_refused ? out->ptxas_refused
		                                   : "no ptxas or libnvJitLink was found to make one");
	j->payload_count = 0;
	for (int part = 0; part < GPUCC_PART_COUNT; part++) {
		if (!out->payloads[part] || (cubin_only && part == GPUCC_PART_PTX))
			continue;
		gpucc_payload *p = &j->payloads[j->payload_count];
		p->part = (gpucc_part)part;
		p->size = out->payload_sizes[part];
		gpucc_digest_buffer(&p->sha256, out->payloads[part], out->payload_sizes[part]);
		gpucc_payload_source *s = &j->sources[j->payload_count];
		s->part = (gpucc_part)part;
		s->path = NULL;
		s->data = out->payloads[part];
		s->size = out->payload_sizes[part];
		j->payload_count++;
	}
	gpucc_entry *e = &j->entry;
	e->kernel_count = out->kernel_count;
	e->kernels = j->kernels;
	e->external_count = out->external_count;
	e->externals = (const char *const *)out->externals;
	e->payload_count = j->payload_count;
	e->payloads = j->payloads;
	(void)c;
	return 0;
}

/* Whether an insert that failed with sys_errno (gpucc_error_last_errno)
 * would fail for every entry: the cache's file system is full, over
 * quota, past ulimit -f, read-only or failing.  Anything else (a
 * permission, a directory or a file where a name is needed) is one
 * entry's or one shard's problem. */
static bool cache_wide_failure(int sys_errno)
{
	return sys_errno == ENOSPC || sys_errno == EDQUOT || sys_errno == EFBIG ||
	       sys_errno == EROFS || sys_errno == EIO;
}

static void compile_one(pool *p, gpucc_worker *worker, job *j)
{
	if (gpucc_backend_present(j->backend) != 0 || access(j->backend->worker, X_OK) != 0) {
		gpucc_compile *c = p->c;
		if (!j->backend->present)
			job_fail(j, GPUCC_EUNAVAILABLE, "%s: %s: %s", j->r.module, j->r.target,
			         gpucc_error_last()->message);
		else
			job_fail(j, GPUCC_EUNAVAILABLE, "%s: %s: the compile worker '%s' is not beside the "
			         "LLVM backend: reinstall gpucc", j->r.module, j->r.target,
			         j->backend->worker);
		gpucc_error_clear();
		pthread_mutex_lock(&c->lock);
		report_progress(c, j);
		pthread_mutex_unlock(&c->lock);
		return;
	}
	gpucc_compile *c = p->c;
	pthread_mutex_lock(&c->lock);
	c->backend_loaded = true; /* by the worker this job goes to */
	pthread_mutex_unlock(&c->lock);
	const module *m = &c->modules[j->module];
	const target *t = &c->targets[j->target];
	bool nvidia = t->parsed.vendor == GPUCC_VENDOR_NVIDIA;
	gpucc_backend_job bj = {
		.module_name = m->shown,
		.module_data = m->member_count ? m->member_data[0] : m->data,
		.module_size = m->member_count ? m->member_sizes[0] : m->size,
		.link_count = m->member_count ? m->member_count - 1 : 0,
		.link_data = m->member_count ? m->member_data + 1 : NULL,
		.link_sizes = m->member_count ? m->member_sizes + 1 : NULL,
		.link_names = m->member_count ? m->member_names + 1 : NULL,
		.target_name = j->target_name,
		.vendor = t->parsed.vendor,
		.triple = gpucc_target_triple(&t->parsed),
		.cpu = t->cpu,
		.features = j->features,
		.sm = t->parsed.sm,
		.sm_accelerated = t->parsed.sm_accelerated,
		.opt_level = c->o.opt_level,
		.fast_math = c->o.fast_math,
		.ftz = c->o.ftz,
		.debug_info = c->o.debug_info,
		.code_object_version = j->code_object_version,
		.device_lib_count = j->lib_count,
		.device_lib_paths = (const char *const *)j->lib_paths,
		.device_lib_data = j->lib_data,
		.device_lib_sizes = j->lib_sizes,
		.ptxas = nvidia && c->targets[j->target].parts & PARTS_CUBIN ? c->toolchain.ptxas : NULL,
		.ld_lld = nvidia ? NULL : c->toolchain.ld_lld,
		.nvjitlink = nvidia && c->targets[j->target].parts & PARTS_CUBIN ? c->nvjitlink : NULL,
		.ld_lld_in_process = !nvidia && c->ld_lld_in_process,
	};
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	int rc = gpucc_worker_compile(worker, &bj, &j->out);
	j->have_out = true;
	j->r.seconds = seconds_since(&start);
	if (j->out.diagnostics) {
		j->diagnostics = strdup(j->out.diagnostics);
		j->r.diagnostics = j->diagnostics;
	}
	if (rc == 0 && j->out.ptxas_refused &&
	    asprintf(&j->refused, "%s %s does not compile for this target (%s): PTX only, which "
	             "the driver compiles when it loads it", c->nvjitlink ? "nvJitLink" : "ptxas",
	             c->nvjitlink ? c->nvjitlink_version : c->ptxas_version,
	             j->out.ptxas_refused) < 0)
		j->refused = NULL;
	if (j->refused && c->targets[j->target].parts & PARTS_PTX) /* -real: an error below */
		add_warning(j, "%s: %s: %s", m->shown, j->target_name, j->refused);
	if (rc != 0 && j->out.no_kernels && m->from_source) {
		/* Host code only (clang's own build of it has no device code
		 * either): nothing to add, which is worth a warning, not an
		 * error, unless no unit of the run has a kernel
		 * (gpucc_compile_run). */
		job_fail(j, 0, "%s: %s: skipped: the source defines no kernel", m->shown,
		         job_shown_target(c, j));
		j->r.status = GPUCC_COMPILE_SKIPPED;
		j->no_kernels = true;
		j->warnings_before_no_kernels = j->warnings ? strlen(j->warnings) : 0;
		add_warning(j, "%s: %s: the source defines no kernel (host code only): it adds nothing",
		            m->shown, job_shown_target(c, j));
	} else if (rc != 0) {
		job_fail(j, rc, "%s", j->out.message ? j->out.message : "compile failed");
	} else if (build_entry(c, j) != 0) {
		if (j->r.status != GPUCC_COMPILE_FAILED) /* build_entry said why */
			job_fail(j, GPUCC_ERROR, "%s: %s: out of memory", m->shown, j->target_name);
	} else if (gpucc_entry_names_check(&j->entry) != 0) {
		/* A kernel or external no manifest can carry: this job's failure,
		 * before anything is cached or written. */
		job_fail(j, GPUCC_ECOMPILE, "%s: %s: %s: rename it", m->shown, j->target_name,
		         gpucc_error_last()->message);
		gpucc_error_clear();
	} else {
		j->r.status = GPUCC_COMPILE_COMPILED;
		j->r.entry = &j->entry;
	}
	pthread_mutex_lock(&c->lock);
	if (j->r.status == GPUCC_COMPILE_COMPILED && c->o.cache && gpucc_cache_writable(c->o.cache) &&
	    !c->cache_failed) {
		if (gpucc_cache_insert(c->o.cache, &j->entry, j->sources, j->payload_count,
		                       GPUCC_CONFLICT_LAST) != 0) {
			/* A cache problem never breaks a build.  What
			 * fails every insert (a full disk or quota, ulimit -f, a
			 * file system gone read-only, an I/O error) is said once and
			 * ends caching for the run; what fails one entry (a
			 * directory or an unreadable file at its name, a shard it
			 * may not write) leaves the others to be cached. */
			bool whole_cache = cache_wide_failure(gpucc_error_last_errno());
			add_warning(j, "%s: %s: not cached: %s%s", m->shown, j->target_name,
			            gpucc_error_last()->message,
			            whole_cache ? "; nothing more is cached in this run" : "");
			c->cache_failed |= whole_cache;
			gpucc_error_clear();
		} else {
			store_warnings(c, j);
		}
	}
	report_progress(c, j);
	pthread_mutex_unlock(&c->lock);
}

/* A thread of the pool (gpucc_pool_start), or the calling thread when none
 * started. */
static int worker(void *arg, size_t thread)
{
	(void)thread;
	pool *p = arg;
	gpucc_compile *c = p->c;
	gpucc_worker_limits limits = {c->o.job_timeout_seconds, c->o.job_memory_bytes};
	/* One worker slot per backend this thread meets (its LLVM's worker). */
	const gpucc_backend_info *backends;
	size_t backend_count = gpucc_backends(&backends);
	gpucc_worker *w[8] = {NULL};
	for (;;) {
		pthread_mutex_lock(&c->lock);
		size_t index = p->next < p->miss_count ? p->misses[p->next++] : (size_t)-1;
		pthread_mutex_unlock(&c->lock);
		if (index == (size_t)-1)
			break;
		job *j = &c->jobs[index];
		size_t slot = (size_t)(j->backend - backends);
		if (slot >= backend_count || slot >= sizeof w / sizeof w[0])
			slot = 0;
		if (!w[slot] && !(w[slot] = gpucc_worker_new(j->backend->worker, j->backend->version,
		                                              &limits))) {
			job_fail(j, GPUCC_ERROR, "%s: %s: out of memory", j->r.module, j->r.target);
			pthread_mutex_lock(&c->lock);
			report_progress(c, j);
			pthread_mutex_unlock(&c->lock);
			continue;
		}
		compile_one(p, w[slot], j);
	}
	for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
		gpucc_worker_free(w[i]);
	return 0;
}

static unsigned thread_count(const gpucc_compile *c, size_t misses)
{
	unsigned n = c->o.jobs;
	if (n == 0) { /* the CPUs this process may use (taskset, a CI runner's cpuset) */
		size_t cpus = gpucc_cpu_count();
		n = cpus < 256 ? (unsigned)cpus : 256;
	}
	if (n > misses)
		n = (unsigned)misses;
	if (n > 256)
		n = 256;
	return n ? n : 1;
}

static int compile_misses(gpucc_compile *c)
{
	pool p = {.c = c};
	p.misses = calloc(c->job_count ? c->job_count : 1, sizeof *p.misses);
	if (!p.misses)
		return gpucc_error_oom();
	for (size_t i = 0; i < c->job_count; i++)
		if (c->jobs[i].r.status == GPUCC_COMPILE_PENDING)
			p.misses[p.miss_count++] = i;
	if (p.miss_count == 0) {
		free(p.misses);
		return 0;
	}
	/* The workers load LLVM, each job's backend's (compile_one), and
	 * refuse to compile when it is not the LLVM that backend was built
	 * with, which keys name: this process does not. */
	unsigned n = thread_count(c, p.miss_count);
	gpucc_pool threads;
	/* LLVM recurses deeply: 16 MiB stacks. */
	unsigned started = (unsigned)gpucc_pool_start(&threads, n, (size_t)16 << 20, worker, &p);
	if (started == 0)
		worker(&p, 0);
	gpucc_pool_join(&threads); /* worker fails no job of its own: 0 */
	c->threads_used = started ? started : 1;
	/* Jobs no thread could take (every thread failed to start). */
	for (size_t i = 0; i < p.miss_count; i++) {
		job *j = &c->jobs[p.misses[i]];
		if (j->r.status == GPUCC_COMPILE_PENDING) {
			job_fail(j, GPUCC_ERROR, "%s: %s: no compile thread could start", j->r.module,
			         j->r.target);
			report_progress(c, j);
		}
	}
	free(p.misses);
	return 0;
}

static int add_to_writer(gpucc_compile *c)
{
	for (size_t i = 0; i < c->job_count; i++) {
		job *j = &c->jobs[i];
		int rc = 0;
		if (j->r.status == GPUCC_COMPILE_HIT)
			rc = gpucc_image_writer_add_from(c->o.writer, j->hit, &j->hit_entry);
		else if (j->r.status == GPUCC_COMPILE_COMPILED)
			rc = gpucc_image_writer_add(c->o.writer, &j->entry, j->sources, j->payload_count);
		if (rc != 0)
			return gpucc_error_prefix("%s: %s", j->r.module, j->r.target);
	}
	return 0;
}

/* A source library of each_source_lib that exists, into the list. */
static void depfile_lib(void *ctx, const char *dir, const char *file)
{
	char path[8192];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", dir ? dir : "", file);
	if (dir && stat(path, &st) == 0)
		gpucc_strlist_push(ctx, path, strlen(path));
}

int gpucc_compile_write_depfile(gpucc_compile *c, const char *path, const char *rule_target)
{
	GPUCC_REQUIRE(c);
	GPUCC_REQUIRE(path);
	GPUCC_REQUIRE(rule_target);
	if (!c->ran)
		return gpucc_error_set(GPUCC_EINVALID, "the dependency file is written after the run");
	/* Repeats are many (every target's module of a source reads its
	 * headers): gpucc_depfile_write names each file once. */
	gpucc_strlist deps = {0};
	bool source_libs[2] = {false, false};
	for (size_t i = 0; i < c->module_count; i++) {
		const module *m = &c->modules[i];
		if (m->from_file || m->from_source)
			gpucc_strlist_push(&deps, m->name, strlen(m->name));
		for (size_t k = 0; k < m->recorded.reads.count; k++)
			gpucc_strlist_push(&deps, m->recorded.reads.items[k],
			                   strlen(m->recorded.reads.items[k]));
		/* A hit from a record planned no libraries: those its record's
		 * name covers, whichever the compile linked. */
		gpucc_vendor v = m->from_source ? c->targets[m->only_target].parsed.vendor : 0;
		if (m->from_source && !source_libs[v == GPUCC_VENDOR_NVIDIA]) {
			source_libs[v == GPUCC_VENDOR_NVIDIA] = true;
			each_source_lib(c, v, depfile_lib, &deps);
		}
	}
	bool vendors[2] = {false, false}; /* AMD, NVIDIA: a job of the vendor ran or hit */
	for (size_t i = 0; i < c->job_count; i++) {
		vendors[c->targets[c->jobs[i].target].parsed.vendor == GPUCC_VENDOR_NVIDIA] = true;
		for (size_t k = 0; k < c->jobs[i].lib_count; k++)
			if (!c->jobs[i].lib_data[k] && c->jobs[i].lib_paths[k])
				gpucc_strlist_push(&deps, c->jobs[i].lib_paths[k],
				                   strlen(c->jobs[i].lib_paths[k]));
	}
	/* The tools whose versions the keys name: another one, another entry. */
	const char *tools[] = {vendors[1] ? c->toolchain.ptxas : NULL, vendors[1] ? c->nvjitlink : NULL,
	                       vendors[0] ? c->toolchain.ld_lld : NULL};
	for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
		if (tools[i])
			gpucc_strlist_push(&deps, tools[i], strlen(tools[i]));
	int rc = deps.failed ? gpucc_error_oom()
	                     : gpucc_depfile_write(path, rule_target, (const char *const *)deps.items,
	                                           deps.count);
	gpucc_strlist_release(&deps);
	return rc;
}

int gpucc_compile_run(gpucc_compile *c)
{
	GPUCC_REQUIRE(c);
	if (c->ran)
		return gpucc_error_set(GPUCC_EINVALID, "this compile session has already run");
	int rc = gpucc_compile_plan(c);
	if (rc != 0)
		return rc;
	c->ran = true;
	if ((rc = compile_misses(c)) != 0)
		return rc;
	if (c->o.cache)
		store_records(c);
	/* Source units of host code only add nothing; a run in which no unit
	 * has a kernel has nothing to give, and fails as one would. */
	bool any_entry = false, any_empty = false;
	for (size_t i = 0; i < c->job_count; i++) {
		gpucc_compile_status status = c->jobs[i].r.status;
		any_entry |= status == GPUCC_COMPILE_HIT || status == GPUCC_COMPILE_COMPILED;
		any_empty |= c->jobs[i].no_kernels;
	}
	for (size_t i = 0; i < c->job_count && any_empty && !any_entry; i++) {
		job *j = &c->jobs[i];
		if (!j->no_kernels)
			continue;
		/* The error says it: the warning goes. */
		if (j->warnings) {
			j->warnings[j->warnings_before_no_kernels] = '\0';
			j->r.warnings = *j->warnings ? j->warnings : NULL;
		}
		job_fail(j, GPUCC_ECOMPILE,
		         "%s: %s: no kernels: the source defines none (host code only), and no other "
		         "unit of the run does", c->modules[j->module].shown, job_shown_target(c, j));
	}
	bool failed = false;
	for (size_t i = 0; i < c->job_count; i++)
		failed |= c->jobs[i].r.status == GPUCC_COMPILE_FAILED;
	/* A failed run adds nothing (the caller will not commit a partial
	 * image), unless the caller keeps going. */
	if (c->o.writer && (!failed || c->o.keep_going) && (rc = add_to_writer(c)) != 0)
		return rc;
	for (size_t i = 0; i < c->job_count; i++) {
		const gpucc_compile_result *r = &c->jobs[i].r;
		if (r->status == GPUCC_COMPILE_FAILED)
			return gpucc_error_set(r->error_code, "%s", r->error);
	}
	return 0;
}
