/*
 * formats/manifest.c -- reading and writing the image manifest
 * (formats/manifest.md).
 *
 * Writing is by hand, field by field in a fixed order, so that the bytes are
 * canonical and memory stays proportional to the output; reading uses cJSON
 * and checks every field, because an image is untrusted input.
 */
#include "manifest.h"

#include "arena.h"
#include "errors.h"
#include "key.h"

#include <cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- writing ------------------------------------------------------------ */

typedef struct out_buffer {
	char *data;
	size_t size, capacity;
	bool failed;
} out_buffer;

static void out_bytes(out_buffer *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->size + n + 1 > b->capacity) {
		size_t capacity = b->capacity ? b->capacity : 4096;
		while (capacity < b->size + n + 1)
			capacity *= 2;
		char *grown = realloc(b->data, capacity);
		if (!grown) {
			b->failed = true;
			return;
		}
		b->data = grown;
		b->capacity = capacity;
	}
	memcpy(b->data + b->size, s, n);
	b->size += n;
	b->data[b->size] = '\0';
}

static void out_str(out_buffer *b, const char *s)
{
	out_bytes(b, s, strlen(s));
}

/* A JSON string: quotes, backslashes and control characters escaped; other
 * bytes (UTF-8 included) as they are. */
static void out_json_string(out_buffer *b, const char *s)
{
	out_bytes(b, "\"", 1);
	const char *run = s;
	for (const char *p = s; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		out_bytes(b, run, (size_t)(p - run));
		char escape[8];
		if (c == '"' || c == '\\')
			snprintf(escape, sizeof escape, "\\%c", c);
		else
			snprintf(escape, sizeof escape, "\\u%04x", c);
		out_str(b, escape);
		run = p + 1;
	}
	out_str(b, run);
	out_bytes(b, "\"", 1);
}

static void out_key(out_buffer *b, const char *name, bool first)
{
	if (!first)
		out_bytes(b, ",", 1);
	out_json_string(b, name);
	out_bytes(b, ":", 1);
}

static void out_digest(out_buffer *b, const gpucc_digest *d)
{
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, d);
	out_json_string(b, hex);
}

static void out_u64(out_buffer *b, uint64_t v)
{
	char number[32];
	snprintf(number, sizeof number, "%" PRIu64, v);
	out_str(b, number);
}

static void out_entry(out_buffer *b, const gpucc_entry *e, bool with_module)
{
	out_bytes(b, "{", 1);
	out_key(b, "key", true);
	out_digest(b, &e->key);
	out_key(b, "key_schema", false);
	out_u64(b, e->key_schema);
	if (with_module) {
		out_key(b, "module", false);
		out_json_string(b, e->module ? e->module : "");
	}
	out_key(b, "module_sha256", false);
	out_digest(b, &e->module_sha256);
	out_key(b, "target", false);
	out_json_string(b, e->target);
	out_key(b, "triple", false);
	out_json_string(b, e->triple);

	out_key(b, "toolchain", false);
	out_bytes(b, "{", 1);
	out_key(b, "gpucc", true);
	out_json_string(b, e->gpucc_version);
	out_key(b, "llvm", false);
	out_json_string(b, e->llvm_version);
	out_key(b, "device_libs", false);
	out_bytes(b, "[", 1);
	for (size_t i = 0; i < e->device_lib_count; i++) {
		out_str(b, i ? ",{" : "{");
		out_key(b, "name", true);
		out_json_string(b, e->device_libs[i].name);
		out_key(b, "sha256", false);
		out_digest(b, &e->device_libs[i].sha256);
		out_bytes(b, "}", 1);
	}
	out_str(b, "]}");

	out_key(b, "options", false);
	out_bytes(b, "{", 1);
	for (size_t i = 0; i < e->option_count; i++) {
		out_key(b, e->options[i].name, i == 0);
		out_json_string(b, e->options[i].value);
	}
	out_bytes(b, "}", 1);

	out_key(b, "kernels", false);
	out_bytes(b, "[", 1);
	for (size_t i = 0; i < e->kernel_count; i++) {
		const gpucc_kernel *k = &e->kernels[i];
		out_str(b, i ? ",{" : "{");
		out_key(b, "name", true);
		out_json_string(b, k->name);
		if (k->registers >= 0) {
			out_key(b, "registers", false);
			out_u64(b, (uint64_t)k->registers);
		}
		if (k->shared_bytes >= 0) {
			out_key(b, "shared_bytes", false);
			out_u64(b, (uint64_t)k->shared_bytes);
		}
		if (k->scratch_bytes >= 0) {
			out_key(b, "scratch_bytes", false);
			out_u64(b, (uint64_t)k->scratch_bytes);
		}
		out_bytes(b, "}", 1);
	}
	out_bytes(b, "]", 1);

	out_key(b, "externals", false);
	out_bytes(b, "[", 1);
	for (size_t i = 0; i < e->external_count; i++) {
		if (i)
			out_bytes(b, ",", 1);
		out_json_string(b, e->externals[i]);
	}
	out_bytes(b, "]", 1);

	out_key(b, "payloads", false);
	out_bytes(b, "[", 1);
	for (size_t i = 0; i < e->payload_count; i++) {
		const gpucc_payload *p = &e->payloads[i];
		out_str(b, i ? ",{" : "{");
		out_key(b, "part", true);
		out_json_string(b, gpucc_part_name(p->part));
		out_key(b, "sha256", false);
		out_digest(b, &p->sha256);
		out_key(b, "size", false);
		out_u64(b, p->size);
		out_bytes(b, "}", 1);
	}
	out_str(b, "]}");
}

