/*
 * lib/compile/compile_source.h -- HIP, CUDA and OpenCL C sources to IR modules, by
 * clang 19 run as a tool, and direct-mode records in the cache that lead
 * from a source straight to the key of the entry its IR compiled to
 * (lib/compile/compile_source.c; formats/cache.md, "Sources").  What a
 * compile session (lib/compile/compile_plan.c) asks of it: for each (source,
 * target) pair, the cache's entry a record leads to, else the IR module of
 * that source for that target, or why there is none; and, once the IR's
 * entry is keyed, that the record be written.
 */
#ifndef GPUCC_LIB_COMPILE_SOURCE_H
#define GPUCC_LIB_COMPILE_SOURCE_H

#include "compile_impl.h"
#include "gpucc/compile.h"

/* ---- clang's dependency lists (lib/compile/compile_depfile.c) ------------------- */

typedef struct gpucc_depfile {
	char **paths; /* as clang wrote them, unescaped, in its order */
	size_t count, capacity;
} gpucc_depfile;

/* Parse what clang -MD -MF wrote (one make rule).  GPUCC_ECORRUPT when it
 * holds no rule. */
int gpucc_depfile_parse(gpucc_depfile *out, const char *text, size_t size);
void gpucc_depfile_release(gpucc_depfile *d);
/* Write "TARGET: DEP..." to path, atomically: deps sorted (by bytes) and
 * each named once, spelt as gpucc_depfile_parse reads them ("\\ " for a
 * blank, "\\#", "$$"), one per line after a line continuation.
 * GPUCC_EINVALID for a name with a line break, which no rule can hold. */
int gpucc_depfile_write(const char *path, const char *target, const char *const *deps,
                        size_t count);

/* ---- what clang reads that -MD does not list (lib/compile/compile_source_reads.c) -- */

typedef struct gpucc_strlist {
	char **items; /* owned, NULL-terminated */
	size_t count, capacity;
	bool failed;  /* out of memory: the list is short */
} gpucc_strlist;

/* The whole of a regular file of at most max bytes, NUL-terminated (its
 * size in *size), or NULL: opened without blocking and checked after the
 * open, so that a FIFO put in its place never stalls gpucc. */
char *gpucc_read_small_file(const char *path, size_t max, size_t *size);

void gpucc_strlist_push(gpucc_strlist *l, const char *text, size_t len);
/* Push text unless the list holds it. */
void gpucc_strlist_push_new(gpucc_strlist *l, const char *text);
bool gpucc_strlist_has(const gpucc_strlist *l, const char *text);
void gpucc_strlist_release(gpucc_strlist *l);

/* What clang -v says of the files it will read, as it spells them. */
typedef struct gpucc_clang_search {
	gpucc_strlist configs; /* configuration files read */
	gpucc_strlist quote;   /* directories only #include "..." searches, in order */
	gpucc_strlist angle;   /* then those both search, in order */
	gpucc_strlist missing; /* directories named but left out: they do not exist */
	char *installed_dir;   /* "InstalledDir: ", the driver's directory, or NULL */
	char *resource_dir;    /* its -resource-dir, or NULL */
	char *hip_found;       /* the HIP installation it found, or NULL */
} gpucc_clang_search;

/* Take -v's own lines out of err (clang's stderr, edited in place) into
 * *s: what remains is clang's diagnostics. */
void gpucc_clang_verbose_take(char *err, gpucc_clang_search *s);
void gpucc_clang_search_release(gpucc_clang_search *s);

/* The files the arguments name (paths relative to the working directory or
 * to a configuration file's directory), into files: response files, those
 * they name in turn, the configuration files clang read (configs) and
 * what they name, and every argument or option value ("-x=VALUE") that is
 * a regular file.  A response file that does not exist (clang leaves
 * "@FILE" as it is) into absent. */
void gpucc_argument_files(const char *const *args, size_t count, const gpucc_strlist *configs,
                          gpucc_strlist *files, gpucc_strlist *absent);

/* What the text asks of the preprocessor that no -MD list shows: the first
 * time macro it names (__DATE__, __TIME__, __TIMESTAMP__) into *time_macro
 * when still NULL, and the names that __has_include, __has_include_next
 * and __has_embed ask for, spelt literally between <> or quotes (a
 * macro's name is not followed), into has_include. */
void gpucc_source_text_scan(const char *text, size_t size, const char **time_macro,
                            gpucc_strlist *has_include);

/* ---- the vendor prelude, precompiled once (a run's, or the cache's)
 *      (lib/compile/compile_source_pch.c) -------------------------------------- */

/* How clang is run: argv with stderr into err_fd, killed past
 * timeout_seconds (0: none); *status as waitpid gives it.  0, or an error
 * when it could not start. */
