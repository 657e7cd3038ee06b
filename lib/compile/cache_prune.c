/*
 * lib/compile/cache_prune.c -- gpucc_cache_prune: which cache entries no key this
 * gpucc computes can reach any more (docs/design.md, invariant 1: a toolchain
 * upgrade changes keys, and gpucc can prune what no current key reaches).
 *
 * A compile's key holds the key schema, gpucc's and LLVM's versions, the
 * digests of the device libraries it links, and (as options) the versions of
 * ptxas (NVIDIA; "none" without it, and with --no-cubin), of libnvJitLink
 * (NVIDIA, when it made the cubin) and of the LLD of the entry's LLVM
 * major (AMD: LLD 19 links LLVM 19's code objects, LLD 22 LLVM 22's).
 * An entry that records anything else for these can never be hit again by
 * this gpucc on this machine.  The module and the other options are free:
 * any module can come.  The toolchain is found as a compile finds it
 * (lib/compile/compile_toolchain.c), without loading LLVM; what is not found here
 * judges nothing, so a prune run without CUDA_PATH set, say, keeps the
 * NVIDIA entries instead of taking the missing ptxas for a new one.
 * The walk and the removal are cache_maintain.c's (gpucc_cache_remove_judged).
 * The cache's precompiled preludes go too when they can never be read
 * again (judge_prelude; the walk is lib/cache/cache_pch.c's); they are not
 * entries, and not counted or reported as such.
 */
#include "cache_internal.h"
#include "compile_impl.h"
#include "errors.h"
#include "key.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef struct pruner {
	gpucc_cache *c;
	gpucc_toolchain tc;
	const char *ptxas;   /* ptxas's version here; NULL: none, not judged */
	const char *nvjitlink; /* libnvJitLink's version here; NULL: none, not judged */
	char *no_ptxas, *no_nvjitlink; /* why there is none */
	/* Per LLVM backend built, the version of its LLD here (NULL: none,
	 * not judged, for the reason in missing). */
	struct {
		unsigned major;
		const char *version;
		char *missing;
		bool warned;
	} ld_llds[8];
	size_t ld_lld_count;
	bool by_age;
	time_t now, cutoff;  /* with by_age: entries last used before cutoff go */
	bool warned_ptxas, warned_nvjitlink, warned_libdevice, warned_rocm, warned_libclc;
	char reason[512];
} pruner;

static const char *because(pruner *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static const char *because(pruner *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->reason, sizeof p->reason, fmt, ap);
	va_end(ap);
	return p->reason;
}

/* Said once per run, the first time an entry needs what is missing. */
static void not_judged(pruner *p, bool *warned, const char *what)
{
	if (!*warned)
		gpucc_cache_warn(p->c, "%s: entries are not judged by it and stay", what);
	*warned = true;
}

/* Why the device library lib is not the one this toolchain links under its
 * name (path: the file it would link, or NULL when there is none), or NULL
 * when it is. */
static const char *library_changed(pruner *p, const gpucc_device_lib *lib, const char *path)
{
	struct stat st;
	if (!path || stat(path, &st) != 0)
		return because(p, "device library '%s' is not in this toolchain", lib->name);
	gpucc_digest now;
	if (gpucc_toolchain_digest(&p->tc, path, &now) != 0) { /* unreadable: no verdict */
		gpucc_error_clear();
		return NULL;
	}
	if (gpucc_digest_compare(&now, &lib->sha256) != 0)
		return because(p, "device library '%s' has changed ('%s')", lib->name, path);
	return NULL;
}

/* Why a library gpucc writes itself (oclc_isa_version_NNN.ll) is not what
 * this gpucc writes under its name, or NULL when it is. */
static const char *generated_library_changed(pruner *p, const gpucc_device_lib *lib)
{
	static const char prefix[] = "oclc_isa_version_";
	size_t len = strlen(lib->name);
	char processor[32];
	gpucc_generated_lib now;
	snprintf(processor, sizeof processor, "gfx%.*s", (int)(len - (sizeof prefix - 1) - 3),
	         lib->name + sizeof prefix - 1);
	if (gpucc_isa_version_lib(&now, processor) != 0 || strcmp(now.name, lib->name) != 0) {
		gpucc_error_clear();
		return because(p, "device library '%s' is not in this toolchain", lib->name);
	}
	if (gpucc_digest_compare(&now.sha256, &lib->sha256) != 0)
		return because(p, "device library '%s' has changed (gpucc writes it)", lib->name);
	return NULL;
}

static bool is_generated(const char *name)
{
	size_t len = strlen(name);
	return strncmp(name, "oclc_isa_version_", 17) == 0 && len > 20 &&
	       strcmp(name + len - 3, ".ll") == 0;
}

static bool is_libclc(const char *name)
{
	return strcmp(name, "nvptx64--nvidiacl.bc") == 0 || strcmp(name, "amdgcn--amdhsa.bc") == 0;
}

