/*
 * formats/manifest_read.c -- reading the image manifest (formats/manifest.md).
 *
 * Reading uses the pull parser in json_reader.c (cJSON's tree of separately
 * allocated nodes made `gpucc list` of 10,000 entries five times slower) and
 * checks every field, because an image is untrusted input.
 */
#include "manifest_internal.h"

#include "arena.h"
#include "errors.h"
#include "json_reader.h"
#include "key.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parse_ctx;

/* A growable array of fixed-size items, copied into the arena when done.
 * Its capacity counts against the parse's memory bound. */
typedef struct vec {
	unsigned char *data;
	size_t count, capacity, item;
	size_t prefaulted; /* bytes from data on whose pages faults were taken ahead */
	struct parse_ctx *c;
} vec;

typedef struct parse_ctx {
	json_reader json;
	/* Scratch arrays reused for every entry. */
	vec kernels, externals, payloads;
	gpucc_arena *arena;
	const char *name; /* for messages */
	size_t index;     /* entry being parsed */
	/* The last target and triple validated: most entries repeat them. */
	const char *valid_target, *valid_triple;
	/* The previous entry, whose repeated strings the next one shares. */
	gpucc_entry previous;
	/* The memory the parsed form may take (arena and vectors), what the
	 * vectors take now, and how to raise the bound (for the message). */
	uint64_t max_parsed;
	uint64_t vector_bytes;
	const char *limit_hint;
} parse_ctx;