int gpucc_manifest_write(char **out, size_t *out_size, const gpucc_entry *const *entries,
                         size_t count)
{
	out_buffer b = {0};
	char header[96];
	snprintf(header, sizeof header, "{\"format\":\"gpucc-image\",\"version\":%d,\"entries\":[",
	         GPUCC_IMAGE_FORMAT_VERSION);
	out_str(&b, header);
	for (size_t i = 0; i < count; i++) {
		out_str(&b, i ? ",\n" : "\n");
		out_entry(&b, entries[i], true);
	}
	out_str(&b, "\n]}\n");
	if (b.failed) {
		free(b.data);
		return gpucc_error_oom();
	}
	*out = b.data;
	*out_size = b.size;
	return 0;
}

int gpucc_manifest_entry_record(char **out, const gpucc_entry *e)
{
	out_buffer b = {0};
	out_entry(&b, e, false);
	if (b.failed) {
		free(b.data);
		return gpucc_error_oom();
	}
	*out = b.data;
	return 0;
}

void gpucc_payload_member_name(char out[GPUCC_PAYLOAD_MEMBER_SIZE], const gpucc_payload *p)
{
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &p->sha256);
	snprintf(out, GPUCC_PAYLOAD_MEMBER_SIZE, "payloads/%s%s", hex, gpucc_part_extension(p->part));
}

/* ---- validation ---------------------------------------------------------- */

int gpucc_entry_validate(const gpucc_entry *e)
{
	gpucc_target t;
	char canonical[GPUCC_TARGET_NAME_SIZE];
	if (!e->target || gpucc_target_parse(&t, e->target) != 0)
		return gpucc_error_prefix("entry target");
	gpucc_target_format(canonical, &t);
	if (strcmp(canonical, e->target) != 0)
		return gpucc_error_set(GPUCC_EINVALID, "target '%s' is not canonical (expected '%s')",
		                       e->target, canonical);
	if (!e->triple || strcmp(e->triple, gpucc_target_triple(&t)) != 0)
		return gpucc_error_set(GPUCC_EINVALID, "triple '%s' does not match target '%s'",
		                       e->triple ? e->triple : "", e->target);
	for (size_t i = 0; i < e->option_count; i++)
		if (!e->options[i].name[0])
			return gpucc_error_set(GPUCC_EINVALID, "an option has an empty name");
	for (size_t i = 0; i < e->device_lib_count; i++)
		if (!e->device_libs[i].name[0])
			return gpucc_error_set(GPUCC_EINVALID, "a device library has an empty name");
	for (size_t i = 0; i < e->kernel_count; i++)
		if (!e->kernels[i].name || !e->kernels[i].name[0])
			return gpucc_error_set(GPUCC_EINVALID, "a kernel has an empty name");
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

/* ---- reading ------------------------------------------------------------ */

typedef struct parse_ctx {
	gpucc_arena *arena;
	const char *name; /* for messages */
	size_t index;     /* entry being parsed */
} parse_ctx;

static int bad(const parse_ctx *c, const char *what)
{
	return gpucc_error_set(GPUCC_ECORRUPT, "'%s': corrupt manifest: entry %zu: %s", c->name,
	                       c->index, what);
}

static const char *get_string(const parse_ctx *c, const cJSON *obj, const char *field)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	if (!cJSON_IsString(v))
		return NULL;
	return gpucc_arena_strdup(c->arena, v->valuestring);
}

static bool get_digest(const cJSON *obj, const char *field, gpucc_digest *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	return cJSON_IsString(v) && gpucc_digest_from_hex(out, v->valuestring) == 0;
}

/* A non-negative integer that a double holds exactly. */
static bool get_count(const cJSON *obj, const char *field, uint64_t max, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > (double)max ||
	    (double)(uint64_t)v->valuedouble != v->valuedouble)
		return false;
	*out = (uint64_t)v->valuedouble;
	return true;
}

