/*
 * cmd/algebra.c -- the helpers the cache-algebra commands (cache, snapshot,
 * delta, merge) share (cmd/algebra.h): opening the cache a command names,
 * printing the cache's warnings and sizes, and reading the options of
 * commands that write entries.
 */
#include "algebra.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cmd_print_warning(void *ctx, const char *message)
{
	const cmd_args *args = ctx;
	fprintf(stderr, "gpucc %s: warning: %s\n", args->spec->name, message);
}

int cmd_open_cache(const cmd_args *args, gpucc_cache **out, unsigned flags)
{
	const char *dir;
	if (cmd_directory_value(&dir, args, "cache") != EXIT_OK)
		return EXIT_USAGE;
	int rc = gpucc_cache_open(out, dir, flags);
	if (rc)
		return cmd_fail(args);
	gpucc_cache_set_warning_handler(*out, cmd_print_warning, (void *)args);
	return EXIT_OK;
}

void cmd_format_size(char *out, size_t size, uint64_t bytes)
{
	static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	int u = 0;
	/* (Up from just below 1024 too, which "%.1f" would print as "1024.0".) */
	while (v >= 1023.95 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(out, size, "%" PRIu64 " %s", bytes, cmd_plural(bytes, "byte", "bytes"));
	else
		snprintf(out, size, "%.1f %s", v, units[u]);
}

int cmd_open_cache_to_report(const cmd_args *args, gpucc_cache **out, unsigned flags)
{
	const char *dir;
	if (cmd_directory_value(&dir, args, "cache") != EXIT_OK)
		return EXIT_USAGE;
	return cmd_open_cache(args, out, dir ? flags | GPUCC_CACHE_EXISTING : flags);
}

static int conflict_policy(const cmd_args *args, gpucc_conflict_policy *out)
{
	const char *v;
	*out = GPUCC_CONFLICT_FAIL;
	if (cmd_single_value(&v, args, "on-conflict") != EXIT_OK)
		return EXIT_USAGE;
	if (!v || strcmp(v, "fail") == 0)
		return EXIT_OK;
	if (strcmp(v, "first") == 0)
		*out = GPUCC_CONFLICT_FIRST;
	else if (strcmp(v, "last") == 0)
		*out = GPUCC_CONFLICT_LAST;
	else
		return cmd_error(args, EXIT_USAGE, "--on-conflict must be fail, first or last, not '%s'",
		                 v);
	return EXIT_OK;
}

static void print_conflict(void *ctx, const gpucc_digest *key, const char *first,
                           const char *second)
{
	const cmd_args *args = ctx;
	const char *policy = cmd_value(args, "on-conflict");
	if (!policy || strcmp(policy, "fail") == 0)
		return; /* the error says it */
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, key);
	char a[256], b[256]; /* the sources' names, spelt as the error spells them */
	cmd_shown(a, sizeof a, first);
	cmd_shown(b, sizeof b, second);
	fprintf(stderr, "gpucc %s: warning: conflict: key %s differs in '%s' and '%s'; keeping '%s'\n",
	        args->spec->name, hex, a, b, strcmp(policy, "first") == 0 ? a : b);
}

int cmd_algebra_options(const cmd_args *args, gpucc_algebra_options *opts)
{
	gpucc_algebra_options_init(opts);
	int rc = conflict_policy(args, &opts->on_conflict);
	if (rc || (rc = cmd_zstd_level(args, &opts->write.zstd_level)))
		return rc;
	opts->write.no_sync = cmd_flag(args, "no-sync");
	opts->conflict_fn = print_conflict;
	opts->conflict_ctx = (void *)args;
	cmd_raise_file_limit();
	return EXIT_OK;
}
