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

/* Every failure and every warning of c's results on stderr, one line
 * each naming module and target.  LLVM's and the tools' own lines are a
 * success's warnings (ptxas's), and a failure's detail, shown when
 * verbose; clang's lines for a source are written as clang wrote them,
 * each distinct text once.  Returns the first failed result, or NULL. */
const gpucc_compile_result *compile_put_results(gpucc_compile *c, bool verbose);
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
