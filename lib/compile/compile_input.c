/*
 * lib/compile/compile_input.c -- an input of a compile taken for what its
 * name says (gpucc_compile_add_input): IR modules by .ll and .bc, sources by
 * .hip, .cu and .cl or by the language a caller names, as `gpucc compile`
 * takes its arguments.
 */
#include "compile_source.h"
#include "errors.h"

#include "gpucc/compile.h"

#include <string.h>

int gpucc_compile_add_input(gpucc_compile *c, const char *path, gpucc_source_language language,
                            bool *is_source)
{
	GPUCC_REQUIRE(c);
	GPUCC_REQUIRE(path);
	const char *dot = strrchr(path, '.');
	bool ir = dot && !strchr(dot, '/') && (strcmp(dot, ".ll") == 0 || strcmp(dot, ".bc") == 0);
	bool source = !ir && (language != GPUCC_LANGUAGE_FROM_NAME ||
	                      gpucc_source_language_of(path) != GPUCC_LANGUAGE_FROM_NAME);
	if (is_source)
		*is_source = source;
	return source ? gpucc_compile_add_source(c, path, language) : gpucc_compile_add_file(c, path);
}
