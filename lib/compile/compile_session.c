/*
 * lib/compile/compile_session.c -- a compile session's handle (gpucc/compile.h):
 * its options, made and freed; the cubin tool and the callback before clang;
 * the targets, spelt as users write them, and the modules, from memory, a
 * file or a source; what the run used.  Planning: lib/compile/compile_plan.c;
 * running: lib/compile/compile.c.
 */
#include "compile_session.h"

#include "cache_internal.h"
#include "errors.h"
#include "escape.h"
#include "compile_worker_protocol.h"
#include "input_file.h"
#include "manifest.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void gpucc_compile_options_init(gpucc_compile_options *opts)
{
	GPUCC_REQUIRE_VOID(opts);
	memset(opts, 0, sizeof *opts);
	opts->version = GPUCC_COMPILE_OPTIONS_VERSION;
	opts->opt_level = 2;
	opts->job_timeout_seconds = GPUCC_DEFAULT_JOB_TIMEOUT;
}

int gpucc_compile_new(gpucc_compile **out, const gpucc_compile_options *opts)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	gpucc_compile_options o;
	gpucc_compile_options_init(&o);
	if (opts && opts->version == 1) /* a caller built before link_modules */
		memcpy(&o, opts, offsetof(gpucc_compile_options, link_modules));
	else if (opts && opts->version == 2) /* before sources */
		memcpy(&o, opts, offsetof(gpucc_compile_options, clang));
	else if (opts && opts->version == 3) /* before llvm_major */
		memcpy(&o, opts, offsetof(gpucc_compile_options, llvm_major));
	else if (opts && opts->version == 4) /* before no_pch */
		memcpy(&o, opts, offsetof(gpucc_compile_options, no_pch));
	else if (opts)
		o = *opts;
	if (o.version < 1 || o.version > GPUCC_COMPILE_OPTIONS_VERSION)
		return gpucc_error_set(GPUCC_EINVALID, "compile options of version %u, expected 1 to %d",
		                       o.version, GPUCC_COMPILE_OPTIONS_VERSION);
	if (o.opt_level < 0 || o.opt_level > 3)
		return gpucc_error_set(GPUCC_EINVALID, "optimisation level %d: expected 0 to 3",
		                       o.opt_level);
	/* 0: each module's own, else GPUCC_DEFAULT_CODE_OBJECT_VERSION. */
	if (o.code_object_version != 0 && (o.code_object_version < 4 || o.code_object_version > 6))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "AMDGPU code object version %d: expected 4, 5 or 6",
		                       o.code_object_version);
	gpucc_compile *c = calloc(1, sizeof *c);
	if (!c)
		return gpucc_error_oom();
	c->o = o;
	pthread_mutex_init(&c->lock, NULL);
	*out = c;
	return 0;
}

static void job_release(gpucc_compile *c, job *j)
{
	free(j->error);
	free(j->diagnostics);
	free(j->refused);
	free(j->warnings);
	for (size_t i = 0; i < j->lib_count; i++)
		free(j->lib_paths[i]);
	if (j->have_components)
		gpucc_key_components_free(j->components);
	gpucc_image_free(j->hit);
	if (j->have_out)
		gpucc_wire_result_release(&j->out);
	free(j->kernels);
	(void)c;
}

void module_release(module *m)
{
	free(m->name);
	free(m->shown);
	free(m->entry_name);
	free(m->data);
	free(m->member_data);
	free(m->member_sizes);
	free(m->member_names);
	free(m->fail_message);
	free(m->source_note);
	free(m->source_warnings);
	free(m->source_diagnostics);
	gpucc_source_result_release(&m->recorded);
}

void gpucc_compile_free(gpucc_compile *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->job_count; i++)
		job_release(c, &c->jobs[i]);
	free(c->jobs);
	for (size_t i = 0; i < c->module_count; i++)
		module_release(&c->modules[i]);
	free(c->modules);
	free(c->targets);
	for (size_t i = 0; i < c->linker_count; i++)
		free(c->linkers[i].error);
	free(c->ptxas_error);
	free(c->nvjitlink_error);
	if (c->have_toolchain)
		gpucc_toolchain_release(&c->toolchain);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

int gpucc_compile_set_cubin_tool(gpucc_compile *c, gpucc_cubin_tool tool)
{
	GPUCC_REQUIRE(c);
	if (c->planned)
		return gpucc_error_set(GPUCC_EINVALID, "the cubin tool must be chosen before planning");
	if (tool != GPUCC_CUBIN_AUTO && tool != GPUCC_CUBIN_PTXAS && tool != GPUCC_CUBIN_NVJITLINK)
		return gpucc_error_set(GPUCC_EINVALID, "cubin tool %d: expected auto, ptxas or nvjitlink",
		                       (int)tool);
	c->cubin_tool = tool;
	return 0;
}

