/*
 * cmd/commands.c -- the table of gpucc's subcommands, in `gpucc help`
 * order.  Each subcommand lives in cmd_<name>.c with its usage text and
 * options table; nested commands ("cache stats") are rows whose name has two
 * words.  gpucc.c dispatches over it, and the option-parsing fuzz target
 * checks every table in it.
 */
#include "cmd.h"
#include "cmd_remote.h"

const cmd_spec *const gpucc_commands[] = {
	&cmd_compile_spec,
	&cmd_list_spec,
	&cmd_show_spec,
	&cmd_cat_spec,
	&cmd_extract_spec,
	&cmd_verify_spec,
	&cmd_stats_spec,
	&cmd_pack_spec,
	&cmd_snapshot_spec,
	&cmd_delta_spec,
	&cmd_merge_spec,
	&cmd_cache_stats_spec,
	&cmd_cache_import_spec,
	&cmd_cache_lookup_spec,
	&cmd_cache_verify_spec,
	&cmd_cache_gc_spec,
	&cmd_cache_prune_spec,
	&cmd_cache_clear_spec,
	&cmd_cache_push_spec,
	&cmd_cache_pull_spec,
	&cmd_cache_keygen_spec,
	&cmd_embed_spec,
	&cmd_devices_spec,
};
const size_t gpucc_command_count = sizeof gpucc_commands / sizeof gpucc_commands[0];
