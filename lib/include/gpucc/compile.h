/*
 * gpucc/compile.h -- compiling LLVM IR modules into entries.
 *
 * A compile session takes modules (files or memory), targets and options, and
 * turns every module x target pair into one job.  Sources (HIP, CUDA, OpenCL
 * C: gpucc_compile_add_source) become modules first, one per target their
 * language serves, through clang 19 or a direct-mode record.  Running it:
 *
 *   1. plans without LLVM: reads every module, computes every job's key
 *      (formats/key.md) from the module's bytes, the target, the normalised
 *      options and the toolchain identity (gpucc and LLVM versions, digests of
 *      the device libraries the module may link, the ptxas and ld.lld
 *      versions), and looks each key up in the cache;
 *   2. only when a key misses, loads the LLVM backend (libgpucc-llvm.so) and
 *      compiles the misses on N threads, one LLVM context each; results do
 *      not depend on N;
 *   3. inserts each new entry into the cache as soon as it is compiled (a
 *      crash later loses nothing already inserted), and adds every entry,
 *      hit or compiled, to the image writer if one was given.
 *
 * A failed job leaves no entry anywhere.  Results are reported per job, in
 * module-major order (every target of the first module, then the second...).
 *
 *   gpucc_compile_options o;
 *   gpucc_compile_options_init(&o);
 *   o.cache = cache;                       // or NULL for no cache
 *   gpucc_compile *c;
 *   gpucc_compile_new(&c, &o);
 *   gpucc_compile_add_target(c, "sm_90");  // validated now
 *   gpucc_compile_add_file(c, "kernels.ll");
 *   int rc = gpucc_compile_run(c);         // GPUCC_ECOMPILE: some job failed
 *   for (size_t i = 0; i < gpucc_compile_result_count(c); i++) ...
 *   gpucc_compile_free(c);
 */
#ifndef GPUCC_COMPILE_H
#define GPUCC_COMPILE_H

#include "cache.h"
#include "common.h"
#include "image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The AMDGPU code object version used when neither the options nor the
 * module name one.  HIP 5.2 (ROCm 5.2, the runtime gpucc links) loads code
 * object v4: its own compiler emits v4 by default.  clang-19 writes v5 into
 * its modules (amdhsa_code_object_version 500), which newer ROCm runtimes
 * (6.x) load. */
#define GPUCC_DEFAULT_CODE_OBJECT_VERSION 4

typedef struct gpucc_compile gpucc_compile;

typedef enum gpucc_compile_status {
	GPUCC_COMPILE_PENDING = 0,  /* not run yet (or planned only: a miss) */
	GPUCC_COMPILE_HIT = 1,      /* the cache held the entry */
	GPUCC_COMPILE_COMPILED = 2, /* compiled now */
	GPUCC_COMPILE_FAILED = 3,   /* error_code and error say why */
	GPUCC_COMPILE_SKIPPED = 4   /* the module's triple is for another vendor's
	                               targets in this run; error says which */
} gpucc_compile_status;

/* One printable component of a job's key, for `gpucc compile --explain`. */
typedef struct gpucc_compile_key_part {
	const char *name;  /* "schema", "gpucc", "llvm", "device-libs", "target",
	                      "options", "module" */
	const char *value;
} gpucc_compile_key_part;

/* The outcome of one job; borrowed from the session. */
typedef struct gpucc_compile_result {
	const char *module;          /* the module's name (its path, for files) */
	const char *target;          /* canonical target spelling */
	gpucc_compile_status status;
	bool key_known;              /* the key was computed (false: failed before) */
	gpucc_digest key;
	int error_code;              /* FAILED: a GPUCC_E* code */
	const char *error;           /* FAILED, SKIPPED: one line naming module and target,
	                                control characters spelt as in gpucc_error's message */
	const char *diagnostics;     /* LLVM's and the tools' own messages, lines
	                                "MODULE: TARGET: ...", for a failure's detail;
	                                NULL when there were none.  In both, MODULE has its
	                                control characters escaped (\n, \t, \xHH) */
	double seconds;              /* time spent compiling (0 for hits); never in the entry */
	const gpucc_entry *entry;    /* HIT, COMPILED: the entry, else NULL */
	size_t key_part_count;
	const gpucc_compile_key_part *key_parts;
	const char *warnings;        /* lines "MODULE: TARGET: ..." (an entry that
	                                could not be cached, PTX without a cubin, an
	                                unoptimised module); NULL when there were none */
	const char *source;          /* a job of a source (gpucc_compile_add_source): how
	                                its IR was found, one line: "hit: record ...",
	                                "miss: 'inc/k.h' changed", "miss: no record"...;
	                                NULL for a module of IR */
	bool from_remote;            /* HIT: the entry came from a remote cache in this
	                                run (then stored in the local cache) */
} gpucc_compile_result;

