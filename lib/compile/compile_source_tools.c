/*
 * lib/compile/compile_source_tools.c -- the tools a run of
 * gpucc_sources_resolve compiles with: which clang a pair gets (clang 22
 * for the targets only a newer LLVM knows), finding clang 19 and clang 22,
 * and the CUDA toolkit's headers (with CUB and Thrust).
 */
#include "compile_source_run.h"
#include "config_internal.h"
#include "errors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpucc_build_config.h"

/* Whether clang 19 cannot compile for the pair's target (its backend is
 * a newer LLVM's: lib/compile/compile_backend.c), so that clang 22 runs. */
bool pair_clang22(const gpucc_source_pair *p)
{
	return gpucc_target_llvm_major(p->target, NULL) > 19;
}

const char *pair_clang(const context *x, const gpucc_source_pair *p)
{
	return pair_clang22(p) ? x->clang22 : x->clang;
}

bool is_regular(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

bool is_executable(const char *path)
{
	return is_regular(path) && access(path, X_OK) == 0;
}

/* ---- finding the tools ------------------------------------------------------- */

/* The first executable name on PATH (owned), or NULL. */
static char *on_path(const char *name)
{
	const char *path = gpucc_config_current()->path;
	for (const char *p = path ? path : ""; *p;) {
		size_t len = strcspn(p, ":");
		char *c = len ? string_printf("%.*s/%s", (int)len, p, name) : NULL;
		if (c && is_executable(c))
			return c;
		free(c);
		p += len + (p[len] == ':');
	}
	return NULL;
}

/* The clangs to try, in order: the one named, else clang-19 and clang on
 * PATH, the one found when gpucc was built, LLVM 19's.  The i-th of them,
 * NULL when there is none (PATH holds no such name) or no more (i past
 * the last: *more false).  PATH is searched only when a caller gets that
 * far: a clang-19 on PATH that answers spares the search for clang.  One
 * found on PATH is executable, and owned by *found (freed at the next
 * call, or by the caller after the last). */
static const char *clang_candidate(const char *named, size_t i, char **found, bool *more)
{
	static const char *const names[] = {"clang-19", "clang"};
	free(*found);
	*found = NULL;
	*more = named ? i < 1 : i < 4;
	if (!*more)
		return NULL;
	if (named)
		return named;
	if (i < 2)
		return *found = on_path(names[i]);
	if (i == 2)
		return GPUCC_BUILD_CLANG[0] ? GPUCC_BUILD_CLANG : NULL; /* found when gpucc was built */
	return "/usr/lib/llvm-19/bin/clang";
}

void gpucc_sources_prefetch(gpucc_toolchain *tc, const char *clang)
{
	/* A cache that ever knew a clang most likely knows this one: not worth
	 * the search of PATH a hit would pay for twice. */
	if (gpucc_toolchain_has_kind(tc, "clang-version"))
		return;
	char *found = NULL;
	bool more = true;
	for (size_t i = 0; more; i++) {
		const char *c = clang_candidate(clang, i, &found, &more);
		if (c && (c == found || is_executable(c))) {
			gpucc_toolchain_prefetch_version(tc, "clang-version", c);
			break;
		}
	}
	free(found);
}

void find_clang(context *x)
{
	const gpucc_source_settings *s = x->s;
	char refused[512] = "";
	char *found = NULL;
	bool more = true;
	for (size_t i = 0; more && !x->clang; i++) {
		const char *c = clang_candidate(s->clang, i, &found, &more);
		if (!c || (c != found && !is_executable(c)))
			continue;
		const char *version = NULL;
		pthread_mutex_lock(&x->lock);
		int rc = s->toolchain ? gpucc_toolchain_tool_version(s->toolchain, "clang-version", c,
		                                                     "clang version ", &version)
		                      : GPUCC_EUNAVAILABLE;
		pthread_mutex_unlock(&x->lock);
		if (rc == 0 && strncmp(version, "19.", 3) == 0) {
			x->clang = strdup(c);
			x->clang_version = version;
		} else if (!refused[0]) {
			snprintf(refused, sizeof refused, "'%s' (%s%s)", c, rc == 0 ? "clang " : "",
			         rc == 0 ? version : gpucc_error_last()->message);
		}
		gpucc_error_clear();
	}
	free(found);
	if (x->clang)
		return;
	if (s->clang && !is_executable(s->clang))
		snprintf(x->clang_error, sizeof x->clang_error,
		         "clang '%s' is not an executable file: sources need clang 19", s->clang);
	else if (refused[0])
		snprintf(x->clang_error, sizeof x->clang_error,
		         "sources need clang 19, found %s (install clang-19)", refused);
	else
		snprintf(x->clang_error, sizeof x->clang_error,
		         "clang-19 was not found on PATH: sources need clang 19 (install clang-19)");
}

/* clang 22 for the pairs whose target only a newer LLVM knows: clang-22 on
 * PATH, else LLVM 22's own. */
void find_clang22(context *x)
{
	bool needed = false;
	for (size_t i = 0; i < x->count; i++)
		needed |= pair_clang22(&x->pairs[i]);
	if (!needed)
		return;
	char *candidates[2] = {on_path("clang-22"), strdup("/usr/lib/llvm-22/bin/clang")};
	for (size_t i = 0; i < 2 && !x->clang22; i++) {
		if (!candidates[i] || !is_executable(candidates[i]))
			continue;
		const char *version = NULL;
		pthread_mutex_lock(&x->lock);
		int rc = x->s->toolchain ? gpucc_toolchain_tool_version(x->s->toolchain, "clang-version",
		                                                        candidates[i], "clang version ",
		                                                        &version)
		                         : GPUCC_EUNAVAILABLE;
		pthread_mutex_unlock(&x->lock);
		if (rc == 0 && strncmp(version, "22.", 3) == 0) {
			x->clang22 = candidates[i];
			x->clang22_version = version;
			candidates[i] = NULL;
		}
		gpucc_error_clear();
	}
	free(candidates[0]);
	free(candidates[1]);
	if (!x->clang22)
		snprintf(x->clang22_error, sizeof x->clang22_error,
		         "clang-22 was not found on PATH: sources for targets LLVM 19 does not know "
		         "need clang 22 (install clang-22)");
}

void find_cuda(context *x)
{
	const char *dirs[] = {gpucc_config_current()->cuda_path, "/usr/local/cuda"};
	for (size_t i = 0; i < 2 && !x->cuda_dir; i++) {
		if (!dirs[i] || !*dirs[i])
			continue;
		char *header = string_printf("%s/include/cuda_runtime.h", dirs[i]);
		if (header && is_regular(header))
			x->cuda_dir = strdup(dirs[i]);
		free(header);
	}
	if (!x->cuda_dir)
		return;
	/* CUB and Thrust: in include/cccl since CUDA 13. */
	char *cub = string_printf("%s/include/cccl/cub/cub.cuh", x->cuda_dir);
	if (cub && is_regular(cub))
		x->cccl_dir = string_printf("%s/include/cccl", x->cuda_dir);
	free(cub);
}
