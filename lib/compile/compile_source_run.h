/*
 * lib/compile/compile_source_run.h -- what the files of one run of
 * gpucc_sources_resolve share: the run's context (lib/compile/compile_source.c),
 * printf into a new string (lib/compile/compile_source_text.c),
 * clang's arguments beside their keyed forms (lib/compile/compile_source_args.c),
 * the direct-mode records' files in the cache (lib/compile/compile_source_records.c),
 * the checks of what a record lists (lib/compile/compile_source_check.c; what it lists: compile_source_prepare.c),
 * and the tools it runs (lib/compile/compile_source_tools.c).
 */
#ifndef GPUCC_LIB_COMPILE_SOURCE_RUN_H
#define GPUCC_LIB_COMPILE_SOURCE_RUN_H

#include "byte_buffer.h" /* growable text: gpucc_buffer */
#include "sha256.h"
#include "compile_source.h"

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#define RECORD_MAGIC GPUCC_SOURCE_RECORD_MAGIC
#define RECORD_MAX_BYTES GPUCC_SOURCE_RECORD_MAX_BYTES

/* ---- the run's context ---------------------------------------------------- */

typedef struct context {
	const gpucc_source_settings *s;
	gpucc_source_pair *pairs;
	size_t count, next, finished;
	pthread_mutex_t lock;    /* next, finished, the toolchain's memos, temp_dir */
	gpucc_digest *names;     /* each pair's record name */
	bool *to_run;            /* the pairs whose record missed: clang runs */
	char *clang;             /* NULL: none (clang_error says why) */
	char clang_error[512];
	const char *clang_version; /* "19.1.7", owned by the toolchain */
	/* clang 22, for the targets only a newer LLVM knows (sm_100, gfx950:
	 * pair_clang22); NULL: none, or none needed (clang22_error says why). */
	char *clang22;
	const char *clang22_version;
	char clang22_error[512];
	char *cuda_dir;          /* a toolkit with include/cuda_runtime.h, or NULL */
	char *cccl_dir;          /* its include/cccl when that has CUB, or NULL */
	char cwd[PATH_MAX];
	char temp_dir[PATH_MAX]; /* "" until a miss needs it (temp_error: could not) */
	char temp_error[512];
	bool cuda_stub;          /* CUDA needs the stub (the toolkit lacks the header) */
	char stub_dir[PATH_MAX + 16]; /* where the stub is, once temp_dir is made */
	char *records_dir;       /* CACHE/v1/sources, or NULL: no records */
	bool records_writable;
	char *env_key;           /* the variables clang reads (clang_environment), as keyed */
	long clock_granularity_ns;
	gpucc_source_pch_set *pch; /* the run's precompiled preludes; NULL: none */
	bool *shares_prelude;    /* a pair clang runs for has another of its language
	                            and target: a PCH can pay for itself */
} context;

/* ---- text (lib/compile/compile_source_text.c) ------------------------------- */

char *string_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));


/* ---- arguments (lib/compile/compile_source_args.c) --------------------------- */

/* clang's arguments, and beside each what the record's name takes of it
 * (NULL: nothing: the output files, which live in a temporary directory). */
typedef struct arglist {
	char **real;
	char **keyed;
	size_t count, capacity;
	bool failed;
} arglist;

/* An argument keyed as it is. */
void arg(arglist *a, const char *text);
/* An argument that is a path: given to clang and keyed normalised. */
void arg_path(arglist *a, const context *x, const char *prefix, const char *path);
/* An argument that is a path, given to clang normalised and not keyed. */
void arg_path_unkeyed(arglist *a, const context *x, const char *path);
/* An argument the key does not take (an output file). */
void arg_unkeyed(arglist *a, const char *text);
/* An argument keyed as placeholder (a file gpucc makes itself). */
void arg_as(arglist *a, const char *text, const char *keyed);
void arglist_release(arglist *a);
/* The user's arguments for this language, paths keyed normalised. */
void user_args(arglist *a, const context *x, gpucc_source_language lang);
bool user_gave_cl_std(const context *x);
/* x->env_key: the variables clang reads, as the record's name keys them;
 * -1 when out of memory. */
int env_key(context *x);

/* ---- tools (lib/compile/compile_source_tools.c) ----------------------------- */

