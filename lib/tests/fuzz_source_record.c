/*
 * lib/tests/fuzz_source_record.c -- fuzz target: direct-mode records of
 * sources (CACHE/v1/sources/.../<name>.record, formats/cache.md,
 * "Sources"), as gpucc_source_record_parse reads them for compile's
 * lookups and for gc and verify.  The input is a record's bytes.  Whatever
 * they are, the parser reads nothing past them (the sanitizers' to see),
 * hands on only results that keep the format's rules (their lines inside
 * the input, as many as the count, each "<64 hex> <path>\n" or "dir DEV
 * INO MTIME CTIME <path>\n"), and a record
 * it takes whole is one it takes again when written back from those
 * results: the same bytes, when its counts are written without leading
 * zeros.
 */
#include "fuzz.h"

#include "cache_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct seen {
	const char *text;
	size_t size;
	char *rebuilt;
	size_t rebuilt_size, results;
	FILE *out;
} seen;

/* Whether the len bytes at p are "dir " and four blank-ended runs of
 * decimal digits, then at least one byte (the path). */
static bool directory_line(const char *p, size_t len)
{
	if (len < 4 || memcmp(p, "dir ", 4) != 0)
		return false;
	size_t at = 4;
	for (int field = 0; field < 4; field++) {
		size_t start = at;
		while (at < len && p[at] >= '0' && p[at] <= '9')
			at++;
		if (at == start || at >= len || p[at] != ' ')
			return false;
		at++;
	}
	return at < len;
}

static void check_result(void *ctx, const gpucc_digest *key, const char *lines, size_t size,
                         unsigned long count)
{
	seen *s = ctx;
	if (lines < s->text || size > s->size || lines > s->text + s->size - size)
		fuzz_fail("a result's lines lie outside the record");
	if (size == 0 || lines[size - 1] != '\n')
		fuzz_fail("a result's lines do not end with a line break");
	unsigned long n = 0;
	for (const char *p = lines, *end = lines + size; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if ((nl - p < 66 || p[64] != ' ') && !directory_line(p, (size_t)(nl - p)))
			fuzz_fail("a line is neither '<SHA-256> <path>' nor 'dir <stamp> <path>'");
		n++;
		p = nl + 1;
	}
	if (n != count)
		fuzz_fail("a result's count is not its number of lines");
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, key);
	fprintf(s->out, "entry %s %lu\n", hex, count);
	fwrite(lines, 1, size, s->out);
	s->results++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	seen s = {.text = (const char *)data, .size = size};
	s.out = open_memstream(&s.rebuilt, &s.rebuilt_size);
	if (!s.out)
		return 0;
	fputs(GPUCC_SOURCE_RECORD_MAGIC "\n", s.out);
	const char *why = gpucc_source_record_parse((const char *)data, size, check_result, &s);
	fclose(s.out);
	if (!why) {
		if (s.results == 0)
			fuzz_fail("a record taken whole holds no result");
		seen again = {.text = s.rebuilt, .size = s.rebuilt_size};
		char *twice = NULL;
		size_t twice_size = 0;
		again.out = open_memstream(&twice, &twice_size);
		if (again.out) {
			fputs(GPUCC_SOURCE_RECORD_MAGIC "\n", again.out);
			if (gpucc_source_record_parse(s.rebuilt, s.rebuilt_size, check_result, &again))
				fuzz_fail("a record written back from its results does not parse");
			fclose(again.out);
			if (again.results != s.results || twice_size != s.rebuilt_size ||
			    memcmp(twice, s.rebuilt, twice_size) != 0)
				fuzz_fail("a record written back parses to other results");
		}
		free(twice);
		/* Counts without leading zeros: the input's own bytes. */
		bool leading_zero = false;
		for (const char *p = (const char *)data; (p = memmem(p, size - (size_t)(p - (const char *)data),
		                                                     "\nentry ", 7)) != NULL; p++)
			leading_zero |= (size_t)(p - (const char *)data) + 72 < size && p[72] == '0';
		if (!leading_zero && (s.rebuilt_size != size || memcmp(s.rebuilt, data, size) != 0))
			fuzz_fail("a record written back is not the record read");
	}
	free(s.rebuilt);
	return 0;
}

void fuzz_seeds(void (*add)(const void *data, size_t size))
{
	static const char record[] =
		GPUCC_SOURCE_RECORD_MAGIC "\n"
		"entry 43a84df6841080b914b08c373b33c79314ec6ef216246bdfa7c1f4f6007e4729 9\n"
		"0dc7f8a1ae32e4e3ac1e27e9e7b0e51c6a1fbfe4cbd07df3fad7bdf76aa2d5b0 $SOURCE_DATE_EPOCH\n"
		"6f5902ac237024bdd0c176cb93063dc4f5902ac237024bdd0c176cb93063dc4f k.hip\n"
		"6f5902ac237024bdd0c176cb93063dc4f5902ac237024bdd0c176cb93063dc4f inc dir#1/op$x.h\n"
		"0000000000000000000000000000000000000000000000000000000000000000 gone/link/op.h\n"
		"dir 65024 10993924 1796656845466201074 1796656845466201074 .\n"
		"0000000000000000000000000000000000000000000000000000000000000000 op.h\n"
		"0000000000000000000000000000000000000000000000000000000000000000 ./bits/op.h\n"
		"dir 65024 2 1750776131000000000 1796656325417021070 /usr/include\n"
		"0000000000000000000000000000000000000000000000000000000000000000 /usr/include/inc/op.h\n"
		"entry 9d702e19ecbd42e6b1e0ba54ef5ad2ca3e8bc3b9d4d8c3e5a1e0d4f2c6a7b8c9 1\n"
		"6f5902ac237024bdd0c176cb93063dc4f5902ac237024bdd0c176cb93063dc4f k.hip\n";
	add(record, sizeof record - 1);
	/* Lines the format refuses: a stamp short of a field, a dir line with
	 * no path. */
	static const char short_stamp[] =
		GPUCC_SOURCE_RECORD_MAGIC "\n"
		"entry 43a84df6841080b914b08c373b33c79314ec6ef216246bdfa7c1f4f6007e4729 2\n"
		"6f5902ac237024bdd0c176cb93063dc4f5902ac237024bdd0c176cb93063dc4f k.hip\n"
		"dir 65024 2 1750776131000000000 inc\n";
	add(short_stamp, sizeof short_stamp - 1);
	static const char no_path[] =
		GPUCC_SOURCE_RECORD_MAGIC "\n"
		"entry 43a84df6841080b914b08c373b33c79314ec6ef216246bdfa7c1f4f6007e4729 2\n"
		"6f5902ac237024bdd0c176cb93063dc4f5902ac237024bdd0c176cb93063dc4f k.hip\n"
		"dir 1 2 3 4 \n";
	add(no_path, sizeof no_path - 1);
}
