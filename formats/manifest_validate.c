/*
 * formats/manifest_validate.c -- what a manifest's entry may hold
 * (formats/manifest.md): the names it can carry, spelt for messages, and
 * the checks of every field that writers and the reader make.
 */
#include "manifest_internal.h"

#include "errors.h"
#include "hex.h"
#include "json_reader.h" /* gpucc_json_utf8_sequence */
#include "key.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- names ---------------------------------------------------------------- */

/* The spelling of the sequence at p (avail bytes there) in a name: a
 * control character as \n, \t or \xHH, a byte that starts no valid UTF-8
 * sequence as \xHH, anything else (ASCII, a whole UTF-8 sequence) as it is.
 * Writes it to spelt (at most 4 bytes), sets *used to the bytes of p it
 * spells, and returns the spelling's length. */
static size_t spell_sequence(char spelt[4], const unsigned char *p, size_t avail, size_t *used)
{
	size_t n = p[0] < 0x20 || p[0] == 0x7f ? 0 : gpucc_json_utf8_sequence(p, avail);
	if (n > 0) {
		memcpy(spelt, p, n);
		*used = n;
		return n;
	}
	*used = 1;
	spelt[0] = '\\';
	if (p[0] == '\n' || p[0] == '\t') {
		spelt[1] = p[0] == '\n' ? 'n' : 't';
		return 2;
	}
	spelt[1] = 'x';
	gpucc_hex_encode(spelt + 2, p, 1);
	return 4;
}

/* name spelt (spell_sequence) into out, size bytes with the NUL; when it
 * does not fit, cut after a whole sequence's spelling and ended with
 * "...".  size is at least 4. */
static void spell_for_message(char *out, size_t size, const char *name)
{
	const unsigned char *p = (const unsigned char *)name;
	size_t len = strlen(name), at = 0, used = 0;
	while (at < len) {
		char spelt[4];
		size_t step, n = spell_sequence(spelt, p + at, len - at, &step);
		if (used + n + (at + step < len ? 3 : 0) + 1 > size) {
			memcpy(out + used, "...", 3);
			used += 3;
			break;
		}
		memcpy(out + used, spelt, n);
		used += n;
		at += step;
	}
	out[used] = '\0';
}

char *gpucc_manifest_spell_name(const char *name)
{
	const unsigned char *p = (const unsigned char *)name;
	size_t len = strlen(name), total = 0, step;
	char spelt[4];
	for (size_t at = 0; at < len; at += step)
		total += spell_sequence(spelt, p + at, len - at, &step);
	char *out = malloc(total + 1);
	if (!out)
		return NULL;
	size_t used = 0;
	for (size_t at = 0; at < len; at += step)
		used += spell_sequence(out + used, p + at, len - at, &step);
	out[used] = '\0';
	return out;
}

/* ---- validation ---------------------------------------------------------- */

/* A string of the manifest must be UTF-8 (JSON is), without control
 * characters (names are printed on terminals and one per line), and at most
 * GPUCC_MANIFEST_STRING_MAX bytes.  NULL passes (an absent module name).
 * The message names the string (what, and s spelt and cut to fit). */
static int check_text(const char *what, const char *s)
{
	if (!s)
		return 0;
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);
	char shown[96];
	if (len > GPUCC_MANIFEST_STRING_MAX) {
		spell_for_message(shown, sizeof shown, s);
		return gpucc_error_set(GPUCC_EINVALID,
		                       "%s '%s' is a string of %zu bytes, longer than the %d a manifest "
		                       "allows",
		                       what, shown, len, GPUCC_MANIFEST_STRING_MAX);
	}
	for (size_t i = 0; i < len;) {
		size_t n = p[i] < 0x20 || p[i] == 0x7f ? 0 : gpucc_json_utf8_sequence(p + i, len - i);
		if (n == 0) {
			spell_for_message(shown, sizeof shown, s);
			return gpucc_error_set(GPUCC_EINVALID,
			                       "%s '%s' %s, which a manifest cannot carry (formats/manifest.md, "
			                       "Names)",
			                       what, shown,
			                       p[i] < 0x20 || p[i] == 0x7f ? "holds a control character"
			                                                   : "is not UTF-8");
		}
		i += n;
	}
	return 0;
}

