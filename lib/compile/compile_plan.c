/*
 * lib/compile/compile_plan.c -- planning a compile session (gpucc_compile_plan):
 * sources made into modules by clang or found through their records
 * (lib/compile/compile_source.c), modules linked where the session asks,
 * then every module x target job without LLVM: the module's fit to the
 * target, the backend, the device libraries, the key (compile_keys.c),
 * looked up in the cache and in the remotes.  What misses is compiled by
 * lib/compile/compile.c.
 */
#include "compile_session.h"

#include "cache_internal.h"
#include "errors.h"
#include "escape.h"
#include "gpucc/remote.h"
#include "manifest.h"
#include "parallel.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- planning ------------------------------------------------------------------ */

static int add_lib(job *j, const char *dir, const char *file)
{
	if (j->lib_count == MAX_DEVICE_LIBS)
		return GPUCC_ERROR;
	size_t len = strlen(dir) + strlen(file) + 2;
	char *path = malloc(len);
	if (!path)
		return gpucc_error_oom();
	snprintf(path, len, "%s/%s", dir, file);
	j->lib_paths[j->lib_count++] = path;
	return 0;
}

/* A library held in memory: its name stands for a path (the backend keeps
 * parsed libraries by it). */
static int add_generated_lib(job *j, const gpucc_generated_lib *lib)
{
	if (j->lib_count == MAX_DEVICE_LIBS)
		return GPUCC_ERROR;
	char *name = strdup(lib->name);
	if (!name)
		return gpucc_error_oom();
	j->lib_data[j->lib_count] = lib->text;
	j->lib_sizes[j->lib_count] = lib->size;
	j->lib_paths[j->lib_count++] = name;
	return 0;
}

static int compare_libs(const void *a, const void *b)
{
	return strcmp(((const gpucc_device_lib *)a)->name, ((const gpucc_device_lib *)b)->name);
}

/* libclc for OpenCL C modules that call its builtins, either vendor. */
static int choose_libclc(gpucc_compile *c, job *j)
{
	const module *m = &c->modules[j->module];
	const target *t = &c->targets[j->target];
	if (!m->facts.opencl || !m->facts.calls_mangled)
		return 0;
	if (!c->toolchain.libclc_dir)
		return job_fail(j, GPUCC_EUNAVAILABLE,
		                "%s: %s: the OpenCL module calls builtins (_Z* functions) that libclc "
		                "defines, but libclc was not found: install libclc-19 or set "
		                "GPUCC_LIBCLC_DIR",
		                m->shown, j->target_name);
	return add_lib(j, c->toolchain.libclc_dir,
	               t->parsed.vendor == GPUCC_VENDOR_NVIDIA ? "nvptx64--nvidiacl.bc"
	                                                       : "amdgcn--amdhsa.bc");
}

/* The ROCm device libraries, as clang's HIP toolchain links them: hip.bc
 * for the HIP headers' fences, ocml and ockl, and the oclc control
 * libraries that answer their questions (code object ABI, rounding,
 * denormals, wave size: the module's own on gfx10 and later, where
 * "+wavefrontsize64" picks wave64; ISA version: written for the processor). */
static int choose_rocm(gpucc_compile *c, job *j)
{
	const module *m = &c->modules[j->module];
	const target *t = &c->targets[j->target];
	const char *dir = c->toolchain.rocm_dir;
	if (!m->facts.calls_rocm && !m->facts.calls_hip)
		return 0;
	if (!dir)
		return job_fail(j, GPUCC_EUNAVAILABLE,
		                "%s: %s: the module calls the ROCm device libraries (__ocml_*, "
		                "__ockl_*, __atomic_work_item_fence) but they were not found: install "
		                "rocm-device-libs or set GPUCC_ROCM_DEVICE_LIBS",
		                m->shown, j->target_name);
	int rc = 0;
	if (m->facts.calls_hip)
		rc = add_lib(j, dir, "hip.bc");
	if (!m->facts.calls_rocm || rc != 0)
		return rc;
	const char *p = t->parsed.processor;
	/* gfx6..gfx9 run wave64 only; gfx10 and later wave32 unless asked. */
	bool wave64 = strlen(p) == 6 || m->facts.wavefront64;
	if ((rc = gpucc_isa_version_lib(&j->isa_lib, p)) != 0)
		return job_fail(j, rc, "%s: %s: %s", m->shown, j->target_name, gpucc_error_last()->message);
	const char *files[] = {
		"ocml.bc",
		"ockl.bc",
		j->code_object_version >= 5 ? "oclc_abi_version_500.bc" : "oclc_abi_version_400.bc",
		c->o.fast_math ? "oclc_correctly_rounded_sqrt_off.bc" : "oclc_correctly_rounded_sqrt_on.bc",
		c->o.ftz ? "oclc_daz_opt_on.bc" : "oclc_daz_opt_off.bc",
		c->o.fast_math ? "oclc_finite_only_on.bc" : "oclc_finite_only_off.bc",
		c->o.fast_math ? "oclc_unsafe_math_on.bc" : "oclc_unsafe_math_off.bc",
		wave64 ? "oclc_wavefrontsize64_on.bc" : "oclc_wavefrontsize64_off.bc",
	};
	for (size_t i = 0; i < sizeof files / sizeof files[0] && rc == 0; i++)
		rc = add_lib(j, dir, files[i]);
	return rc ? rc : add_generated_lib(j, &j->isa_lib);
}

