/*
 * lib/compile/compile.c -- compile sessions (gpucc/compile.h): once a session is
 * planned (lib/compile/compile_plan.c: every module x target job without LLVM,
 * its device libraries and key looked up), compile the misses on a pool of
 * threads, each with its compile worker process (lib/compile/compile_worker.c),
 * insert new entries into the cache as they arrive, and hand every entry to
 * the image writer in job order.  The session's handle:
 * lib/compile/compile_session.c; keys: lib/compile/compile_keys.c; results and
 * their messages: lib/compile/compile_results.c.
 *
 * Determinism: each job is compiled on its own (one module, one LLVMContext
 * per thread, device libraries cloned from a pristine copy), so a result does
 * not depend on which thread compiled it or what it compiled before; results
 * and writer additions are in job order, whatever the order of completion.
 *
 * Threads share the session under one mutex: cache insertion, counters and
 * the progress callback run under it; compiling does not.
 */
#include "compile_session.h"

#include "backend.h"
#include "cache_internal.h"
#include "gpucc/remote.h"
#include "compile_impl.h"
#include "compile_source.h"
#include "compile_worker.h"
#include "compile_worker_protocol.h"
#include "errors.h"
#include "escape.h"
#include "input_file.h"
#include "key.h"
#include "manifest.h"
#include "parallel.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpucc_build_config.h"

/* ---- compiling ------------------------------------------------------------------ */

typedef struct pool {
	gpucc_compile *c;
	size_t *misses;
	size_t miss_count;
	size_t next;       /* under c->lock */
} pool;

static int build_entry(gpucc_compile *c, job *j)
{
	gpucc_backend_result *out = &j->out;
	j->kernels = calloc(out->kernel_count ? out->kernel_count : 1, sizeof *j->kernels);
	if (!j->kernels)
		return gpucc_error_oom();
	for (size_t i = 0; i < out->kernel_count; i++) {
		j->kernels[i].name = out->kernels[i].name;
		j->kernels[i].registers = out->kernels[i].registers;
		j->kernels[i].shared_bytes = out->kernels[i].shared_bytes;
		j->kernels[i].scratch_bytes = out->kernels[i].scratch_bytes;
	}
	/* An entry of a cubin alone ("90-real") keeps no PTX, and is no entry
	 * without its cubin. */
	bool cubin_only = c->targets[j->target].parts == PARTS_CUBIN;
	if (cubin_only && !out->payloads[GPUCC_PART_CUBIN])
		return job_fail(j, GPUCC_EUNAVAILABLE,
		                "%s: %s: %s-real asks for a cubin alone, and %s", c->modules[j->module].shown,
		                j->target_name, c->targets[j->target].open_name,
		                out->ptxas_refused ? out->ptxas_refused
		                                   : "no ptxas or libnvJitLink was found to make one");
	j->payload_count = 0;
	for (int part = 0; part < GPUCC_PART_COUNT; part++) {
		if (!out->payloads[part] || (cubin_only && part == GPUCC_PART_PTX))
			continue;
		gpucc_payload *p = &j->payloads[j->payload_count];
		p->part = (gpucc_part)part;
		p->size = out->payload_sizes[part];
		gpucc_digest_buffer(&p->sha256, out->payloads[part], out->payload_sizes[part]);
		gpucc_payload_source *s = &j->sources[j->payload_count];
		s->part = (gpucc_part)part;
		s->path = NULL;
		s->data = out->payloads[part];
		s->size = out->payload_sizes[part];
		j->payload_count++;
	}
	gpucc_entry *e = &j->entry;
	e->kernel_count = out->kernel_count;
	e->kernels = j->kernels;
	e->external_count = out->external_count;
	e->externals = (const char *const *)out->externals;
	e->payload_count = j->payload_count;
	e->payloads = j->payloads;
	(void)c;
	return 0;
}

/* Whether an insert that failed with sys_errno (gpucc_error_last_errno)
 * would fail for every entry: the cache's file system is full, over
 * quota, past ulimit -f, read-only or failing.  Anything else (a
 * permission, a directory or a file where a name is needed) is one
 * entry's or one shard's problem. */
static bool cache_wide_failure(int sys_errno)
{
	return sys_errno == ENOSPC || sys_errno == EDQUOT || sys_errno == EFBIG ||
	       sys_errno == EROFS || sys_errno == EIO;
}

