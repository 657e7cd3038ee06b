/*
 * lib/base/library_loader.h -- a shared library loaded with dlopen the first
 * time it is needed, and its functions looked up by name: the one way
 * libgpucc (and the LLVM backend module, which compiles this file in) loads
 * what it does not link (docs/design.md invariant 8: pay only for what you
 * use).
 *
 * Each user keeps one gpucc_library (GPUCC_LIBRARY_INIT) and a load hook
 * that opens it (gpucc_library_open), resolves its table
 * (gpucc_library_resolve), checks what else it needs, and words its own
 * failure (gpucc_library_fail).  gpucc_library_load runs the hook once per
 * process, from whichever thread comes first; every later call returns the
 * first call's result, and gpucc_library_error the message it left.  A
 * library is never unloaded once it has loaded, nor once any of its code
 * has run: its constructors and whatever it started may outlive a dlclose.
 * Nothing here sets libgpucc's last error: the caller decides whether a
 * missing library is an error (the runtime), a remote's warning or a skip.
 */
#ifndef GPUCC_LIB_LIBRARY_LOADER_H
#define GPUCC_LIB_LIBRARY_LOADER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* One function to look up.  A table ends with a NULL name. */
typedef struct gpucc_library_symbol {
	const char *name;
	void *slot;           /* the address of the function pointer to fill */
	const char *fallback; /* another name, tried when name is absent; NULL: none */
	bool optional;        /* absent: *slot is NULL and the load goes on */
} gpucc_library_symbol;

typedef struct gpucc_library {
	pthread_mutex_t lock;
	atomic_bool tried; /* the hook has run: code, handle and message are final */
	int code;          /* its result: 0, else the libgpucc error code */
	void *handle;      /* dlopen's handle; NULL until opened */
	char tried_names[256]; /* the candidates gpucc_library_open tried, ", "-separated */
	char message[1024]; /* why it did not load; "" when it did (as long as an error) */
} gpucc_library;

#define GPUCC_LIBRARY_INIT {.lock = PTHREAD_MUTEX_INITIALIZER}

/* Run load(lib, ctx) if no call has yet, under lib's lock; return what the
 * first run returned (0: loaded).  load returns 0 or the nonzero code of
 * gpucc_library_fail. */
int gpucc_library_load(gpucc_library *lib, int (*load)(gpucc_library *lib, void *ctx), void *ctx);

/* The message of a failed load; "" after a successful one or before any. */
const char *gpucc_library_error(const gpucc_library *lib);

/* For load hooks.  Open the first of names (NULL-terminated) that dlopen
 * accepts, RTLD_NOW | RTLD_LOCAL | extra_flags, into lib->handle: 0, or -1
 * with *why what dlopen said of the last name (possibly NULL) and
 * lib->tried_names listing every name tried. */
int gpucc_library_open(gpucc_library *lib, const char *const *names, int extra_flags,
                       const char **why);

/* Fill every slot of symbols (ended by a NULL name) from lib->handle: 0, or
 * -1 with *missing the first required name that neither it nor its
 * fallback resolves; then every slot is NULL again and the library is
 * closed (a hook resolves its table before it calls into the library). */
int gpucc_library_resolve(gpucc_library *lib, const gpucc_library_symbol *symbols,
                          const char **missing);

/* One symbol of an open library by name (a name built at run time); NULL
 * when absent or the library is not open. */
void *gpucc_library_symbol_address(const gpucc_library *lib, const char *name);

/* Record why the load failed, printf-style; returns code (nonzero), for a
 * hook to return. */
int gpucc_library_fail(gpucc_library *lib, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