typedef int (*gpucc_source_tool_runner)(char *const *argv, int err_fd, unsigned timeout_seconds,
                                        int *status, bool *timed_out);

/* The fewest units of a run that make a group's PCH (fewer read the
 * cache's): making it and its probe cost about three parses of the
 * prelude, and each unit that reads it saves most of one. */
#define GPUCC_PCH_GROUP_MIN 4

/* One run's precompiled preludes, one per group of command lines. */
typedef struct gpucc_source_pch_set gpucc_source_pch_set;

/* -1 when out of memory. */
int gpucc_source_pch_set_new(gpucc_source_pch_set **out, gpucc_source_tool_runner run,
                             unsigned timeout_seconds);
/* Removes nothing: the PCHs live in the run's temporary directory or the cache. */
void gpucc_source_pch_set_free(gpucc_source_pch_set *set);
/* Whether a unit of the language, compiled with these settings and the
 * user's arguments, may read a precompiled prelude and still compile to
 * the bitcode it would without one. */
bool gpucc_source_pch_applies(gpucc_source_language language, bool debug_info, bool relocatable,
                              const char *const *user_args, size_t count);
/* The PCH for the pair p compiled with the arguments a (of the run x,
 * lib/compile/compile_source_run.h: "-v", "-MD", "-MF F", "-o F",
 * "-cuid=" and everything from "--" on are the unit's own): the cache's
 * when it holds one that still holds, else made in the run's temporary
 * directory by the first caller of its group (and stored in the cache
 * when it takes one) unless !may_make (a unit alone in its group: a PCH
 * would cost more than it saves); owned by the caller, or NULL: none.
 * The extended prelude's when the unit takes it (gpucc_source_prelude_runtime)
 * and its group has one, else the plain prelude's: *runtime says which. */
struct context;
struct arglist;
struct gpucc_source_pair;
char *gpucc_source_pch_get(gpucc_source_pch_set *set, struct context *x,
                           const struct gpucc_source_pair *p, const struct arglist *a,
                           bool may_make, bool *runtime);
/* Whether a unit's text takes the extended prelude: HIP whose first
 * directive, with nothing before it but white space and comments, is
 * `#include <hip/hip_runtime.h>` (nothing after it on its line but
 * those), which the PCH then holds too.  CUDA has none: clang's wrapper
 * already includes cuda.h and cuda_runtime.h. */
bool gpucc_source_prelude_runtime(gpucc_source_language language, const unsigned char *text,
                                  size_t size);
/* Whether IR clang wrote with a PCH is the IR it writes without one.  Not
 * when it holds inline assembly (or a call to a function marked error or
 * warning): clang marks those with their source offsets (!srcloc), which
 * a PCH moves.  Conservative: it looks for that metadata kind's name
 * anywhere in the bitcode. */
bool gpucc_source_pch_ir_trusted(const unsigned char *ir, size_t size);
/* Whether a unit's text leaves its IR a chance of passing
 * gpucc_source_pch_ir_trusted: not when it names inline assembly ("asm")
 * or includes CUB, Thrust, cooperative groups, libcu++ or mma.h, all
 * inline assembly, whose IR would be made twice.  A guess that only
 * saves time: the IR is checked either way. */
bool gpucc_source_pch_worth(const unsigned char *text, size_t size);
/* In the dependency list of a unit compiled with a PCH, name the files of
 * the PCH's making in this run's temporary directory temp_dir, where
 * they are for a compile without the PCH: its unit and the CUDA stubs lie
 * in the temporary directory of the run that made it, which for the
 * cache's PCH is gone.  The list is then the one a compile without the
 * PCH writes (but for the PCH's unit, which the record leaves out with
 * every file of the temporary directory), the unit first once unit_first
 * (lib/compile/compile_source.c) has run. */
void gpucc_source_pch_rehome(gpucc_depfile *deps, const char *temp_dir);
/* A unit failed with the PCH at path and compiled without it: the group
 * makes a new one for its next unit, once. */
void gpucc_source_pch_refused(gpucc_source_pch_set *set, const char *path);

/* ---- sources ------------------------------------------------------------ */

/* The language a file name says (.hip, .cu, .cl), else FROM_NAME. */
gpucc_source_language gpucc_source_language_of(const char *path);
/* "HIP", "CUDA", "OpenCL C". */
const char *gpucc_source_language_name(gpucc_source_language language);
/* Whether clang compiles the language for the vendor's targets. */
bool gpucc_source_language_serves(gpucc_source_language language, gpucc_vendor vendor);

