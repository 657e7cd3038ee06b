/*
 * lib/compile/compile_backend.c -- the LLVM backends: one per LLVM major gpucc was
 * built with (lib/backend_llvm/meson.build: libgpucc-llvm19.so and
 * gpucc-compile-worker-19, ...22), which of them are present, and which one
 * a job gets.  Finding them stats files and loads nothing: no LLVM is
 * loaded here, the compile workers load it, and only when a key misses
 * (docs/design.md invariant 8).
 *
 * Search order, once per process: $GPUCC_BACKEND (a path to one module,
 * the only backend then: libgpucc-llvmN.so is LLVM N's, with
 * gpucc-compile-worker-N beside it; any other name is the newest LLVM
 * built's, with gpucc-compile-worker beside it); beside the running
 * libgpucc (found with dladdr), also in its gpucc/ subdirectory (the
 * installed layout) and its backend_llvm/ subdirectory (the build tree);
 * when libgpucc is linked statically (the gpucc command is), the
 * executable's directory, the installed layout from it
 * (BINDIR/../LIBDIR/gpucc, so that a staged or moved install finds its own
 * backends) and ../lib/backend_llvm from it (the build tree); then
 * GPUCC_LIBDIR/gpucc/.  The first directory that holds any backend's
 * module gives every backend present.
 *
 * The choice (gpucc_backend_choose): the newest present backend whose LLVM
 * is at least what the job needs (its target's processor and PTX ISA,
 * its module's producer), unless the caller pins one.  When none is
 * present, the backends built stand in, so that keys are computed (and
 * hit) as they would be, and a job that misses fails saying what was not
 * found.
 */
#include "backend.h"
#include "config_internal.h"
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

static const struct {
	unsigned major;
	const char *version;
} built[] = {GPUCC_BUILD_LLVM_BACKENDS {0, NULL}}; /* oldest first; the last is a stop */

/* A variable, not a constant: with no LLVM built it is 0, and GCC would
 * warn of comparisons that are always false (-Wtype-limits). */
static const size_t built_count = sizeof built / sizeof built[0] - 1;

static pthread_once_t find_once = PTHREAD_ONCE_INIT;
static gpucc_backend_info backends[sizeof built / sizeof built[0]]; /* oldest first */
static size_t backend_count;
static bool any_present;
static char find_message[PATH_MAX + 1024];

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Fill b for LLVM major (built[i]) with its module at path and its worker
 * named worker_name beside it. */
static void describe(gpucc_backend_info *b, size_t i, const char *path, const char *worker_name)
{
	b->major = built[i].major;
	b->version = built[i].version;
	snprintf(b->module, sizeof b->module, "%s", path);
	const char *slash = strrchr(path, '/');
	int dir_len = slash ? (int)(slash - path + 1) : 0;
	/* (path is never NULL: said again for GCC's format checker, which
	 * cannot tell under the sanitizers.) */
	snprintf(b->worker, sizeof b->worker, "%.*s%s", dir_len, path ? path : "", worker_name);
	b->present = exists(path);
}

/* Every backend whose module is in dir/sub; true when there is any. */
static bool try_dir(const char *dir, const char *sub)
{
	size_t count = 0;
	for (size_t i = 0; i < built_count; i++) {
		char path[PATH_MAX], worker[64];
		int n = snprintf(path, sizeof path, "%s%s%s/libgpucc-llvm%u.so", dir, *sub ? "/" : "",
		                 sub, built[i].major);
		snprintf(worker, sizeof worker, "%s-%u", GPUCC_WORKER_NAME, built[i].major);
		if (n <= 0 || (size_t)n >= sizeof path || !exists(path))
			continue;
		describe(&backends[count++], i, path, worker);
	}
	if (count) {
		backend_count = count;
		any_present = true;
	}
	return count > 0;
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

/* The LLVM major a module's file name says (libgpucc-llvm22.so: 22), 0 for
 * none. */
static unsigned major_of_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	unsigned major = 0;
	char end[8];
	if (sscanf(name, "libgpucc-llvm%u%7s", &major, end) == 2 && strcmp(end, ".so") == 0)
		return major;
	return 0;
}

static void from_environment(const char *env)
{
	unsigned major = major_of_name(env);
	size_t i = built_count - 1; /* any other name: the newest built */
	if (major) {
		for (i = 0; i < built_count && built[i].major != major; i++)
			;
		if (i == built_count) {
			snprintf(find_message, sizeof find_message,
			         "GPUCC_BACKEND names '%s', a backend of LLVM %u, which this gpucc was not "
			         "built for", env, major);
			return;
		}
	}
	char worker[64];
	if (major)
		snprintf(worker, sizeof worker, "%s-%u", GPUCC_WORKER_NAME, major);
	else
		snprintf(worker, sizeof worker, "%s", GPUCC_WORKER_NAME);
	describe(&backends[0], i, env, worker);
	backend_count = 1;
	any_present = backends[0].present;
	if (!any_present)
		snprintf(find_message, sizeof find_message,
		         "GPUCC_BACKEND names '%s', which does not exist", env);
}