static int choose_libdevice(gpucc_compile *c, job *j)
{
	const module *m = &c->modules[j->module];
	const char *libdevice = c->toolchain.libdevice;
	if (!m->facts.calls_libdevice)
		return 0;
	if (!libdevice)
		return job_fail(j, GPUCC_EUNAVAILABLE,
		                "%s: %s: the module calls libdevice (__nv_*) but no CUDA toolkit "
		                "was found: set CUDA_PATH",
		                m->shown, j->target_name);
	const char *slash = strrchr(libdevice, '/');
	char dir[4096];
	snprintf(dir, sizeof dir, "%.*s", (int)(slash - libdevice), libdevice);
	return add_lib(j, dir, slash + 1);
}

/* Choose the device libraries job j links, in link order, and their
 * digests for the key (sorted by name). */
static int choose_libs(gpucc_compile *c, job *j)
{
	const module *m = &c->modules[j->module];
	const target *t = &c->targets[j->target];
	int rc = t->parsed.vendor == GPUCC_VENDOR_NVIDIA ? choose_libdevice(c, j) : choose_rocm(c, j);
	if (rc == 0 && j->r.status != GPUCC_COMPILE_FAILED)
		rc = choose_libclc(c, j);
	if (rc != 0 || j->r.status == GPUCC_COMPILE_FAILED)
		return rc;
	for (size_t i = 0; i < j->lib_count; i++) {
		const char *name = strrchr(j->lib_paths[i], '/');
		j->libs[i].name = name ? name + 1 : j->lib_paths[i];
		if (j->lib_data[i]) {
			j->libs[i].sha256 = j->isa_lib.sha256;
			continue;
		}
		struct stat st;
		if (stat(j->lib_paths[i], &st) != 0)
			return job_fail(j, GPUCC_EUNAVAILABLE,
			                "%s: %s: device library '%s' is missing (no such file for this target)",
			                m->shown, j->target_name, j->lib_paths[i]);
		rc = gpucc_toolchain_digest(&c->toolchain, j->lib_paths[i], &j->libs[i].sha256);
		if (rc != 0)
			return job_fail(j, rc, "%s: %s: %s", m->shown, j->target_name, gpucc_error_last()->message);
	}
	if (j->lib_count > 1)
		qsort(j->libs, j->lib_count, sizeof j->libs[0], compare_libs);
	return 0;
}

static bool triple_fits(const char *triple, gpucc_vendor vendor)
{
	if (vendor == GPUCC_VENDOR_NVIDIA)
		return strncmp(triple, "nvptx64-", 8) == 0;
	return strncmp(triple, "amdgcn-", 7) == 0;
}

/* For a triple that is not the target's: ", written for NVIDIA targets
 * (sm_XY)" when it is the other vendor's, else "". */
static const char *other_vendor_clause(const char *triple)
{
	if (strncmp(triple, "nvptx", 5) == 0)
		return ": the module is written for NVIDIA targets (sm_XY)";
	if (strncmp(triple, "amdgcn", 6) == 0)
		return ": the module is written for AMD targets (gfxNNN)";
	return "";
}

/* Skip job j when the module is for another target of the run: its triple
 * names the other vendor, or its functions' "target-cpu" another processor
 * of this vendor (clang's IR is always for one).  Fails it when no target
 * of the run fits the module.  Returns true when j is done with. */
