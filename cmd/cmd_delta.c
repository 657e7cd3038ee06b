/*
 * cmd/cmd_delta.c -- `gpucc delta SOURCE --since BASE -o OUT`: exactly the
 * entries of SOURCE (a cache or an image) whose keys are not in BASE (a
 * snapshot, an image or a cache), as an image.  Of a snapshot SOURCE, the
 * delta is a snapshot of the new keys.
 */
#include "algebra.h"
#include "interrupt.h"

#include <stdio.h>
#include <stdlib.h>

static const cmd_option options[] = {
	{"since", 0, "BASE", false, "the snapshot, image or cache whose keys to leave out"},
	{"output", 'o', "OUT", false, "write the delta image (a snapshot, for a snapshot SOURCE)"},
	{"zstd", 0, "LEVEL", true, CMD_ZSTD_HELP},
	{"no-sync", 0, NULL, false,
	 "do not fsync the output: faster, still atomic, but a power loss may lose it"},
	{"on-conflict", 0, "POLICY", false,
	 "a key in both with other contents: fail (default), first (keep BASE's: leave it out) "
	 "or last (take SOURCE's)"},
	{"quiet", 'q', NULL, false,
	 "no summary line on success (warnings, such as conflicts a policy resolved, still print)"},
	{0},
};

static int run(const cmd_args *args)
{
	const char *since, *output;
	if (cmd_path_value(&since, args, "since", "a snapshot, an image or a cache") != EXIT_OK ||
	    cmd_output_value(&output, args, "output") != EXIT_OK)
		return EXIT_USAGE;
	if (!since)
		return cmd_error(args, EXIT_USAGE, "say what to compare with: --since BASE");
	if (!output)
		return cmd_error(args, EXIT_USAGE, "say where to write the delta: -o OUT");
	gpucc_algebra_options opts;
	int rc = cmd_algebra_options(args, &opts);
	if (rc || (rc = cmd_output_creatable(args, output)) != EXIT_OK ||
	    (rc = cmd_interrupt_watch(args, output, false)) != EXIT_OK)
		return rc;

	gpucc_operand *source = NULL, *base_source = NULL;
	gpucc_snapshot *base_of = NULL, *result = NULL;
	const gpucc_snapshot *base = NULL; /* borrowed from base_source, or base_of */
	gpucc_algebra_counts counts = {0};
	if (gpucc_operand_open(&source, args->positional[0], cmd_print_warning, (void *)args) != 0 ||
	    gpucc_operand_open(&base_source, since, cmd_print_warning, (void *)args) != 0 ||
	    (!(base = gpucc_operand_snapshot(base_source)) &&
	     gpucc_snapshot_of(&base_of, base_source) != 0)) {
		rc = cmd_fail(args);
		goto cleanup;
	}
	if (!base)
		base = base_of;
	/* Unlike a merge's, a delta's output holds less than its inputs:
	 * written over one, it would lose entries (or the base's record). */
	if (gpucc_operand_is_file(source, output) || gpucc_operand_is_file(base_source, output)) {
		rc = cmd_error(args, EXIT_USAGE, "-o '%s' names the %s: write the delta elsewhere", output,
		               gpucc_operand_is_file(source, output) ? "SOURCE" : "BASE");
		goto cleanup;
	}
	if (gpucc_operand_kind_of(source) == GPUCC_OPERAND_SNAPSHOT && opts.write.zstd_level) {
		rc = cmd_error(args, EXIT_USAGE,
		               "--zstd compresses images, and the delta of snapshot '%s' is a snapshot",
		               gpucc_operand_name(source));
		goto cleanup;
	}
	/* None of BASE's payloads is read, so its snapshot alone would take
	 * an image cut short after its manifest for a whole one. */
	if (gpucc_operand_check_whole(base_source) != 0) {
		rc = cmd_fail(args);
		goto cleanup;
	}
	if (gpucc_operand_kind_of(source) == GPUCC_OPERAND_SNAPSHOT) {
		if (gpucc_snapshot_delta(&result, gpucc_operand_snapshot(source),
		                         gpucc_operand_name(source), base, since, &opts, &counts) != 0 ||
		    gpucc_snapshot_write(result, output) != 0)
			rc = cmd_fail(args);
	} else if (gpucc_delta_write(output, source, base, since, &opts, &counts) != 0) {
		rc = cmd_fail(args);
	}
	if (rc == EXIT_OK && !cmd_flag(args, "quiet")) {
		char shown[256];
		fprintf(stderr, "gpucc delta: %zu new %s of %zu; written to '%s'\n", counts.entries_out,
		        cmd_plural(counts.entries_out, "entry", "entries"), counts.entries_read,
		        cmd_shown(shown, sizeof shown, output));
	}
cleanup:
	gpucc_snapshot_free(result);
	gpucc_snapshot_free(base_of);
	gpucc_operand_free(base_source);
	gpucc_operand_free(source);
	return rc;
}

const cmd_spec cmd_delta_spec = {
	"delta", "SOURCE --since BASE -o OUT [--zstd[=LEVEL]] [--on-conflict=POLICY] [--no-sync]",
	"take exactly the entries a cache or an image gained since a snapshot",
	"SOURCE is a cache directory or an image; BASE a snapshot, an image or a\n"
	"cache.  The output holds the entries of SOURCE whose keys are not in BASE;\n"
	"an empty delta is a valid empty image.  Of a snapshot SOURCE the delta is\n"
	"a snapshot of those keys (--zstd does not apply).  A key in both with\n"
	"different contents is a conflict: reported, and by default a failure\n"
	"(exit 4).  -o may not name SOURCE or BASE (the delta holds less than\n"
	"either; exit 129), nor be empty, - or a stream such as /dev/stdout (the\n"
	"output is renamed into place; 129 too), nor a directory (3, a name ending\n"
	"in '/' too); --since may not be empty either.  An image\n"
	"cut short is refused (exit 3), as SOURCE even when BASE holds all its\n"
	"entries, and as BASE though none of its payloads is read.",
	options, 1, 1, run, NULL,
};