/* What a pair resolves to: hit, or ir, or an error. */
typedef struct gpucc_source_result {
	gpucc_image *hit;    /* a record's hit: the entry its key names, open (from
	                        gpucc_cache_lookup), owned; NULL otherwise */
	unsigned char *ir;   /* clang's module (bitcode), owned; NULL on a hit or failure */
	size_t ir_size;
	char *record;        /* with ir, when the cache takes records: the files clang
	                        read, for gpucc_source_record_store; else NULL */
	gpucc_digest record_name;
	bool missed_key;     /* a record's key was looked up and not found: */
	gpucc_digest missed; /* that key (the cache need not be asked again) */
	char *note;          /* how it was found, for --explain (gpucc_compile_result.source) */
	char *warnings;      /* clang's warnings, lines "SOURCE: TARGET: clang: ..."; or NULL */
	int error_code;      /* 0, or why there is no module: */
	char *error;         /* one line "SOURCE: TARGET: ..." */
	char *diagnostics;   /* clang's own lines on failure, or NULL */
	gpucc_strlist reads; /* with ir or hit: the files the unit read (clang's -MD
	                        list, the files its arguments name; a hit's, from its
	                        record), for a dependency file; clang among them */
} gpucc_source_result;

/* One (source, target) pair. */
typedef struct gpucc_source_pair {
	const char *path;            /* as given: clang reads it by this name */
	const char *shown;           /* path with control characters spelt */
	const unsigned char *data;   /* the source's bytes, read when it was added */
	size_t size;
	gpucc_source_language language;
	const gpucc_target *target;
	const char *target_name;     /* canonical */
	const char *target_shown;    /* in messages, where clang's IR has not fitted the
	                                target yet; NULL: target_name */
	bool ptx_explicit;           /* NVIDIA: the spelling named the PTX ISA, which
	                                clang is then held to */
	const char *parts;           /* NVIDIA: "ptx" or "cubin" when the entry holds
	                                that alone (a key option); else NULL */
	gpucc_source_result result;  /* out */
} gpucc_source_pair;

typedef struct gpucc_source_settings {
	int opt_level;
	int code_object_version;     /* 0: GPUCC_DEFAULT_CODE_OBJECT_VERSION */
	bool debug_info, fast_math, ftz;
	bool relocatable;            /* the modules are linked (clang -fgpu-rdc): no
	                                records (a linked entry needs every unit's IR) */
	bool no_pch;                 /* no precompiled prelude (gpucc_source_pch_applies) */
	/* What the key of an entry names besides the IR, for the vendor's
	 * targets (indexed by gpucc_vendor): gpucc's and LLVM's versions, the
	 * options, the tools' versions and the device libraries' digests
	 * (lib/compile/compile_keys.c, source_identity).  Part of a record's name. */
	gpucc_digest identity[3];
	const char *clang;           /* NULL: search */
	const char *const *args;
	size_t arg_count;
	unsigned timeout_seconds;    /* 0: none */
	unsigned jobs;               /* clang processes at once (at least 1) */
	gpucc_cache *cache;          /* records; NULL: none */
	gpucc_toolchain *toolchain;  /* remembered digests of the files read */
	/* Called after each pair, by one thread at a time; may be NULL. */
	void (*pair_done)(void *ctx, const gpucc_source_pair *p, size_t done, size_t total);
	void *pair_done_ctx;
	/* Called on the calling thread once every record was looked up, before
	 * clang first runs (and its temporary directory is made), only when
	 * some pair missed; false: those pairs fail unrun.  May be NULL. */
	bool (*before_clang)(void *ctx);
	void *before_clang_ctx;
} gpucc_source_settings;

/* Resolve every pair: the entry of a record's key when each file the
 * record lists still has its digest and the cache holds the entry, else
 * clang's IR (with what a record of it will hold, when the cache is
 * writable).  A pair that fails says why in its result; the return value is
 * an error only for what stops them all (out of memory). */
int gpucc_sources_resolve(gpucc_source_pair *pairs, size_t count, const gpucc_source_settings *s);
/* Start the version probe of the clang gpucc_sources_resolve will try first
 * (clang: the one named, or NULL), so that it runs beside the probes of
 * the other tools a run needs; only when no clang's version is
 * remembered (a new cache). */
void gpucc_sources_prefetch(gpucc_toolchain *tc, const char *clang);
/* Write r's record (r->record, r->record_name) in cache, leading to key:
 * this result first, then up to seven earlier ones of other keys.  Best
 * effort: a record not written is a later miss.  Nothing without
 * r->record. */
void gpucc_source_record_store(gpucc_cache *cache, const gpucc_source_result *r,
                               const gpucc_digest *key);
void gpucc_source_result_release(gpucc_source_result *r);

#endif
