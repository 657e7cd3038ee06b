/*
 * cmd/algebra.h -- what the cache-algebra commands (cache, snapshot, delta,
 * merge) share: opening the cache a command names, printing the cache's
 * warnings, and the options of commands that write entries (--on-conflict,
 * --zstd, --no-sync).  Defined in algebra.c.
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
/* The options of a command that writes entries (import, delta, merge), from
 * whichever of these its table has: --on-conflict=fail|first|last,
 * --zstd[=LEVEL] (level 0 when absent, 3 when given bare), --no-sync; and
 * a conflict handler that prints each conflict a policy resolves.  Raises
 * the open-file limit too (cmd_raise_file_limit).  EXIT_OK or EXIT_USAGE
 * after printing. */
int cmd_algebra_options(const cmd_args *args, gpucc_algebra_options *opts);

#endif
