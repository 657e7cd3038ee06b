/*
 * cmd/backends.c -- the LLVM backends this gpucc was built with, whether
 * each is installed where libgpucc finds it, and the processors each knows:
 * for `gpucc --version`, `gpucc devices` and `gpucc compile -h`.  Nothing
 * is loaded (gpucc_llvm_backend stats files).
 */
#include "cmd.h"

#include <gpucc.h>

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
