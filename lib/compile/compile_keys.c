/*
 * lib/compile/compile_keys.c -- what a compile session's keys name besides the
 * IR (formats/key.md): each vendor's normalised options with the versions
 * of the tools that make its payloads (the cubin tool chosen here, ptxas's
 * version, each backend's ld.lld and its version), a job's key and
 * components taken from its entry and a lookup made a hit, and the
 * identity of a vendor's toolchain that a source's direct-mode record is
 * named with.
 */
#include "compile_session.h"

#include "errors.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucc_build_config.h"

static const char *const level_names[] = {"0", "1", "2", "3"};

/* The cubin tool of NVIDIA jobs: libnvJitLink when asked for, or, by
 * default, when the toolkit has one whose version can be told; else ptxas.
 * The rule depends on the machine's toolkit alone, never on how many jobs
 * a run has or misses: a key must not change with the size of the run.
 * A worker loads libnvJitLink while LLVM compiles its first job, so that
 * job costs about what a ptxas process does, and every further PTX a
 * fraction of one (scripts/bench/compile). */
static int choose_cubin_tool(gpucc_compile *c)
{
	const char *version = NULL;
	if (c->o.no_cubin || c->cubin_tool == GPUCC_CUBIN_PTXAS)
		return 0;
	const char *why = "no libnvJitLink was found in the CUDA toolkit (set CUDA_PATH, or "
	                  "GPUCC_NVJITLINK to its path)";
	if (c->toolchain.nvjitlink &&
	    gpucc_toolchain_nvjitlink_version(&c->toolchain, &version) != 0)
		why = gpucc_error_last()->message;
	if (c->toolchain.nvjitlink && version) {
		c->nvjitlink = c->toolchain.nvjitlink;
		c->nvjitlink_version = version;
		return 0;
	}
	if (c->cubin_tool == GPUCC_CUBIN_NVJITLINK)
		c->nvjitlink_error = strdup(why);
	gpucc_error_clear();
	if (c->cubin_tool == GPUCC_CUBIN_NVJITLINK && !c->nvjitlink_error)
		return gpucc_error_oom();
	return 0;
}

/* The linker of each backend a job may get (the one --llvm pins, else
 * every one there is), for AMD jobs: that backend's LLD, ld.lld-MAJOR, its
 * version, and whether its worker links it in process; or why there is
 * none, which fails that backend's AMD jobs alone. */
static int find_linkers(gpucc_compile *c)
{
	const gpucc_backend_info *backends;
	size_t backend_count = gpucc_backends(&backends);
	for (size_t i = 0; i < backend_count; i++) {
		if (c->o.llvm_major && backends[i].major != c->o.llvm_major)
			continue;
		if (c->linker_count == sizeof c->linkers / sizeof c->linkers[0])
			break;
		struct linker *l = &c->linkers[c->linker_count++];
		l->major = backends[i].major;
		if (gpucc_toolchain_ld_lld(&c->toolchain, l->major, &l->path, &l->version) != 0) {
			l->path = l->version = NULL;
			l->error = strdup(gpucc_error_last()->message);
			gpucc_error_clear();
			if (!l->error)
				return gpucc_error_oom();
			continue;
		}
		l->in_process = gpucc_toolchain_ld_lld_built_in(l->major, l->path, l->version);
	}
	return 0;
}

const struct linker *job_linker(const gpucc_compile *c, const gpucc_backend_info *backend)
{
	for (size_t i = 0; backend && i < c->linker_count; i++)
		if (c->linkers[i].major == backend->major)
			return &c->linkers[i];
	return NULL;
}

/* The normalised options of each vendor, sorted by name (formats/key.md):
 * only those that can change that vendor's output, the versions of the
 * tools that make the payloads included (ptxas's and, when it makes the
 * cubins, libnvJitLink's; for code objects, ld.lld's, which is the LLD of
 * the job's backend: each job's own, set when its backend is chosen).
 * Without a backend's LLD that backend's AMD jobs fail when planned, with
 * the reason kept in its linker, and the other jobs go on; so do the AMD
 * jobs when the ptxas found gives no version (ptxas_error). */
