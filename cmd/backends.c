/*
 * cmd/backends.c -- the LLVM backends this gpucc was built with, whether
 * each is installed where libgpucc finds it, and the processors each knows:
 * for `gpucc --version`, `gpucc devices` (-h, and --json's "llvm") and
 * `gpucc compile -h`.  Nothing is loaded (gpucc_llvm_backend stats files).
 */
#include "cmd.h"

#include <gpucc.h>

#include <stdio.h>
#include <string.h>

/* The processors of a vendor that LLVM major knows, wrapped after indent. */
static void print_processors(FILE *f, gpucc_vendor vendor, unsigned major, const char *label)
{
	size_t column = (size_t)fprintf(f, "    %s:", label);
	unsigned oldest, newest;
	const char *name;
	for (size_t i = 0; (name = gpucc_target_processor_name(vendor, i, &oldest, &newest)) != NULL;
	     i++) {
		if (oldest > major || (newest && newest < major))
			continue;
		if (column + 1 + strlen(name) > 78)
			column = (size_t)fprintf(f, "\n     ") - 1;
		column += (size_t)fprintf(f, " %s", name);
	}
	fputc('\n', f);
}

void cmd_print_backends(FILE *f)
{
	unsigned major;
	bool present;
	const char *version = gpucc_llvm_backend(0, NULL, NULL);
	if (!version) {
		fprintf(f, "LLVM backends: none (built without LLVM: compiles nothing)\n");
		return;
	}
	fprintf(f, "LLVM backends (a job gets the newest that knows its target; --llvm N pins one):\n");
	for (size_t i = 0; (version = gpucc_llvm_backend(i, &major, &present)) != NULL; i++) {
		fprintf(f, "  LLVM %s%s\n", version, present ? "" : " (not found: its jobs fail)");
		print_processors(f, GPUCC_VENDOR_NVIDIA, major, "NVIDIA");
		print_processors(f, GPUCC_VENDOR_AMD, major, "AMD");
	}
}

const char *cmd_backend_for(const gpucc_target *device)
{
	/* The processor alone: a device's PTX ISA is its driver's. */
	gpucc_target t;
	char name[GPUCC_TARGET_NAME_SIZE];
	if (device->vendor == GPUCC_VENDOR_NVIDIA)
		snprintf(name, sizeof name, "sm_%u", device->sm);
	else
		snprintf(name, sizeof name, "%s", device->processor);
	if (gpucc_target_parse(&t, name) != 0)
		return NULL;
	unsigned last, oldest = gpucc_target_llvm_major(&t, &last);
	const char *version, *best = NULL;
	unsigned major;
	bool present;
	for (size_t i = 0; (version = gpucc_llvm_backend(i, &major, &present)) != NULL; i++)
		if (present && major >= oldest && (!last || major <= last))
			best = version; /* oldest first: the last that fits is the newest */
	return best;
}
