/*
 * cmd/algebra.h -- what the cache-algebra commands (cache, snapshot, delta,
 * merge) share: opening the cache a command names, printing the cache's
 * warnings, and the --on-conflict and --zstd options.  Defined in
 * cmd_cache.c.
 */
#ifndef GPUCC_CMD_ALGEBRA_H
#define GPUCC_CMD_ALGEBRA_H

#include "cmd.h"

#include <gpucc.h>

/* Open the cache named by --cache, else the default one (GPUCC_CACHE_DIR,
 * XDG_CACHE_HOME, HOME), with its warnings printed on stderr.  Returns
 * EXIT_OK or an exit code after printing the error. */
int cmd_open_cache(const cmd_args *args, gpucc_cache **out, unsigned flags);
/* A gpucc_cache_warning_fn printing "gpucc CMD: warning: MESSAGE"; ctx is
 * the cmd_args. */
void cmd_print_warning(void *ctx, const char *message);
/* --on-conflict=fail|first|last.  EXIT_OK or EXIT_USAGE after printing. */
int cmd_conflict_policy(const cmd_args *args, gpucc_conflict_policy *out);
/* A gpucc_conflict_fn printing each conflict a policy resolves; ctx is the
 * cmd_args. */
void cmd_print_conflict(void *ctx, const gpucc_digest *key, const char *first, const char *second);
/* --zstd[=LEVEL] into opts (level 0 when absent, 3 when given bare).
 * EXIT_OK or EXIT_USAGE after printing. */
int cmd_zstd_option(const cmd_args *args, gpucc_write_options *opts);
/* Raise the soft limit on open files to the hard one: merges from caches
 * hold one open file per entry until they commit. */
void cmd_raise_file_limit(void);

#endif
