/*
 * cmd/algebra.h -- what the cache-algebra commands (cache, snapshot, delta,
 * merge) share: opening the cache a command names, printing the cache's
 * warnings and sizes, and the options of commands that write entries
 * (--on-conflict, --zstd, --no-sync).  Defined in algebra.c.
 */
#ifndef GPUCC_CMD_ALGEBRA_H
#define GPUCC_CMD_ALGEBRA_H

#include "cmd.h"

#include <gpucc.h>

/* Open the cache named by --cache, else the default one (GPUCC_CACHE_DIR,
 * XDG_CACHE_HOME, HOME), with its warnings printed on stderr.  Returns
 * EXIT_OK or an exit code after printing the error. */
int cmd_open_cache(const cmd_args *args, gpucc_cache **out, unsigned flags);
/* Open the cache for commands that report on it or remove from it (verify,
 * stats, prune, gc, clear, lookup): a directory that --cache names must be
 * a cache already (GPUCC_CACHE_EXISTING), so that a typo neither passes as
 * an empty cache nor creates a directory or writes into one; the default
 * cache, not made yet, is an empty one. */
int cmd_open_cache_to_report(const cmd_args *args, gpucc_cache **out, unsigned flags);
/* bytes as people read a size: "1 byte", "512 bytes", "1.5 MiB". */
void cmd_format_size(char *out, size_t size, uint64_t bytes);
/* A gpucc_cache_warning_fn printing "gpucc CMD: warning: MESSAGE"; ctx is
 * the cmd_args. */
void cmd_print_warning(void *ctx, const char *message);
/* The options of a command that writes entries (import, delta, merge), from
 * whichever of these its table has: --on-conflict=fail|first|last,
 * --zstd[=LEVEL] (cmd_zstd_level), --no-sync; and
 * a conflict handler that prints each conflict a policy resolves.  Raises
 * the open-file limit too (cmd_raise_file_limit).  EXIT_OK or EXIT_USAGE
 * after printing. */
int cmd_algebra_options(const cmd_args *args, gpucc_algebra_options *opts);

#endif
