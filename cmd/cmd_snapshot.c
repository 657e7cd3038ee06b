/*
 * cmd/cmd_snapshot.c -- `gpucc snapshot`: record the keys (and content
 * digests) a cache or an image holds, in snapshot format v1
 * (formats/snapshot.md); or show a snapshot.
 *
 *   gpucc snapshot SOURCE -o SNAP        SOURCE: a cache directory, an image, a snapshot
 *   gpucc snapshot --keys FILE -o SNAP   from a text list ("KEY CONTENT" lines; - is stdin)
 *   gpucc snapshot --show SNAP [--json]  print one
 */
#include "algebra.h"
#include "interrupt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const cmd_option options[] = {
	{"output", 'o', "SNAP", false, "write the snapshot to SNAP"},
	{"keys", 0, "FILE", false, "read the items from a text list instead of a SOURCE (- is stdin)"},
	{"show", 0, NULL, false, "print the snapshot (or SOURCE's) on stdout; with -o, write it too"},
	{"json", 0, NULL, false, "with --show: print JSON"},
	{"quiet", 'q', NULL, false, "do not report the keys written (--show prints all the same)"},
	{0},
};

/* The whole of f in *out (malloc'd): read, not mapped, so that a file cut
 * short while it is read is read short, never a SIGBUS.  A regular file's
 * buffer is sized from its length at once, so a large list is read
 * without copies.  -1 (errno set) on an error. */
static int read_stream(FILE *f, char **out, size_t *out_size)
{
	struct stat st;
	size_t size = 0, cap = 1 << 20;
	if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (uintmax_t)st.st_size < SIZE_MAX / 2)
		cap = (size_t)st.st_size + 1; /* + 1: the end is seen without a realloc */
	char *buf = malloc(cap);
	if (!buf)
		return -1;
	for (;;) {
		if (size == cap) {
			char *grown = realloc(buf, cap *= 2);
			if (!grown) {
				free(buf);
				return -1;
			}
			buf = grown;
		}
		size_t n = fread(buf + size, 1, cap - size, f);
		size += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		return -1;
	}
	*out = buf;
	*out_size = size;
	return 0;
}

/* The error for the key list at path that did not parse (the last error
 * set): a snapshot or an image given to --keys is named for what it is (the
 * parser says "line 1: expected 'KEY CONTENT'"); anything else gets the
 * parser's error. */
static int not_a_key_list(const cmd_args *args, const char *path)
{
	int code = gpucc_error_last()->code;
	char message[1024];
	snprintf(message, sizeof message, "%s", gpucc_error_last()->message);
	gpucc_operand *source = NULL;
	int kind = 0;
	if (code == GPUCC_ECORRUPT && gpucc_operand_open(&source, path, NULL, NULL) == 0)
		kind = gpucc_operand_kind_of(source);
	gpucc_operand_free(source);
	if (kind == GPUCC_OPERAND_SNAPSHOT || kind == GPUCC_OPERAND_IMAGE)
		return cmd_error(args, EXIT_BAD_INPUT,
		                 "--keys '%s' is a gpucc %s, not a key list ('KEY CONTENT' lines): give "
		                 "it as the SOURCE",
		                 path, kind == GPUCC_OPERAND_SNAPSHOT ? "snapshot" : "image");
	return cmd_error(args, cmd_exit_code(code), "%s", message);
}

/* Read the key list at path (- for stdin) into *out; output, which may be
 * NULL, must not name the same file (the list would be lost). */
static int load_key_list(const cmd_args *args, const char *path, const char *output,
                         gpucc_snapshot **out)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	if (!f)
		return cmd_open_failed(args, path, errno);
	struct stat in;
	if (fstat(fileno(f), &in) == 0 && S_ISDIR(in.st_mode)) {
		if (f != stdin)
			fclose(f);
		return cmd_error(args, EXIT_BAD_INPUT,
		                 "--keys '%s' is a directory, not a key list (a cache directory is a "
		                 "SOURCE)",
		                 path);
	}
	if (output && gpucc_output_is_input_fd(output, fileno(f))) {
		if (f != stdin)
			fclose(f);
		return cmd_error(args, EXIT_USAGE,
		                 "-o '%s' names the key list: write the snapshot elsewhere", output);
	}
	char *text = NULL;
	size_t size = 0;
	int rc = read_stream(f, &text, &size);
	int saved = errno;
	if (f != stdin)
		fclose(f);
	if (rc)
		return cmd_error(args, EXIT_FAIL, "cannot read '%s': %s", path, strerror(saved));
	rc = gpucc_snapshot_parse_text(out, text, size, strcmp(path, "-") == 0 ? "stdin" : path);
	free(text);
	return rc == 0 ? EXIT_OK : f == stdin ? cmd_fail(args) : not_a_key_list(args, path);
}