static int parse_kernels(const parse_ctx *c, const cJSON *array, gpucc_entry *e)
{
	if (!cJSON_IsArray(array))
		return bad(c, "'kernels' is not an array");
	size_t n = (size_t)cJSON_GetArraySize(array);
	gpucc_kernel *k = gpucc_arena_alloc(c->arena, (n ? n : 1) * sizeof *k);
	if (!k)
		return gpucc_error_oom();
	size_t i = 0;
	const cJSON *item;
	cJSON_ArrayForEach(item, array) {
		k[i].name = get_string(c, item, "name");
		if (!k[i].name || !k[i].name[0])
			return bad(c, "a kernel has no name");
		const char *fields[3] = {"registers", "shared_bytes", "scratch_bytes"};
		int64_t *slots[3] = {&k[i].registers, &k[i].shared_bytes, &k[i].scratch_bytes};
		for (int f = 0; f < 3; f++) {
			uint64_t v;
			if (!cJSON_HasObjectItem(item, fields[f]))
				*slots[f] = -1;
			else if (get_count(item, fields[f], (uint64_t)1 << 40, &v))
				*slots[f] = (int64_t)v;
			else
				return bad(c, "a kernel resource count is not a non-negative integer");
		}
		i++;
	}
	e->kernel_count = n;
	e->kernels = k;
	return 0;
}

static int parse_payloads(const parse_ctx *c, const cJSON *array, gpucc_entry *e)
{
	if (!cJSON_IsArray(array))
		return bad(c, "'payloads' is not an array");
	size_t n = (size_t)cJSON_GetArraySize(array);
	if (n > GPUCC_PART_COUNT)
		return bad(c, "more payloads than payload kinds");
	gpucc_payload *p = gpucc_arena_alloc(c->arena, (n ? n : 1) * sizeof *p);
	if (!p)
		return gpucc_error_oom();
	size_t i = 0;
	const cJSON *item;
	cJSON_ArrayForEach(item, array) {
		const cJSON *part = cJSON_GetObjectItemCaseSensitive(item, "part");
		if (!cJSON_IsString(part) || gpucc_part_from_name(&p[i].part, part->valuestring) != 0)
			return bad(c, "a payload has an unknown 'part'");
		if (!get_digest(item, "sha256", &p[i].sha256))
			return bad(c, "a payload's 'sha256' is not 64 hex digits");
		if (!get_count(item, "size", GPUCC_PAYLOAD_MAX_SIZE, &p[i].size))
			return bad(c, "a payload's 'size' is not a sane byte count");
		i++;
	}
	e->payload_count = n;
	e->payloads = p;
	return 0;
}

