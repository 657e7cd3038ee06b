/*
 * lib/algebra/snapshot_text.c -- parsing a snapshot's text form, one "KEY CONTENT"
 * line per item (formats/snapshot.md; written by lib/algebra/snapshot.c).
 *
 * Lists are usually what --show or a script printed: every line exactly 64
 * hex digits, a space, 64 more and a newline.  Such a list is parsed by
 * position, without looking for line ends, on several threads when large.
 * Anything else (blank lines, CRLF, a bad line) takes the line-by-line
 * path, which also names the first bad line.
 */
#include "gpucc/snapshot.h"

#include "snapshot_impl.h"
#include "errors.h"
#include "parallel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE 130           /* "KEY CONTENT\n" */
#define PARALLEL_MIN 65536 /* fewer lines: one thread */
#define THREADS_MAX 8

/* 0x10 | value for a hex digit (either case), 0 for any other byte: a
 * constant table, so threads parsing at once share it safely. */
#define DIGIT(c, v) [c] = 0x10 | (v)
static const unsigned char hex_table[256] = {
	DIGIT('0', 0),  DIGIT('1', 1),  DIGIT('2', 2),  DIGIT('3', 3),  DIGIT('4', 4),
	DIGIT('5', 5),  DIGIT('6', 6),  DIGIT('7', 7),  DIGIT('8', 8),  DIGIT('9', 9),
	DIGIT('a', 10), DIGIT('b', 11), DIGIT('c', 12), DIGIT('d', 13), DIGIT('e', 14),
	DIGIT('f', 15), DIGIT('A', 10), DIGIT('B', 11), DIGIT('C', 12), DIGIT('D', 13),
	DIGIT('E', 14), DIGIT('F', 15),
};

static bool parse_hex32(gpucc_digest *out, const char *p)
{
	unsigned valid = 0x10;
	for (int i = 0; i < 32; i++) {
		unsigned hi = hex_table[(unsigned char)p[2 * i]];
		unsigned lo = hex_table[(unsigned char)p[2 * i + 1]];
		valid &= hi & lo;
		out->bytes[i] = (unsigned char)(hi << 4 | (lo & 15));
	}
	return valid != 0;
}

/* One item line of len bytes (its newline not counted). */
static bool parse_line(gpucc_snapshot_item *it, const char *p, size_t len)
{
	return len == LINE - 1 && p[64] == ' ' && parse_hex32(&it->key, p) &&
	       parse_hex32(&it->content, p + 65);
}

typedef struct fixed_job {
	const char *text;
	size_t size, lines, threads;
	gpucc_snapshot_item *items;
	bool *bad; /* [threads] */
} fixed_job;

static void parse_fixed_chunk(void *ctx, size_t c)
{
	fixed_job *j = ctx;
	for (size_t i = j->lines * c / j->threads; i < j->lines * (c + 1) / j->threads; i++) {
		const char *p = j->text + i * LINE;
		size_t len = (size_t)(j->text + j->size - p) < LINE ? LINE - 1 : LINE;
		if (!parse_line(&j->items[i], p, LINE - 1) || (len == LINE && p[LINE - 1] != '\n')) {
			j->bad[c] = true;
			return;
		}
	}
}

/* Parse text whose every line is LINE bytes (the last may lack its
 * newline) into items: true when it is such a text and all parsed. */
static bool parse_fixed(gpucc_snapshot_item *items, size_t *count, const char *text, size_t size)
{
	if (size % LINE != 0 && size % LINE != LINE - 1)
		return false;
	size_t cpus = gpucc_cpu_count();
	bool bad[THREADS_MAX] = {false};
	fixed_job j = {text, size, (size + 1) / LINE, 1, items, bad};
	if (j.lines >= PARALLEL_MIN)
		j.threads = cpus < THREADS_MAX ? cpus : THREADS_MAX;
	gpucc_parallel_for(j.threads, j.threads, parse_fixed_chunk, &j);
	for (size_t c = 0; c < j.threads; c++)
		if (bad[c])
			return false;
	*count = j.lines;
	return true;
}

/* Parse text line by line into items (room for every line that could be
 * an item), allowing blank lines and CRLF; a bad line is an error. */
static int parse_lines(gpucc_snapshot_item *items, size_t *count, const char *text, size_t size,
                       const char *name)
{
	size_t n = 0, line_no = 0;
	const char *p = text, *end = text + size;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = nl ? nl : end;
		line_no++;
		size_t len = (size_t)(line_end - p);
		if (len && p[len - 1] == '\r')
			len--;
		if (len != 0 && !parse_line(&items[n++], p, len))
			return gpucc_error_set(GPUCC_ECORRUPT,
			                       "'%s' line %zu: expected 'KEY CONTENT' (64 hex digits each)",
			                       name, line_no);
		p = line_end + 1;
	}
	*count = n;
	return 0;
}

int gpucc_snapshot_parse_text(gpucc_snapshot **out, const char *text, size_t size,
                              const char *name)
{
	GPUCC_REQUIRE(out);
	*out = NULL;
	if (size != 0)
		GPUCC_REQUIRE(text);
	if (!name)
		name = "snapshot text";
	if (size == 0)
		text = ""; /* an empty buffer may come as NULL: memchr must not see it */
	/* An item line takes LINE bytes, the last LINE - 1. */
	gpucc_snapshot_item *items = gpucc_snapshot_items_alloc((size + 1) / LINE);
	if (!items)
		return gpucc_error_oom();
	size_t count = 0;
	if (!parse_fixed(items, &count, text, size)) {
		int rc = parse_lines(items, &count, text, size, name);
		if (rc) {
			free(items);
			return rc;
		}
	}
	char what[1100];
	snprintf(what, sizeof what, "'%s'", name);
	return gpucc_snapshot_from_items(out, items, count, what);
}