static bool skip_unfit(gpucc_compile *c, job *j)
{
	const module *m = &c->modules[j->module];
	const target *t = &c->targets[j->target];
	const gpucc_module_facts *f = &m->facts;
	if (f->triple_known && f->triple[0] && !triple_fits(f->triple, t->parsed.vendor)) {
		bool fits_another = false;
		for (size_t i = 0; i < c->target_count; i++)
			fits_another |= triple_fits(f->triple, c->targets[i].parsed.vendor);
		if (!fits_another) {
			job_fail(j, GPUCC_ECOMPILE, "%s: %s: module triple '%s' does not fit target %s (%s)%s",
			         m->shown, t->name, f->triple, t->name, gpucc_target_triple(&t->parsed),
			         other_vendor_clause(f->triple));
			return true;
		}
		job_fail(j, 0, "%s: %s: skipped: the module's triple '%s' is for the run's other targets",
		         m->shown, t->name, f->triple);
		j->r.status = GPUCC_COMPILE_SKIPPED;
		return true;
	}
	if (gpucc_module_fits_cpu(f, t->cpu))
		return false;
	bool fits_another = false;
	for (size_t i = 0; i < c->target_count; i++)
		fits_another |= c->targets[i].parsed.vendor == t->parsed.vendor &&
		                gpucc_module_fits_cpu(f, c->targets[i].cpu);
	if (!fits_another) {
		job_fail(j, GPUCC_ECOMPILE,
		         "%s: %s: the module's functions are for \"target-cpu\" %s%s, which no target "
		         "of the run is: compile it for target %s too",
		         m->shown, t->name, f->cpus[0], f->cpu_count > 1 ? " and others" : "",
		         f->cpus[0]);
		return true;
	}
	job_fail(j, 0, "%s: %s: skipped: the module's functions are for \"target-cpu\" %s, another "
	         "target of the run", m->shown, t->name, f->cpus[0]);
	j->r.status = GPUCC_COMPILE_SKIPPED;
	return true;
}

/* The "parts" option of an NVIDIA target's entries ("ptx": PTX alone,
 * "cubin": a cubin alone), or NULL when they hold both. */
static const char *parts_option(const target *t)
{
	return t->parts == PARTS_PTX ? "ptx" : t->parts == PARTS_CUBIN ? "cubin" : NULL;
}

/* The target as this module makes it, and the options its key names. */
static int fit_target(gpucc_compile *c, job *j)
{
	const module *m = &c->modules[j->module];
	const target *t = &c->targets[j->target];
	gpucc_job_target fitted;
	int rc = gpucc_target_for_module(&fitted, &t->parsed, t->ptx_explicit,
	                                 c->o.code_object_version, &m->facts);
	if (rc != 0)
		return job_fail(j, rc, "%s: %s: %s", m->shown, t->name, gpucc_error_last()->message);
	memcpy(j->target_name, fitted.name, sizeof j->target_name);
	memcpy(j->features, fitted.features, sizeof j->features);
	j->code_object_version = fitted.code_object_version;
	j->r.target = j->target_name;
	bool nvidia = t->parsed.vendor == GPUCC_VENDOR_NVIDIA;
	size_t count = nvidia ? c->nvidia_option_count : c->amd_option_count;
	memcpy(j->options, nvidia ? c->nvidia_options : c->amd_options, count * sizeof j->options[0]);
	if (!nvidia) /* options are sorted by name: "code-object" is first */
		j->options[0].value = fitted.code_object_version == 6   ? "6"
		                      : fitted.code_object_version == 5 ? "5" : "4";
	/* An entry of PTX or a cubin alone is another entry: "parts" in its
	 * options, in name order (before "ptxas"). */
	if (nvidia && t->parts != PARTS_ALL) {
		size_t at = 0;
		while (at < count && strcmp(j->options[at].name, "parts") < 0)
			at++;
		memmove(j->options + at + 1, j->options + at, (count - at) * sizeof j->options[0]);
		j->options[at] = (gpucc_option){"parts", parts_option(t)};
		count++;
	}
	j->option_count = count;
	return 0;
}

/* The backend of job j (lib/compile/compile_backend.c): the newest that knows
 * its target as the module makes it, unless the run pins one. */
static int choose_backend(gpucc_compile *c, job *j)
{
	const module *m = &c->modules[j->module];
	gpucc_target fitted;
	unsigned last = 0;
	unsigned needs = gpucc_target_parse(&fitted, j->target_name) == 0
	                     ? gpucc_target_llvm_major(&fitted, &last) : 0;
	gpucc_error_clear();
	char needer[GPUCC_TARGET_NAME_SIZE + 96];
	snprintf(needer, sizeof needer, "'%s'", j->target_name);
	/* Bitcode is read by its writer's LLVM or a newer one, never
	 * converted down (LLVM 19 refuses LLVM 22's attributes). */
	if (m->facts.producer_major && m->facts.producer_major >= needs) {
		needs = m->facts.producer_major;
		snprintf(needer, sizeof needer, "the module, bitcode written by '%s',",
		         m->facts.producer);
	}
	if (gpucc_backend_choose(&j->backend, needs, last, needer, c->o.llvm_major) != 0) {
		int rc = gpucc_error_last()->code;
		return job_fail(j, rc, "%s: %s: %s", m->shown, j->target_name,
		                gpucc_error_last()->message);
	}
	return 0;
}

