/*
 * cmd/cmd_show.c -- `gpucc show IMAGE KEY [--json]`: everything the manifest
 * says about one entry: key and its schema, module and its digest, target,
 * toolchain identity, options, device libraries, kernels with their resource
 * counts when known, externals, payloads with digest and size, and the
 * entry's content digest.  KEY may be any unique hex prefix of a key.  The
 * image is opened for lookup (only that entry's part of the manifest is
 * parsed when the image has an index: formats/image.md, "The index").
 */
#include "cmd.h"

#include <gpucc.h>

#include <inttypes.h>
#include <string.h>

static const cmd_option show_options[] = {
	{"json", 0, NULL, false, "print the entry as a JSON object"},
	{0},
};

static const char *hex_of(char out[GPUCC_DIGEST_HEX_SIZE], const gpucc_digest *d)
{
	gpucc_digest_to_hex(out, d);
	return out;
}

/* A resource count, or "?" when the tools did not report it; with_unit
 * adds " byte" or " bytes". */
static void print_count(int64_t v, bool with_unit)
{
	if (v < 0)
		printf("?");
	else
		printf("%" PRId64 "%s", v, !with_unit ? "" : v == 1 ? " byte" : " bytes");
}

static void print_text(const gpucc_entry *e, const gpucc_digest *content)
{
	char hex[GPUCC_DIGEST_HEX_SIZE];
	printf("key:             %s\n", hex_of(hex, &e->key));
	printf("key schema:      %u\n", e->key_schema);
	printf("content digest:  %s\n", hex_of(hex, content));
	printf("module:          %s\n", e->module);
	printf("module sha256:   %s\n", hex_of(hex, &e->module_sha256));
	printf("target:          %s\n", e->target);
	printf("triple:          %s\n", e->triple);
	printf("gpucc version:   %s\n", e->gpucc_version);
	printf("llvm version:    %s\n", e->llvm_version);

	printf("options:%s\n", e->option_count ? "" : "         (none)");
	for (size_t i = 0; i < e->option_count; i++)
		printf("  %s=%s\n", e->options[i].name, e->options[i].value);

	printf("device libs:%s\n", e->device_lib_count ? "" : "     (none)");
	for (size_t i = 0; i < e->device_lib_count; i++)
		printf("  %s  %s\n", e->device_libs[i].name, hex_of(hex, &e->device_libs[i].sha256));

	printf("kernels:%s\n", e->kernel_count ? "" : "         (none)");
	for (size_t i = 0; i < e->kernel_count; i++) {
		const gpucc_kernel *k = &e->kernels[i];
		printf("  %s  registers ", k->name);
		print_count(k->registers, false);
		printf(", shared ");
		print_count(k->shared_bytes, true);
		printf(", scratch ");
		print_count(k->scratch_bytes, true);
		printf("\n");
	}

	printf("externals:%s\n", e->external_count ? "" : "       (none)");
	for (size_t i = 0; i < e->external_count; i++)
		printf("  %s\n", e->externals[i]);

	printf("payloads:%s\n", e->payload_count ? "" : "        (none)");
	for (size_t i = 0; i < e->payload_count; i++)
		printf("  %-8s %10" PRIu64 " %-5s  sha256 %s\n", gpucc_part_name(e->payloads[i].part),
		       e->payloads[i].size, e->payloads[i].size == 1 ? "byte" : "bytes",
		       hex_of(hex, &e->payloads[i].sha256));
}

static void print_json_count(const char *name, int64_t v)
{
	if (v < 0)
		printf(", \"%s\": null", name);
	else
		printf(", \"%s\": %" PRId64, name, v);
}

