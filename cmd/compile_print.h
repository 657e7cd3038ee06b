/*
 * cmd/compile_print.h -- what `gpucc compile` (cmd/cmd_compile.c) prints,
 * defined in cmd/compile_print.c, where each function's contract is.
 */
#ifndef GPUCC_CMD_COMPILE_PRINT_H
#define GPUCC_CMD_COMPILE_PRINT_H

#include "cmd.h"

#include <gpucc.h>

/* The progress line, on a terminal only: done/total, hits, failures, ETA;
 * elsewhere (a build's log) a line on stdout per job as it finishes. */
typedef struct compile_progress {
	bool tty;
	bool drawn;
	size_t compiled; /* jobs the backend finished (their seconds > 0) */
	bool lines;
} compile_progress;

/* The most distinct texts of clang's that a run remembers, so as to write
 * each once. */
#define COMPILE_SHOWN_MAX 64

/* The backend's diagnostics, their control characters spelt. */
void compile_put_diagnostics(FILE *f, const char *text);
/* clang's lines of a source it refused, each distinct text once (shown
 * holds those written, *count of them; the caller frees them). */
void compile_put_clang_lines(FILE *f, const gpucc_compile_result *r, char **shown, size_t *count);
/* A job's warnings, clang's each distinct text once (shown, *count: as
 * compile_put_clang_lines). */
void compile_put_warnings(FILE *f, const gpucc_compile_result *r, char **shown, size_t *count);
/* A gpucc_compile_options progress callback; ctx is a compile_progress. */
void compile_on_progress(void *ctx, const gpucc_compile_progress *p);
/* A cache warning handler; ctx is the compile_progress, whose line it
 * clears first. */
void compile_cache_warning(void *ctx, const char *message);
/* --explain: each job's status, key and key parts on stdout. */
void compile_print_explain(gpucc_compile *c);
/* --json: the run's summary and every job on stdout. */
void compile_print_json(gpucc_compile *c, const char *output, double seconds, bool dry_run);

#endif
