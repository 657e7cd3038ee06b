/*
 * cmd/cmd_list.c -- `gpucc list IMAGE [--json]`: one line per entry of an
 * image, read from its manifest alone (payloads are not touched, so listing
 * costs what reading the manifest costs).
 *
 * Text output: a header row, then per entry the short key (12 hex digits),
 * the canonical target, the payloads as part:bytes and the kernel names
 * (quoted where a name would not read back), in aligned columns; kernels
 * come last because their width varies most.
 * --json: an array of objects with the full key, module, target, kernels and
 * payloads (part, size, sha256).
 */
#include "cmd.h"

#include <gpucc.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SHORT_KEY_DIGITS 12

static const cmd_option list_options[] = {
	{"json", 0, NULL, false, "print a JSON array of entries instead of a table"},
	{0},
};

/* The PAYLOADS cell of e ("ptx:1166 hsaco:4800") into cell, which holds
 * GPUCC_PART_COUNT parts of at most 32 bytes; returns its length.  Written
 * by hand: a 10,000-entry image lists in about the time tar takes, and
 * printf was a tenth of that. */
static size_t payloads_cell(char *cell, const gpucc_entry *e)
{
	char *p = cell;
	for (size_t i = 0; i < e->payload_count; i++) {
		if (i)
			*p++ = ' ';
		const char *name = gpucc_part_name(e->payloads[i].part);
		size_t n = strlen(name);
		memcpy(p, name, n);
		p += n;
		*p++ = ':';
		char digits[24];
		size_t d = sizeof digits;
		uint64_t v = e->payloads[i].size;
		do {
			digits[--d] = (char)('0' + v % 10);
			v /= 10;
		} while (v);
		memcpy(p, digits + d, sizeof digits - d);
		p += sizeof digits - d;
	}
	*p = '\0';
	return (size_t)(p - cell);
}

/* Whether kernel name must be quoted in the KERNELS cell: it holds the
 * separator (','), a space, or a quote, or it is the '-' of no kernels, so
 * that a cell reads back as the names it lists.  (Manifest strings hold no
 * control characters.) */
static bool needs_quotes(const char *name)
{
	return strpbrk(name, ", \"") || strcmp(name, "-") == 0;
}

/* Append name to the line at *p, in double quotes with '"' and '\\'
 * escaped when needs_quotes: 2 * its length + 2 bytes at most. */
static void put_kernel(char **p, const char *name)
{
	size_t len = strlen(name);
	if (!needs_quotes(name)) {
		memcpy(*p, name, len);
		*p += len;
		return;
	}
	*(*p)++ = '"';
	for (size_t i = 0; i < len; i++) {
		if (name[i] == '"' || name[i] == '\\')
			*(*p)++ = '\\';
		*(*p)++ = name[i];
	}
	*(*p)++ = '"';
}

/* Append s to the line at *p, padded with spaces to width. */
static void put_padded(char **p, const char *s, size_t len, size_t width)
{
	memcpy(*p, s, len);
	*p += len;
	while (len++ < width)
		*(*p)++ = ' ';
}

/* The table, built line by line in one buffer sized for the longest line
 * before anything is printed: a buffer that could not grow mid-table would
 * leave a listing cut short that reads as whole.  EXIT_OK, or EXIT_FAIL
 * after saying so, with nothing printed. */
static int print_table(const cmd_args *args, const gpucc_image *img)
{
	size_t count = gpucc_image_entry_count(img);
	size_t target_width = strlen("TARGET");
	size_t payload_width = strlen("PAYLOADS");
	size_t kernels_width = 1; /* '-' */
	char cell[GPUCC_PART_COUNT * 32 + 1];
	for (size_t i = 0; i < count; i++) {
		const gpucc_entry *e = gpucc_image_entry(img, i);
		size_t w = strlen(e->target);
		if (w > target_width)
			target_width = w;
		w = payloads_cell(cell, e);
		if (w > payload_width)
			payload_width = w;
		w = 0;
		for (size_t k = 0; k < e->kernel_count; k++)
			w += 2 * strlen(e->kernels[k].name) + 3; /* quoted, and ',' */
		if (w > kernels_width)
			kernels_width = w;
	}
	size_t fixed = SHORT_KEY_DIGITS + 2 + target_width + 2 + payload_width + 2;
	char *line = malloc(fixed + kernels_width + 1);
	if (!line)
		return cmd_error(args, EXIT_FAIL, "out of memory");
	printf("%-*s  %-*s  %-*s  %s\n", SHORT_KEY_DIGITS, "KEY", (int)target_width, "TARGET",
	       (int)payload_width, "PAYLOADS", "KERNELS");
	for (size_t i = 0; i < count; i++) {
		const gpucc_entry *e = gpucc_image_entry(img, i);
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &e->key);
		char *p = line;
		put_padded(&p, hex, SHORT_KEY_DIGITS, SHORT_KEY_DIGITS + 2);
		put_padded(&p, e->target, strlen(e->target), target_width + 2);
		size_t n = payloads_cell(cell, e);
		put_padded(&p, cell, n, payload_width + 2);
		for (size_t k = 0; k < e->kernel_count; k++) {
			if (k)
				*p++ = ',';
			put_kernel(&p, e->kernels[k].name);
		}
		if (e->kernel_count == 0)
			*p++ = '-';
		*p++ = '\n';
		fwrite(line, 1, (size_t)(p - line), stdout);
	}
	free(line);
	return EXIT_OK;
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
	int rc = EXIT_OK;
	if (cmd_flag(args, "json"))
		print_json(img);
	else
		rc = print_table(args, img);
	gpucc_image_free(img);
	return rc;
}

const cmd_spec cmd_list_spec = {
	.name = "list",
	.synopsis = "IMAGE [--json]",
	.summary = "list the entries of an image",
	.description =
		"Prints one row per entry: the short key (the first 12 hex digits, which\n"
		"show and cat accept), the canonical target, each payload as part:bytes, and\n"
		"the kernel names separated by ',' ('-' for none), sorted by key; a name that\n"
		"holds a ',', a space or a '\"', or is '-', is in double quotes, its '\"' and\n"
		"'\\' escaped with '\\'.  Reads the manifest only.\n"
		"--json prints an array of one object per entry: {\"key\" (all 64 digits),\n"
		"\"module\", \"target\", \"kernels\" (names), \"payloads\": [{\"part\", \"size\",\n"
		"\"sha256\"}]}.",
	.options = list_options,
	.min_positional = 1,
	.max_positional = 1,
	.run = run_list,
};