int build_options(gpucc_compile *c)
{
	const char *ptxas = "none";
	bool nvidia = false, amd = false;
	int rc;
	for (size_t i = 0; i < c->target_count; i++) {
		nvidia |= c->targets[i].parsed.vendor == GPUCC_VENDOR_NVIDIA;
		amd |= c->targets[i].parsed.vendor == GPUCC_VENDOR_AMD;
	}
	if (nvidia && (c->ptxas_error_code = gpucc_toolchain_ptxas_version(&c->toolchain, &ptxas))) {
		c->ptxas_error = strdup(gpucc_error_last()->message);
		gpucc_error_clear();
		if (!c->ptxas_error)
			return gpucc_error_oom();
	}
	if (amd && (rc = find_linkers(c)) != 0)
		return rc;
	const char *on_off[] = {"off", "on"};
	gpucc_option *n = c->nvidia_options;
	n[0] = (gpucc_option){"debug-info", on_off[c->o.debug_info]};
	n[1] = (gpucc_option){"fast-math", on_off[c->o.fast_math]};
	n[2] = (gpucc_option){"ftz", on_off[c->o.ftz]};
	/* With libnvJitLink, its version and ptxas's (which makes the cubin of
	 * PTX that libnvJitLink cannot link alone): sorted by name. */
	size_t k = 3;
	if (nvidia && (rc = choose_cubin_tool(c)) != 0)
		return rc;
	if (c->nvjitlink)
		n[k++] = (gpucc_option){"nvjitlink", c->nvjitlink_version};
	n[k++] = (gpucc_option){"opt-level", level_names[c->o.opt_level]};
	n[k++] = (gpucc_option){"ptxas", ptxas};
	c->ptxas_version = ptxas;
	c->nvidia_option_count = k;
	gpucc_option *a = c->amd_options;
	a[0] = (gpucc_option){"code-object", "4"}; /* each job's own (plan_job) */
	a[1] = (gpucc_option){"debug-info", on_off[c->o.debug_info]};
	a[2] = (gpucc_option){"fast-math", on_off[c->o.fast_math]};
	a[3] = (gpucc_option){"ftz", on_off[c->o.ftz]};
	a[4] = (gpucc_option){"ld.lld", NULL}; /* each job's own (plan_job) */
	a[5] = (gpucc_option){"opt-level", level_names[c->o.opt_level]};
	c->amd_option_count = 6;
	return 0;
}

/* A lookup's result (rc, img) makes the job a hit, or leaves it pending. */
void take_hit(job *j, int rc, gpucc_image *img)
{
	if (rc == 0 && gpucc_image_entry_count(img) >= 1) {
		j->hit = img;
		/* The module name is metadata, in neither the key nor the
		 * content digest: the entry carries this job's name, not
		 * that of the compile that filled the cache, so that a hit
		 * writes the same image as a compile. */
		j->hit_entry = *gpucc_image_entry(img, 0);
		j->hit_entry.module = j->entry.module;
		j->r.entry = &j->hit_entry;
		j->r.status = GPUCC_COMPILE_HIT;
	} else {
		gpucc_image_free(img);
		gpucc_error_clear(); /* a miss, or a cache problem: compile (it never breaks a build) */
	}
}

/* The job's key and, for --explain, its components, from entry e. */
void set_key(job *j, const gpucc_entry *e)
{
	j->r.key = e->key;
	j->r.key_known = true;
	if (gpucc_key_components(j->components, e) == 0) {
		j->have_components = true;
		for (size_t i = 0; i < GPUCC_KEY_COMPONENTS; i++) {
			j->parts[i].name = j->components[i].name;
			j->parts[i].value = j->components[i].value;
		}
		j->r.key_part_count = GPUCC_KEY_COMPONENTS;
		j->r.key_parts = j->parts;
	}
}

/* What an entry's key names besides the IR, for jobs of the vendor's
 * targets, as the run knows it before any IR (formats/key.md): the key
 * schema, gpucc's and LLVM's versions, the options (code-object as the run
 * asks for it: the IR settles the rest), the tools' versions or that they
 * are missing, and the digest of every device library a job of the vendor
 * may link.  A source record's name takes it, so that a toolchain changed
 * since a record was written never leads to a key of the old one. */
typedef struct identity_text {
	char text[4096];
	size_t used;
} identity_text;

static void identity_add(identity_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void identity_add(identity_text *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t->text + t->used, sizeof t->text - t->used, fmt, ap);
	va_end(ap);
	if (n > 0)
		t->used += (size_t)n < sizeof t->text - t->used ? (size_t)n : sizeof t->text - 1 - t->used;
}

