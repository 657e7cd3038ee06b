/*
 * cmd/cmd_extract.c -- `gpucc extract IMAGE [KEY...] [-C DIR]`: every payload
 * of every entry, or of the entries KEY names, as a file named for what it
 * is (gpucc_image_extract, which names, verifies and publishes them all or
 * nothing), and the list of the files written, or --json.  With KEYs the
 * image is opened for lookup: an uncompressed one with an index
 * (formats/image.md, "The index") has only those entries' part of its
 * manifest parsed, and only their payloads read.  The list is printed and flushed once every file is in
 * place and before the files --force replaced are dropped: a list that
 * cannot be written (standard output closed or full) undoes the extraction,
 * rather than leave files that no one was told of.
 */
#include "cmd.h"

#include <gpucc.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const cmd_option extract_options[] = {
	{"directory", 'C', "DIR", false, "write into DIR (created if missing; default: .)"},
	{"force", 'f', NULL, false, "overwrite files that already exist"},
	{"json", 0, NULL, false, "print what was written as a JSON object"},
	{"quiet", 'q', NULL, false, "do not print the names of the files written"},
	{0},
};

typedef struct report {
	const cmd_args *args;
	const char *dir;
	bool dir_given, quiet, json;
	bool list_failed; /* print_files could not write the list, and said so */
} report;

/* "/" between DIR and a name, or "" when DIR ends with one already (-C
 * out/, as the shell completes it, gave out//NAME). */
static const char *separator_after(const char *dir)
{
	size_t len = strlen(dir);
	return len && dir[len - 1] == '/' ? "" : "/";
}

/* --json: the directory and, per file written, its name and payload. */
static void print_json(const report *r, const gpucc_extract_file *files, size_t count)
{
	fputs("{\"image\": ", stdout);
	cmd_json_string(stdout, r->args->positional[0]);
	fputs(", \"directory\": ", stdout);
	cmd_json_string(stdout, r->dir);
	fputs(", \"files\": [", stdout);
	for (size_t i = 0; i < count; i++) {
		const gpucc_payload *p = files[i].payload;
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &p->sha256);
		fputs(i ? ", {\"name\": " : "{\"name\": ", stdout);
		cmd_json_string(stdout, files[i].name);
		printf(", \"part\": \"%s\", \"size\": %" PRIu64 ", \"sha256\": \"%s\"}",
		       gpucc_part_name(p->part), p->size, hex);
	}
	fputs("]}\n", stdout);
}

/* Before the extraction commits: print the files (DIR spelt: a control
 * character in it would reach the terminal or split the row; names are
 * sanitised already) and flush; a list that cannot be written undoes it. */
static int print_files(void *ctx, const gpucc_extract_file *files, size_t count)
{
	report *r = ctx;
	errno = 0;
	for (size_t i = 0; i < count && !r->quiet && !r->json; i++) {
		if (r->dir_given) {
			cmd_put_shown(stdout, r->dir);
			fputs(separator_after(r->dir), stdout);
		}
		printf("%s\n", files[i].name);
	}
	if (r->json)
		print_json(r, files, count);
	int flushed = fflush(stdout), err = errno;
	if (flushed == 0 && !ferror(stdout))
		return 0;
	r->list_failed = true;
	fprintf(stderr,
	        "gpucc extract: cannot write the list of files to standard output (nothing was "
	        "extracted)%s%s\n",
	        err ? ": " : "", err ? strerror(err) : "");
	return GPUCC_ERROR;
}

static int run_extract(const cmd_args *args)
{
	const char *dir_option;
	if (cmd_path_value(&dir_option, args, "directory", "a directory") != EXIT_OK)
		return EXIT_USAGE;
	report r = {.args = args, .dir = dir_option && *dir_option ? dir_option : ".",
	            .dir_given = dir_option != NULL, .quiet = cmd_flag(args, "quiet"),
	            .json = cmd_flag(args, "json")};
	if (r.json && r.quiet)
		return cmd_error(args, EXIT_USAGE, "-q and --json exclude each other");
	const char *const *keys = (const char *const *)args->positional + 1;
	size_t key_count = (size_t)args->positional_count - 1;
	for (size_t i = 0; i < key_count; i++)
		if (cmd_key_prefix_value(args, keys[i]) != EXIT_OK)
			return EXIT_USAGE;
	gpucc_image *img = NULL;
	if ((key_count ? gpucc_image_open_for_lookup(&img, args->positional[0])
	               : gpucc_image_open(&img, args->positional[0])) != 0)
		return cmd_fail(args);
	/* Each file not yet named holds a descriptor until it is published. */
	cmd_raise_file_limit();
	gpucc_extract_options opts = GPUCC_EXTRACT_OPTIONS_INIT;
	opts.force = cmd_flag(args, "force");
	opts.before_commit = print_files;
	opts.ctx = &r;
	opts.keys = key_count ? keys : NULL;
	opts.key_count = key_count;
	int rc = gpucc_image_extract(img, r.dir, &opts);
	/* print_files said why it failed; the library's failures are its own. */
	int status = rc == 0 ? EXIT_OK : r.list_failed ? EXIT_FAIL : cmd_fail(args);
	gpucc_image_free(img);
	return status;
}

const cmd_spec cmd_extract_spec = {
	.name = "extract",
	.synopsis = "IMAGE [KEY...] [-C DIR] [--force] [-q | --json]",
	.summary = "write every payload of an image, or of the entries named, to a file",
	.description =
		"Each payload of each entry (with KEYs: of each entry a KEY names) becomes a\n"
		"file in DIR named <module stem>.<target with ':' as '_'>.<short key>.<ext>, e.g.\n"
		"saxpy.nvptx.sm_90_ptx78.3f2a9c0d1e4b.ptx; names are built from the manifest\n"
		"and sanitised, so nothing is written outside DIR.  Every payload is\n"
		"verified and flushed before any file appears, and a run that fails leaves\n"
		"DIR as it was: files --force replaced are put back, and directories made\n"
		"for -C removed.  A list of files that cannot be written (standard output\n"
		"closed or full) fails the run so too.\n"
		"Existing files are refused unless --force (a directory or other non-file,\n"
		"or IMAGE itself, even then; a link is replaced, not followed).  Prints the\n"
		"files written; --json prints {\"image\", \"directory\", \"files\": [{\"name\",\n"
		"\"part\", \"size\", \"sha256\"}, ...]} instead, names relative to the\n"
		"directory; -q and --json exclude each other (129).\n"
		"Members that no entry lists are never read; 'gpucc verify' checks them.\n"
		"A KEY is a full key or a unique hex prefix, as for 'gpucc show' (1 to 64\n"
		"hex digits, else a usage error, 129); a KEY that no entry has, or that\n"
		"several have, fails the run (exit 2) before anything is written, naming\n"
		"it.  An entry named twice is written once.  With KEYs only those entries\n"
		"are read: an uncompressed image with an index (formats/image.md) has\n"
		"neither the rest of its manifest nor other entries' payloads read, or checked.",
	.options = extract_options,
	.min_positional = 1,
	.max_positional = -1,
	.run = run_extract,
};
