/*
 * formats/manifest_write.c -- writing the image manifest (formats/manifest.md)
 * and the names of payload members.
 *
 * Writing is by hand, field by field in a fixed order, so that the bytes are
 * canonical and memory stays proportional to the output.
 */
#include "manifest.h"

#include "byte_buffer.h"
#include "errors.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Output accumulates in data; with a sink, it is handed over whenever it
 * passes FLUSH_AT bytes, so memory stays bounded whatever the manifest's
 * size. */
typedef struct out_buffer {
	gpucc_buffer bytes;
	bool failed; /* the sink failed, or bytes ran out of memory */
	int rc;      /* the sink's error, if it failed */
	gpucc_manifest_sink sink;
	void *sink_ctx;
	bool counting;  /* only count the bytes (gpucc_manifest_size) */
	uint64_t total; /* bytes handed to the sink, or counted */
} out_buffer;

#define FLUSH_AT ((size_t)64 * 1024)

static void out_flush(out_buffer *b)
{
	if (b->failed || !b->sink || b->bytes.size == 0)
		return;
	int rc = b->sink(b->sink_ctx, b->bytes.data, b->bytes.size);
	if (rc) {
		b->failed = true;
		b->rc = rc;
	}
	b->total += b->bytes.size;
	gpucc_buffer_clear(&b->bytes);
}

/* Room for n more bytes at the end of the output; NULL when only counting
 * or out of memory. */
static char *out_reserve(out_buffer *b, size_t n)
{
	if (b->failed)
		return NULL;
	if (b->counting) {
		b->total += n;
		return NULL;
	}
	if (b->sink && b->bytes.size + n > FLUSH_AT)
		out_flush(b);
	char *at = gpucc_buffer_extend(&b->bytes, n);
	if (!at)
		b->failed = true;
	return at;
}

static void out_bytes(out_buffer *b, const char *s, size_t n)
{
	char *at = out_reserve(b, n);
	if (at)
		memcpy(at, s, n);
}

static void out_str(out_buffer *b, const char *s)
{
	out_bytes(b, s, strlen(s));
}

/* A JSON string: quotes, backslashes and control characters escaped; other
 * bytes (UTF-8 included) as they are. */
static void out_json_string(out_buffer *b, const char *s)
{
	const char *end = s;
	while (*end && (unsigned char)*end >= 0x20 && *end != '"' && *end != '\\')
		end++;
	if (!*end) {
		/* Nothing to escape (keys, digests, names): one write. */
		size_t n = (size_t)(end - s);
		char *at = out_reserve(b, n + 2);
		if (at) {
			at[0] = '"';
			memcpy(at + 1, s, n);
			at[n + 1] = '"';
		}
		return;
	}
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

_Static_assert(GPUCC_IMAGE_FORMAT_VERSION == 1, "the layout's first line states version 1");

static void out_manifest(out_buffer *b, const gpucc_entry *const *entries, size_t count)
{
	out_str(b, GPUCC_MANIFEST_LAYOUT_HEAD);
	for (size_t i = 0; i < count; i++) {
		out_str(b, i ? ",\n" : "\n");
		out_entry(b, entries[i], true);
	}
	out_str(b, GPUCC_MANIFEST_LAYOUT_TAIL);
}

/* The buffer's whole contents in *out (and *out_size), or out of memory. */
static int finish_in_memory(out_buffer *b, char **out, size_t *out_size)
{
	if (b->failed) {
		gpucc_buffer_free(&b->bytes);
		return gpucc_error_oom();
	}
	*out = gpucc_buffer_take(&b->bytes, out_size);
	return 0;
}

/* Hand what is left to the sink and release the buffer. */
static int finish_streamed(out_buffer *b)
{
	out_flush(b);
	gpucc_buffer_free(&b->bytes);
	if (b->failed)
		return b->rc ? b->rc : gpucc_error_oom();
	return 0;
}

int gpucc_manifest_write(char **out, size_t *out_size, const gpucc_entry *const *entries,
                         size_t count)
{
	out_buffer b = {0};
	out_manifest(&b, entries, count);
	return finish_in_memory(&b, out, out_size);
}

int gpucc_manifest_size(uint64_t *out, const gpucc_entry *const *entries, size_t count)
{
	out_buffer b = {.counting = true};
	out_manifest(&b, entries, count);
	int rc = finish_streamed(&b);
	if (rc == 0)
		*out = b.total;
	return rc;
}

int gpucc_manifest_write_to(gpucc_manifest_sink sink, void *ctx, const gpucc_entry *const *entries,
                            size_t count)
{
	out_buffer b = {.sink = sink, .sink_ctx = ctx};
	out_manifest(&b, entries, count);
	return finish_streamed(&b);
}

int gpucc_manifest_entry_spans(uint64_t **out, const gpucc_entry *const *entries, size_t count)
{
	*out = malloc((count ? count : 1) * 2 * sizeof **out);
	if (!*out)
		return gpucc_error_oom();
	/* out_manifest's bytes, counted: each object's first and last. */
	out_buffer b = {.counting = true};
	out_str(&b, GPUCC_MANIFEST_LAYOUT_HEAD);
	for (size_t i = 0; i < count; i++) {
		out_str(&b, i ? ",\n" : "\n");
		uint64_t start = b.total;
		out_entry(&b, entries[i], true);
		(*out)[2 * i] = start;
		(*out)[2 * i + 1] = b.total - start;
	}
	return 0;
}

int gpucc_manifest_entry_record(char **out, const gpucc_entry *e)
{
	out_buffer b = {0};
	out_entry(&b, e, false);
	return finish_in_memory(&b, out, NULL);
}

void gpucc_payload_member_name(char out[GPUCC_PAYLOAD_MEMBER_SIZE], const gpucc_payload *p)
{
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &p->sha256);
	snprintf(out, GPUCC_PAYLOAD_MEMBER_SIZE, "payloads/%s%s", hex, gpucc_part_extension(p->part));
}
