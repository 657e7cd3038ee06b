/*
 * lib/compile_backend.c -- finding the LLVM backend module (libgpucc-llvm.so)
 * and the compile worker beside it, once per process, only when a compile
 * misses (docs/design.md invariant 8); loading the module with dlopen for
 * embed, which runs it in process.  A compile loads no LLVM here: its
 * workers do.
 *
 * Search order: $GPUCC_BACKEND (a path to the module); beside the running
 * libgpucc (found with dladdr), also in its gpucc/ subdirectory (the
 * installed layout) and its backend_llvm/ subdirectory (the build tree); when
 * libgpucc is linked statically (the gpucc command is), the executable's
 * directory, the installed layout from it (BINDIR/../LIBDIR/gpucc, so that a
 * staged or moved install finds its own backend) and ../lib/backend_llvm
 * from it (the build tree); then GPUCC_LIBDIR/gpucc/.
 */
#include "backend.h"
#include "errors.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpucc_build_config.h"

static pthread_once_t find_once = PTHREAD_ONCE_INIT;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char module_path[PATH_MAX];    /* "" until found */
static char worker_program[PATH_MAX]; /* beside the module */
static char find_message[1024];
static const gpucc_backend *loaded;
static int load_code;
static char load_message[PATH_MAX + 1024];

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Try one path; true when the search should stop (the module is there). */
static bool try_path(const char *path)
{
	if (!exists(path))
		return false;
	snprintf(module_path, sizeof module_path, "%s", path);
	const char *slash = strrchr(path, '/');
	snprintf(worker_program, sizeof worker_program, "%.*s%s", slash ? (int)(slash - path + 1) : 0,
	         path, GPUCC_WORKER_NAME);
	return true;
}

static bool try_dir(const char *dir, const char *sub)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof path, "%s%s%s/%s", dir, *sub ? "/" : "", sub, GPUCC_BACKEND_NAME);
	return n > 0 && (size_t)n < sizeof path && try_path(path);
}

static void dir_of(char *out, size_t size, const char *file)
{
	snprintf(out, size, "%s", file);
	char *slash = strrchr(out, '/');
	if (slash)
		*slash = '\0';
	else
		snprintf(out, size, ".");
}

static void find(void)
{
	const char *env = getenv("GPUCC_BACKEND");
	if (env && *env) {
		if (!try_path(env))
			snprintf(find_message, sizeof find_message,
			         "GPUCC_BACKEND names '%s', which does not exist", env);
		return;
	}
	char dir[PATH_MAX];
	Dl_info info;
	if (dladdr(&find_once, &info) && info.dli_fname && *info.dli_fname) {
		dir_of(dir, sizeof dir, info.dli_fname);
		if (try_dir(dir, "") || try_dir(dir, "gpucc") || try_dir(dir, "backend_llvm"))
			return;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		dir_of(dir, sizeof dir, exe);
		if (try_dir(dir, "") ||
		    (*GPUCC_LIBDIR_FROM_BINDIR && try_dir(dir, GPUCC_LIBDIR_FROM_BINDIR "/gpucc")) ||
		    try_dir(dir, "../lib/backend_llvm") || try_dir(dir, "../../lib/backend_llvm"))
			return;
	}
	if (try_dir(GPUCC_LIBDIR, "gpucc"))
		return;
	snprintf(find_message, sizeof find_message,
	         "the LLVM backend (%s) was not found beside libgpucc, beside the program or in "
	         "'%s/gpucc'; set GPUCC_BACKEND to its path",
	         GPUCC_BACKEND_NAME, GPUCC_LIBDIR);
}

static int found(void)
{
	pthread_once(&find_once, find);
	return module_path[0] ? 0 : gpucc_error_set(GPUCC_EUNAVAILABLE, "%s", find_message);
}

int gpucc_backend_worker_program(const char **out)
{
	int rc = found();
	if (rc == 0)
		*out = worker_program;
	return rc;
}

static void load(void)
{
	load_code = GPUCC_EUNAVAILABLE;
	void *handle = dlopen(module_path, RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		const char *why = dlerror();
		snprintf(load_message, sizeof load_message,
		         "cannot load the LLVM backend '%s': %s (is libLLVM-19 installed?)", module_path,
		         why ? why : "unknown error");
		return;
	}
	/* POSIX guarantees a data pointer from dlsym converts to a function
	 * pointer; ISO C does not, so convert through memcpy. */
	void *symbol = dlsym(handle, GPUCC_BACKEND_ENTRY);
	gpucc_backend_entry_fn entry = NULL;
	if (symbol)
		memcpy(&entry, &symbol, sizeof entry);
	const gpucc_backend *b = entry ? entry(GPUCC_BACKEND_ABI) : NULL;
	if (!b || b->struct_size < sizeof(gpucc_backend)) {
		snprintf(load_message, sizeof load_message,
		         "'%s' is not a gpucc LLVM backend of ABI version %d", module_path,
		         GPUCC_BACKEND_ABI);
		dlclose(handle);
		return;
	}
	loaded = b; /* never unloaded: LLVM does not like being unloaded */
	load_code = 0;
}

int gpucc_backend_load(const gpucc_backend **out)
{
	int rc = found();
	if (rc != 0)
		return rc;
	pthread_once(&load_once, load);
	if (!loaded)
		return gpucc_error_set(load_code, "%s", load_message);
	*out = loaded;
	return 0;
}