static const char *judge_libraries(pruner *p, const gpucc_entry *e, bool nvidia)
{
	for (size_t i = 0; i < e->device_lib_count; i++) {
		const gpucc_device_lib *lib = &e->device_libs[i];
		const char *why = NULL;
		if (is_generated(lib->name)) {
			why = generated_library_changed(p, lib);
		} else if (is_libclc(lib->name) && !p->tc.libclc_dir) {
			not_judged(p, &p->warned_libclc, "no libclc found (set GPUCC_LIBCLC_DIR)");
		} else if (is_libclc(lib->name)) {
			char path[4096];
			snprintf(path, sizeof path, "%s/%s", p->tc.libclc_dir, lib->name);
			why = library_changed(p, lib, path);
		} else if (nvidia && !p->tc.libdevice) {
			not_judged(p, &p->warned_libdevice, "no libdevice found (set CUDA_PATH)");
		} else if (nvidia) {
			const char *base = strrchr(p->tc.libdevice, '/');
			base = base ? base + 1 : p->tc.libdevice;
			why = strcmp(base, lib->name) == 0 ? library_changed(p, lib, p->tc.libdevice)
			                                   : library_changed(p, lib, NULL);
		} else if (!p->tc.rocm_dir) {
			not_judged(p, &p->warned_rocm,
			           "no ROCm device libraries found (set GPUCC_ROCM_DEVICE_LIBS)");
		} else {
			char path[4096];
			snprintf(path, sizeof path, "%s/%s", p->tc.rocm_dir, lib->name);
			/* A name with a slash is no library of that directory. */
			why = library_changed(p, lib, strchr(lib->name, '/') ? NULL : path);
		}
		if (why)
			return why;
	}
	return NULL;
}

/* Whether version is the LLVM of one of this gpucc's backends. */
static bool llvm_built(const char *version)
{
	const char *v;
	for (size_t i = 0; (v = gpucc_llvm_backend(i, NULL, NULL)) != NULL; i++)
		if (strcmp(v, version) == 0)
			return true;
	return false;
}

static const char *judge(void *ctx, const gpucc_entry *e, const struct stat *st)
{
	pruner *p = ctx;
	if (e->key_schema != GPUCC_KEY_SCHEMA)
		return because(p, "key schema %u, not %u", e->key_schema, GPUCC_KEY_SCHEMA);
	if (strcmp(e->gpucc_version, gpucc_version()) != 0)
		return because(p, "made by gpucc %s, this is %s", e->gpucc_version, gpucc_version());
	if (!llvm_built(e->llvm_version)) {
		char have[128] = "";
		size_t used = 0;
		const char *v;
		for (size_t i = 0; (v = gpucc_llvm_backend(i, NULL, NULL)) != NULL; i++) {
			int n = snprintf(have + used, sizeof have - used, "%s%s", used ? ", " : "", v);
			if (n > 0 && (size_t)n < sizeof have - used)
				used += (size_t)n;
		}
		return because(p, "made with LLVM %s, this gpucc uses %s", e->llvm_version, have);
	}
	bool nvidia = strncmp(e->triple, "nvptx", 5) == 0;
	bool amd = strncmp(e->triple, "amdgcn", 6) == 0;
	const char *jit = nvidia ? gpucc_entry_option(e, "nvjitlink") : NULL;
	if (jit) { /* its cubin is libnvJitLink's; ptxas's version is judged below */
		if (!p->nvjitlink)
			not_judged(p, &p->warned_nvjitlink, p->no_nvjitlink);
		else if (strcmp(jit, p->nvjitlink) != 0)
			return because(p, "made with nvJitLink %s, this toolchain has %s", jit,
			               p->nvjitlink);
	}
	if (nvidia) {
		const char *v = gpucc_entry_option(e, "ptxas");
		if (!p->ptxas)
			not_judged(p, &p->warned_ptxas, p->no_ptxas);
		else if (!v || (strcmp(v, "none") != 0 && strcmp(v, p->ptxas) != 0))
			return because(p, "made with ptxas %s, this toolchain has %s", v ? v : "(unrecorded)",
			               p->ptxas);
	} else if (amd) {
		/* The LLD of the entry's LLVM, a backend's (llvm_built). */
		const char *v = gpucc_entry_option(e, "ld.lld");
		unsigned major = (unsigned)strtoul(e->llvm_version, NULL, 10);
		size_t i = 0;
		while (i < p->ld_lld_count && p->ld_llds[i].major != major)
			i++;
		if (i < p->ld_lld_count && !p->ld_llds[i].version)
			not_judged(p, &p->ld_llds[i].warned, p->ld_llds[i].missing);
		else if (i < p->ld_lld_count && (!v || strcmp(v, p->ld_llds[i].version) != 0))
			return because(p, "made with LLD %s, this toolchain has LLD %s",
			               v ? v : "(unrecorded)", p->ld_llds[i].version);
	}
	const char *why = nvidia || amd ? judge_libraries(p, e, nvidia) : NULL;
	if (why)
		return why;
	if (p->by_age && st->st_mtime < p->cutoff) {
		long long hours = (long long)(p->now - st->st_mtime) / 3600;
		if (hours >= 48)
			return because(p, "not used for %lld days", hours / 24);
		return because(p, "not used for %lld hours", hours);
	}
	return NULL;
}