/* The device libraries a source's IR may be linked with, for the vendor's
 * targets: each a directory (NULL: none found) and a file name.  What
 * names a source's record (source_identity) and what a dependency file
 * lists of a source's entries, hit or miss. */
void each_source_lib(const gpucc_compile *c, gpucc_vendor vendor,
                            void (*fn)(void *ctx, const char *dir, const char *file), void *ctx)
{
	static const char *const rocm[] = {
		"hip.bc", "ocml.bc", "ockl.bc", "oclc_abi_version_400.bc", "oclc_abi_version_500.bc",
		"oclc_correctly_rounded_sqrt_off.bc", "oclc_correctly_rounded_sqrt_on.bc",
		"oclc_daz_opt_off.bc", "oclc_daz_opt_on.bc", "oclc_finite_only_off.bc",
		"oclc_finite_only_on.bc", "oclc_unsafe_math_off.bc", "oclc_unsafe_math_on.bc",
		"oclc_wavefrontsize64_off.bc", "oclc_wavefrontsize64_on.bc"};
	bool nvidia = vendor == GPUCC_VENDOR_NVIDIA;
	if (nvidia) {
		const char *lib = c->toolchain.libdevice;
		const char *slash = lib ? strrchr(lib, '/') : NULL;
		char dir[4096];
		snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - lib) : 0, lib ? lib : "");
		fn(ctx, slash ? dir : NULL, slash ? slash + 1 : "libdevice.10.bc");
	}
	for (size_t i = 0; !nvidia && i < sizeof rocm / sizeof rocm[0]; i++)
		fn(ctx, c->toolchain.rocm_dir, rocm[i]);
	fn(ctx, c->toolchain.libclc_dir, nvidia ? "nvptx64--nvidiacl.bc" : "amdgcn--amdhsa.bc");
}

typedef struct identity_libs {
	gpucc_compile *c;
	identity_text *t;
} identity_libs;

/* A device library's name and digest ("absent" when there is none). */
static void identity_lib(void *ctx, const char *dir, const char *file)
{
	identity_libs *x = ctx;
	char path[8192], hex[GPUCC_DIGEST_HEX_SIZE] = "absent";
	gpucc_digest d;
	snprintf(path, sizeof path, "%s/%s", dir ? dir : "", file);
	if (dir && gpucc_toolchain_digest(&x->c->toolchain, path, &d) == 0)
		gpucc_digest_to_hex(hex, &d);
	gpucc_error_clear();
	identity_add(x->t, "%s %s\n", file, hex);
}

void source_identity(gpucc_compile *c, gpucc_vendor vendor, gpucc_digest *out)
{
	bool nvidia = vendor == GPUCC_VENDOR_NVIDIA;
	identity_text t = {.used = 0};
	bool no_linker = false;
	for (size_t i = 0; i < c->linker_count; i++)
		no_linker |= c->linkers[i].error != NULL;
	identity_add(&t, "schema=%d\ngpucc=%s\ncode-object=%d\nmissing=%d%d%d\n",
	             GPUCC_KEY_SCHEMA, gpucc_version(), c->o.code_object_version,
	             c->ptxas_error != NULL, c->nvjitlink_error != NULL, no_linker);
	/* Which backend compiles a target (so which LLVM its entry's key
	 * names) follows from the target, which names the record too, the
	 * backends there are and the one --llvm pins. */
	const gpucc_backend_info *backends;
	size_t backend_count = gpucc_backends(&backends);
	identity_add(&t, "llvm-pinned=%u\n", c->o.llvm_major);
	for (size_t i = 0; i < backend_count; i++)
		identity_add(&t, "llvm=%s\n", backends[i].version);
	const gpucc_option *o = nvidia ? c->nvidia_options : c->amd_options;
	size_t count = nvidia ? c->nvidia_option_count : c->amd_option_count;
	for (size_t i = nvidia ? 0 : 1; i < count; i++) /* AMD's first is code-object */
		if (o[i].value) /* AMD's ld.lld, each job's own: each backend's, below */
			identity_add(&t, "%s=%s\n", o[i].name, o[i].value);
	for (size_t i = 0; !nvidia && i < c->linker_count; i++)
		identity_add(&t, "ld.lld-%u=%s\n", c->linkers[i].major,
		             c->linkers[i].version ? c->linkers[i].version : "none");
	identity_libs x = {c, &t};
	each_source_lib(c, vendor, identity_lib, &x);
	gpucc_digest_buffer(out, t.text, t.used);
}