int gpucc_compile_set_before_clang(gpucc_compile *c, bool (*fn)(void *ctx), void *ctx)
{
	GPUCC_REQUIRE(c);
	if (c->planned)
		return gpucc_error_set(GPUCC_EINVALID, "the hook before clang must be set before planning");
	c->before_clang = fn;
	c->before_clang_ctx = ctx;
	return 0;
}

/* The spellings users already write for NVIDIA processors, as CMake's
 * CMAKE_CUDA_ARCHITECTURES has them: a compute capability ("90", "90a",
 * "100f") for sm_XY, and "-real" (a cubin only) or "-virtual" (PTX only)
 * after it or after sm_XY.  Into buf gpucc's spelling, *parts what the
 * entries hold.  GPUCC_EINVALID for a suffix after anything else. */
static int user_spelling(const char *spelling, char *buf, size_t size, unsigned *parts)
{
	size_t len = strlen(spelling);
	*parts = PARTS_ALL;
	static const struct {
		const char *suffix;
		unsigned parts;
	} suffixes[] = {{"-real", PARTS_CUBIN}, {"-virtual", PARTS_PTX}};
	for (size_t i = 0; i < 2; i++) {
		size_t n = strlen(suffixes[i].suffix);
		if (len > n && strcmp(spelling + len - n, suffixes[i].suffix) == 0) {
			len -= n;
			*parts = suffixes[i].parts;
		}
	}
	size_t digits = strspn(spelling, "0123456789");
	bool capability = digits >= 2 && digits <= 3 &&
	                  (digits == len || (digits + 1 == len && (spelling[digits] == 'a' ||
	                                                           spelling[digits] == 'f')));
	if (*parts != PARTS_ALL && !capability && strncmp(spelling, "sm_", 3) != 0)
		return gpucc_error_set(GPUCC_EINVALID,
		                       "'%s': -real and -virtual follow an NVIDIA compute capability "
		                       "(90-real, sm_90-virtual)",
		                       spelling);
	if (*parts != PARTS_ALL && memchr(spelling, ':', len))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "'%s': a PTX ISA and -real or -virtual exclude each other",
		                       spelling);
	if ((int)len >= (int)size - 4)
		return gpucc_error_set(GPUCC_EINVALID, "unknown target '%s'", spelling);
	snprintf(buf, size, "%s%.*s", capability ? "sm_" : "", (int)len, spelling);
	return 0;
}

int gpucc_compile_add_target(gpucc_compile *c, const char *spelling)
{
	GPUCC_REQUIRE(c);
	if (c->planned)
		return gpucc_error_set(GPUCC_EINVALID, "targets must be added before planning");
	target t;
	memset(&t, 0, sizeof t);
	if (!spelling) /* gpucc_target_parse's refusal, "empty target" */
		return gpucc_target_parse(&t.parsed, spelling);
	char written[GPUCC_TARGET_NAME_SIZE + 16];
	int rc = user_spelling(spelling, written, sizeof written, &t.parts);
	if (rc != 0)
		return rc;
	rc = gpucc_target_parse(&t.parsed, written);
	if (rc != 0)
		return rc;
	if (t.parts != PARTS_ALL && t.parsed.vendor != GPUCC_VENDOR_NVIDIA)
		return gpucc_error_set(GPUCC_EINVALID, "'%s': -real and -virtual are NVIDIA's",
		                       spelling);
	gpucc_target_format(t.name, &t.parsed);
	snprintf(t.cpu, sizeof t.cpu, "%s", gpucc_target_cpu(&t.parsed));
	gpucc_target_llvm_features(t.features, &t.parsed);
	t.ptx_explicit = t.parsed.vendor == GPUCC_VENDOR_NVIDIA && strstr(spelling, ":ptx") != NULL;
	snprintf(t.open_name, sizeof t.open_name, "%.*s",
	         t.parsed.vendor == GPUCC_VENDOR_NVIDIA && !t.ptx_explicit ? (int)strcspn(t.name, ":")
	                                                                   : (int)strlen(t.name),
	         t.name);
	/* A target no backend knows (sm_100 with LLVM 19 alone) is refused
	 * here, as an unknown one is. */
	const gpucc_backend_info *b;
	char needer[GPUCC_TARGET_NAME_SIZE + 8];
	snprintf(needer, sizeof needer, "'%s'", spelling);
	unsigned last, needs = gpucc_target_llvm_major(&t.parsed, &last);
	if ((rc = gpucc_backend_choose(&b, needs, last, needer, c->o.llvm_major)) != 0)
		return rc;
	/* One target however often given; "90-real" and "90-virtual" are
	 * "90". */
	for (size_t i = 0; i < c->target_count; i++)
		if (strcmp(c->targets[i].name, t.name) == 0) {
			c->targets[i].parts |= t.parts;
			return 0;
		}
	target *grown = realloc(c->targets, sizeof *grown * (c->target_count + 1));
	if (!grown)
		return gpucc_error_oom();
	c->targets = grown;
	c->targets[c->target_count++] = t;
	return 0;
}