/* An AMD job's linker, the LLD of its backend's major, and the version
 * its key names (the option "ld.lld"); without that LLD, the job fails. */
static int choose_linker(gpucc_compile *c, job *j)
{
	const struct linker *l = job_linker(c, j->backend);
	if (!l || l->error)
		return job_fail(j, GPUCC_EUNAVAILABLE, "%s: %s: %s", c->modules[j->module].shown,
		                c->targets[j->target].name,
		                l ? l->error : "no linker was looked for its LLVM");
	for (size_t i = 0; i < j->option_count; i++)
		if (strcmp(j->options[i].name, "ld.lld") == 0)
			j->options[i].value = l->version;
	return 0;
}

/* A job of a source whose record led to a cached entry: a hit, its key,
 * target and components the entry's, no IR read. */
static int plan_recorded(gpucc_compile *c, job *j)
{
	module *m = &c->modules[j->module];
	gpucc_image *img = m->recorded.hit;
	m->recorded.hit = NULL;
	const gpucc_entry *e = gpucc_image_entry(img, 0);
	snprintf(j->target_name, sizeof j->target_name, "%s", e->target);
	j->entry.module = m->entry_name;
	j->entry.key = e->key;
	take_hit(j, 0, img);
	j->r.target = j->target_name;
	set_key(j, &j->hit_entry);
	replay_warnings(c, j, true);
	return 0;
}

static int plan_job(gpucc_compile *c, job *j)
{
	const module *m = &c->modules[j->module];
	const target *t = &c->targets[j->target];
	j->r.module = m->name;
	j->r.target = t->name;
	j->r.status = GPUCC_COMPILE_PENDING;
	j->r.source = m->source_note;
	for (const char *w = m->source_warnings; w && *w;) { /* clang's, one line each */
		size_t len = strcspn(w, "\n");
		add_warning(j, "%.*s", (int)len, w);
		w += len + (w[len] == '\n');
	}
	if (m->fail_code) { /* a source clang could not turn into a module */
		if (m->source_diagnostics && (j->diagnostics = strdup(m->source_diagnostics)))
			j->r.diagnostics = j->diagnostics;
		return job_fail(j, m->fail_code, "%s", m->fail_message ? m->fail_message : "out of memory");
	}
	if (skip_unfit(c, j))
		return 0;
	if (t->parsed.vendor == GPUCC_VENDOR_NVIDIA && c->ptxas_error)
		return job_fail(j, c->ptxas_error_code, "%s: %s: %s", m->shown, t->name, c->ptxas_error);
	if (t->parsed.vendor == GPUCC_VENDOR_NVIDIA && c->nvjitlink_error)
		return job_fail(j, GPUCC_EUNAVAILABLE, "%s: %s: %s", m->shown, t->name,
		                c->nvjitlink_error);
	if (m->recorded.hit)
		return plan_recorded(c, j);
	int rc = fit_target(c, j);
	if (rc == 0 && j->r.status != GPUCC_COMPILE_FAILED)
		rc = choose_libs(c, j);
	if (rc != 0 || j->r.status == GPUCC_COMPILE_FAILED)
		return rc;
	if ((rc = choose_backend(c, j)) != 0 || j->r.status == GPUCC_COMPILE_FAILED)
		return rc;
	if (t->parsed.vendor == GPUCC_VENDOR_AMD && (rc = choose_linker(c, j)) != 0)
		return rc;
	if (m->facts.optnone && c->o.opt_level > 0)
		add_warning(j, "%s: %s: the module's functions are optnone (clang -O0 output): "
		            "-O%d leaves them unoptimised; give clang -O1 or higher, or -Xclang "
		            "-disable-O0-optnone", m->shown, j->target_name, c->o.opt_level);

	gpucc_entry *e = &j->entry;
	e->key_schema = GPUCC_KEY_SCHEMA;
	e->module = m->entry_name;
	e->module_sha256 = m->sha256;
	e->target = j->target_name;
	e->triple = gpucc_target_triple(&t->parsed);
	e->gpucc_version = gpucc_version();
	e->llvm_version = j->backend->version;
	e->device_lib_count = j->lib_count;
	e->device_libs = j->libs;
	e->option_count = j->option_count;
	e->options = j->options;
	if ((rc = gpucc_key_compute(&e->key, e)) != 0)
		return job_fail(j, rc, "%s: %s: %s", m->shown, j->target_name, gpucc_error_last()->message);
	set_key(j, e);
	/* A key the source's record led to, just missed, is not asked again. */
	bool missed = m->recorded.missed_key &&
	              memcmp(&m->recorded.missed, &e->key, sizeof e->key) == 0;
	if (c->o.cache && !missed) {
		gpucc_image *img = NULL;
		rc = gpucc_cache_lookup(&img, c->o.cache, &e->key);
		take_hit(j, rc, img);
		replay_warnings(c, j, false);
	}
	return 0;
}

