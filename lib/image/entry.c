/*
 * lib/image/entry.c -- queries on entries, their key and content digest, the
 * module name recorded for a file, deep copies, and the canonical form of an
 * entry described by hand.
 */
#include "entry.h"

#include "errors.h"
#include "key.h"
#include "manifest.h"

#include "gpucc/image.h"

#include <stddef.h>
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

/* ---- preparing an entry described by hand ------------------------------- */

static int compare_options(const void *a, const void *b)
{
	return strcmp(((const gpucc_option *)a)->name, ((const gpucc_option *)b)->name);
}

static int compare_libs(const void *a, const void *b)
{
	return strcmp(((const gpucc_device_lib *)a)->name, ((const gpucc_device_lib *)b)->name);
}

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int compare_sources(const void *a, const void *b)
{
	return (int)((const gpucc_payload_source *)a)->part - (int)((const gpucc_payload_source *)b)->part;
}

/* qsort that takes the NULL array of an empty list (qsort itself may not be
 * given NULL, even with a count of 0). */
static void sort(void *base, size_t count, size_t size, int (*compare)(const void *, const void *))
{
	if (count > 1)
		qsort(base, count, size, compare);
}

_Static_assert(offsetof(gpucc_option, name) == 0 && offsetof(gpucc_device_lib, name) == 0,
               "repeated_name reads a name at the start of each element");

/* The name at index i of a sorted array of count names (at stride bytes
 * from each other) that equals the one before it, or NULL. */
static const char *repeated_name(const void *names, size_t count, size_t stride)
{
	const char *base = names;
	for (size_t i = 1; i < count; i++) {
		const char *before = *(const char *const *)(base + (i - 1) * stride);
		const char *name = *(const char *const *)(base + i * stride);
		if (strcmp(before, name) == 0)
			return name;
	}
	return NULL;
}

int gpucc_entry_prepare(gpucc_entry *e, gpucc_payload_source *sources, size_t source_count)
{
	GPUCC_REQUIRE(e);
	if (source_count != 0)
		GPUCC_REQUIRE(sources);
	if (!e->module || !*e->module)
		return gpucc_error_set(GPUCC_EINVALID, "no module name");
	if (!e->target)
		return gpucc_error_set(GPUCC_EINVALID, "no target");
	gpucc_target t;
	if (gpucc_target_parse(&t, e->target) != 0)
		return gpucc_error_prefix("entry target");
	if (source_count == 0)
		return gpucc_error_set(GPUCC_EINVALID, "no payload: give ptx, cubin, hsaco or bitcode");
	for (size_t i = 0; i < source_count; i++) {
		gpucc_part part = sources[i].part;
		bool nvidia_part = part == GPUCC_PART_PTX || part == GPUCC_PART_CUBIN;
		if ((nvidia_part && t.vendor != GPUCC_VENDOR_NVIDIA) ||
		    (part == GPUCC_PART_HSACO && t.vendor != GPUCC_VENDOR_AMD))
			return gpucc_error_set(GPUCC_EINVALID, "a %s payload does not fit target '%s'",
			                       gpucc_part_name(part), e->target);
		for (size_t j = 0; j < i; j++)
			if (sources[j].part == part)
				return gpucc_error_set(GPUCC_EINVALID, "two %s payloads", gpucc_part_name(part));
	}
	for (size_t i = 0; i < e->kernel_count; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(e->kernels[i].name, e->kernels[j].name) == 0)
				return gpucc_error_set(GPUCC_EINVALID, "kernel '%s' given twice", e->kernels[i].name);

	/* The arrays are the caller's own (the contract says so), const only in
	 * the entry's read-only view. */
	gpucc_option *options = (gpucc_option *)e->options;
	gpucc_device_lib *libs = (gpucc_device_lib *)e->device_libs;
	const char **externals = (const char **)e->externals;
	sort(options, e->option_count, sizeof *options, compare_options);
	sort(libs, e->device_lib_count, sizeof *libs, compare_libs);
	sort(externals, e->external_count, sizeof *externals, compare_strings);
	const char *twice;
	if ((twice = repeated_name(options, e->option_count, sizeof *options)))
		return gpucc_error_set(GPUCC_EINVALID, "option '%s' given twice", twice);
	if ((twice = repeated_name(libs, e->device_lib_count, sizeof *libs)))
		return gpucc_error_set(GPUCC_EINVALID, "device library '%s' given twice", twice);
	if ((twice = repeated_name(externals, e->external_count, sizeof *externals)))
		return gpucc_error_set(GPUCC_EINVALID, "external '%s' given twice", twice);
	sort(sources, source_count, sizeof *sources, compare_sources);

	if (e->key_schema == 0)
		e->key_schema = GPUCC_KEY_SCHEMA;
	if (!e->gpucc_version)
		e->gpucc_version = gpucc_version();
	if (!e->llvm_version)
		e->llvm_version = gpucc_llvm_version();
	return gpucc_entry_compute_key(&e->key, e);
}