/* Whether clang 22 compiles the pair (its target only a newer LLVM knows). */
bool pair_clang22(const gpucc_source_pair *p);
/* The clang the pair gets: x->clang22 or x->clang (NULL: none). */
const char *pair_clang(const context *x, const gpucc_source_pair *p);
bool is_regular(const char *path);
bool is_executable(const char *path);
/* Find the clangs the run's pairs need and the CUDA toolkit, into x. */
void find_clang(context *x);
void find_clang22(context *x);
void find_cuda(context *x);

/* ---- records (lib/compile/compile_source_records.c) ------------------------- */

/* A record's results, as gpucc_source_record_parse hands them. */
typedef struct record_result {
	gpucc_digest key;
	const char *lines;
	size_t size;
	unsigned long count;
} record_result;

typedef struct record_results {
	record_result *items;
	size_t count, capacity;
	bool failed;
} record_results;

/* RECORDS_DIR/ab/NAME.record */
char *record_path(const char *records_dir, const gpucc_digest *name);
/* The record at path, read and parsed: its text (free it) and results
 * (free rs->items), or NULL with why (a static string) when there is none
 * or it is damaged. */
char *record_read(const char *path, record_results *rs, const char **why);

/* A record as a lookup reads it (record_view_open). */
struct record_mapping; /* lib/compile/compile_source_records.c's */
typedef struct record_view {
	const char *text; /* its bytes: mapped, or read into memory (owned) */
	struct record_mapping *mapping; /* NULL when read */
	record_results rs;
} record_view;

/* The record at path, parsed, into *v: NULL, or why (a static string)
 * there is none or it is damaged (then nothing is held).  Its text is
 * only read. */
const char *record_view_open(record_view *v, const char *path);
/* Let the record go: true when its file was cut short while it was mapped
 * (what was read of it is not what the file held). */
bool record_view_close(record_view *v);

/* ---- checks (lib/compile/compile_source_check.c) ---------------------------- */

bool under(const char *path, const char *dir);
/* Under the system's directories (or the CUDA toolkit's): keyed as they are. */
bool system_path(const context *x, const char *path);
/* The SHA-256 of the file at path (GPUCC_ENOTFOUND: none, or not a
 * regular file), through the toolchain's memos; *changed_since (when not
 * NULL): its mtime or ctime is at or after since_ns. */
int file_digest(context *x, const char *path, gpucc_digest *out, int64_t since_ns,
                bool *changed_since);
/* What a directory's stat says of its entries: its identity, and its
 * mtime and ctime (ns), which an entry made or removed in it moves. */
typedef struct dir_stamp {
	unsigned long long dev, ino;
	int64_t mtime, ctime;
} dir_stamp;
dir_stamp dir_stamp_of(const struct stat *st);
/* A record's line for a place that must not exist: 64 zeros, no file's
 * SHA-256. */
extern const char absent_digest[];
/* The SHA-256 of "NAME=VALUE", or of "NAME" when the variable is unset. */
void environment_digest(gpucc_digest *out, const char *name);
/* path as a key names it and clang is given it (owned), or NULL when out
 * of memory. */
char *normalise_path(const context *x, const char *path);
int64_t ns_of(struct timespec t);
int64_t now_ns(void);
/* Now by the clock that stamps files (compile_source_check.c): a
 * compile's start, against which the times of what it read are held. */
int64_t file_clock_ns(void);
/* A name's field into h: its length (8 bytes, big-endian), then its bytes;
 * the names of source records and of preludes are made of them
 * (lib/compile/compile_source_records.c). */
void name_field(gpucc_sha256 *h, const void *data, size_t size);
void name_text(gpucc_sha256 *h, const char *text);
/* Whether every one of the count lines from *line on ("HEX PATH", "dir
 * STAMP PATH") still holds: each file has its digest, each variable its
 * value, each place found empty is still empty (by its directory's stamp,
 * else by its own stat); *line moves past them. */
bool files_unchanged(context *x, char **line, unsigned long count, char **why,
                     gpucc_strlist *files);
/* What a record will list of a compile clang ran, into r->record; NULL, or
 * why nothing will be recorded (lib/compile/compile_source_prepare.c). */
char *record_prepare(context *x, const gpucc_source_pair *p, const gpucc_depfile *deps,
                     const gpucc_clang_search *search, int64_t clang_start_ns,
                     gpucc_source_result *r);

#endif
