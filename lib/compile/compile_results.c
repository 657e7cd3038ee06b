/*
 * lib/compile/compile_results.c -- a compile session's results
 * (gpucc_compile_result): reading them, a job's failure, warnings and
 * clang's diagnostics as messages say them, kept in the cache beside an
 * entry and replayed on a hit, progress reports, the sources' records
 * written once the jobs have keys, and the dependency file of a run.
 */
#include "compile_session.h"

#include "cache_internal.h"
#include "errors.h"
#include "escape.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

double seconds_since(const struct timespec *start)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

size_t gpucc_compile_result_count(const gpucc_compile *c)
{
	GPUCC_REQUIRE_OR(c, 0);
	return c->job_count;
}

const gpucc_compile_result *gpucc_compile_result_at(const gpucc_compile *c, size_t index)
{
	GPUCC_REQUIRE_OR(c, NULL);
	return index < c->job_count ? &c->jobs[index].r : NULL;
}

/* Record why job j failed (or, for the caller, is skipped): r.error is
 * the message on one line, its control characters spelt as in libgpucc's
 * error messages (formats/escape.h), whatever it quotes (a module's triple,
 * the backend's words). */
/* A message of job_fail's or add_warning's: formatted, its control
 * characters spelt as in libgpucc's error messages (formats/escape.h). */