/* The local misses of a plan, looked up in the cache's remotes in one batch
 * per remote before anything is compiled (gpucc/remote.h): what a remote
 * holds is verified and stored in the local cache, and the job hits.  No
 * remote, no cost: a plan whose every key hit locally asks nothing. */
static void fetch_from_remotes(gpucc_compile *c)
{
	if (!c->o.cache || gpucc_cache_remote_count(c->o.cache) == 0)
		return;
	size_t n = 0;
	for (size_t i = 0; i < c->job_count; i++)
		n += c->jobs[i].r.status == GPUCC_COMPILE_PENDING && c->jobs[i].r.key_known;
	gpucc_digest *keys = malloc((n ? n : 1) * sizeof *keys);
	size_t *which = malloc((n ? n : 1) * sizeof *which);
	bool *found = calloc(n ? n : 1, sizeof *found);
	if (n && keys && which && found) {
		n = 0;
		for (size_t i = 0; i < c->job_count; i++) {
			if (c->jobs[i].r.status == GPUCC_COMPILE_PENDING && c->jobs[i].r.key_known) {
				keys[n] = c->jobs[i].entry.key;
				which[n++] = i;
			}
		}
		gpucc_cache_remote_fetch(c->o.cache, keys, n, found);
		for (size_t k = 0; k < n; k++) {
			if (!found[k])
				continue;
			job *j = &c->jobs[which[k]];
			gpucc_image *img = NULL;
			/* Verified completely as it arrived; counted as the
			 * remote's hit, not the local cache's. */
			int rc = gpucc_cache_open_entry(&img, c->o.cache, &j->entry.key);
			take_hit(j, rc, img);
			j->r.from_remote = j->r.status == GPUCC_COMPILE_HIT;
			if (j->r.status != GPUCC_COMPILE_PENDING)
				report_progress(c, j);
		}
	}
	free(keys);
	free(which);
	free(found);
	gpucc_error_clear();
}

/* Facts of modules linked into one: what any of them says (the highest PTX
 * ISA, every processor, any library call), the first one's triple and
 * module flags. */
static void merge_facts(gpucc_module_facts *into, const gpucc_module_facts *f)
{
	if (!into->triple[0] && f->triple[0]) {
		memcpy(into->triple, f->triple, sizeof into->triple);
		into->triple_known = f->triple_known;
	}
	into->calls_libdevice |= f->calls_libdevice;
	into->calls_rocm |= f->calls_rocm;
	into->calls_hip |= f->calls_hip;
	into->opencl |= f->opencl;
	into->calls_mangled |= f->calls_mangled;
	into->attributes_known &= f->attributes_known;
	for (size_t i = 0; i < f->cpu_count; i++) {
		bool seen = false;
		for (size_t k = 0; k < into->cpu_count; k++)
			seen |= strcmp(into->cpus[k], f->cpus[i]) == 0;
		if (!seen && into->cpu_count < GPUCC_MODULE_MAX_CPUS)
			memcpy(into->cpus[into->cpu_count++], f->cpus[i], sizeof into->cpus[0]);
	}
	if (f->ptx_isa > into->ptx_isa)
		into->ptx_isa = f->ptx_isa;
	into->wavefront64 |= f->wavefront64;
	if (into->xnack == GPUCC_FEATURE_ANY)
		into->xnack = f->xnack;
	if (into->sramecc == GPUCC_FEATURE_ANY)
		into->sramecc = f->sramecc;
	into->optnone |= f->optnone;
	if (!into->code_object_version)
		into->code_object_version = f->code_object_version;
	if (f->producer_major > into->producer_major) { /* the newest writer's */
		into->producer_major = f->producer_major;
		memcpy(into->producer, f->producer, sizeof into->producer);
	}
}

/* The module of modules[members[0..n)] linked in that order, into *out.
 * Its name joins theirs with '+'; its digest (the key's module component)
 * is the SHA-256 of "gpucc-link\n" and their digests, in order
 * (formats/key.md). */