static int parse_entry(const parse_ctx *c, const cJSON *obj, gpucc_entry *e)
{
	if (!cJSON_IsObject(obj))
		return bad(c, "not an object");
	if (!get_digest(obj, "key", &e->key))
		return bad(c, "'key' is not 64 hex digits");
	uint64_t schema;
	if (!get_count(obj, "key_schema", 1000000, &schema))
		return bad(c, "'key_schema' is missing");
	e->key_schema = (unsigned)schema;
	e->module = get_string(c, obj, "module");
	if (!e->module)
		return bad(c, "'module' is missing");
	if (!get_digest(obj, "module_sha256", &e->module_sha256))
		return bad(c, "'module_sha256' is not 64 hex digits");
	e->target = get_string(c, obj, "target");
	e->triple = get_string(c, obj, "triple");
	if (!e->target || !e->triple)
		return bad(c, "'target' or 'triple' is missing");

	const cJSON *tc = cJSON_GetObjectItemCaseSensitive(obj, "toolchain");
	if (!cJSON_IsObject(tc))
		return bad(c, "'toolchain' is missing");
	e->gpucc_version = get_string(c, tc, "gpucc");
	e->llvm_version = get_string(c, tc, "llvm");
	if (!e->gpucc_version || !e->llvm_version)
		return bad(c, "'toolchain' lacks 'gpucc' or 'llvm'");
	const cJSON *libs = cJSON_GetObjectItemCaseSensitive(tc, "device_libs");
	if (!cJSON_IsArray(libs))
		return bad(c, "'toolchain.device_libs' is not an array");
	size_t n = (size_t)cJSON_GetArraySize(libs);
	gpucc_device_lib *dl = gpucc_arena_alloc(c->arena, (n ? n : 1) * sizeof *dl);
	if (!dl)
		return gpucc_error_oom();
	size_t i = 0;
	const cJSON *item;
	cJSON_ArrayForEach(item, libs) {
		dl[i].name = get_string(c, item, "name");
		if (!dl[i].name || !get_digest(item, "sha256", &dl[i].sha256))
			return bad(c, "a device library lacks 'name' or 'sha256'");
		i++;
	}
	e->device_lib_count = n;
	e->device_libs = dl;

	const cJSON *opts = cJSON_GetObjectItemCaseSensitive(obj, "options");
	if (!cJSON_IsObject(opts))
		return bad(c, "'options' is not an object");
	n = (size_t)cJSON_GetArraySize(opts);
	gpucc_option *o = gpucc_arena_alloc(c->arena, (n ? n : 1) * sizeof *o);
	if (!o)
		return gpucc_error_oom();
	i = 0;
	cJSON_ArrayForEach(item, opts) {
		if (!cJSON_IsString(item))
			return bad(c, "an option's value is not a string");
		o[i].name = gpucc_arena_strdup(c->arena, item->string);
		o[i].value = gpucc_arena_strdup(c->arena, item->valuestring);
		if (!o[i].name || !o[i].value)
			return gpucc_error_oom();
		i++;
	}
	e->option_count = n;
	e->options = o;

	int rc = parse_kernels(c, cJSON_GetObjectItemCaseSensitive(obj, "kernels"), e);
	if (rc)
		return rc;

	const cJSON *ext = cJSON_GetObjectItemCaseSensitive(obj, "externals");
	if (!cJSON_IsArray(ext))
		return bad(c, "'externals' is not an array");
	n = (size_t)cJSON_GetArraySize(ext);
	const char **names = gpucc_arena_alloc(c->arena, (n ? n : 1) * sizeof *names);
	if (!names)
		return gpucc_error_oom();
	i = 0;
	cJSON_ArrayForEach(item, ext) {
		if (!cJSON_IsString(item))
			return bad(c, "an external is not a string");
		names[i++] = gpucc_arena_strdup(c->arena, item->valuestring);
	}
	e->external_count = n;
	e->externals = names;

	rc = parse_payloads(c, cJSON_GetObjectItemCaseSensitive(obj, "payloads"), e);
	if (rc)
		return rc;

	if (gpucc_entry_validate(e) != 0) {
		char message[512];
		snprintf(message, sizeof message, "%s", gpucc_error_last()->message);
		return bad(c, message);
	}
	return 0;
}

int gpucc_manifest_parse(gpucc_manifest *out, const char *json, size_t size, const char *name)
{
	memset(out, 0, sizeof *out);
	cJSON *root = cJSON_ParseWithLength(json, size);
	if (!root)
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': corrupt manifest: not valid JSON", name);
	int rc = 0;
	const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
	const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
	const cJSON *entries = cJSON_GetObjectItemCaseSensitive(root, "entries");
	if (!cJSON_IsString(format) || strcmp(format->valuestring, "gpucc-image") != 0) {
		rc = gpucc_error_set(GPUCC_ECORRUPT, "'%s': manifest is not a gpucc image manifest", name);
	} else if (!cJSON_IsNumber(version) || version->valuedouble != GPUCC_IMAGE_FORMAT_VERSION) {
		rc = gpucc_error_set(GPUCC_EVERSION,
		                     "'%s': manifest version %g is not supported (this gpucc reads %d)",
		                     name, cJSON_IsNumber(version) ? version->valuedouble : -1.0,
		                     GPUCC_IMAGE_FORMAT_VERSION);
	} else if (!cJSON_IsArray(entries)) {
		rc = gpucc_error_set(GPUCC_ECORRUPT, "'%s': corrupt manifest: no 'entries' array", name);
	}
	if (rc) {
		cJSON_Delete(root);
		return rc;
	}

	parse_ctx c = {gpucc_arena_new(), name, 0};
	size_t n = (size_t)cJSON_GetArraySize(entries);
	gpucc_entry *list = c.arena ? gpucc_arena_alloc(c.arena, (n ? n : 1) * sizeof *list) : NULL;
	if (!list) {
		rc = gpucc_error_oom();
	} else {
		const cJSON *item;
		cJSON_ArrayForEach(item, entries) {
			rc = parse_entry(&c, item, &list[c.index]);
			if (rc)
				break;
			if (c.index && gpucc_digest_compare(&list[c.index - 1].key, &list[c.index].key) >= 0) {
				rc = bad(&c, "entries are not sorted by key, or a key repeats");
				break;
			}
			c.index++;
		}
	}
	cJSON_Delete(root);
	if (rc) {
		gpucc_arena_free(c.arena);
		return rc;
	}
	out->entry_count = n;
	out->entries = list;
	out->arena = c.arena;
	return 0;
}

void gpucc_manifest_release(gpucc_manifest *m)
{
	if (!m)
		return;
	gpucc_arena_free(m->arena);
	memset(m, 0, sizeof *m);
}