/* "'NAME': corrupt manifest: entry N: WHAT", WHAT from fmt; GPUCC_ECORRUPT. */
static int bad(const parse_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(const parse_ctx *c, const char *fmt, ...)
{
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return gpucc_error_set(GPUCC_ECORRUPT, "'%s': corrupt manifest: entry %zu: %s", c->name,
	                       c->index, what);
}

static int syntax_error(const parse_ctx *c)
{
	if (c->json.error && strcmp(c->json.error, "out of memory") == 0)
		return gpucc_error_oom();
	return gpucc_error_set(GPUCC_ECORRUPT, "'%s': corrupt manifest: not valid JSON (%s at byte %zu)",
	                       c->name, c->json.error ? c->json.error : "syntax error",
	                       c->json.error_offset);
}

static bool read_digest(parse_ctx *c, gpucc_digest *out)
{
	return gpucc_json_hex32(&c->json, out->bytes);
}

/* Whether the parsed form would take more than its bound with more bytes
 * besides; sets the error when so.  A manifest's parsed form costs
 * several times its JSON at worst (a 13-byte kernel '{"name":"a"},'
 * becomes 48 bytes), so the bound, not the JSON's size, caps it. */
static bool over_budget(parse_ctx *c, uint64_t more)
{
	uint64_t used = gpucc_arena_bytes(c->arena) + c->vector_bytes + more;
	if (!c->max_parsed || used <= c->max_parsed)
		return false;
	gpucc_error_set(GPUCC_ECORRUPT,
	                "'%s': refused: the manifest's parsed form would take more than %llu bytes%s%s",
	                c->name, (unsigned long long)c->max_parsed, c->limit_hint ? " " : "",
	                c->limit_hint ? c->limit_hint : "");
	return true;
}

/* A new zeroed item at the end of v; NULL with the error set (out of
 * memory, or over the bound). */
static void *vec_push(vec *v)
{
	if (v->count == v->capacity) {
		size_t capacity = v->capacity ? v->capacity * 2 : 8;
		if (over_budget(v->c, (capacity - v->capacity) * v->item))
			return NULL;
		unsigned char *grown = realloc(v->data, capacity * v->item);
		if (!grown) {
			gpucc_error_oom();
			return NULL;
		}
		v->c->vector_bytes += (capacity - v->capacity) * v->item;
		v->data = grown;
		v->capacity = capacity;
		v->prefaulted = v->count * v->item; /* what was written is there */
	}
	/* A large vector (a manifest's entries) takes its page faults a window
	 * at a time, ahead of the slots written into it. */
	size_t end = (v->count + 1) * v->item, window = (size_t)256 << 10;
	if (end > v->prefaulted && v->capacity * v->item >= 2 * window) {
		size_t upto = v->prefaulted + window < v->capacity * v->item ? v->prefaulted + window
		                                                             : v->capacity * v->item;
		gpucc_memory_prefault(v->data + v->prefaulted, upto - v->prefaulted);
		v->prefaulted = upto;
	}
	void *slot = v->data + v->count++ * v->item;
	memset(slot, 0, v->item);
	return slot;
}

/* Free v's storage. */
static void vec_release(vec *v)
{
	v->c->vector_bytes -= v->capacity * v->item;
	free(v->data);
	v->data = NULL;
	v->count = v->capacity = v->prefaulted = 0;
}

/* The per-entry vectors a parse reuses from entry to entry. */
static void release_scratch(parse_ctx *c)
{
	vec_release(&c->kernels);
	vec_release(&c->externals);
	vec_release(&c->payloads);
}

/* The error of a failed vec_push. */
static int push_failure(void)
{
	return gpucc_error_last()->code;
}

/* Copy v's items into the arena and empty v (keeping its storage); NULL
 * with the error set. */
static void *vec_finish(parse_ctx *c, vec *v)
{
	if (over_budget(c, (v->count ? v->count : 1) * v->item))
		return NULL;
	void *copy = gpucc_arena_alloc(c->arena, (v->count ? v->count : 1) * v->item);
	if (!copy)
		gpucc_error_oom();
	if (copy && v->count)
		memcpy(copy, v->data, v->count * v->item);
	v->count = 0;
	return copy;
}

/* A string that most entries repeat (target, triple, versions): the previous
 * entry's copy is shared when equal. */
static const char *repeated_string(parse_ctx *c, const char *previous)
{
	if (previous && gpucc_json_string_equals(&c->json, previous))
		return previous;
	return gpucc_json_string(&c->json);
}

/* Where a field's value is wrong: the JSON error when there is one, else
 * the schema defect. */
static int field_error(parse_ctx *c, const char *what)
{
	return gpucc_json_failed(&c->json) ? syntax_error(c) : bad(c, "%s", what);
}

static int parse_kernel(parse_ctx *c, gpucc_kernel *k)
{
	const char *field;
	bool have_name = false;
	k->registers = k->shared_bytes = k->scratch_bytes = -1;
	if (!gpucc_json_object_begin(&c->json))
		return field_error(c, "a kernel is not an object");
	while (gpucc_json_object_next(&c->json, &field)) {
		int64_t *slot = NULL;
		if (strcmp(field, "name") == 0) {
			if (have_name)
				return bad(c, "a kernel's 'name' appears twice");
			if (!(k->name = gpucc_json_string(&c->json)))
				return field_error(c, "a kernel's 'name' is not a string");
			have_name = true;
			continue;
		}
		if (strcmp(field, "registers") == 0)
			slot = &k->registers;
		else if (strcmp(field, "shared_bytes") == 0)
			slot = &k->shared_bytes;
		else if (strcmp(field, "scratch_bytes") == 0)
			slot = &k->scratch_bytes;
		if (!slot) {
			gpucc_json_skip(&c->json);
			continue;
		}
		if (*slot >= 0)
			return bad(c, "a kernel's '%s' appears twice", field);
		uint64_t v;
		if (!gpucc_json_uint(&c->json, (uint64_t)GPUCC_KERNEL_RESOURCE_MAX, &v))
			return field_error(c, "a kernel resource count is not an integer from 0 to 2^40");
		*slot = (int64_t)v;
	}
	if (!k->name || !k->name[0])
		return field_error(c, "a kernel has no name");
	return 0;
}

static int parse_payload(parse_ctx *c, gpucc_payload *p)
{
	const char *field;
	bool have_part = false, have_digest = false, have_size = false;
	if (!gpucc_json_object_begin(&c->json))
		return field_error(c, "a payload is not an object");
	while (gpucc_json_object_next(&c->json, &field)) {
		if ((strcmp(field, "part") == 0 && have_part) ||
		    (strcmp(field, "sha256") == 0 && have_digest) ||
		    (strcmp(field, "size") == 0 && have_size))
			return bad(c, "a payload field appears twice");
		if (strcmp(field, "part") == 0) {
			char part[16];
			if (!gpucc_json_string_buffer(&c->json, part, sizeof part) ||
			    gpucc_part_from_name(&p->part, part) != 0)
				return field_error(c, "a payload has an unknown 'part'");
			have_part = true;
		} else if (strcmp(field, "sha256") == 0) {
			if (!(have_digest = read_digest(c, &p->sha256)))
				return field_error(c, "a payload's 'sha256' is not 64 lowercase hex digits");
		} else if (strcmp(field, "size") == 0) {
			if (!(have_size = gpucc_json_uint(&c->json, GPUCC_PAYLOAD_MAX_SIZE, &p->size)))
				return field_error(c, "a payload's 'size' is not a sane byte count");
		} else {
			gpucc_json_skip(&c->json);
		}
	}
	if (gpucc_json_failed(&c->json))
		return syntax_error(c);
	if (!have_part || !have_digest || !have_size)
		return bad(c, "a payload lacks 'part', 'sha256' or 'size'");
	return 0;
}

static int parse_device_lib(parse_ctx *c, gpucc_device_lib *lib)
{
	const char *field;
	bool have_digest = false;
	if (!gpucc_json_object_begin(&c->json))
		return field_error(c, "a device library is not an object");
	while (gpucc_json_object_next(&c->json, &field)) {
		if ((strcmp(field, "name") == 0 && lib->name) ||
		    (strcmp(field, "sha256") == 0 && have_digest))
			return bad(c, "a device library's '%s' appears twice", field);
		if (strcmp(field, "name") == 0) {
			if (!(lib->name = gpucc_json_string(&c->json)))
				return field_error(c, "a device library's 'name' is not a string");
		} else if (strcmp(field, "sha256") == 0) {
			if (!(have_digest = read_digest(c, &lib->sha256)))
				return field_error(c, "a device library's 'sha256' is not 64 lowercase hex digits");
		} else {
			gpucc_json_skip(&c->json);
		}
	}
	if (gpucc_json_failed(&c->json))
		return syntax_error(c);
	if (!lib->name || !have_digest)
		return bad(c, "a device library lacks 'name' or 'sha256'");
	return 0;
}

static int parse_toolchain(parse_ctx *c, gpucc_entry *e)
{
	const char *field;
	if (!gpucc_json_object_begin(&c->json))
		return field_error(c, "'toolchain' is not an object");
	bool have_libs = false;
	while (gpucc_json_object_next(&c->json, &field)) {
		if ((strcmp(field, "gpucc") == 0 && e->gpucc_version) ||
		    (strcmp(field, "llvm") == 0 && e->llvm_version) ||
		    (strcmp(field, "device_libs") == 0 && have_libs))
			return bad(c, "'toolchain.%s' appears twice", field);
		if (strcmp(field, "gpucc") == 0) {
			if (!(e->gpucc_version = repeated_string(c, c->previous.gpucc_version)))
				return field_error(c, "'toolchain.gpucc' is not a string");
		} else if (strcmp(field, "llvm") == 0) {
			if (!(e->llvm_version = repeated_string(c, c->previous.llvm_version)))
				return field_error(c, "'toolchain.llvm' is not a string");
		} else if (strcmp(field, "device_libs") == 0) {
			vec libs = {.item = sizeof(gpucc_device_lib), .c = c};
			if (!gpucc_json_array_begin(&c->json))
				return field_error(c, "'toolchain.device_libs' is not an array");
			while (gpucc_json_array_next(&c->json)) {
				gpucc_device_lib *lib = vec_push(&libs);
				int rc = lib ? parse_device_lib(c, lib) : push_failure();
				if (rc) {
					vec_release(&libs);
					return rc;
				}
			}
			e->device_lib_count = libs.count;
			e->device_libs = vec_finish(c, &libs);
			vec_release(&libs);
			if (!e->device_libs)
				return push_failure();
			have_libs = true;
		} else {
			gpucc_json_skip(&c->json);
		}
	}
	if (gpucc_json_failed(&c->json))
		return syntax_error(c);
	if (!e->gpucc_version || !e->llvm_version || !have_libs)
		return bad(c, "'toolchain' lacks 'gpucc', 'llvm' or 'device_libs'");
	return 0;
}

static int parse_options(parse_ctx *c, gpucc_entry *e)
{
	const char *field;
	vec opts = {.item = sizeof(gpucc_option), .c = c};
	if (!gpucc_json_object_begin(&c->json))
		return field_error(c, "'options' is not an object");
	/* An option's name may be long (up to the string limit). */
	c->json.keep_long_names = true;
	while (gpucc_json_object_next(&c->json, &field)) {
		gpucc_option *o = vec_push(&opts);
		if (!o) {
			vec_release(&opts);
			return push_failure();
		}
		/* Entries mostly repeat the previous entry's options. */
		size_t i = opts.count - 1;
		const gpucc_option *prev = i < c->previous.option_count ? &c->previous.options[i] : NULL;
		/* A long name is in the arena already. */
		o->name = prev && strcmp(prev->name, field) == 0 ? prev->name
		          : field != c->json.name                ? field
		                                                 : gpucc_arena_strdup(c->arena, field);
		if (!o->name || !(o->value = repeated_string(c, prev ? prev->value : NULL))) {
			vec_release(&opts);
			return field_error(c, "an option's value is not a string");
		}
	}
	c->json.keep_long_names = false;
	e->option_count = opts.count;
	e->options = vec_finish(c, &opts);
	vec_release(&opts);
	if (!e->options)
		return push_failure();
	return gpucc_json_failed(&c->json) ? syntax_error(c) : 0;
}

static int parse_list(parse_ctx *c, const char *what, vec *v, int (*item)(parse_ctx *, void *))
{
	if (!gpucc_json_array_begin(&c->json)) {
		char message[64];
		snprintf(message, sizeof message, "'%s' is not an array", what);
		return field_error(c, message);
	}
	while (gpucc_json_array_next(&c->json)) {
		void *slot = vec_push(v);
		int rc = slot ? item(c, slot) : push_failure();
		if (rc)
			return rc;
	}
	return gpucc_json_failed(&c->json) ? syntax_error(c) : 0;
}

static int kernel_item(parse_ctx *c, void *slot)
{
	return parse_kernel(c, slot);
}

static int payload_item(parse_ctx *c, void *slot)
{
	return parse_payload(c, slot);
}

static int external_item(parse_ctx *c, void *slot)
{
	const char **name = slot;
	if (!(*name = gpucc_json_string(&c->json)))
		return field_error(c, "an external is not a string");
	return 0;
}

enum {
	HAVE_KEY = 1, HAVE_SCHEMA = 2, HAVE_MODULE = 4, HAVE_MODULE_SHA = 8, HAVE_TARGET = 16,
	HAVE_TRIPLE = 32, HAVE_TOOLCHAIN = 64, HAVE_OPTIONS = 128, HAVE_KERNELS = 256,
	HAVE_EXTERNALS = 512, HAVE_PAYLOADS = 1024, HAVE_ALL = 2047
};

enum entry_field_id {
	FIELD_OTHER, FIELD_KEY, FIELD_KEY_SCHEMA, FIELD_MODULE, FIELD_MODULE_SHA256, FIELD_TARGET,
	FIELD_TRIPLE, FIELD_TOOLCHAIN, FIELD_OPTIONS, FIELD_KERNELS, FIELD_EXTERNALS, FIELD_PAYLOADS
};

/* The entry field a member name is: dispatch on the first letter, then one
 * comparison (this runs eleven times an entry). */
static enum entry_field_id entry_field(const char *name)
{
	switch (name[0]) {
	case 'k':
		return strcmp(name, "key") == 0 ? FIELD_KEY
		       : strcmp(name, "key_schema") == 0 ? FIELD_KEY_SCHEMA
		       : strcmp(name, "kernels") == 0 ? FIELD_KERNELS : FIELD_OTHER;
	case 'm':
		return strcmp(name, "module") == 0 ? FIELD_MODULE
		       : strcmp(name, "module_sha256") == 0 ? FIELD_MODULE_SHA256 : FIELD_OTHER;
	case 't':
		return strcmp(name, "target") == 0 ? FIELD_TARGET
		       : strcmp(name, "triple") == 0 ? FIELD_TRIPLE
		       : strcmp(name, "toolchain") == 0 ? FIELD_TOOLCHAIN : FIELD_OTHER;
	case 'o':
		return strcmp(name, "options") == 0 ? FIELD_OPTIONS : FIELD_OTHER;
	case 'e':
		return strcmp(name, "externals") == 0 ? FIELD_EXTERNALS : FIELD_OTHER;
	case 'p':
		return strcmp(name, "payloads") == 0 ? FIELD_PAYLOADS : FIELD_OTHER;
	default:
		return FIELD_OTHER;
	}
}

static int parse_entry_fields(parse_ctx *c, gpucc_entry *e, vec *kernels, vec *externals,
                              vec *payloads)
{
	const char *field;
	unsigned have = 0;
	int rc = 0;
	if (!gpucc_json_object_begin(&c->json))
		return field_error(c, "not an object");
	while (rc == 0 && gpucc_json_object_next(&c->json, &field)) {
		uint64_t schema;
		enum entry_field_id id = entry_field(field);
		/* A field given twice: JSON parsers disagree on which counts. */
		if (id != FIELD_OTHER && (have & (1u << (id - 1))))
			return bad(c, "'%s' appears twice", field);
		switch (id) {
		case FIELD_KEY:
			if (!read_digest(c, &e->key))
				return field_error(c, "'key' is not 64 lowercase hex digits");
			have |= HAVE_KEY;
			break;
		case FIELD_KEY_SCHEMA:
			/* Any version is read (key.md, "Versioning"): what computes
			 * keys names one it does not know. */
			if (!gpucc_json_uint(&c->json, UINT32_MAX, &schema))
				return field_error(c, "'key_schema' is not an integer from 0 to 2^32-1");
			e->key_schema = (unsigned)schema;
			have |= HAVE_SCHEMA;
			break;
		case FIELD_MODULE:
			if (!(e->module = gpucc_json_string(&c->json)))
				return field_error(c, "'module' is not a string");
			have |= HAVE_MODULE;
			break;
		case FIELD_MODULE_SHA256:
			if (!read_digest(c, &e->module_sha256))
				return field_error(c, "'module_sha256' is not 64 lowercase hex digits");
			have |= HAVE_MODULE_SHA;
			break;
		case FIELD_TARGET:
			if (!(e->target = repeated_string(c, c->previous.target)))
				return field_error(c, "'target' is not a string");
			have |= HAVE_TARGET;
			break;
		case FIELD_TRIPLE:
			if (!(e->triple = repeated_string(c, c->previous.triple)))
				return field_error(c, "'triple' is not a string");
			have |= HAVE_TRIPLE;
			break;
		case FIELD_TOOLCHAIN:
			rc = parse_toolchain(c, e);
			have |= HAVE_TOOLCHAIN;
			break;
		case FIELD_OPTIONS:
			rc = parse_options(c, e);
			have |= HAVE_OPTIONS;
			break;
		case FIELD_KERNELS:
			kernels->count = 0;
			rc = parse_list(c, "kernels", kernels, kernel_item);
			have |= HAVE_KERNELS;
			break;
		case FIELD_EXTERNALS:
			externals->count = 0;
			rc = parse_list(c, "externals", externals, external_item);
			have |= HAVE_EXTERNALS;
			break;
		case FIELD_PAYLOADS:
			payloads->count = 0;
			rc = parse_list(c, "payloads", payloads, payload_item);
			if (rc == 0 && payloads->count > GPUCC_PART_COUNT)
				rc = bad(c, "more payloads than payload kinds");
			have |= HAVE_PAYLOADS;
			break;
		default:
			gpucc_json_skip(&c->json);
		}
	}
	if (rc)
		return rc;
	if (gpucc_json_failed(&c->json))
		return syntax_error(c);
	if (have != HAVE_ALL) {
		static const char *const names[] = {"key", "key_schema", "module", "module_sha256",
		                                    "target", "triple", "toolchain", "options",
		                                    "kernels", "externals", "payloads"};
		for (int i = 0; i < 11; i++)
			if (!(have & (1u << i)))
				return bad(c, "'%s' is missing", names[i]);
	}
	return 0;
}

static int parse_entry(parse_ctx *c, gpucc_entry *e)
{
	c->kernels.count = c->externals.count = c->payloads.count = 0;
	int rc = parse_entry_fields(c, e, &c->kernels, &c->externals, &c->payloads);
	if (rc == 0) {
		e->kernel_count = c->kernels.count;
		e->kernels = vec_finish(c, &c->kernels);
		e->external_count = c->externals.count;
		e->externals = vec_finish(c, &c->externals);
		e->payload_count = c->payloads.count;
		e->payloads = vec_finish(c, &c->payloads);
		if (!e->kernels || !e->externals || !e->payloads)
			return push_failure();
		bool target_known = c->valid_target && strcmp(c->valid_target, e->target) == 0 &&
		                    strcmp(c->valid_triple, e->triple) == 0;
		/* Keys are checked against their components by verify and by
		 * writers, not on every open: reading trusts payloads only after
		 * checking their digests, and a key is never used to vouch for
		 * content. */
		if (gpucc_manifest_validate_entry(e, !target_known, false) != 0)
			return bad(c, "%s", gpucc_error_last()->message); /* copied before it is set anew */
		c->valid_target = e->target;
		c->valid_triple = e->triple;
		c->previous = *e;
	}
	return rc;
}

/* The reader's offset in the text, past any whitespace. */
static uint64_t value_offset(const json_reader *r)
{
	const char *p = r->p;
	while (p < r->end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	return (uint64_t)(p - r->start);
}

static int parse_entries(parse_ctx *c, gpucc_manifest *out)
{
	vec entries = {.item = sizeof(gpucc_entry), .c = c};
	vec spans = {.item = 2 * sizeof(uint64_t), .c = c};
	int rc = 0;
	if (!gpucc_json_array_begin(&c->json))
		return field_error(c, "'entries' is not an array");
	while (rc == 0 && gpucc_json_array_next(&c->json)) {
		gpucc_entry *e = vec_push(&entries);
		uint64_t *span = e ? vec_push(&spans) : NULL;
		if (!e || !span) {
			rc = push_failure();
			break;
		}
		span[0] = value_offset(&c->json);
		rc = parse_entry(c, e);
		span[1] = (uint64_t)(c->json.p - c->json.start) - span[0];
		if (rc == 0 && c->index &&
		    gpucc_digest_compare(&((gpucc_entry *)entries.data)[c->index - 1].key, &e->key) >= 0)
			rc = bad(c, "entries are not sorted by key, or a key repeats");
		c->index++;
	}
	if (rc == 0 && gpucc_json_failed(&c->json))
		rc = syntax_error(c);
	if (rc) {
		vec_release(&entries);
		vec_release(&spans);
		return rc;
	}
	out->spans = (uint64_t *)spans.data;
	/* The vector's own storage becomes the manifest's entry array, trimmed
	 * to its count: a merge from a cache holds one manifest of one entry
	 * for each of its entries. */
	if (entries.count && entries.count < entries.capacity) {
		unsigned char *fitted = realloc(entries.data, entries.count * entries.item);
		if (fitted)
			entries.data = fitted; /* else the larger array serves as well */
	}
	out->entry_count = entries.count;
	out->entries = (gpucc_entry *)entries.data;
	return 0;
}

int gpucc_manifest_parse(gpucc_manifest *out, const char *json, size_t size, const char *name)
{
	return gpucc_manifest_parse_limited(out, json, size, name, 0, NULL);
}

int gpucc_manifest_parse_limited(gpucc_manifest *out, const char *json, size_t size,
                                 const char *name, uint64_t max_parsed, const char *limit_hint)
{
	memset(out, 0, sizeof *out);
	/* What the parse keeps is the text's strings, unescaped, and arrays of
	 * about its size: an arena of the text's size mostly holds it all (a
	 * merge from a cache holds one such arena per entry). */
	parse_ctx c = {.arena = gpucc_arena_new_sized(size), .name = name, .max_parsed = max_parsed,
	               .limit_hint = limit_hint};
	c.kernels = (vec){.item = sizeof(gpucc_kernel), .c = &c};
	c.externals = (vec){.item = sizeof(const char *), .c = &c};
	c.payloads = (vec){.item = sizeof(gpucc_payload), .c = &c};
	if (!c.arena)
		return gpucc_error_oom();
	gpucc_json_reader_init(&c.json, json, size, c.arena);

	/* The format and version are checked before the entries are read.  The
	 * canonical form puts them first; when "entries" comes earlier, it is
	 * skipped and read again afterwards. */
	char format[32] = "";
	uint64_t version = 0;
	bool have_format = false, have_version = false, have_entries = false;
	bool seen_format = false, seen_version = false; /* even when mistyped */
	bool in_place = false; /* the members after 'entries' are still unread */
	json_reader entries_at;
	int rc = 0;
	const char *field;
	if (!gpucc_json_object_begin(&c.json)) {
		rc = syntax_error(&c);
	} else {
		while (rc == 0 && gpucc_json_object_next(&c.json, &field)) {
			if ((strcmp(field, "format") == 0 && seen_format) ||
			    (strcmp(field, "version") == 0 && seen_version)) {
				rc = gpucc_error_set(GPUCC_ECORRUPT,
				                     "'%s': corrupt manifest: '%s' appears twice", name, field);
			} else if (strcmp(field, "format") == 0) {
				seen_format = true;
				have_format = gpucc_json_string_buffer(&c.json, format, sizeof format);
			} else if (strcmp(field, "version") == 0) {
				seen_version = true;
				have_version = gpucc_json_uint(&c.json, UINT64_MAX, &version);
			} else if (strcmp(field, "entries") == 0 && have_entries) {
				rc = gpucc_error_set(GPUCC_ECORRUPT,
				                     "'%s': corrupt manifest: 'entries' appears twice", name);
			} else if (strcmp(field, "entries") == 0) {
				have_entries = true;
				entries_at = c.json;
				if (have_format && have_version) {
					in_place = true;
					break; /* read in place below */
				}
				gpucc_json_skip(&c.json);
			} else {
				gpucc_json_skip(&c.json);
			}
		}
	}
	if (rc == 0 && gpucc_json_failed(&c.json))
		rc = syntax_error(&c);
	else if (rc == 0 && (!have_format || strcmp(format, "gpucc-image") != 0))
		rc = gpucc_error_set(GPUCC_ECORRUPT, "'%s': manifest is not a gpucc image manifest", name);
	else if (rc == 0 && !have_version)
		rc = gpucc_error_set(GPUCC_ECORRUPT,
		                     seen_version ? "'%s': corrupt manifest: 'version' is not a "
		                                    "non-negative integer"
		                                  : "'%s': corrupt manifest: no 'version'",
		                     name);
	else if (rc == 0 && version != GPUCC_IMAGE_FORMAT_VERSION)
		rc = gpucc_error_set(GPUCC_EVERSION,
		                     "'%s': manifest version %llu is not supported (this gpucc reads %d)",
		                     name, (unsigned long long)version, GPUCC_IMAGE_FORMAT_VERSION);
	else if (rc == 0 && !have_entries)
		rc = gpucc_error_set(GPUCC_ECORRUPT, "'%s': corrupt manifest: no 'entries' array", name);
	if (rc == 0) {
		c.json = entries_at;
		rc = parse_entries(&c, out);
	}
	/* The rest of the document must still be well-formed JSON.  Read in
	 * place, its members are new (a field there may repeat one before
	 * 'entries'); otherwise the first pass has seen them all. */
	while (rc == 0 && gpucc_json_object_next(&c.json, &field)) {
		if (in_place && (strcmp(field, "entries") == 0 ||
		                 (strcmp(field, "format") == 0 && seen_format) ||
		                 (strcmp(field, "version") == 0 && seen_version)))
			rc = gpucc_error_set(GPUCC_ECORRUPT,
			                     "'%s': corrupt manifest: '%s' appears twice", name, field);
		gpucc_json_skip(&c.json);
	}
	if (rc == 0 && !gpucc_json_finish(&c.json))
		rc = syntax_error(&c);
	release_scratch(&c);
	if (rc) {
		free(out->entries); /* parsed before a later defect was found */
		free(out->spans);
		gpucc_arena_free(c.arena);
		memset(out, 0, sizeof *out);
		return rc;
	}
	out->arena = c.arena;
	return 0;
}

int gpucc_manifest_check_keys(const gpucc_manifest *m, const char *name)
{
	for (size_t i = 0; i < m->entry_count; i++) {
		gpucc_digest key;
		int rc = gpucc_key_compute(&key, &m->entries[i]);
		if (rc == GPUCC_EVERSION || rc == GPUCC_EINVALID) {
			/* A key schema this gpucc does not know, say: name it,
			 * not a key that does not match. */
			char message[512];
			snprintf(message, sizeof message, "%s", gpucc_error_last()->message);
			return gpucc_error_set(rc == GPUCC_EVERSION ? rc : GPUCC_ECORRUPT,
			                       "'%s': corrupt manifest: entry %zu: %s", name, i, message);
		}
		if (rc)
			return rc; /* out of memory */
		if (gpucc_digest_compare(&key, &m->entries[i].key) == 0)
			continue;
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &m->entries[i].key);
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "'%s': corrupt manifest: entry %zu: key %.12s does not match the "
		                       "entry's key components",
		                       name, i, hex);
	}
	return 0;
}