typedef struct gpucc_compile_progress {
	size_t done;     /* jobs finished: hits, compiled, failed and skipped */
	size_t total;
	size_t hits;
	size_t failed;
	double elapsed;  /* seconds since the run started */
	const gpucc_compile_result *last; /* the job that just finished */
	/* Sources (gpucc_compile_add_source) are turned into modules while the
	 * run is planned, before any job finishes: meanwhile done and total
	 * are 0, last names the source and target clang just finished (its
	 * status PENDING), and these count the (source, target) pairs. */
	size_t sources_done;
	size_t sources_total;
} gpucc_compile_progress;

/* Called after every finished job, from the thread that finished it, never
 * by two threads at once. */
typedef void (*gpucc_compile_progress_fn)(void *ctx, const gpucc_compile_progress *p);

typedef struct gpucc_compile_options {
	unsigned version;          /* GPUCC_COMPILE_OPTIONS_VERSION */
	int opt_level;             /* 0..3; default 2 */
	bool fast_math;            /* unsafe FP math; finite-only device libraries */
	bool ftz;                  /* flush f32 denormals to zero (AMD: DAZ) */
	bool debug_info;           /* keep the module's debug info (ptxas -lineinfo) */
	int code_object_version;   /* AMD: 4, 5 or 6; 0: each module's own
	                              (amdhsa_code_object_version), else
	                              GPUCC_DEFAULT_CODE_OBJECT_VERSION */
	bool no_cubin;             /* NVIDIA: PTX only, no ptxas run; entries are
	                              keyed as if ptxas were absent ("none") */
	unsigned jobs;             /* compile threads; 0: the CPUs the process may use */
	gpucc_cache *cache;        /* borrowed; NULL: no cache */
	gpucc_image_writer *writer; /* borrowed; NULL: none.  Entries added by a run
	                               may read from the session until the writer
	                               commits: commit before gpucc_compile_free. */
	gpucc_compile_progress_fn progress;
	void *progress_ctx;
	/* Version 2: */
	bool link_modules;         /* link every module into one before compiling
	                              (relocatable device code: a kernel in one module
	                              calling a function another defines); jobs are
	                              that one module x each target */
	unsigned job_timeout_seconds; /* a job still compiling after this long fails;
	                              0: no limit; default GPUCC_DEFAULT_JOB_TIMEOUT */
	uint64_t job_memory_bytes; /* a compile worker's address space; 0: no limit */
	bool keep_going;           /* a failed run still adds every hit and compiled
	                              entry to the writer (make -k); default: none */
	/* Version 3: sources (gpucc_compile_add_source). */
	const char *clang;         /* the clang 19 to run; NULL: clang-19 on the
	                              config's path (gpucc/config.h), else
	                              clang there, the clang-19 found when gpucc was
	                              built, or /usr/lib/llvm-19/bin/clang, whose
	                              --version says 19 */
	const char *const *clang_args; /* borrowed until the session is freed: given to
	                              clang after gpucc's own arguments, for every
	                              source ("-I", "inc", "-DN=4", "-std=c++17"...);
	                              "-std=" and "-cl-std=" go to the languages they
	                              name (cl..: OpenCL C, else HIP and CUDA) */
	size_t clang_arg_count;
	/* Version 4: */
	unsigned llvm_major;       /* the LLVM backend every job gets (19, 22); 0: per
	                              job, the newest present that knows the target and
	                              reads the module (gpucc_llvm_backend) */
	bool no_pch;               /* sources: no precompiled prelude (CUDA's runtime
	                              wrapper, made once per run and group of units;
	                              the IR is the same either way) */
} gpucc_compile_options;

