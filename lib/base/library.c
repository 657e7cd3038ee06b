/*
 * lib/base/library.c -- what concerns libgpucc as a whole: the versions of its
 * parts, and the release of what it allocates for callers.
 */
#include "libarchive_loader.h"

#include "gpucc/common.h"

#include <stdlib.h>

#include "gpucc_build_config.h"

void gpucc_free(void *ptr)
{
	free(ptr);
}

const char *gpucc_version(void)
{
	return GPUCC_VERSION;
}

const char *gpucc_llvm_version(void)
{
	return GPUCC_BUILD_LLVM_VERSION;
}

const char *gpucc_libarchive_version(void)
{
	const gpucc_libarchive *la = gpucc_libarchive_load();
	return la ? la->version_string() : "libarchive (not loadable)";
}
