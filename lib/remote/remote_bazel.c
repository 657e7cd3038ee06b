/*
 * lib/remote/remote_bazel.c -- an entry file split for layout=bazel
 * (formats/remote.md, "The bazel layout"): its payload members' bytes go to
 * the content-addressed store (cas/<sha256>), and the rest -- the archive's
 * headers, format member, manifest, end marker and any signature trailer --
 * goes, with the list of where each payload sits, into the action-cache
 * record (ac/<key>).  Joining the record with its payloads gives back the
 * entry file byte for byte, which lib/remote/remote.c then verifies as any other
 * object.  Only the archive's plain ustar headers are walked: a member past
 * one that is not plain stays in the record whole.
 */
#include "remote_impl.h"

#include "hex.h"
#include "ustar.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECORD_MAGIC "gpucc-remote-record 1\n"
#define PAYLOAD_PREFIX "payloads/"

void gpucc_remote_bazel_free(remote_bazel *b)
{
	free(b->spans);
	free(b->record.data);
	memset(b, 0, sizeof *b);
}

static bool add_span(remote_bazel *b, uint64_t offset, uint64_t size, const unsigned char *data)
{
	if (b->count == REMOTE_BAZEL_MAX_PAYLOADS)
		return false;
	remote_bazel_span *grown = realloc(b->spans, (b->count + 1) * sizeof *grown);
	if (!grown)
		return false;
	b->spans = grown;
	remote_bazel_span *s = &b->spans[b->count++];
	s->offset = offset;
	s->size = size;
	gpucc_digest_buffer(&s->digest, data, size);
	return true;
}

/* The spans of object's payload members, in order. */
static bool find_payloads(remote_bazel *b, const remote_blob *object)
{
	size_t at = 0;
	gpucc_ustar_header h;
	while (object->size - at >= GPUCC_USTAR_BLOCK &&
	       gpucc_ustar_parse(object->data + at, &h) && gpucc_ustar_is_regular(&h)) {
		at += GPUCC_USTAR_BLOCK;
		if (h.size > object->size - at)
			break;
		if (h.size && strncmp(h.name, PAYLOAD_PREFIX, strlen(PAYLOAD_PREFIX)) == 0 &&
		    !add_span(b, at, h.size, object->data + at))
			return false;
		uint64_t padded = gpucc_ustar_padded(h.size);
		if (padded > object->size - at)
			break;
		at += (size_t)padded;
	}
	return true;
}

int gpucc_remote_bazel_split(remote_bazel *b, const remote_blob *object)
{
	memset(b, 0, sizeof *b);
	if (!find_payloads(b, object)) {
		gpucc_remote_bazel_free(b);
		return -1;
	}
	size_t head = strlen(RECORD_MAGIC) + 24 + b->count * (2 * 21 + 64 + 3), moved = 0;
	for (size_t i = 0; i < b->count; i++)
		moved += b->spans[i].size;
	unsigned char *out = malloc(head + object->size - moved);
	if (!out) {
		gpucc_remote_bazel_free(b);
		return -1;
	}
	int n = snprintf((char *)out, head, RECORD_MAGIC "%zu\n", b->count);
	for (size_t i = 0; i < b->count; i++) {
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &b->spans[i].digest);
		n += snprintf((char *)out + n, head - (size_t)n, "%" PRIu64 " %" PRIu64 " %s\n",
		              b->spans[i].offset, b->spans[i].size, hex);
	}
	size_t len = (size_t)n, from = 0;
	for (size_t i = 0; i <= b->count; i++) {
		size_t to = i < b->count ? (size_t)b->spans[i].offset : object->size;
		memcpy(out + len, object->data + from, to - from);
		len += to - from;
		if (i < b->count)
			from = to + (size_t)b->spans[i].size;
	}
	b->record.data = out;
	b->record.size = len;
	return 0;
}