static char *spell_message(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Whole, however long (a C++ name, a tool's line): NULL when out of memory. */
static char *spell_message(const char *fmt, va_list ap)
{
	char *raw = NULL;
	if (vasprintf(&raw, fmt, ap) < 0)
		return NULL;
	size_t size = strlen(raw) * GPUCC_ESCAPED_BYTE_MAX + 1;
	char *out = malloc(size);
	if (out)
		gpucc_escape_controls(out, size, raw);
	free(raw);
	return out;
}

int job_fail(job *j, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *message = spell_message(fmt, ap);
	va_end(ap);
	free(j->error);
	j->error = message;
	j->r.error = j->error ? j->error : "out of memory";
	j->r.error_code = code;
	j->r.status = GPUCC_COMPILE_FAILED;
	j->r.entry = NULL;
	return code;
}

void report_progress(gpucc_compile *c, job *j)
{
	/* Under c->lock, or on the planning thread before workers start. */
	c->done++;
	if (j->r.status == GPUCC_COMPILE_HIT)
		c->hits++;
	if (j->r.status == GPUCC_COMPILE_FAILED)
		c->failed++;
	if (!c->o.progress)
		return;
	gpucc_compile_progress p = {c->done, c->job_count, c->hits, c->failed, seconds_since(&c->start),
	                            &j->r, 0, 0};
	c->o.progress(c->o.progress_ctx, &p);
}

/* Append one warning line ("MODULE: TARGET: warning: ...") to the job's. */
void add_warning(job *j, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *line = spell_message(fmt, ap);
	va_end(ap);
	if (!line)
		return;
	size_t old = j->warnings ? strlen(j->warnings) : 0;
	char *grown = realloc(j->warnings, old + strlen(line) + 2);
	if (!grown) {
		free(line);
		return;
	}
	memcpy(grown + old, line, strlen(line));
	memcpy(grown + old + strlen(line), "\n", 2);
	free(line);
	j->warnings = grown;
	j->r.warnings = grown;
}

/* Append one line of the tools' own ("MODULE: TARGET: ...") to the job's
 * diagnostics, as the backend gives them. */
void add_diagnostic(job *j, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *line = NULL;
	int n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	size_t old = j->diagnostics ? strlen(j->diagnostics) : 0;
	char *grown = realloc(j->diagnostics, old + (size_t)n + 2);
	if (grown) {
		memcpy(grown + old, line, (size_t)n);
		memcpy(grown + old + (size_t)n, "\n", 2);
		j->diagnostics = grown;
		j->r.diagnostics = grown;
	}
	free(line);
}

/* The target job j names in its messages: as the module fits it, except
 * that a source's module that asks for no PTX ISA (no function: host code
 * only) leaves an NVIDIA target's open ("sm_75"), clang's choice, rather
 * than naming the target's default. */
const char *job_shown_target(const gpucc_compile *c, const job *j)
{
	const module *m = &c->modules[j->module];
	const target *t = &c->targets[j->target];
	if (m->from_source && !t->ptx_explicit && m->facts.ptx_isa == 0)
		return t->open_name;
	return j->target_name[0] ? j->target_name : t->name;
}

/* Append each line of text to *out as "KIND BODY\n", BODY what follows
 * prefix in the line (the whole line when it lacks the prefix), or what
 * follows mark in it when mark is given (lines without it are left out). */
static void add_kind_lines(char **out, size_t *size, char kind, const char *text,
                           const char *prefix, const char *mark)
{
	for (const char *p = text; p && *p;) {
		size_t len = strcspn(p, "\n");
		const char *body = p;
		size_t body_len = len;
		if (mark) {
			const char *at = memmem(p, len, mark, strlen(mark));
			body = at ? at + strlen(mark) : NULL;
			body_len = at ? len - (size_t)(body - p) : 0;
		} else if (len >= strlen(prefix) && memcmp(p, prefix, strlen(prefix)) == 0) {
			body = p + strlen(prefix);
			body_len = len - strlen(prefix);
		}
		char *grown = body && len ? realloc(*out, *size + body_len + 4) : NULL;
		if (grown) {
			grown[(*size)++] = kind;
			grown[(*size)++] = ' ';
			memcpy(grown + *size, body, body_len);
			*size += body_len;
			grown[(*size)++] = '\n';
			grown[*size] = '\0';
			*out = grown;
		}
		p += len + (p[len] == '\n');
	}
}

/* Keep beside a compiled entry in the cache what its compile said that a
 * hit would not say again, for hits to replay (replay_warnings): clang's
 * warnings ("c"), the tools' lines ("d": ptxas's or nvJitLink's warnings),
 * and the cubin tool's refusal of the target ("w").  Without the
 * "MODULE: TARGET: " prefix, which the hit gives its own.  Under c->lock. */
void store_warnings(gpucc_compile *c, job *j)
{
	const module *m = &c->modules[j->module];
	char *prefix = NULL;
	if (asprintf(&prefix, "%s: %s: ", m->shown, j->target_name) < 0)
		return;
	char *text = NULL;
	size_t size = 0;
	add_kind_lines(&text, &size, 'c', m->source_warnings, prefix, ": clang: ");
	add_kind_lines(&text, &size, 'd', j->out.diagnostics, prefix, NULL);
	add_kind_lines(&text, &size, 'w', j->refused, prefix, NULL);
	gpucc_cache_warnings_store(c->o.cache, &j->entry.key, text);
	free(text);
	free(prefix);
}

/* A hit says what the compile that made its entry said (store_warnings), as
 * a ccache hit replays the compiler's stderr: the tools' lines and
 * warnings, and clang's warnings when clang did not run now (with_clang: a
 * source's record led to the entry). */
void replay_warnings(gpucc_compile *c, job *j, bool with_clang)
{
	if (!c->o.cache || j->r.status != GPUCC_COMPILE_HIT)
		return;
	const module *m = &c->modules[j->module];
	char *text = gpucc_cache_warnings_load(c->o.cache, &j->r.key);
	for (const char *p = text; p && *p;) {
		size_t len = strcspn(p, "\n");
		int body_len = len >= 2 ? (int)len - 2 : 0;
		const char *body = p + (len >= 2 ? 2 : len);
		if (p[0] == 'c' && with_clang)
			add_warning(j, "%s: %s: clang: %.*s", m->shown, j->target_name, body_len, body);
		else if (p[0] == 'w')
			add_warning(j, "%s: %s: %.*s", m->shown, j->target_name, body_len, body);
		else if (p[0] == 'd')
			add_diagnostic(j, "%s: %s: %.*s", m->shown, j->target_name, body_len, body);
		p += len + (p[len] == '\n');
	}
	free(text);
}

/* Write the records of the sources whose IR clang made, now that the jobs
 * have keys: for a job that hit or was compiled. */
void store_records(gpucc_compile *c)
{
	for (size_t i = 0; i < c->job_count; i++) {
		const job *j = &c->jobs[i];
		const module *m = &c->modules[j->module];
		if (m->recorded.record && (j->r.status == GPUCC_COMPILE_HIT ||
		                           j->r.status == GPUCC_COMPILE_COMPILED))
			gpucc_source_record_store(c->o.cache, &m->recorded, &j->entry.key);
	}
}

/* A source library of each_source_lib that exists, into the list. */
static void depfile_lib(void *ctx, const char *dir, const char *file)
{
	char path[8192];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", dir ? dir : "", file);
	if (dir && stat(path, &st) == 0)
		gpucc_strlist_push(ctx, path, strlen(path));
}

int gpucc_compile_write_depfile(gpucc_compile *c, const char *path, const char *rule_target)
{
	GPUCC_REQUIRE(c);
	GPUCC_REQUIRE(path);
	GPUCC_REQUIRE(rule_target);
	if (!c->ran)
		return gpucc_error_set(GPUCC_EINVALID, "the dependency file is written after the run");
	/* Repeats are many (every target's module of a source reads its
	 * headers): gpucc_depfile_write names each file once. */
	gpucc_strlist deps = {0};
	bool source_libs[2] = {false, false};
	for (size_t i = 0; i < c->module_count; i++) {
		const module *m = &c->modules[i];
		if (m->from_file || m->from_source)
			gpucc_strlist_push(&deps, m->name, strlen(m->name));
		for (size_t k = 0; k < m->recorded.reads.count; k++)
			gpucc_strlist_push(&deps, m->recorded.reads.items[k],
			                   strlen(m->recorded.reads.items[k]));
		/* A hit from a record planned no libraries: those its record's
		 * name covers, whichever the compile linked. */
		gpucc_vendor v = m->from_source ? c->targets[m->only_target].parsed.vendor : 0;
		if (m->from_source && !source_libs[v == GPUCC_VENDOR_NVIDIA]) {
			source_libs[v == GPUCC_VENDOR_NVIDIA] = true;
			each_source_lib(c, v, depfile_lib, &deps);
		}
	}
	bool vendors[2] = {false, false}; /* AMD, NVIDIA: a job of the vendor ran or hit */
	for (size_t i = 0; i < c->job_count; i++) {
		vendors[c->targets[c->jobs[i].target].parsed.vendor == GPUCC_VENDOR_NVIDIA] = true;
		for (size_t k = 0; k < c->jobs[i].lib_count; k++)
			if (!c->jobs[i].lib_data[k] && c->jobs[i].lib_paths[k])
				gpucc_strlist_push(&deps, c->jobs[i].lib_paths[k],
				                   strlen(c->jobs[i].lib_paths[k]));
	}
	/* The tools whose versions the keys name: another one, another entry
	 * (AMD: each backend's ld.lld, as a source's record names them all). */
	const char *tools[] = {vendors[1] ? c->toolchain.ptxas : NULL, vendors[1] ? c->nvjitlink : NULL};
	for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
		if (tools[i])
			gpucc_strlist_push(&deps, tools[i], strlen(tools[i]));
	for (size_t i = 0; vendors[0] && i < c->linker_count; i++)
		if (c->linkers[i].path)
			gpucc_strlist_push(&deps, c->linkers[i].path, strlen(c->linkers[i].path));
	int rc = deps.failed ? gpucc_error_oom()
	                     : gpucc_depfile_write(path, rule_target, (const char *const *)deps.items,
	                                           deps.count);
	gpucc_strlist_release(&deps);
	return rc;
}