static void print_json(const gpucc_entry *e, const gpucc_digest *content)
{
	char hex[GPUCC_DIGEST_HEX_SIZE];
	printf("{\n  \"key\": \"%s\",\n", hex_of(hex, &e->key));
	printf("  \"key_schema\": %u,\n", e->key_schema);
	printf("  \"content_digest\": \"%s\",\n", hex_of(hex, content));
	printf("  \"module\": ");
	cmd_json_string(stdout, e->module);
	printf(",\n  \"module_sha256\": \"%s\",\n", hex_of(hex, &e->module_sha256));
	printf("  \"target\": ");
	cmd_json_string(stdout, e->target);
	printf(",\n  \"triple\": ");
	cmd_json_string(stdout, e->triple);
	printf(",\n  \"gpucc_version\": ");
	cmd_json_string(stdout, e->gpucc_version);
	printf(",\n  \"llvm_version\": ");
	cmd_json_string(stdout, e->llvm_version);

	printf(",\n  \"options\": {");
	for (size_t i = 0; i < e->option_count; i++) {
		printf("%s", i ? ", " : "");
		cmd_json_string(stdout, e->options[i].name);
		printf(": ");
		cmd_json_string(stdout, e->options[i].value);
	}
	printf("},\n  \"device_libs\": [");
	for (size_t i = 0; i < e->device_lib_count; i++) {
		printf("%s{\"name\": ", i ? ", " : "");
		cmd_json_string(stdout, e->device_libs[i].name);
		printf(", \"sha256\": \"%s\"}", hex_of(hex, &e->device_libs[i].sha256));
	}
	printf("],\n  \"kernels\": [");
	for (size_t i = 0; i < e->kernel_count; i++) {
		const gpucc_kernel *k = &e->kernels[i];
		printf("%s{\"name\": ", i ? ", " : "");
		cmd_json_string(stdout, k->name);
		print_json_count("registers", k->registers);
		print_json_count("shared_bytes", k->shared_bytes);
		print_json_count("scratch_bytes", k->scratch_bytes);
		printf("}");
	}
	printf("],\n  \"externals\": [");
	for (size_t i = 0; i < e->external_count; i++) {
		printf("%s", i ? ", " : "");
		cmd_json_string(stdout, e->externals[i]);
	}
	printf("],\n  \"payloads\": [");
	for (size_t i = 0; i < e->payload_count; i++)
		printf("%s{\"part\": \"%s\", \"size\": %" PRIu64 ", \"sha256\": \"%s\"}", i ? ", " : "",
		       gpucc_part_name(e->payloads[i].part), e->payloads[i].size,
		       hex_of(hex, &e->payloads[i].sha256));
	printf("]\n}\n");
}

static int run_show(const cmd_args *args)
{
	gpucc_image *img = NULL;
	const gpucc_entry *e;
	gpucc_digest content;
	int rc = EXIT_OK;

	if (cmd_key_prefix_value(args, args->positional[1]) != EXIT_OK)
		return EXIT_USAGE;
	if (gpucc_image_open_for_lookup(&img, args->positional[0]) != 0 ||
	    gpucc_image_lookup(&e, img, args->positional[1]) != 0 ||
	    gpucc_entry_content_digest(&content, e) != 0) {
		rc = cmd_fail(args);
		goto cleanup;
	}
	if (cmd_flag(args, "json"))
		print_json(e, &content);
	else
		print_text(e, &content);
cleanup:
	gpucc_image_free(img);
	return rc;
}

const cmd_spec cmd_show_spec = {
	.name = "show",
	.synopsis = "IMAGE KEY [--json]",
	.summary = "show everything an image records about one entry",
	.description =
		"KEY is a full key or any hex prefix of one that matches a single entry\n"
		"(an ambiguous prefix is an error that lists the candidates).  Prints the\n"
		"key and its schema, the content digest, module, target, toolchain\n"
		"identity, options, device libraries, kernels with register, shared and\n"
		"scratch sizes (? when unknown), externals and payloads.  --json prints\n"
		"one object: {\"key\", \"key_schema\", \"content_digest\", \"module\",\n"
		"\"module_sha256\", \"target\", \"triple\", \"gpucc_version\", \"llvm_version\",\n"
		"\"options\" (name: value), \"device_libs\": [{\"name\", \"sha256\"}],\n"
		"\"kernels\": [{\"name\", \"registers\", \"shared_bytes\", \"scratch_bytes\"}]\n"
		"(null when unknown), \"externals\", \"payloads\": [{\"part\", \"size\",\n"
		"\"sha256\"}]}.  Exits 2 when IMAGE does not exist, no entry has KEY or\n"
		"the prefix is ambiguous, 3 when IMAGE is corrupt, 129 (usage) when KEY is\n"
		"not 1 to 64 hex digits.",
	.options = show_options,
	.min_positional = 2,
	.max_positional = 2,
	.run = run_show,
};