/* The module name of a module's entries: its base name (an image's bytes
 * must not depend on where it was built), spelt so that a manifest can
 * carry it.  NULL when out of memory. */
static char *entry_name_of(const char *name)
{
	const char *slash = strrchr(name, '/');
	return gpucc_manifest_spell_name(slash && slash[1] ? slash + 1 : name);
}

int gpucc_compile_add_memory(gpucc_compile *c, const char *name, const void *data, size_t size)
{
	GPUCC_REQUIRE(c);
	if (size != 0)
		GPUCC_REQUIRE(data);
	if (c->planned)
		return gpucc_error_set(GPUCC_EINVALID, "modules must be added before planning");
	module m;
	memset(&m, 0, sizeof m);
	m.name = strdup(name && *name ? name : "<memory>");
	/* Each byte is spelt in at most 4 ("\\xHH"). */
	size_t shown_size = m.name ? 4 * strlen(m.name) + 1 : 0;
	m.shown = m.name ? malloc(shown_size) : NULL;
	if (m.shown)
		gpucc_escape_controls(m.shown, shown_size, m.name);
	m.data = malloc(size ? size : 1);
	m.entry_name = m.name ? entry_name_of(m.name) : NULL;
	module *grown = realloc(c->modules, sizeof *grown * (c->module_count + 1));
	if (grown)
		c->modules = grown;
	if (!m.name || !m.shown || !m.data || !m.entry_name || !grown) {
		module_release(&m);
		return gpucc_error_oom();
	}
	if (size)
		memcpy(m.data, data, size);
	m.size = size;
	gpucc_digest_buffer(&m.sha256, m.data, m.size);
	gpucc_module_facts_read(&m.facts, m.data, m.size);
	c->modules[c->module_count++] = m;
	return 0;
}

int gpucc_compile_add_file(gpucc_compile *c, const char *path)
{
	GPUCC_REQUIRE(c);
	GPUCC_REQUIRE(path);
	if (c->planned)
		return gpucc_error_set(GPUCC_EINVALID, "modules must be added before planning");
	int fd;
	struct stat st;
	int rc = gpucc_open_input_file(&fd, &st, path, "module", "a regular file", GPUCC_EINVALID);
	if (rc)
		return rc;
	/* One file named twice (the same path, another path, a link) is one
	 * module, under the name it was first given. */
	for (size_t i = 0; i < c->module_count; i++) {
		const module *m = &c->modules[i];
		if (m->from_file && m->dev == st.st_dev && m->ino == st.st_ino) {
			close(fd);
			return 0;
		}
	}
	size_t size = (size_t)st.st_size, used = 0;
	unsigned char *data = malloc(size ? size : 1);
	if (!data) {
		close(fd);
		return gpucc_error_oom();
	}
	while (used < size) {
		ssize_t n = read(fd, data + used, size - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			char shown[GPUCC_SHOWN_PATH_SIZE];
			gpucc_escape_controls(shown, sizeof shown, path);
			rc = gpucc_error_set_errno("cannot read module '%s'", shown);
			free(data);
			close(fd);
			return rc;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	rc = gpucc_compile_add_memory(c, path, data, used);
	free(data);
	if (rc == 0) {
		module *m = &c->modules[c->module_count - 1];
		m->from_file = true;
		m->dev = st.st_dev;
		m->ino = st.st_ino;
	}
	return rc;
}

int gpucc_compile_add_source(gpucc_compile *c, const char *path, gpucc_source_language language)
{
	GPUCC_REQUIRE(c);
	GPUCC_REQUIRE(path);
	if (language == GPUCC_LANGUAGE_FROM_NAME)
		language = gpucc_source_language_of(path);
	if (language != GPUCC_LANGUAGE_HIP && language != GPUCC_LANGUAGE_CUDA &&
	    language != GPUCC_LANGUAGE_OPENCL) {
		char shown[GPUCC_SHOWN_PATH_SIZE];
		gpucc_escape_controls(shown, sizeof shown, path);
		return gpucc_error_set(GPUCC_EINVALID,
		                       "source '%s': its name ends in none of .hip, .cu and .cl: name "
		                       "its language", shown);
	}
	size_t before = c->module_count;
	int rc = gpucc_compile_add_file(c, path);
	if (rc == 0 && c->module_count > before)
		c->modules[before].language = language;
	return rc;
}

unsigned gpucc_compile_threads_used(const gpucc_compile *c)
{
	GPUCC_REQUIRE_OR(c, 0);
	return c->threads_used;
}

bool gpucc_compile_backend_loaded(const gpucc_compile *c)
{
	GPUCC_REQUIRE_OR(c, false);
	return c->backend_loaded;
}