/* One "N N HEX\n" line at *p (before end) into s; false when malformed. */
static bool parse_line(const char **p, const char *end, remote_bazel_span *s)
{
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	char line[160], hex[80];
	if (!nl || nl - *p >= (long)sizeof line)
		return false;
	memcpy(line, *p, (size_t)(nl - *p));
	line[nl - *p] = '\0';
	int used = 0;
	if (sscanf(line, "%" SCNu64 " %" SCNu64 " %79s%n", &s->offset, &s->size, hex, &used) != 3 ||
	    line[used] || gpucc_hex_span(hex, true) != strlen(hex) ||
	    gpucc_digest_from_hex(&s->digest, hex))
		return false;
	/* One spelling of each line: what split writes, and nothing else. */
	char again[sizeof line];
	snprintf(again, sizeof again, "%" PRIu64 " %" PRIu64 " %s", s->offset, s->size, hex);
	if (strcmp(again, line) != 0)
		return false;
	*p = nl + 1;
	return true;
}

int gpucc_remote_bazel_parse(remote_bazel *b, const remote_blob *record, const char **why)
{
	memset(b, 0, sizeof *b);
	const char *p = (const char *)record->data, *end = p + record->size;
	size_t magic = strlen(RECORD_MAGIC);
	char *stop = NULL;
	*why = "the action-cache record is malformed";
	if (record->size < magic || memcmp(p, RECORD_MAGIC, magic) != 0)
		return -1;
	p += magic;
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	unsigned long count = nl && *p >= '0' && *p <= '9' ? strtoul(p, &stop, 10) : 0;
	if (!nl || stop != nl || count > REMOTE_BAZEL_MAX_PAYLOADS)
		return -1;
	p = nl + 1;
	b->spans = calloc(count ? count : 1, sizeof *b->spans);
	if (!b->spans)
		return -1;
	uint64_t total = 0, next = 0;
	for (b->count = 0; b->count < count; b->count++) {
		remote_bazel_span *s = &b->spans[b->count];
		if (!parse_line(&p, end, s) || s->offset < next || s->size == 0 ||
		    s->size > REMOTE_MAX_OBJECT || s->offset > REMOTE_MAX_OBJECT)
			goto bad;
		next = s->offset + s->size;
		total += s->size;
	}
	/* The skeleton: the record's rest, into which every span fits. */
	b->record.size = (size_t)(end - p);
	if (total + b->record.size > REMOTE_MAX_OBJECT ||
	    (count && b->spans[count - 1].offset + b->spans[count - 1].size > total + b->record.size))
		goto bad;
	b->record.data = malloc(b->record.size ? b->record.size : 1);
	if (!b->record.data)
		goto bad;
	memcpy(b->record.data, p, b->record.size);
	return 0;
bad:
	gpucc_remote_bazel_free(b);
	return -1;
}

int gpucc_remote_bazel_join(remote_blob *out, const remote_bazel *b, const remote_blob *payloads,
                            const char **why)
{
	size_t total = b->record.size;
	for (size_t i = 0; i < b->count; i++) {
		gpucc_digest d;
		gpucc_digest_buffer(&d, payloads[i].data, payloads[i].size);
		if (payloads[i].size != b->spans[i].size ||
		    gpucc_digest_compare(&d, &b->spans[i].digest) != 0) {
			*why = "a payload's bytes do not have the SHA-256 of its name";
			return -1;
		}
		total += payloads[i].size;
	}
	out->data = malloc(total ? total : 1);
	if (!out->data) {
		*why = "out of memory";
		return -1;
	}
	size_t len = 0, from = 0;
	for (size_t i = 0; i <= b->count; i++) {
		size_t to = i < b->count ? (size_t)b->spans[i].offset - len + from : b->record.size;
		memcpy(out->data + len, b->record.data + from, to - from);
		len += to - from;
		from = to;
		if (i < b->count) {
			memcpy(out->data + len, payloads[i].data, payloads[i].size);
			len += payloads[i].size;
		}
	}
	out->size = len;
	return 0;
}