static void compile_one(pool *p, gpucc_worker *worker, job *j)
{
	if (gpucc_backend_present(j->backend) != 0 || access(j->backend->worker, X_OK) != 0) {
		gpucc_compile *c = p->c;
		if (!j->backend->present)
			job_fail(j, GPUCC_EUNAVAILABLE, "%s: %s: %s", j->r.module, j->r.target,
			         gpucc_error_last()->message);
		else
			job_fail(j, GPUCC_EUNAVAILABLE, "%s: %s: the compile worker '%s' is not beside the "
			         "LLVM backend: reinstall gpucc", j->r.module, j->r.target,
			         j->backend->worker);
		gpucc_error_clear();
		pthread_mutex_lock(&c->lock);
		report_progress(c, j);
		pthread_mutex_unlock(&c->lock);
		return;
	}
	gpucc_compile *c = p->c;
	pthread_mutex_lock(&c->lock);
	c->backend_loaded = true; /* by the worker this job goes to */
	pthread_mutex_unlock(&c->lock);
	const module *m = &c->modules[j->module];
	const target *t = &c->targets[j->target];
	bool nvidia = t->parsed.vendor == GPUCC_VENDOR_NVIDIA;
	gpucc_backend_job bj = {
		.module_name = m->shown,
		.module_data = m->member_count ? m->member_data[0] : m->data,
		.module_size = m->member_count ? m->member_sizes[0] : m->size,
		.link_count = m->member_count ? m->member_count - 1 : 0,
		.link_data = m->member_count ? m->member_data + 1 : NULL,
		.link_sizes = m->member_count ? m->member_sizes + 1 : NULL,
		.link_names = m->member_count ? m->member_names + 1 : NULL,
		.target_name = j->target_name,
		.vendor = t->parsed.vendor,
		.triple = gpucc_target_triple(&t->parsed),
		.cpu = t->cpu,
		.features = j->features,
		.sm = t->parsed.sm,
		.sm_accelerated = t->parsed.sm_accelerated,
		.opt_level = c->o.opt_level,
		.fast_math = c->o.fast_math,
		.ftz = c->o.ftz,
		.debug_info = c->o.debug_info,
		.code_object_version = j->code_object_version,
		.device_lib_count = j->lib_count,
		.device_lib_paths = (const char *const *)j->lib_paths,
		.device_lib_data = j->lib_data,
		.device_lib_sizes = j->lib_sizes,
		.ptxas = nvidia && c->targets[j->target].parts & PARTS_CUBIN ? c->toolchain.ptxas : NULL,
		.ld_lld = nvidia ? NULL : job_linker(c, j->backend)->path,
		.nvjitlink = nvidia && c->targets[j->target].parts & PARTS_CUBIN ? c->nvjitlink : NULL,
		.ld_lld_in_process = !nvidia && job_linker(c, j->backend)->in_process,
	};
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	int rc = gpucc_worker_compile(worker, &bj, &j->out);
	j->have_out = true;
	j->r.seconds = seconds_since(&start);
	if (j->out.diagnostics) {
		j->diagnostics = strdup(j->out.diagnostics);
		j->r.diagnostics = j->diagnostics;
	}
	if (rc == 0 && j->out.ptxas_refused &&
	    asprintf(&j->refused, "%s %s does not compile for this target (%s): PTX only, which "
	             "the driver compiles when it loads it", c->nvjitlink ? "nvJitLink" : "ptxas",
	             c->nvjitlink ? c->nvjitlink_version : c->ptxas_version,
	             j->out.ptxas_refused) < 0)
		j->refused = NULL;
	if (j->refused && c->targets[j->target].parts & PARTS_PTX) /* -real: an error below */
		add_warning(j, "%s: %s: %s", m->shown, j->target_name, j->refused);
	if (rc != 0 && j->out.no_kernels && m->from_source) {
		/* Host code only (clang's own build of it has no device code
		 * either): nothing to add, which is worth a warning, not an
		 * error, unless no unit of the run has a kernel
		 * (gpucc_compile_run). */
		job_fail(j, 0, "%s: %s: skipped: the source defines no kernel", m->shown,
		         job_shown_target(c, j));
		j->r.status = GPUCC_COMPILE_SKIPPED;
		j->no_kernels = true;
		j->warnings_before_no_kernels = j->warnings ? strlen(j->warnings) : 0;
		add_warning(j, "%s: %s: the source defines no kernel (host code only): it adds nothing",
		            m->shown, job_shown_target(c, j));
	} else if (rc != 0) {
		job_fail(j, rc, "%s", j->out.message ? j->out.message : "compile failed");
	} else if (build_entry(c, j) != 0) {
		if (j->r.status != GPUCC_COMPILE_FAILED) /* build_entry said why */
			job_fail(j, GPUCC_ERROR, "%s: %s: out of memory", m->shown, j->target_name);
	} else if (gpucc_entry_names_check(&j->entry) != 0) {
		/* A kernel or external no manifest can carry: this job's failure,
		 * before anything is cached or written. */
		job_fail(j, GPUCC_ECOMPILE, "%s: %s: %s: rename it", m->shown, j->target_name,
		         gpucc_error_last()->message);
		gpucc_error_clear();
	} else {
		j->r.status = GPUCC_COMPILE_COMPILED;
		j->r.entry = &j->entry;
	}
	pthread_mutex_lock(&c->lock);
	if (j->r.status == GPUCC_COMPILE_COMPILED && c->o.cache && gpucc_cache_writable(c->o.cache) &&
	    !c->cache_failed) {
		if (gpucc_cache_insert(c->o.cache, &j->entry, j->sources, j->payload_count,
		                       GPUCC_CONFLICT_LAST) != 0) {
			/* A cache problem never breaks a build.  What
			 * fails every insert (a full disk or quota, ulimit -f, a
			 * file system gone read-only, an I/O error) is said once and
			 * ends caching for the run; what fails one entry (a
			 * directory or an unreadable file at its name, a shard it
			 * may not write) leaves the others to be cached. */
			bool whole_cache = cache_wide_failure(gpucc_error_last_errno());
			add_warning(j, "%s: %s: not cached: %s%s", m->shown, j->target_name,
			            gpucc_error_last()->message,
			            whole_cache ? "; nothing more is cached in this run" : "");
			c->cache_failed |= whole_cache;
			gpucc_error_clear();
		} else {
			store_warnings(c, j);
		}
	}
	report_progress(c, j);
	pthread_mutex_unlock(&c->lock);
}