static int link_group(gpucc_compile *c, const size_t *members, size_t n, module *out)
{
	size_t name_size = 1;
	for (size_t i = 0; i < n; i++) {
		const char *slash = strrchr(c->modules[members[i]].name, '/');
		name_size += strlen(slash && slash[1] ? slash + 1 : c->modules[members[i]].name) + 1;
	}
	module linked;
	memset(&linked, 0, sizeof linked);
	linked.name = malloc(name_size);
	linked.shown = malloc(4 * name_size);
	linked.data = malloc(1);
	linked.member_data = calloc(n, sizeof *linked.member_data);
	linked.member_sizes = calloc(n, sizeof *linked.member_sizes);
	linked.member_names = calloc(n, sizeof *linked.member_names);
	unsigned char *digests = malloc(11 + n * sizeof(gpucc_digest));
	if (!linked.name || !linked.shown || !linked.data || !linked.member_data ||
	    !linked.member_sizes || !linked.member_names || !digests) {
		module_release(&linked);
		free(digests);
		return gpucc_error_oom();
	}
	linked.name[0] = '\0';
	memcpy(digests, "gpucc-link\n", 11);
	linked.facts = c->modules[members[0]].facts;
	for (size_t i = 0; i < n; i++) {
		const module *m = &c->modules[members[i]];
		const char *slash = strrchr(m->name, '/');
		if (i)
			strcat(linked.name, "+");
		strcat(linked.name, slash && slash[1] ? slash + 1 : m->name);
		memcpy(digests + 11 + i * sizeof(gpucc_digest), &m->sha256, sizeof(gpucc_digest));
		linked.member_data[i] = m->data;
		linked.member_sizes[i] = m->size;
		linked.member_names[i] = m->shown;
		if (i)
			merge_facts(&linked.facts, &m->facts);
		/* A source clang could not compile fails the linked module. */
		if (m->fail_code && !linked.fail_code) {
			linked.fail_code = m->fail_code;
			linked.fail_message = m->fail_message ? strdup(m->fail_message) : NULL;
			linked.source_diagnostics = m->source_diagnostics ? strdup(m->source_diagnostics) : NULL;
		}
	}
	gpucc_escape_controls(linked.shown, 4 * name_size, linked.name);
	linked.entry_name = gpucc_manifest_spell_name(linked.name);
	gpucc_digest_buffer(&linked.sha256, digests, 11 + n * sizeof(gpucc_digest));
	free(digests);
	if (!linked.entry_name) {
		module_release(&linked);
		return gpucc_error_oom();
	}
	linked.member_count = n;
	*out = linked;
	return 0;
}

/* link_modules: modules linked in the order given, the only ones jobs are
 * made for: one, or, when sources made modules for one target each, one
 * per target of the run, linking that target's modules of sources and
 * every module of IR. */
static int link_modules(gpucc_compile *c)
{
	size_t n = c->module_count;
	bool per_target = false;
	for (size_t i = 0; i < n; i++)
		per_target |= c->modules[i].one_target;
	size_t groups = per_target ? c->target_count : 1;
	module *grown = realloc(c->modules, sizeof *grown * (n + groups));
	size_t *members = calloc(n, sizeof *members);
	if (grown)
		c->modules = grown;
	if (!grown || !members) {
		free(members);
		return gpucc_error_oom();
	}
	size_t added = 0;
	for (size_t g = 0; g < groups; g++) {
		size_t count = 0;
		for (size_t i = 0; i < n; i++)
			if (!per_target || !c->modules[i].one_target || c->modules[i].only_target == g)
				members[count++] = i;
		bool any_source = false;
		for (size_t i = 0; i < count; i++)
			any_source |= c->modules[members[i]].one_target;
		if (count == 0 || (per_target && !any_source))
			continue; /* no source serves this target */
		module *linked = &c->modules[n + added];
		int rc = link_group(c, members, count, linked);
		if (rc != 0) {
			free(members);
			c->module_count = n + added;
			return rc;
		}
		linked->one_target = per_target;
		linked->only_target = g;
		added++;
	}
	free(members);
	c->module_count = n + added;
	c->first_job_module = n;
	return 0;
}

/* A module made of a source for targets[target]: clang's IR or the
 * entry its record led to (taken from r), or, when there is neither, a
 * module that fails with r's error. */
static int source_module(module *out, const module *source, size_t target_index,
                         gpucc_source_result *r)
{
	memset(out, 0, sizeof *out);
	out->name = strdup(source->name);
	out->shown = strdup(source->shown);
	out->entry_name = strdup(source->entry_name);
	out->one_target = true;
	out->from_source = true;
	out->only_target = target_index;
	bool made = r->ir || r->hit;
	out->data = r->ir ? r->ir : malloc(1);
	out->size = r->ir ? r->ir_size : 0;
	r->ir = NULL;
	out->fail_code = made ? 0 : r->error_code ? r->error_code : GPUCC_ERROR;
	out->fail_message = r->error;
	out->source_note = r->note;
	out->source_warnings = r->warnings;
	out->source_diagnostics = r->diagnostics;
	r->error = r->note = r->warnings = r->diagnostics = NULL;
	out->recorded = *r; /* hit, record and missed key: the rest are NULL now */
	memset(r, 0, sizeof *r);
	if (!out->name || !out->shown || !out->entry_name || !out->data)
		return gpucc_error_oom();
	gpucc_digest_buffer(&out->sha256, out->data, out->size);
	if (out->size)
		gpucc_module_facts_read(&out->facts, out->data, out->size);
	return 0;
}

