/*
 * lib/runtime/runtime_dlopen.c -- which file of a GPU runtime's library (the
 * HIP runtime, the CUDA driver) to load when a device is first needed: the
 * one the config names (gpucc/config.h), else the first of the usual names
 * that loads (lib/runtime/runtime_driver.h; lib/base/library_loader.h
 * loads it).
 */
#include "errors.h"
#include "runtime_driver.h"

#include <stdlib.h>
#include <string.h>

int gpucc_runtime_library_open(gpucc_library *lib, const char *runtime_name, const char *forced,
                               const char *env_name, const char *const *names)
{
	const char *why;
	if (forced && *forced) {
		if (strcmp(forced, "none") == 0)
			return gpucc_library_fail(lib, GPUCC_EUNAVAILABLE, "%s: disabled by %s=none",
			                          runtime_name, env_name);
		const char *const named[] = {forced, NULL};
		if (gpucc_library_open(lib, named, 0, &why) != 0)
			return gpucc_library_fail(lib, GPUCC_EUNAVAILABLE, "%s: cannot load '%s' (%s): %s",
			                          runtime_name, forced, env_name, why);
		return 0;
	}
	if (gpucc_library_open(lib, names, 0, &why) != 0)
		return gpucc_library_fail(lib, GPUCC_EUNAVAILABLE, "%s: not installed (cannot load %s)",
		                          runtime_name, lib->tried_names);
	return 0;
}