/* A thread of the pool (gpucc_pool_start), or the calling thread when none
 * started. */
static int worker(void *arg, size_t thread)
{
	(void)thread;
	pool *p = arg;
	gpucc_compile *c = p->c;
	gpucc_worker_limits limits = {c->o.job_timeout_seconds, c->o.job_memory_bytes};
	/* One worker slot per backend this thread meets (its LLVM's worker). */
	const gpucc_backend_info *backends;
	size_t backend_count = gpucc_backends(&backends);
	gpucc_worker *w[8] = {NULL};
	for (;;) {
		pthread_mutex_lock(&c->lock);
		size_t index = p->next < p->miss_count ? p->misses[p->next++] : (size_t)-1;
		pthread_mutex_unlock(&c->lock);
		if (index == (size_t)-1)
			break;
		job *j = &c->jobs[index];
		size_t slot = (size_t)(j->backend - backends);
		if (slot >= backend_count || slot >= sizeof w / sizeof w[0])
			slot = 0;
		if (!w[slot] && !(w[slot] = gpucc_worker_new(j->backend->worker, j->backend->version,
		                                              &limits))) {
			job_fail(j, GPUCC_ERROR, "%s: %s: out of memory", j->r.module, j->r.target);
			pthread_mutex_lock(&c->lock);
			report_progress(c, j);
			pthread_mutex_unlock(&c->lock);
			continue;
		}
		compile_one(p, w[slot], j);
	}
	for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
		gpucc_worker_free(w[i]);
	return 0;
}

static unsigned thread_count(const gpucc_compile *c, size_t misses)
{
	unsigned n = c->o.jobs;
	if (n == 0) { /* the CPUs this process may use (taskset, a CI runner's cpuset) */
		size_t cpus = gpucc_cpu_count();
		n = cpus < 256 ? (unsigned)cpus : 256;
	}
	if (n > misses)
		n = (unsigned)misses;
	if (n > 256)
		n = 256;
	return n ? n : 1;
}

