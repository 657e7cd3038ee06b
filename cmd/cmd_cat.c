/*
 * cmd/cmd_cat.c -- `gpucc cat IMAGE KEY --part PART`: one payload's bytes on
 * standard output.  The payload is read whole and checked against its size
 * and SHA-256 before the first byte is written, so a corrupt image never
 * sends corrupt bytes down a pipe.  The image is opened for lookup: an
 * uncompressed one with an index (formats/image.md, "The index") has only
 * that entry's part of its manifest parsed, and its payload read where the
 * index says.
 */
#include "cmd.h"

#include <gpucc.h>

#include <errno.h>
#include <string.h>

static const cmd_option cat_options[] = {
	{"part", 'p', "PART", false, "the payload to print: ptx, cubin, hsaco or bitcode (required)"},
	{0},
};

/* "ptx, hsaco" for the parts e has, or "none". */
static void describe_parts(char *out, size_t size, const gpucc_entry *e)
{
	size_t used = 0;
	out[0] = '\0';
	for (size_t i = 0; i < e->payload_count && used < size; i++)
		used += (size_t)snprintf(out + used, size - used, "%s%s", i ? ", " : "",
		                         gpucc_part_name(e->payloads[i].part));
	if (e->payload_count == 0)
		snprintf(out, size, "none");
}

static int run_cat(const cmd_args *args)
{
	const char *part_name;
	gpucc_part part;
	gpucc_image *img = NULL;
	const gpucc_entry *e;
	void *data = NULL;
	size_t size = 0;
	int rc = EXIT_OK;

	if (cmd_single_value(&part_name, args, "part") != EXIT_OK)
		return EXIT_USAGE;
	if (!part_name)
		return cmd_error(args, EXIT_USAGE, "missing option '--part' (ptx, cubin, hsaco or bitcode)");
	if (gpucc_part_from_name(&part, part_name) != 0)
		return cmd_error(args, EXIT_USAGE, "%s", gpucc_error_last()->message);

	if (cmd_key_prefix_value(args, args->positional[1]) != EXIT_OK)
		return EXIT_USAGE;
	if (gpucc_image_open_for_lookup(&img, args->positional[0]) != 0 ||
	    gpucc_image_lookup(&e, img, args->positional[1]) != 0) {
		rc = cmd_fail(args);
		goto cleanup;
	}
	const gpucc_payload *p = gpucc_entry_payload(e, part);
	if (!p) {
		char key[GPUCC_DIGEST_HEX_SIZE], parts[64], image[256];
		gpucc_digest_to_hex(key, &e->key);
		describe_parts(parts, sizeof parts, e);
		rc = cmd_error(args, EXIT_NOT_FOUND, "'%s': entry %.12s has no %s payload (it has: %s)",
		               cmd_shown(image, sizeof image, args->positional[0]), key, part_name,
		               parts);
		goto cleanup;
	}
	if (gpucc_image_read_payload(&data, &size, img, p) != 0) {
		rc = cmd_fail(args);
		goto cleanup;
	}
	if (size && fwrite(data, 1, size, stdout) != size)
		rc = cmd_error(args, EXIT_FAIL, "cannot write to standard output: %s", strerror(errno));
cleanup:
	gpucc_free(data);
	gpucc_image_free(img);
	return rc;
}

const cmd_spec cmd_cat_spec = {
	.name = "cat",
	.synopsis = "IMAGE KEY --part ptx|cubin|hsaco|bitcode",
	.summary = "write one payload of an entry to standard output",
	.description =
		"KEY is a full key or a unique hex prefix; anything but 1 to 64 hex digits\n"
		"is a usage error (129).  The payload is verified against its size and\n"
		"SHA-256 before anything is written; an entry without the requested part\n"
		"is an error (exit 2) that names the parts it has.  --part given twice\n"
		"must name the same part each time, else it is a usage error (129), as\n"
		"every option that takes one value is (see 'gpucc help').",
	.options = cat_options,
	.min_positional = 2,
	.max_positional = 2,
	.run = run_cat,
};