/* The language of a source file (gpucc_compile_add_source). */
typedef enum gpucc_source_language {
	GPUCC_LANGUAGE_FROM_NAME = 0, /* .hip, .cu or .cl */
	GPUCC_LANGUAGE_HIP = 1,       /* AMD targets */
	GPUCC_LANGUAGE_CUDA = 2,      /* NVIDIA targets */
	GPUCC_LANGUAGE_OPENCL = 3     /* OpenCL C: both vendors' targets */
} gpucc_source_language;

/* Each job compiles in a worker process: LLVM's crash, abort or hang fails
 * that job (GPUCC_ECOMPILE, "LLVM crashed (SIGABRT): ..."), not the caller. */
#define GPUCC_DEFAULT_JOB_TIMEOUT 900

/* Version 1 ends at progress_ctx, version 2 at keep_going, version 3 at
 * clang_arg_count; gpucc_compile_new takes each. */
#define GPUCC_COMPILE_OPTIONS_VERSION 5

/* Defaults: -O2, no fast-math, no FTZ, no debug info, the default code
 * object version, one thread per core, no cache, no writer. */
GPUCC_API void gpucc_compile_options_init(gpucc_compile_options *opts);

/* A new session with a copy of opts.  GPUCC_EINVALID for an option out of
 * range (opt level, code object version). */
GPUCC_API int gpucc_compile_new(gpucc_compile **out, const gpucc_compile_options *opts);
/* Release the session and its results; accepts NULL. */
GPUCC_API void gpucc_compile_free(gpucc_compile *c);

/* Add a target (gpucc_target_parse): GPUCC_EINVALID, and nothing added, for
 * one no backend present knows.  CMake's spellings of NVIDIA processors are
 * taken too: a compute capability ("90", "90a", "100f") for sm_XY, and
 * after it (or after sm_XY) "-virtual" for entries of PTX alone or "-real"
 * for entries of a cubin alone (failing where no cubin can be made); the
 * "parts" option of their keys says so (formats/key.md).  A target given
 * twice counts once; "90-real" and "90-virtual" together are "90". */
GPUCC_API int gpucc_compile_add_target(gpucc_compile *c, const char *spelling);

/* What makes NVIDIA cubins from PTX.  Its version is part of each key
 * (options "ptxas" and "nvjitlink", formats/key.md), so that the two never
 * share an entry: their cubins need not be the same bytes. */
typedef enum gpucc_cubin_tool {
	GPUCC_CUBIN_AUTO = 0,   /* libnvJitLink when the toolkit has one, else ptxas */
	GPUCC_CUBIN_PTXAS = 1,  /* one ptxas process per job */
	GPUCC_CUBIN_NVJITLINK = 2 /* libnvJitLink in each compile worker, loaded once
	                           per worker; NVIDIA jobs fail when it is missing */
} gpucc_cubin_tool;
/* Choose the cubin tool (default GPUCC_CUBIN_AUTO), before planning;
 * options.no_cubin wins over any.  GPUCC_EINVALID for another value or
 * after planning. */
GPUCC_API int gpucc_compile_set_cubin_tool(gpucc_compile *c, gpucc_cubin_tool tool);

/* fn is called once, on the calling thread, during gpucc_compile_plan:
 * after every source's record was looked up, before clang first runs for a
 * source that missed (and makes the temporary directory it writes in).  A
 * plan whose sources all hit never calls it, so a caller that removes
 * temporaries on a signal can start watching there (the gpucc command
 * does): a hit pays for no watching.  fn returning false fails the sources
 * that missed, unrun.  Before planning; GPUCC_EINVALID after. */
GPUCC_API int gpucc_compile_set_before_clang(gpucc_compile *c, bool (*fn)(void *ctx), void *ctx);
/* Add a module file (.ll text or .bc bitcode, told apart by content); it is
 * read now.  GPUCC_ENOTFOUND when it does not exist, GPUCC_EINVALID when it
 * is not a regular file (a directory, a FIFO: never waited on) or its name
 * is too long to open.  A file already added, by this or another path, is
 * not added again. */