static int compile_misses(gpucc_compile *c)
{
	pool p = {.c = c};
	p.misses = calloc(c->job_count ? c->job_count : 1, sizeof *p.misses);
	if (!p.misses)
		return gpucc_error_oom();
	for (size_t i = 0; i < c->job_count; i++)
		if (c->jobs[i].r.status == GPUCC_COMPILE_PENDING)
			p.misses[p.miss_count++] = i;
	if (p.miss_count == 0) {
		free(p.misses);
		return 0;
	}
	/* The workers load LLVM, each job's backend's (compile_one), and
	 * refuse to compile when it is not the LLVM that backend was built
	 * with, which keys name: this process does not. */
	unsigned n = thread_count(c, p.miss_count);
	gpucc_pool threads;
	/* LLVM recurses deeply: 16 MiB stacks. */
	unsigned started = (unsigned)gpucc_pool_start(&threads, n, (size_t)16 << 20, worker, &p);
	if (started == 0)
		worker(&p, 0);
	gpucc_pool_join(&threads); /* worker fails no job of its own: 0 */
	c->threads_used = started ? started : 1;
	/* Jobs no thread could take (every thread failed to start). */
	for (size_t i = 0; i < p.miss_count; i++) {
		job *j = &c->jobs[p.misses[i]];
		if (j->r.status == GPUCC_COMPILE_PENDING) {
			job_fail(j, GPUCC_ERROR, "%s: %s: no compile thread could start", j->r.module,
			         j->r.target);
			report_progress(c, j);
		}
	}
	free(p.misses);
	return 0;
}

static int add_to_writer(gpucc_compile *c)
{
	for (size_t i = 0; i < c->job_count; i++) {
		job *j = &c->jobs[i];
		int rc = 0;
		if (j->r.status == GPUCC_COMPILE_HIT)
			rc = gpucc_image_writer_add_from(c->o.writer, j->hit, &j->hit_entry);
		else if (j->r.status == GPUCC_COMPILE_COMPILED)
			rc = gpucc_image_writer_add(c->o.writer, &j->entry, j->sources, j->payload_count);
		if (rc != 0)
			return gpucc_error_prefix("%s: %s", j->r.module, j->r.target);
	}
	return 0;
}

int gpucc_compile_run(gpucc_compile *c)
{
	GPUCC_REQUIRE(c);
	if (c->ran)
		return gpucc_error_set(GPUCC_EINVALID, "this compile session has already run");
	int rc = gpucc_compile_plan(c);
	if (rc != 0)
		return rc;
	c->ran = true;
	if ((rc = compile_misses(c)) != 0)
		return rc;
	if (c->o.cache)
		store_records(c);
	/* Source units of host code only add nothing; a run in which no unit
	 * has a kernel has nothing to give, and fails as one would. */
	bool any_entry = false, any_empty = false;
	for (size_t i = 0; i < c->job_count; i++) {
		gpucc_compile_status status = c->jobs[i].r.status;
		any_entry |= status == GPUCC_COMPILE_HIT || status == GPUCC_COMPILE_COMPILED;
		any_empty |= c->jobs[i].no_kernels;
	}
	for (size_t i = 0; i < c->job_count && any_empty && !any_entry; i++) {
		job *j = &c->jobs[i];
		if (!j->no_kernels)
			continue;
		/* The error says it: the warning goes. */
		if (j->warnings) {
			j->warnings[j->warnings_before_no_kernels] = '\0';
			j->r.warnings = *j->warnings ? j->warnings : NULL;
		}
		job_fail(j, GPUCC_ECOMPILE,
		         "%s: %s: no kernels: the source defines none (host code only), and no other "
		         "unit of the run does", c->modules[j->module].shown, job_shown_target(c, j));
	}
	bool failed = false;
	for (size_t i = 0; i < c->job_count; i++)
		failed |= c->jobs[i].r.status == GPUCC_COMPILE_FAILED;
	/* A failed run adds nothing (the caller will not commit a partial
	 * image), unless the caller keeps going. */
	if (c->o.writer && (!failed || c->o.keep_going) && (rc = add_to_writer(c)) != 0)
		return rc;
	for (size_t i = 0; i < c->job_count; i++) {
		const gpucc_compile_result *r = &c->jobs[i].r;
		if (r->status == GPUCC_COMPILE_FAILED)
			return gpucc_error_set(r->error_code, "%s", r->error);
	}
	return 0;
}