static void find(void)
{
	if (built_count == 0) {
		snprintf(find_message, sizeof find_message,
		         "this gpucc was built without LLVM: it compiles nothing");
		return;
	}
	const char *env = gpucc_config_current()->backend;
	if (env && *env) {
		from_environment(env);
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
	/* None present: the backends built stand in for the keys. */
	for (size_t i = 0; i < built_count; i++) {
		char path[PATH_MAX], worker[64];
		snprintf(path, sizeof path, "%s/gpucc/libgpucc-llvm%u.so", GPUCC_LIBDIR, built[i].major);
		snprintf(worker, sizeof worker, "%s-%u", GPUCC_WORKER_NAME, built[i].major);
		describe(&backends[i], i, path, worker);
	}
	backend_count = built_count;
	snprintf(find_message, sizeof find_message,
	         "the LLVM backend (libgpucc-llvm%u.so) was not found beside libgpucc, beside the "
	         "program or in '%s/gpucc'; set GPUCC_BACKEND to its path",
	         built[built_count - 1].major, GPUCC_LIBDIR);
}

size_t gpucc_backends(const gpucc_backend_info **out)
{
	pthread_once(&find_once, find);
	*out = backends;
	return backend_count;
}

int gpucc_backend_present(const gpucc_backend_info *b)
{
	pthread_once(&find_once, find);
	if (b && b->present)
		return 0;
	return gpucc_error_set(GPUCC_EUNAVAILABLE, "%s", find_message);
}

/* "LLVM 19, LLVM 22" into out: the backends a choice was among. */
static void list_backends(char *out, size_t size)
{
	size_t used = 0;
	out[0] = '\0';
	for (size_t i = 0; i < backend_count; i++) {
		int n = snprintf(out + used, size - used, "%sLLVM %u", i ? ", " : "", backends[i].major);
		if (n < 0 || (size_t)n >= size - used)
			return;
		used += (size_t)n;
	}
}

int gpucc_backend_choose(const gpucc_backend_info **out, unsigned needs, unsigned last,
                         const char *needer, unsigned pinned)
{
	pthread_once(&find_once, find);
	*out = NULL;
	char have[128];
	list_backends(have, sizeof have);
	if (backend_count == 0)
		return gpucc_error_set(GPUCC_EUNAVAILABLE, "%s", find_message);
	if (pinned) {
		for (size_t i = 0; i < backend_count; i++) {
			if (backends[i].major != pinned)
				continue;
			if (backends[i].major < needs)
				return gpucc_error_set(GPUCC_EINVALID,
				                       "%s needs LLVM %u or later, and LLVM %u was asked for",
				                       needer, needs, pinned);
			if (last && backends[i].major > last)
				return gpucc_error_set(GPUCC_EINVALID,
				                       "%s needs LLVM %u or earlier, and LLVM %u was asked for",
				                       needer, last, pinned);
			*out = &backends[i];
			return 0;
		}
		return gpucc_error_set(GPUCC_EINVALID, "LLVM %u was asked for, and this gpucc has %s",
		                       pinned, have);
	}
	for (size_t i = backend_count; i-- > 0;) {
		if (backends[i].major >= needs && (!last || backends[i].major <= last)) {
			*out = &backends[i];
			return 0;
		}
	}
	if (last && needs <= last)
		return gpucc_error_set(GPUCC_EINVALID,
		                       "%s needs an LLVM from %u to %u, and this gpucc has %s", needer,
		                       needs, last, have);
	return gpucc_error_set(GPUCC_EINVALID,
	                       "%s needs LLVM %u or later, and this gpucc has %s (build it with "
	                       "LLVM %u's llvm-config-%u installed)",
	                       needer, needs, have, needs < 22 ? 22 : needs, needs < 22 ? 22 : needs);
}

const char *gpucc_llvm_backend(size_t index, unsigned *major, bool *present)
{
	if (index >= built_count)
		return NULL;
	const gpucc_backend_info *list;
	size_t count = gpucc_backends(&list);
	bool is_present = false;
	for (size_t i = 0; i < count; i++)
		is_present |= list[i].major == built[index].major && list[i].present;
	if (major)
		*major = built[index].major;
	if (present)
		*present = is_present;
	return built[index].version;
}