int gpucc_entry_names_check(const gpucc_entry *e)
{
	int rc;
	if ((rc = check_text("the module name", e->module)) ||
	    (rc = check_text("the triple", e->triple)) ||
	    (rc = check_text("the gpucc version", e->gpucc_version)) ||
	    (rc = check_text("the LLVM version", e->llvm_version)))
		return rc;
	for (size_t i = 0; i < e->option_count; i++)
		if ((rc = check_text("an option's name", e->options[i].name)) ||
		    (rc = check_text("an option's value", e->options[i].value)))
			return rc;
	for (size_t i = 0; i < e->device_lib_count; i++)
		if ((rc = check_text("a device library's name", e->device_libs[i].name)))
			return rc;
	for (size_t i = 0; i < e->kernel_count; i++)
		if ((rc = check_text("a kernel's name", e->kernels[i].name)))
			return rc;
	for (size_t i = 0; i < e->external_count; i++)
		if ((rc = check_text("an external's name", e->externals[i])))
			return rc;
	return 0;
}

int gpucc_manifest_validate_entry(const gpucc_entry *e, bool check_target, bool check_key)
{
	if (!e->target || !e->triple)
		return gpucc_error_set(GPUCC_EINVALID, "an entry needs a target and a triple");
	int text = gpucc_entry_names_check(e);
	if (text)
		return text;
	if (check_target) {
		gpucc_target t;
		char canonical[GPUCC_TARGET_NAME_SIZE];
		if (gpucc_target_parse(&t, e->target) != 0)
			return gpucc_error_prefix("entry target");
		gpucc_target_format(canonical, &t);
		if (strcmp(canonical, e->target) != 0)
			return gpucc_error_set(GPUCC_EINVALID, "target '%s' is not canonical (expected '%s')",
			                       e->target, canonical);
		if (strcmp(e->triple, gpucc_target_triple(&t)) != 0)
			return gpucc_error_set(GPUCC_EINVALID, "triple '%s' does not match target '%s'",
			                       e->triple, e->target);
	}
	for (size_t i = 0; i < e->option_count; i++) {
		if (!e->options[i].name[0])
			return gpucc_error_set(GPUCC_EINVALID, "an option has an empty name");
		if (strchr(e->options[i].name, '='))
			return gpucc_error_set(GPUCC_EINVALID, "option '%s' has '=' in its name",
			                       e->options[i].name);
		if (i && strcmp(e->options[i - 1].name, e->options[i].name) >= 0)
			return gpucc_error_set(GPUCC_EINVALID,
			                       "options must be sorted by name and unique ('%s')",
			                       e->options[i].name);
	}
	for (size_t i = 0; i < e->device_lib_count; i++) {
		if (!e->device_libs[i].name[0])
			return gpucc_error_set(GPUCC_EINVALID, "a device library has an empty name");
		if (i && strcmp(e->device_libs[i - 1].name, e->device_libs[i].name) >= 0)
			return gpucc_error_set(GPUCC_EINVALID,
			                       "device libraries must be sorted by name and unique ('%s')",
			                       e->device_libs[i].name);
	}
	for (size_t i = 0; i < e->kernel_count; i++) {
		const gpucc_kernel *k = &e->kernels[i];
		if (!k->name || !k->name[0])
			return gpucc_error_set(GPUCC_EINVALID, "a kernel has an empty name");
		/* -1 is "not reported", and omitted. */
		if (k->registers > GPUCC_KERNEL_RESOURCE_MAX || k->shared_bytes > GPUCC_KERNEL_RESOURCE_MAX ||
		    k->scratch_bytes > GPUCC_KERNEL_RESOURCE_MAX)
			return gpucc_error_set(GPUCC_EINVALID,
			                       "kernel '%s' has a resource count over 2^40, which readers refuse",
			                       k->name);
	}
	for (size_t i = 1; i < e->external_count; i++)
		if (strcmp(e->externals[i - 1], e->externals[i]) >= 0)
			return gpucc_error_set(GPUCC_EINVALID, "externals must be sorted and unique ('%s')",
			                       e->externals[i]);
	for (size_t i = 0; i < e->payload_count; i++) {
		if ((unsigned)e->payloads[i].part >= GPUCC_PART_COUNT)
			return gpucc_error_set(GPUCC_EINVALID, "unknown payload kind");
		if (i && e->payloads[i - 1].part >= e->payloads[i].part)
			return gpucc_error_set(GPUCC_EINVALID, "payloads must be sorted by kind, one of each");
		if (e->payloads[i].size > GPUCC_PAYLOAD_MAX_SIZE)
			return gpucc_error_set(GPUCC_EINVALID, "payload of %" PRIu64 " bytes is too large",
			                       e->payloads[i].size);
	}
	if (!check_key)
		return 0;
	gpucc_digest key;
	int rc = gpucc_key_compute(&key, e);
	if (rc)
		return rc;
	if (gpucc_digest_compare(&key, &e->key) != 0) {
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &e->key);
		return gpucc_error_set(GPUCC_EINVALID, "key %.12s does not match the entry's key components",
		                       hex);
	}
	return 0;
}

int gpucc_entry_validate(const gpucc_entry *e)
{
	return gpucc_manifest_validate_entry(e, true, true);
}
