/*
 * cmd/cmd_merge.c -- `gpucc merge INPUT... -o OUT | --into CACHE`: the union
 * of images and caches.  The output's bytes depend only on the set of
 * entries, so any order and grouping of inputs gives the same file.  -o may
 * name an input: the output is locked (.OUT.lock beside it) before any input
 * is read, so concurrent `gpucc merge OUT x -o OUT` runs take turns and none
 * is lost, while merges into other files run at once.
 */
#include "algebra.h"
#include "interrupt.h"

#include <stdio.h>
#include <stdlib.h>

static const cmd_option options[] = {
	{"output", 'o', "OUT", false, "write the merged image to OUT (may be one of the inputs)"},
	{"into", 0, "CACHE", false, "insert the entries into the cache directory CACHE instead"},
	{"on-conflict", 0, "POLICY", false,
	 "one key with different contents: fail (default), first or last (in argument order)"},
	{"zstd", 0, "LEVEL", true, CMD_ZSTD_HELP},
	{"no-sync", 0, NULL, false,
	 "do not fsync the output: faster, still atomic, but a power loss may lose it"},
	{"quiet", 'q', NULL, false,
	 "no summary line on success (warnings, such as conflicts a policy resolved, still print)"},
	{0},
};

static int run(const cmd_args *args)
{
	const char *output, *into;
	if (cmd_output_value(&output, args, "output") != EXIT_OK ||
	    cmd_directory_value(&into, args, "into") != EXIT_OK)
		return EXIT_USAGE;
	if (!output == !into)
		return cmd_error(args, EXIT_USAGE, "give exactly one of -o OUT and --into CACHE");
	if (into && cmd_flag(args, "zstd"))
		return cmd_error(args, EXIT_USAGE, "--zstd applies to -o OUT; cache entries are not compressed");
	gpucc_algebra_options opts;
	int rc = cmd_algebra_options(args, &opts);
	if (rc || (output && (rc = cmd_output_creatable(args, output)) != EXIT_OK) ||
	    (output && (rc = cmd_interrupt_watch(args, output, false)) != EXIT_OK))
		return rc;

	size_t n = (size_t)args->positional_count;
	gpucc_operand **sources = calloc(n, sizeof *sources);
	gpucc_cache *cache = NULL;
	int lock = -1;
	if (!sources)
		return cmd_error(args, EXIT_FAIL, "out of memory");
	/* The lock comes first: an input that is also the output must be read
	 * as the previous merge left it. */
	if (output && (lock = gpucc_merge_lock_acquire(output)) < 0) {
		rc = cmd_fail(args);
		goto cleanup;
	}
	cmd_interrupt_hold_lock(lock >= 0);
	if (gpucc_operands_open(sources, (const char *const *)args->positional, n, cmd_print_warning,
	                       (void *)args) != 0) {
		rc = cmd_fail(args);
		goto cleanup;
	}
	gpucc_algebra_counts counts = {0};
	if (output) {
		if (gpucc_merge_write(output, sources, n, &opts, &counts) != 0) {
			rc = cmd_fail(args);
			goto cleanup;
		}
	} else {
		if (gpucc_cache_open(&cache, into, 0) != 0) {
			rc = cmd_fail(args);
			goto cleanup;
		}
		gpucc_cache_set_warning_handler(cache, cmd_print_warning, (void *)args);
		if (gpucc_merge_into_cache(cache, sources, n, &opts, &counts) != 0) {
			rc = cmd_fail(args);
			goto cleanup;
		}
	}
	if (!cmd_flag(args, "quiet"))
		fprintf(stderr, "gpucc merge: %zu %s from %zu %s: %zu %s, %zu %s, %zu %s\n",
		        counts.entries_read, cmd_plural(counts.entries_read, "entry", "entries"), n,
		        cmd_plural(n, "input", "inputs"), counts.entries_out,
		        output ? "in the output" : "new in the cache", counts.duplicates,
		        cmd_plural(counts.duplicates, "duplicate", "duplicates"), counts.conflicts,
		        cmd_plural(counts.conflicts, "conflict", "conflicts"));
cleanup:
	for (size_t i = 0; i < n; i++)
		gpucc_operand_free(sources[i]);
	free(sources);
	gpucc_cache_free(cache);
	cmd_interrupt_hold_lock(false);
	gpucc_merge_lock_release(output, lock);
	return rc;
}

const cmd_spec cmd_merge_spec = {
	"merge", "INPUT... (-o OUT | --into CACHE) [--on-conflict=POLICY] [--zstd[=LEVEL]] [--no-sync]",
	"combine images and caches into one image, or into a cache",
	"Identical duplicates collapse.  One key with different contents in two\n"
	"inputs is a conflict that names the key and both inputs and fails (exit 4)\n"
	"unless --on-conflict=first or last chooses.  The output's bytes depend only\n"
	"on the set of entries: merge(a,b) = merge(b,a) and merge(merge(a,b),c) =\n"
	"merge(a,b,c), byte for byte.  Inputs may be compressed or not; --zstd\n"
	"compresses on up to 4 threads, with the same bytes for any number.\n"
	"With --into, an entry already in the cache comes first; under the default\n"
	"policy a conflict with it fails before any entry is inserted.  Of identical\n"
	"copies under different module names an image and a cache alike keep the\n"
	"smallest name (byte order), so that merging A into B and B into A agree.\n"
	"Concurrent merges into one OUT take turns, holding a lock file .OUT.lock\n"
	"beside it while they run; none is lost.  Ctrl-C, SIGTERM or SIGHUP leaves\n"
	"OUT as it was and nothing beside it.  OUT is written beside its name and\n"
	"renamed into place, so it may not be empty, - or a stream such as\n"
	"/dev/stdout (exit 129), nor a directory (exit 3; a name ending in '/' too).\n"
	"-o, --into, --on-conflict and --zstd given twice must agree.\n"
	"Any number of INPUTs: beyond half the limit on open files (ulimit -n)\n"
	"they are reopened for each read, and one removed, replaced or changed\n"
	"meanwhile fails the merge (exit 1).  An INPUT cut short fails it (exit 3),\n"
	"even when the other inputs hold all its entries.",
	options, 1, -1, run, NULL,
};