/* The progress of the sources' pairs, before any job: reported as
 * gpucc/compile.h says. */
static void source_progress(void *ctx, const gpucc_source_pair *p, size_t done, size_t total)
{
	gpucc_compile *c = ctx;
	gpucc_compile_result r;
	memset(&r, 0, sizeof r);
	r.module = p->path;
	r.target = p->target_name;
	r.status = GPUCC_COMPILE_PENDING;
	r.source = p->result.note;
	gpucc_compile_progress pr = {0, 0, 0, 0, seconds_since(&c->start), &r, done, total};
	c->o.progress(c->o.progress_ctx, &pr);
}

/* Sources: in each one's place among the modules, one module per target of
 * the run that its language serves, made by clang or found through a
 * direct-mode record (lib/compile/compile_source.c).  A source whose language
 * serves no target of the run is one failed module. */
static int expand_sources(gpucc_compile *c)
{
	size_t sources = 0, pair_count = 0;
	for (size_t i = 0; i < c->module_count; i++) {
		const module *m = &c->modules[i];
		if (m->language == GPUCC_LANGUAGE_FROM_NAME)
			continue;
		sources++;
		for (size_t t = 0; t < c->target_count; t++)
			pair_count += gpucc_source_language_serves(m->language,
			                                           c->targets[t].parsed.vendor);
	}
	if (sources == 0)
		return 0;
	gpucc_source_pair *pairs = calloc(pair_count ? pair_count : 1, sizeof *pairs);
	size_t *pair_target = calloc(pair_count ? pair_count : 1, sizeof *pair_target);
	module *grown = calloc(c->module_count - sources + pair_count + sources, sizeof *grown);
	if (!pairs || !pair_target || !grown) {
		free(pairs);
		free(pair_target);
		free(grown);
		return gpucc_error_oom();
	}
	size_t k = 0;
	for (size_t i = 0; i < c->module_count; i++) {
		const module *m = &c->modules[i];
		if (m->language == GPUCC_LANGUAGE_FROM_NAME)
			continue;
		for (size_t t = 0; t < c->target_count; t++) {
			if (!gpucc_source_language_serves(m->language, c->targets[t].parsed.vendor))
				continue;
			pairs[k] = (gpucc_source_pair){.path = m->name, .shown = m->shown,
			                               .data = m->data, .size = m->size,
			                               .language = m->language,
			                               .target = &c->targets[t].parsed,
			                               .target_name = c->targets[t].name,
			                               .target_shown = c->targets[t].open_name,
			                               .parts = parts_option(&c->targets[t]),
			                               .ptx_explicit = c->targets[t].ptx_explicit};
			pair_target[k++] = t;
		}
	}
	size_t cpus = gpucc_cpu_count();
	gpucc_source_settings settings = {
		.opt_level = c->o.opt_level,
		.code_object_version = c->o.code_object_version,
		.debug_info = c->o.debug_info,
		.fast_math = c->o.fast_math,
		.ftz = c->o.ftz,
		.relocatable = c->o.link_modules,
		.no_pch = c->o.no_pch,
		.identity = {{{0}}},
		.clang = c->o.clang,
		.args = c->o.clang_args,
		.arg_count = c->o.clang_arg_count,
		.timeout_seconds = c->o.job_timeout_seconds,
		.jobs = c->o.jobs ? c->o.jobs : (unsigned)(cpus && cpus < 256 ? cpus : 1),
		.cache = c->o.cache,
		.toolchain = &c->toolchain,
		.pair_done = c->o.progress ? source_progress : NULL,
		.pair_done_ctx = c,
		.before_clang = c->before_clang,
		.before_clang_ctx = c->before_clang_ctx,
	};
	bool known[3] = {false, false, false};
	for (size_t t = 0; t < c->target_count && c->o.cache; t++) {
		gpucc_vendor v = c->targets[t].parsed.vendor;
		if ((v == GPUCC_VENDOR_NVIDIA || v == GPUCC_VENDOR_AMD) && !known[v]) {
			source_identity(c, v, &settings.identity[v]);
			known[v] = true;
		}
	}
	int rc = gpucc_sources_resolve(pairs, pair_count, &settings);
	size_t n = 0;
	k = 0;
	for (size_t i = 0; i < c->module_count; i++) {
		module *m = &c->modules[i];
		if (m->language == GPUCC_LANGUAGE_FROM_NAME) {
			grown[n++] = *m;
			continue;
		}
		size_t made = 0;
		for (; k < pair_count && pairs[k].path == m->name; k++, made++)
			if (rc == 0)
				rc = source_module(&grown[n++], m, pair_target[k], &pairs[k].result);
		if (made == 0 && rc == 0) {
			gpucc_source_result none = {0};
			none.error_code = GPUCC_ECOMPILE;
			bool hip = m->language == GPUCC_LANGUAGE_HIP;
			char why[1024];
			snprintf(why, sizeof why, "%s: %s: %s sources compile for %s targets (%s) only, "
			         "and the run has none", m->shown, c->targets[0].name,
			         gpucc_source_language_name(m->language), hip ? "AMD" : "NVIDIA",
			         hip ? "gfxNNN" : "sm_XY");
			none.error = strdup(why);
			rc = source_module(&grown[n++], m, 0, &none);
			gpucc_source_result_release(&none);
		}
		module_release(m);
	}
	for (size_t i = 0; i < pair_count; i++)
		gpucc_source_result_release(&pairs[i].result);
	free(pairs);
	free(pair_target);
	free(c->modules);
	c->modules = grown;
	c->module_count = n;
	return rc;
}

