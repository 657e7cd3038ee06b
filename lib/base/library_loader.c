/*
 * lib/base/library_loader.c -- shared libraries loaded on first use, once per
 * process, and their functions resolved from a table
 * (lib/base/library_loader.h).  Plain C and libc: the LLVM backend module
 * compiles it in too (lib/backend_llvm/meson.build).
 */
#include "library_loader.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int gpucc_library_load(gpucc_library *lib, int (*load)(gpucc_library *lib, void *ctx), void *ctx)
{
	if (atomic_load_explicit(&lib->tried, memory_order_acquire))
		return lib->code;
	pthread_mutex_lock(&lib->lock);
	if (!atomic_load_explicit(&lib->tried, memory_order_relaxed)) {
		lib->message[0] = '\0';
		lib->code = load(lib, ctx);
		if (lib->code && !lib->message[0])
			snprintf(lib->message, sizeof lib->message, "cannot load the library");
		atomic_store_explicit(&lib->tried, true, memory_order_release);
	}
	int code = lib->code;
	pthread_mutex_unlock(&lib->lock);
	return code;
}

const char *gpucc_library_error(const gpucc_library *lib)
{
	return lib->message;
}

int gpucc_library_open(gpucc_library *lib, const char *const *names, int extra_flags,
                       const char **why)
{
	size_t used = 0;
	*why = NULL;
	lib->tried_names[0] = '\0';
	for (size_t i = 0; names[i]; i++) {
		lib->handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | extra_flags);
		if (lib->handle)
			return 0;
		*why = dlerror();
		int n = snprintf(lib->tried_names + used, sizeof lib->tried_names - used, "%s%s",
		                 used ? ", " : "", names[i]);
		if (n > 0 && (size_t)n < sizeof lib->tried_names - used)
			used += (size_t)n;
	}
	return -1;
}

int gpucc_library_resolve(gpucc_library *lib, const gpucc_library_symbol *symbols,
                          const char **missing)
{
	*missing = NULL;
	for (size_t i = 0; symbols[i].name; i++) {
		void *address = gpucc_library_symbol_address(lib, symbols[i].name);
		if (!address && symbols[i].fallback)
			address = gpucc_library_symbol_address(lib, symbols[i].fallback);
		if (!address && !symbols[i].optional) {
			*missing = symbols[i].name;
			for (size_t j = 0; symbols[j].name; j++)
				memset(symbols[j].slot, 0, sizeof address);
			if (lib->handle)
				dlclose(lib->handle);
			lib->handle = NULL;
			return -1;
		}
		/* POSIX lets a data pointer from dlsym become a function
		 * pointer; ISO C does not, hence the copy of its bytes. */
		memcpy(symbols[i].slot, &address, sizeof address);
	}
	return 0;
}

void *gpucc_library_symbol_address(const gpucc_library *lib, const char *name)
{
	return lib->handle ? dlsym(lib->handle, name) : NULL;
}

int gpucc_library_fail(gpucc_library *lib, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(lib->message, sizeof lib->message, fmt, ap);
	va_end(ap);
	return code;
}