GPUCC_API int gpucc_compile_add_file(gpucc_compile *c, const char *path);
/* Add a HIP, CUDA or OpenCL C source file (read now, as a module is): when
 * planned, clang 19 turns it into one module of IR per target of the run
 * whose vendor the language serves (HIP: AMD; CUDA: NVIDIA; OpenCL C: both),
 * device code only, front-end IR at the session's -O level; then each
 * compiles as a module would.  A direct-mode record in the cache (the
 * source's bytes, the normalised clang command line and clang's version
 * leading to every file the compile read, with digests) gives the IR of a
 * source compiled before without running clang (formats/cache.md).
 * GPUCC_EINVALID for FROM_NAME with a name of none of those extensions. */
GPUCC_API int gpucc_compile_add_source(gpucc_compile *c, const char *path,
                                       gpucc_source_language language);
/* Add path as what its name says: a name ending in .ll or .bc an IR
 * module (gpucc_compile_add_file); one ending in .hip, .cu or .cl, and,
 * when language is not GPUCC_LANGUAGE_FROM_NAME, every other that is not
 * IR, a source in language (gpucc_compile_add_source); anything else a
 * module, whose read says what it is not.  *is_source, when is_source is
 * not NULL, says which it was taken for. */
GPUCC_API int gpucc_compile_add_input(gpucc_compile *c, const char *path,
                                      gpucc_source_language language, bool *is_source);
/* Add a module held in memory (copied); name is its name in results and
 * entries. */
GPUCC_API int gpucc_compile_add_memory(gpucc_compile *c, const char *name, const void *data,
                                       size_t size);

/* Compute every job's key and look it up, without loading LLVM; compile
 * nothing.  Afterwards results are HIT, PENDING (a miss), FAILED (e.g. a
 * device library the module needs is absent, or, for AMD targets, LLD 19)
 * or SKIPPED.  Returns 0 even when jobs failed (their results say why);
 * GPUCC_EINVALID when there are no modules or no targets.  A HIT's entry
 * carries this session's module name, whichever compile filled the cache. */
GPUCC_API int gpucc_compile_plan(gpucc_compile *c);
/* Plan (unless done), then compile every miss.  0 when every job is a hit,
 * compiled or skipped; else the code of the first failed job in result
 * order (GPUCC_ECOMPILE, GPUCC_EUNAVAILABLE...), its message as the last
 * error.  Run once per session. */
GPUCC_API int gpucc_compile_run(gpucc_compile *c);

/* After gpucc_compile_run: write to path, atomically, a make rule naming
 * rule_target and every file the run read that can change what it made, for
 * ninja's and make's dependency files (`gpucc compile --depfile`): the IR
 * modules; each source, the headers clang read and the files its
 * arguments named (a hit's from its record), and clang; the device
 * libraries linked; ptxas, libnvJitLink and ld.lld where jobs of their
 * vendor ran (their versions are in the keys).  The same rule on a hit as on the miss before it:
 * sorted, each file once.  GPUCC_EINVALID before a run, or for a name
 * with a line break, which no rule can hold. */
GPUCC_API int gpucc_compile_write_depfile(gpucc_compile *c, const char *path,
                                          const char *rule_target);

/* One result per (module, target) job, in module-major order; borrowed
 * from the session.  gpucc_compile_result_at is NULL for an index past the
 * count. */
GPUCC_API size_t gpucc_compile_result_count(const gpucc_compile *c);
GPUCC_API const gpucc_compile_result *gpucc_compile_result_at(const gpucc_compile *c, size_t index);
/* Threads the last run compiled on (0 when nothing was compiled). */
GPUCC_API unsigned gpucc_compile_threads_used(const gpucc_compile *c);
/* True when the last run ran LLVM (in its compile workers); false when
 * nothing missed. */
GPUCC_API bool gpucc_compile_backend_loaded(const gpucc_compile *c);

#ifdef __cplusplus
}
#endif
#endif
