/*
 * lib/entry.c -- queries on entries, their key and content digest, the
 * module name recorded for a file, and deep copies.
 */
#include "entry.h"

#include "errors.h"
#include "key.h"
#include "manifest.h"

#include <stdlib.h>
#include <string.h>

const gpucc_payload *gpucc_entry_payload(const gpucc_entry *e, gpucc_part part)
{
	GPUCC_REQUIRE_OR(e, NULL);
	for (size_t i = 0; i < e->payload_count; i++)
		if (e->payloads[i].part == part)
			return &e->payloads[i];
	return NULL;
}

const char *gpucc_entry_option(const gpucc_entry *e, const char *name)
{
	GPUCC_REQUIRE_OR(e, NULL);
	GPUCC_REQUIRE_OR(name, NULL);
	for (size_t i = 0; i < e->option_count; i++)
		if (strcmp(e->options[i].name, name) == 0)
			return e->options[i].value;
	return NULL;
}

int gpucc_entry_compute_key(gpucc_digest *out, const gpucc_entry *e)
{
	/* The key covers the target's spelling: only the canonical one names
	 * a target the way every compile does. */
	gpucc_target t;
	char canonical[GPUCC_TARGET_NAME_SIZE];
	GPUCC_REQUIRE(out);
	GPUCC_REQUIRE(e);
	if (!e->target)
		return gpucc_error_set(GPUCC_EINVALID, "an entry needs a target");
	if (gpucc_target_parse(&t, e->target) != 0)
		return gpucc_error_prefix("entry target");
	gpucc_target_format(canonical, &t);
	if (strcmp(canonical, e->target) != 0)
		return gpucc_error_set(GPUCC_EINVALID,
		                       "entry target '%s' is not canonical: its spelling is '%s'",
		                       e->target, canonical);
	return gpucc_key_compute(out, e);
}

int gpucc_entry_content_digest(gpucc_digest *out, const gpucc_entry *e)
{
	GPUCC_REQUIRE(out);
	GPUCC_REQUIRE(e);
	char *record;
	int rc = gpucc_manifest_entry_record(&record, e);
	if (rc)
		return rc;
	gpucc_digest_buffer(out, record, strlen(record));
	free(record);
	return 0;
}

int gpucc_module_name_from_path(char **out, const char *path)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	GPUCC_REQUIRE(path);
	const char *slash = strrchr(path, '/');
	char *name = gpucc_manifest_spell_name(slash && slash[1] ? slash + 1 : path);
	if (!name)
		return gpucc_error_oom();
	*out = name;
	return 0;
}

int gpucc_entry_copy(gpucc_arena *a, gpucc_entry *dst, const gpucc_entry *src)
{
	*dst = *src;
	dst->module = gpucc_arena_strdup(a, src->module ? src->module : "");
	dst->target = gpucc_arena_strdup(a, src->target);
	dst->triple = gpucc_arena_strdup(a, src->triple);
	dst->gpucc_version = gpucc_arena_strdup(a, src->gpucc_version);
	dst->llvm_version = gpucc_arena_strdup(a, src->llvm_version);
	if (!dst->module || (src->target && !dst->target) || (src->triple && !dst->triple) ||
	    (src->gpucc_version && !dst->gpucc_version) || (src->llvm_version && !dst->llvm_version))
		return gpucc_error_oom();

	gpucc_device_lib *libs = gpucc_arena_alloc(a, (src->device_lib_count + 1) * sizeof *libs);
	gpucc_option *opts = gpucc_arena_alloc(a, (src->option_count + 1) * sizeof *opts);
	gpucc_kernel *kernels = gpucc_arena_alloc(a, (src->kernel_count + 1) * sizeof *kernels);
	const char **ext = gpucc_arena_alloc(a, (src->external_count + 1) * sizeof *ext);
	gpucc_payload *payloads = gpucc_arena_alloc(a, (src->payload_count + 1) * sizeof *payloads);
	if (!libs || !opts || !kernels || !ext || !payloads)
		return gpucc_error_oom();
	for (size_t i = 0; i < src->device_lib_count; i++) {
		libs[i] = src->device_libs[i];
		if (!(libs[i].name = gpucc_arena_strdup(a, src->device_libs[i].name)))
			return gpucc_error_oom();
	}
	for (size_t i = 0; i < src->option_count; i++) {
		opts[i].name = gpucc_arena_strdup(a, src->options[i].name);
		opts[i].value = gpucc_arena_strdup(a, src->options[i].value);
		if (!opts[i].name || !opts[i].value)
			return gpucc_error_oom();
	}
	for (size_t i = 0; i < src->kernel_count; i++) {
		kernels[i] = src->kernels[i];
		if (!(kernels[i].name = gpucc_arena_strdup(a, src->kernels[i].name)))
			return gpucc_error_oom();
	}
	for (size_t i = 0; i < src->external_count; i++)
		if (!(ext[i] = gpucc_arena_strdup(a, src->externals[i])))
			return gpucc_error_oom();
	if (src->payload_count)
		memcpy(payloads, src->payloads, src->payload_count * sizeof *payloads);
	dst->device_libs = libs;
	dst->options = opts;
	dst->kernels = kernels;
	dst->externals = ext;
	dst->payloads = payloads;
	return 0;
}