void gpucc_manifest_release(gpucc_manifest *m)
{
	if (!m)
		return;
	free(m->entries);
	free(m->spans);
	gpucc_arena_free(m->arena);
	memset(m, 0, sizeof *m);
}

int gpucc_manifest_parse_entry(gpucc_manifest *out, const char *json, size_t size,
                               const char *name, size_t index)
{
	memset(out, 0, sizeof *out);
	parse_ctx c = {.arena = gpucc_arena_new_sized(size), .name = name, .index = index};
	c.kernels = (vec){.item = sizeof(gpucc_kernel), .c = &c};
	c.externals = (vec){.item = sizeof(const char *), .c = &c};
	c.payloads = (vec){.item = sizeof(gpucc_payload), .c = &c};
	gpucc_entry *e = calloc(1, sizeof *e);
	if (!c.arena || !e) {
		gpucc_arena_free(c.arena);
		free(e);
		return gpucc_error_oom();
	}
	gpucc_json_reader_init(&c.json, json, size, c.arena);
	int rc = parse_entry(&c, e);
	if (rc == 0 && !gpucc_json_finish(&c.json))
		rc = syntax_error(&c);
	release_scratch(&c);
	if (rc) {
		free(e);
		gpucc_arena_free(c.arena);
		return rc;
	}
	out->entry_count = 1;
	out->entries = e;
	out->arena = c.arena;
	return 0;
}