static void print_json(const gpucc_snapshot *s)
{
	size_t n = gpucc_snapshot_count(s);
	const gpucc_snapshot_item *items = gpucc_snapshot_items(s);
	printf("{\"format\": \"gpucc-snapshot\", \"version\": 1, \"count\": %zu, \"items\": [", n);
	for (size_t i = 0; i < n; i++) {
		char key[GPUCC_DIGEST_HEX_SIZE], content[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(key, &items[i].key);
		gpucc_digest_to_hex(content, &items[i].content);
		printf("%s\n  {\"key\": \"%s\", \"content\": \"%s\"}", i ? "," : "", key, content);
	}
	printf("%s]}\n", n ? "\n" : "");
}

static int run(const cmd_args *args)
{
	const char *output;
	const char *keys;
	bool show = cmd_flag(args, "show");
	if (cmd_single_value(&keys, args, "keys") != EXIT_OK ||
	    cmd_output_value(&output, args, "output") != EXIT_OK)
		return EXIT_USAGE;
	if (keys && args->positional_count)
		return cmd_error(args, EXIT_USAGE, "give a SOURCE or --keys FILE, not both");
	if (!keys && args->positional_count != 1)
		return cmd_error(args, EXIT_USAGE, "give one SOURCE (a cache, an image or a snapshot)");
	if (!show && !output)
		return cmd_error(args, EXIT_USAGE, "say where to write the snapshot with -o SNAP, or use --show");
	if (cmd_flag(args, "json") && !show)
		return cmd_error(args, EXIT_USAGE, "--json goes with --show");
	int rc = output ? cmd_output_creatable(args, output) : EXIT_OK;
	if (rc || (output && (rc = cmd_interrupt_watch(args, output, false)) != EXIT_OK))
		return rc;

	gpucc_snapshot *snap = NULL; /* owned, unless SOURCE is a snapshot */
	const gpucc_snapshot *view = NULL;
	gpucc_operand *source = NULL;
	if (keys) {
		rc = load_key_list(args, keys, output, &snap);
	} else {
		cmd_raise_file_limit();
		if (gpucc_operand_open(&source, args->positional[0], cmd_print_warning, (void *)args) != 0)
			rc = cmd_fail(args);
		else if (!(view = gpucc_operand_snapshot(source)) && gpucc_snapshot_of(&snap, source) != 0)
			rc = cmd_fail(args);
	}
	if (rc)
		goto cleanup;
	if (!view)
		view = snap;
	/* A snapshot in place of its image would lose every entry. */
	if (output && source && gpucc_operand_is_file(source, output)) {
		rc = cmd_error(args, EXIT_USAGE, "-o '%s' names the SOURCE: write the snapshot elsewhere",
		               output);
		goto cleanup;
	}
	if (output) {
		if (gpucc_snapshot_write(view, output) != 0) {
			rc = cmd_fail(args);
			goto cleanup;
		}
		if (!show && !cmd_flag(args, "quiet")) {
			char shown[256];
			fprintf(stderr, "gpucc snapshot: %zu %s written to '%s'\n",
			        gpucc_snapshot_count(view), gpucc_snapshot_count(view) == 1 ? "key" : "keys",
			        cmd_shown(shown, sizeof shown, output));
		}
	}
	if (show) {
		if (cmd_flag(args, "json")) {
			print_json(view);
		} else {
			fflush(stdout);
			if (gpucc_snapshot_write_text(view, STDOUT_FILENO) != 0) {
				/* Said as for --json and every other command (cmd/gpucc.c):
				 * the library's "cannot write snapshot text: REASON" does
				 * not say where. */
				const char *reason = strrchr(gpucc_error_last()->message, ':');
				rc = reason ? cmd_error(args, EXIT_FAIL, "cannot write to standard output%s",
				                        reason)
				            : cmd_fail(args);
			}
		}
	}
cleanup:
	gpucc_snapshot_free(snap);
	gpucc_operand_free(source);
	return rc;
}

const cmd_spec cmd_snapshot_spec = {
	"snapshot", "SOURCE -o SNAP | --keys FILE -o SNAP | --show SNAP [--json]",
	"record the keys and content digests a cache or an image holds",
	"SOURCE is a cache directory, an image or a snapshot; an empty directory is\n"
	"an empty cache, any other directory without v1/ is refused.  A snapshot is the\n"
	"sorted list of (key, content digest) with a checksum (formats/snapshot.md):\n"
	"64 bytes a key, so a million keys take 64 MB.  --show prints one\n"
	"'KEY CONTENT' line per key, the text form that --keys reads; with --json,\n"
	"{\"format\": \"gpucc-snapshot\", \"version\": 1, \"count\", \"items\": [{\"key\",\n"
	"\"content\"}]}.  SOURCE must be a regular file or a cache directory (not a\n"
	"pipe), and -o may not name it, nor - or a stream such as /dev/stdout (use\n"
	"--show to print one; exit 129), nor a directory (exit 3).",
	options, 0, 1, run, NULL,
};
