/*
 * cmd/cmd_remote.h -- the remotes a command uses, and the commands of the
 * remote cache (cmd/cmd_remote.c).
 */
#ifndef GPUCC_CMD_REMOTE_H
#define GPUCC_CMD_REMOTE_H

#include "cmd.h"

#include <gpucc.h>

/* The options every command that may use a remote carries in its table. */
#define CMD_REMOTE_OPTIONS                                                                        \
	{"remote", 0, "URL", false,                                                                   \
	 "use this remote cache after the local one (repeatable; replaces $GPUCC_REMOTE and the "      \
	 "cache's config)"},                                                                          \
	{"no-remote", 0, NULL, false, "use no remote cache"}

/* Add the command's remotes to c: --no-remote none; else every --remote;
 * else $GPUCC_REMOTE; else the cache's config.  EXIT_USAGE (said) for a
 * malformed --remote or both options; a malformed GPUCC_REMOTE or config
 * is a warning, and EXIT_OK. */
int cmd_configure_remotes(const cmd_args *args, gpucc_cache *c);

/* Upload the entries c compiled (not those it hit) from cache to its
 * remotes that are not read-only, in one batch; failures are the cache's
 * warnings, never the command's. */
void cmd_upload_compiled(gpucc_compile *c, gpucc_cache *cache);

extern const cmd_spec cmd_cache_push_spec, cmd_cache_pull_spec, cmd_cache_keygen_spec;

#endif