/* ---- precompiled preludes ------------------------------------------------------ */

/* Whether a prelude (lib/cache/cache_pch.c) can never be read again: an
 * absolute file it lists is gone or changed, or a place it found empty is
 * filled (a compile would make another, under its name); with by_age, not
 * used since the cutoff.  Relative paths name files from the working
 * directory of the compile that made it, which prune does not know: not
 * judged, nor is a variable's line. */
static bool judge_prelude(void *ctx, const gpucc_prelude_record *r, const struct stat *st)
{
	pruner *p = ctx;
	if (p->by_age && st->st_mtime < p->cutoff)
		return true;
	static const char zeros[] = "0000000000000000000000000000000000000000000000000000000000000000";
	const char *line = r->lines, *end = r->lines + r->size;
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		char path[PATH_MAX];
		size_t len = (size_t)(nl - line) - 65;
		if (line[65] != '/' || len >= sizeof path) {
			line = nl + 1;
			continue;
		}
		memcpy(path, line + 65, len);
		path[len] = '\0';
		struct stat now;
		if (memcmp(line, zeros, 64) == 0) {
			if (stat(path, &now) == 0)
				return true;
		} else {
			char hex[GPUCC_DIGEST_HEX_SIZE];
			gpucc_digest d;
			if (stat(path, &now) != 0)
				return true;
			if (gpucc_toolchain_digest(&p->tc, path, &d) != 0) { /* unreadable: no verdict */
				gpucc_error_clear();
			} else {
				gpucc_digest_to_hex(hex, &d);
				if (memcmp(hex, line, 64) != 0)
					return true;
			}
		}
		line = nl + 1;
	}
	return false;
}

/* Keep why a tool is missing for the warning, and go on without it. */
static int missing(char **why, const char *message)
{
	*why = strdup(message);
	gpucc_error_clear();
	return *why ? 0 : gpucc_error_oom();
}

int gpucc_cache_prune(gpucc_cache *c, int64_t unused_seconds, unsigned flags,
                      gpucc_cache_prune_fn fn, void *ctx, gpucc_cache_prune_result *out)
{
	GPUCC_REQUIRE(c);
	if (strcmp(gpucc_llvm_version(), "none") == 0) /* every entry would go */
		return gpucc_error_set(GPUCC_EUNAVAILABLE,
		                       "this gpucc was built without LLVM: it compiles nothing, so it "
		                       "cannot tell which entries a compile reaches");
	pruner p;
	memset(&p, 0, sizeof p);
	p.c = c;
	p.now = time(NULL);
	p.by_age = unused_seconds >= 0;
	p.cutoff = p.by_age && unused_seconds < (int64_t)p.now ? p.now - (time_t)unused_seconds : 0;
	int rc = gpucc_toolchain_init(&p.tc, gpucc_cache_dir(c));
	if (rc != 0)
		return rc;
	if (!p.tc.ptxas)
		rc = missing(&p.no_ptxas, "no ptxas found (set CUDA_PATH)");
	else if (gpucc_toolchain_ptxas_version(&p.tc, &p.ptxas) != 0) {
		p.ptxas = NULL;
		rc = missing(&p.no_ptxas, gpucc_error_last()->message);
	}
	if (rc == 0 && !p.tc.nvjitlink)
		rc = missing(&p.no_nvjitlink, "no libnvJitLink found (set CUDA_PATH or GPUCC_NVJITLINK)");
	else if (rc == 0 && gpucc_toolchain_nvjitlink_version(&p.tc, &p.nvjitlink) != 0) {
		p.nvjitlink = NULL;
		rc = missing(&p.no_nvjitlink, gpucc_error_last()->message);
	}
	unsigned major;
	for (size_t i = 0; rc == 0 && gpucc_llvm_backend(i, &major, NULL) &&
	                   p.ld_lld_count < sizeof p.ld_llds / sizeof p.ld_llds[0];
	     i++) {
		const char *path;
		p.ld_llds[p.ld_lld_count].major = major;
		if (gpucc_toolchain_ld_lld(&p.tc, major, &path, &p.ld_llds[p.ld_lld_count].version) != 0) {
			p.ld_llds[p.ld_lld_count].version = NULL;
			rc = missing(&p.ld_llds[p.ld_lld_count].missing, gpucc_error_last()->message);
		}
		p.ld_lld_count++;
	}
	if (rc != 0)
		goto done;
	rc = gpucc_cache_remove_judged(c, flags & GPUCC_PRUNE_DRY_RUN, judge, &p, fn, ctx, out);
	if (rc == 0 && !(flags & GPUCC_PRUNE_DRY_RUN) && gpucc_cache_writable(c))
		gpucc_cache_pch_prune(c, false, judge_prelude, &p);
	if (gpucc_cache_writable(c))
		gpucc_toolchain_save(&p.tc);
done:
	free(p.no_ptxas);
	for (size_t i = 0; i < p.ld_lld_count; i++)
		free(p.ld_llds[i].missing);
	free(p.no_nvjitlink);
	gpucc_toolchain_release(&p.tc);
	return rc;
}
