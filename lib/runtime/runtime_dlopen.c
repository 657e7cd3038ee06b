/*
 * lib/runtime/runtime_dlopen.c -- loading a GPU runtime's library (the HIP runtime,
 * the CUDA driver) with dlopen when a device is first needed: the one the
 * config names (gpucc/config.h), else the first of the usual names that loads
 * (lib/runtime/runtime_driver.h).
 */
#include "errors.h"
#include "runtime_driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gpucc_runtime_dlopen(void **out, const char *runtime_name, const char *forced,
                         const char *env_name, const char *const *names)
{
	*out = NULL;
	if (forced && *forced) {
		if (strcmp(forced, "none") == 0)
			return gpucc_error_set(GPUCC_EUNAVAILABLE, "%s: disabled by %s=none", runtime_name,
			                       env_name);
		*out = dlopen(forced, RTLD_NOW | RTLD_LOCAL);
		if (!*out)
			return gpucc_error_set(GPUCC_EUNAVAILABLE, "%s: cannot load '%s' (%s): %s",
			                       runtime_name, forced, env_name, dlerror());
		return 0;
	}
	char tried[256] = "";
	size_t used = 0;
	for (size_t i = 0; names[i]; i++) {
		*out = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (*out)
			return 0;
		int n = snprintf(tried + used, sizeof tried - used, "%s%s", used ? ", " : "", names[i]);
		if (n > 0 && (size_t)n < sizeof tried - used)
			used += (size_t)n;
	}
	return gpucc_error_set(GPUCC_EUNAVAILABLE, "%s: not installed (cannot load %s)", runtime_name,
	                       tried);
}
