/*
 * lib/compile/compile_session.h -- a compile session's state (gpucc/compile.h's
 * gpucc_compile): its modules, targets and module x target jobs, and what the
 * files of a session call across: the handle's life (compile_session.c),
 * planning (compile_plan.c), keys (compile_keys.c), results, their messages
 * and the dependency file (compile_results.c), and running the jobs
 * (compile.c).
 */
#ifndef GPUCC_LIB_COMPILE_SESSION_H
#define GPUCC_LIB_COMPILE_SESSION_H

#include "gpucc/compile.h"

#include "backend.h"
#include "compile_impl.h"
#include "compile_source.h"
#include "key.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

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
	/* The linker of each backend's AMD jobs (build_options), one per
	 * backend a job may get. */
	struct linker {
		unsigned major;      /* the backend's LLVM major, whose LLD links */
		const char *path;    /* ld.lld-MAJOR (owned by the toolchain), or NULL */
		const char *version; /* its LLD's ("22.1.8"; owned likewise), or NULL */
		char *error;         /* why that backend's AMD jobs cannot be keyed (no LLD
		                        MAJOR), or NULL */
		bool in_process;     /* its worker links with its own LLD
		                        (gpucc_toolchain_ld_lld_built_in) */
	} linkers[8];
	size_t linker_count;
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

/* ---- the session (lib/compile/compile_session.c) ----------------------------- */

void module_release(module *m);

/* ---- keys (lib/compile/compile_keys.c) --------------------------------------- */

/* The normalised options of each vendor, sorted by name (formats/key.md). */
int build_options(gpucc_compile *c);
/* The linker of the AMD jobs of backend (build_options found it, or why
 * there is none), or NULL for a backend it did not look for. */
const struct linker *job_linker(const gpucc_compile *c, const gpucc_backend_info *backend);
/* A lookup's result (rc, img) makes the job a hit, or leaves it pending. */
void take_hit(job *j, int rc, gpucc_image *img);
/* The job's key and, for --explain, its components, from entry e. */
void set_key(job *j, const gpucc_entry *e);
/* The device libraries a source's IR may be linked with, for the vendor's
 * targets: each a directory (NULL: none found) and a file name. */
void each_source_lib(const gpucc_compile *c, gpucc_vendor vendor,
                     void (*fn)(void *ctx, const char *dir, const char *file), void *ctx);
/* What an entry's key names besides the IR, for jobs of the vendor's
 * targets, as the run knows it before any IR. */
void source_identity(gpucc_compile *c, gpucc_vendor vendor, gpucc_digest *out);

/* ---- results (lib/compile/compile_results.c) --------------------------------- */

double seconds_since(const struct timespec *start);
/* Record why job j failed (or, for the caller, is skipped). */
int job_fail(job *j, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void report_progress(gpucc_compile *c, job *j);
/* Append one warning line ("MODULE: TARGET: warning: ...") to the job's. */
void add_warning(job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void add_diagnostic(job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The target job j names in its messages. */
const char *job_shown_target(const gpucc_compile *c, const job *j);
void store_warnings(gpucc_compile *c, job *j);
void replay_warnings(gpucc_compile *c, job *j, bool with_clang);
/* Write the records of the sources whose IR clang made, now that the jobs
 * have keys. */
void store_records(gpucc_compile *c);

#endif
