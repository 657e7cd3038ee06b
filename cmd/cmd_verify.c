/*
 * cmd/cmd_verify.c -- `gpucc verify IMAGE`: check everything about an image
 * (format version, manifest, every member's presence, kind, name, size and
 * digest, and that no unlisted member exists) and say so in one line, or
 * (--json) in one JSON object.
 */
#include "cmd.h"

#include <gpucc.h>

#include <inttypes.h>

static const cmd_option verify_options[] = {
	{"json", 0, NULL, false, "print the verdict as a JSON object, a failure's too"},
	{"quiet", 'q', NULL, false, "print nothing on success; only the exit code tells"},
	{"structure", 0, NULL, false, "check all but the payloads' bytes (what binds lookups)"},
	{0},
};

static int run_verify(const cmd_args *args)
{
	const char *path = args->positional[0];
	gpucc_image *img = NULL;
	int rc = EXIT_OK;

	bool json = cmd_flag(args, "json");
	bool structure = cmd_flag(args, "structure");
	if (json && cmd_flag(args, "quiet"))
		return cmd_error(args, EXIT_USAGE, "-q and --json exclude each other");
	if (gpucc_image_open(&img, path) != 0 ||
	    (structure ? gpucc_image_verify_structure(img) : gpucc_image_verify(img)) != 0) {
		if (json) {
			fputs("{\"image\": ", stdout);
			cmd_json_string(stdout, path);
			fputs(", \"ok\": false, \"error\": ", stdout);
			cmd_json_string(stdout, gpucc_error_last()->message);
			fputs("}\n", stdout);
		}
		rc = cmd_fail(args);
		goto cleanup;
	}
	uint64_t bytes = 0;
	size_t payloads = 0;
	gpucc_image_count_payloads(&payloads, img); /* verify has built the list */
	for (size_t i = 0; i < payloads; i++)
		bytes += gpucc_image_payload(img, i)->size;
	if (json) {
		fputs("{\"image\": ", stdout);
		cmd_json_string(stdout, path);
		printf(", \"ok\": true, \"entries\": %zu, \"payloads\": %zu, \"bytes\": %" PRIu64
		       "%s}\n",
		       gpucc_image_entry_count(img), payloads, bytes,
		       structure ? ", \"payload_bytes_checked\": false" : "");
	} else if (!cmd_flag(args, "quiet")) {
		size_t entries = gpucc_image_entry_count(img);
		cmd_put_shown(stdout, path); /* a newline in it would end the row */
		printf(": %s (%zu %s, %zu %s, %" PRIu64 " %s)\n", structure ? "structure ok" : "ok",
		       entries, cmd_plural(entries, "entry", "entries"), payloads,
		       cmd_plural(payloads, "payload", "payloads"), bytes, cmd_plural(bytes, "byte", "bytes"));
	}
cleanup:
	gpucc_image_free(img);
	return rc;
}

const cmd_spec cmd_verify_spec = {
	.name = "verify",
	.synopsis = "IMAGE [--structure] [-q | --json]",
	.summary = "check an image completely",
	.description =
		"Checks the format version, the manifest (each entry's key against the key\n"
		"its components give), and every member: present once, a regular file (not\n"
		"sparse) with a safe name, of the listed size and SHA-256; that no member\n"
		"is unlisted, and that the archive ends with its end-of-archive marker,\n"
		"followed by nothing but zero bytes (tar's record padding).\n"
		"IMAGE may be a pipe (/dev/stdin), read then up to its marker only (see\n"
		"formats/image.md, \"Reading\").  On success prints\n"
		"'IMAGE: ok (N entries, M payloads, B bytes)' (singular for 1), B counting\n"
		"each distinct payload once.  On the first defect prints it in one line and\n"
		"exits 3 (2 when IMAGE does not exist).  --json prints {\"image\", \"ok\": true,\n"
		"\"entries\", \"payloads\", \"bytes\"} on stdout, or {\"image\", \"ok\": false,\n"
		"\"error\"} besides the line on stderr and the same exit code; -q and --json\n"
		"exclude each other (129).\n"
		"\n"
		"--structure checks all of that but the payloads' bytes: the manifest, the\n"
		"keys, the index against the manifest, every member's header, name and size,\n"
		"and what follows the marker; it reads one block per member of an\n"
		"uncompressed image, so it takes a fraction of verify's time on large ones.\n"
		"It prints 'IMAGE: structure ok (...)', and --json adds\n"
		"\"payload_bytes_checked\": false.  An image it accepts binds\n"
		"every lookup (show, cat, the runtime's selection) to the entries its\n"
		"manifest lists: run it on an image you did not make before shipping it.\n"
		"\n"
		"Every command that reads images bounds what that may cost: a compressed\n"
		"image may expand to 32 GiB, at most 1000-fold, and a manifest may hold\n"
		"128 MiB (and its parsed form as much again); past a limit an image is\n"
		"refused.  GPUCC_IMAGE_LIMITS changes them, e.g.\n"
		"GPUCC_IMAGE_LIMITS=expanded=64G,ratio=5000,manifest=512M (0 turns a check\n"
		"off); see formats/image.md, \"Limits\".",
	.options = verify_options,
	.min_positional = 1,
	.max_positional = 1,
	.run = run_verify,
};