int gpucc_compile_plan(gpucc_compile *c)
{
	GPUCC_REQUIRE(c);
	if (c->planned)
		return 0;
	if (c->module_count == 0)
		return gpucc_error_set(GPUCC_EINVALID, "no modules to compile");
	if (c->target_count == 0)
		return gpucc_error_set(GPUCC_EINVALID, "no targets to compile for");
	clock_gettime(CLOCK_MONOTONIC, &c->start);
	if (c->o.cache && !gpucc_cache_writable(c->o.cache) &&
	    !gpucc_cache_read_only_requested(c->o.cache))
		/* Once per run, not per entry: hits still count, nothing is
		 * stored.  A caller that asked for a read-only cache (a dry run)
		 * knows. */
		gpucc_cache_warn(c->o.cache, "'%s' is read-only (%s): compiled entries are not stored",
		                 gpucc_cache_dir(c->o.cache), gpucc_cache_read_only_reason(c->o.cache));
	const char *memo_dir = c->o.cache ? gpucc_cache_dir(c->o.cache) : NULL;
	int rc = gpucc_toolchain_init(&c->toolchain, memo_dir);
	if (rc != 0)
		return rc;
	c->have_toolchain = true;
	if (c->o.no_cubin) {
		/* Exactly what a machine without ptxas does, key included. */
		free(c->toolchain.ptxas);
		c->toolchain.ptxas = NULL;
	}
	/* The tools' `--version` probes of a run with an empty memo (a new
	 * cache) run side by side: clang's, for sources, beside ld.lld's and
	 * ptxas's, which build_options waits for. */
	for (size_t i = 0; i < c->module_count; i++)
		if (c->modules[i].language != GPUCC_LANGUAGE_FROM_NAME) {
			gpucc_sources_prefetch(&c->toolchain, c->o.clang);
			break;
		}
	if ((rc = build_options(c)) != 0)
		return rc;
	if ((rc = expand_sources(c)) != 0)
		return rc;
	bool any_source = false;
	for (size_t i = 0; i < c->module_count; i++)
		any_source |= c->modules[i].one_target;
	if (c->o.link_modules && (c->module_count > 1 || any_source) && (rc = link_modules(c)) != 0)
		return rc;
	/* A module made of a source is for one target only. */
	c->job_count = 0;
	for (size_t m = c->first_job_module; m < c->module_count; m++)
		c->job_count += c->modules[m].one_target ? 1 : c->target_count;
	c->jobs = calloc(c->job_count ? c->job_count : 1, sizeof *c->jobs);
	if (!c->jobs)
		return gpucc_error_oom();
	size_t next_job = 0;
	for (size_t m = c->first_job_module; m < c->module_count; m++) {
		for (size_t t = 0; t < c->target_count; t++) {
			if (c->modules[m].one_target && c->modules[m].only_target != t)
				continue;
			job *j = &c->jobs[next_job++];
			j->module = m;
			j->target = t;
			plan_job(c, j);
			if (j->r.status != GPUCC_COMPILE_PENDING)
				report_progress(c, j);
		}
	}
	fetch_from_remotes(c);
	/* Remember digests now: a run that only hits still saves its memos. */
	if (c->o.cache && gpucc_cache_writable(c->o.cache))
		gpucc_toolchain_save(&c->toolchain);
	c->planned = true;
	return 0;
}
