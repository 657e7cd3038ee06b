/*
 * formats/key.c -- the key schema, version 1 (formats/key.md).
 *
 * key = SHA-256("gpucc-key\0" || field...), each field being
 * u32be(len name) || name || u64be(len value) || value, in this order:
 * schema, gpucc, llvm, device-libs, target, options, module.  Lengths make
 * the encoding unambiguous: no choice of values can make two different
 * component lists hash the same bytes.
 */
#include "key.h"

#include "byte_buffer.h"
#include "errors.h"
#include "sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char key_magic[] = "gpucc-key"; /* hashed with its NUL */

/* A component value being built (formats/byte_buffer.h). */
typedef gpucc_buffer text;

static int text_append(text *t, const void *bytes, size_t n)
{
	return gpucc_buffer_append(t, bytes, n) == 0 ? 0 : gpucc_error_oom();
}

static int text_appends(text *t, const char *s)
{
	return text_append(t, s, strlen(s));
}

static int check_sorted(const gpucc_entry *e)
{
	for (size_t i = 1; i < e->device_lib_count; i++)
		if (strcmp(e->device_libs[i - 1].name, e->device_libs[i].name) >= 0)
			return gpucc_error_set(GPUCC_EINVALID,
			                       "device libraries must be sorted by name and unique ('%s')",
			                       e->device_libs[i].name);
	for (size_t i = 1; i < e->option_count; i++)
		if (strcmp(e->options[i - 1].name, e->options[i].name) >= 0)
			return gpucc_error_set(GPUCC_EINVALID,
			                       "options must be sorted by name and unique ('%s')",
			                       e->options[i].name);
	for (size_t i = 0; i < e->option_count; i++)
		if (strchr(e->options[i].name, '=') || strchr(e->options[i].name, '\n') ||
		    strchr(e->options[i].value, '\n'))
			return gpucc_error_set(GPUCC_EINVALID, "option '%s' has '=' or a newline in it",
			                       e->options[i].name);
	if (e->key_schema != GPUCC_KEY_SCHEMA)
		return gpucc_error_set(GPUCC_EVERSION, "key schema %u is not supported (this gpucc uses %d)",
		                       e->key_schema, GPUCC_KEY_SCHEMA);
	if (!e->gpucc_version || !e->llvm_version || !e->target)
		return gpucc_error_set(GPUCC_EINVALID, "an entry needs gpucc and llvm versions and a target");
	return 0;
}

/* The printable values of the components, in schema order. */
static int component_values(text values[GPUCC_KEY_COMPONENTS], const gpucc_entry *e)
{
	char number[32];
	char hex[GPUCC_DIGEST_HEX_SIZE];
	int rc = 0;
	snprintf(number, sizeof number, "%u", e->key_schema);
	rc |= text_appends(&values[0], number);
	rc |= text_appends(&values[1], e->gpucc_version);
	rc |= text_appends(&values[2], e->llvm_version);
	for (size_t i = 0; i < e->device_lib_count; i++) {
		gpucc_digest_to_hex(hex, &e->device_libs[i].sha256);
		rc |= text_appends(&values[3], e->device_libs[i].name);
		rc |= text_append(&values[3], "\0", 1);
		rc |= text_appends(&values[3], hex);
		rc |= text_appends(&values[3], "\n");
	}
	rc |= text_appends(&values[4], e->target);
	for (size_t i = 0; i < e->option_count; i++) {
		rc |= text_appends(&values[5], e->options[i].name);
		rc |= text_appends(&values[5], "=");
		rc |= text_appends(&values[5], e->options[i].value);
		rc |= text_appends(&values[5], "\n");
	}
	rc |= text_append(&values[6], e->module_sha256.bytes, GPUCC_DIGEST_SIZE);
	return rc ? GPUCC_ERROR : 0;
}

static const char *const component_names[GPUCC_KEY_COMPONENTS] = {
	"schema", "gpucc", "llvm", "device-libs", "target", "options", "module",
};

static void put_be(unsigned char *out, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--) {
		out[i] = (unsigned char)(v & 0xff);
		v >>= 8;
	}
}

int gpucc_key_compute(gpucc_digest *out, const gpucc_entry *e)
{
	int rc = check_sorted(e);
	if (rc)
		return rc;
	text values[GPUCC_KEY_COMPONENTS];
	memset(values, 0, sizeof values);
	rc = component_values(values, e);
	if (rc == 0) {
		gpucc_sha256 ctx;
		gpucc_sha256_init(&ctx);
		gpucc_sha256_update(&ctx, key_magic, sizeof key_magic);
		for (int i = 0; i < GPUCC_KEY_COMPONENTS; i++) {
			unsigned char name_len[4], value_len[8];
			put_be(name_len, strlen(component_names[i]), 4);
			put_be(value_len, values[i].size, 8);
			gpucc_sha256_update(&ctx, name_len, sizeof name_len);
			gpucc_sha256_update(&ctx, component_names[i], strlen(component_names[i]));
			gpucc_sha256_update(&ctx, value_len, sizeof value_len);
			if (values[i].size)
				gpucc_sha256_update(&ctx, values[i].data, values[i].size);
		}
		gpucc_sha256_final(&ctx, out->bytes);
	}
	for (int i = 0; i < GPUCC_KEY_COMPONENTS; i++)
		free(values[i].data);
	return rc;
}

int gpucc_key_components(gpucc_key_component out[GPUCC_KEY_COMPONENTS], const gpucc_entry *e)
{
	int rc = check_sorted(e);
	if (rc)
		return rc;
	text values[GPUCC_KEY_COMPONENTS];
	memset(values, 0, sizeof values);
	rc = component_values(values, e);
	for (int i = 0; i < GPUCC_KEY_COMPONENTS; i++) {
		out[i].name = component_names[i];
		out[i].value = NULL;
	}
	if (rc) {
		for (int i = 0; i < GPUCC_KEY_COMPONENTS; i++)
			free(values[i].data);
		return rc;
	}
	/* Printable forms: the module digest in hex, device libraries as
	 * "name sha256" lines. */
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &e->module_sha256);
	free(values[6].data);
	values[6].data = strdup(hex);
	for (size_t i = 0; values[3].data && i < values[3].size; i++)
		if (values[3].data[i] == '\0')
			values[3].data[i] = ' ';
	for (int i = 0; i < GPUCC_KEY_COMPONENTS; i++) {
		out[i].value = values[i].data ? values[i].data : strdup("");
		if (!out[i].value) {
			gpucc_key_components_free(out);
			return gpucc_error_oom();
		}
	}
	return 0;
}

void gpucc_key_components_free(gpucc_key_component c[GPUCC_KEY_COMPONENTS])
{
	for (int i = 0; i < GPUCC_KEY_COMPONENTS; i++) {
		free(c[i].value);
		c[i].value = NULL;
	}
}
