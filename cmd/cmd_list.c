/*
 * cmd/cmd_list.c -- `gpucc list IMAGE [--json]`: one line per entry of an
 * image, read from its manifest alone (payloads are not touched, so listing
 * costs what reading the manifest costs).
 *
 * Text output: a header row, then per entry the short key (12 hex digits),
 * the canonical target, the payloads as part:bytes and the kernel names, in
 * aligned columns; kernels come last because their width varies most.
 * --json: an array of objects with the full key, module, target, kernels and
 * payloads (part, size, sha256).
 */
#include "cmd.h"

#include <gpucc.h>

#include <inttypes.h>
#include <string.h>

#define SHORT_KEY_DIGITS 12

static const cmd_option list_options[] = {
	{"json", 0, NULL, false, "print a JSON array of entries instead of a table"},
	{0},
};

/* Width of the PAYLOADS cell of e: "ptx:1166 hsaco:4800". */
static int payloads_width(const gpucc_entry *e)
{
	int width = 0;
	for (size_t i = 0; i < e->payload_count; i++) {
		char cell[64];
		width += snprintf(cell, sizeof cell, "%s%s:%" PRIu64, i ? " " : "",
		                  gpucc_part_name(e->payloads[i].part), e->payloads[i].size);
	}
	return width;
}

static void print_payloads(FILE *f, const gpucc_entry *e, int width)
{
	int used = 0;
	for (size_t i = 0; i < e->payload_count; i++)
		used += fprintf(f, "%s%s:%" PRIu64, i ? " " : "", gpucc_part_name(e->payloads[i].part),
		                e->payloads[i].size);
	fprintf(f, "%*s", width - used, "");
}

static void print_table(const gpucc_image *img)
{
	size_t count = gpucc_image_entry_count(img);
	int target_width = (int)strlen("TARGET");
	int payload_width = (int)strlen("PAYLOADS");
	for (size_t i = 0; i < count; i++) {
		const gpucc_entry *e = gpucc_image_entry(img, i);
		int w = (int)strlen(e->target);
		if (w > target_width)
			target_width = w;
		w = payloads_width(e);
		if (w > payload_width)
			payload_width = w;
	}
	printf("%-*s  %-*s  %-*s  %s\n", SHORT_KEY_DIGITS, "KEY", target_width, "TARGET",
	       payload_width, "PAYLOADS", "KERNELS");
	for (size_t i = 0; i < count; i++) {
		const gpucc_entry *e = gpucc_image_entry(img, i);
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &e->key);
		printf("%.*s  %-*s  ", SHORT_KEY_DIGITS, hex, target_width, e->target);
		print_payloads(stdout, e, payload_width);
		fputs("  ", stdout);
		for (size_t k = 0; k < e->kernel_count; k++)
			printf("%s%s", k ? "," : "", e->kernels[k].name);
		if (e->kernel_count == 0)
			fputs("-", stdout);
		fputc('\n', stdout);
	}
}

static void print_json(const gpucc_image *img)
{
	size_t count = gpucc_image_entry_count(img);
	fputs("[", stdout);
	for (size_t i = 0; i < count; i++) {
		const gpucc_entry *e = gpucc_image_entry(img, i);
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &e->key);
		printf("%s\n  {\"key\": \"%s\", \"module\": ", i ? "," : "", hex);
		cmd_json_string(stdout, e->module);
		fputs(", \"target\": ", stdout);
		cmd_json_string(stdout, e->target);
		fputs(", \"kernels\": [", stdout);
		for (size_t k = 0; k < e->kernel_count; k++) {
			if (k)
				fputs(", ", stdout);
			cmd_json_string(stdout, e->kernels[k].name);
		}
		fputs("], \"payloads\": [", stdout);
		for (size_t p = 0; p < e->payload_count; p++) {
			gpucc_digest_to_hex(hex, &e->payloads[p].sha256);
			printf("%s{\"part\": \"%s\", \"size\": %" PRIu64 ", \"sha256\": \"%s\"}",
			       p ? ", " : "", gpucc_part_name(e->payloads[p].part), e->payloads[p].size,
			       hex);
		}
		fputs("]}", stdout);
	}
	fputs(count ? "\n]\n" : "]\n", stdout);
}

static int run_list(const cmd_args *args)
{
	gpucc_image *img = NULL;
	if (gpucc_image_open(&img, args->positional[0]) != 0)
		return cmd_fail(args);
	if (cmd_flag(args, "json"))
		print_json(img);
	else
		print_table(img);
	gpucc_image_free(img);
	return EXIT_OK;
}

const cmd_spec cmd_list_spec = {
	.name = "list",
	.synopsis = "IMAGE [--json]",
	.summary = "list the entries of an image",
	.description =
		"Prints one row per entry: the short key (the first 12 hex digits, accepted\n"
		"wherever a key is), the canonical target, each payload as part:bytes, and\n"
		"the kernel names.  Reads the manifest only.",
	.options = list_options,
	.min_positional = 1,
	.max_positional = 1,
	.run = run_list,
};
