/*
 * lib/tests/fuzz_prelude_record.c -- fuzz target: the records of the
 * cache's precompiled preludes (CACHE/v1/pch/.../<name>.prelude,
 * formats/cache.md, "Precompiled preludes"), as gpucc_prelude_record_parse
 * reads them for compile's lookups and for gc, verify and prune.  The
 * input is a record's bytes.  Whatever they are, the parser reads nothing
 * past them (the sanitizers' to see), and a record it takes holds its
 * files' lines inside the input, as many as its count, each a source
 * record's ("<64 hex> <path>\n" or "dir <stamp> <path>\n"), running to
 * the input's end; written back from what
 * it parsed (numbers without leading zeros), it is the input again.
 */
#include "fuzz.h"

#include "cache_internal.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	gpucc_prelude_record r;
	if (gpucc_prelude_record_parse(text, size, &r))
		return 0;
	if (r.pch_size == 0 || r.count == 0)
		fuzz_fail("a record taken holds no PCH size or no file");
	if (r.lines < text || r.size > size || r.lines != text + size - r.size)
		fuzz_fail("a record's files do not run to its end");
	unsigned long n = 0;
	for (const char *p = r.lines, *end = r.lines + r.size; p < end; n++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl || ((nl - p < 66 || p[64] != ' ') && strncmp(p, "dir ", 4) != 0))
			fuzz_fail("a file's line is neither '<SHA-256> <path>' nor 'dir <stamp> <path>'");
		p = nl + 1;
	}
	if (n != r.count)
		fuzz_fail("a record's count is not its number of lines");
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &r.pch);
	char *rebuilt = NULL;
	size_t rebuilt_size = 0;
	FILE *out = open_memstream(&rebuilt, &rebuilt_size);
	if (!out)
		return 0;
	fprintf(out, GPUCC_PRELUDE_MAGIC "\npch %s %llu\nfiles %lu\n", hex,
	        (unsigned long long)r.pch_size, r.count);
	fwrite(r.lines, 1, r.size, out);
	fclose(out);
	/* Numbers written without leading zeros: the input's own bytes. */
	const char *second = text + sizeof GPUCC_PRELUDE_MAGIC;
	const char *third = (const char *)memchr(second, '\n', size - (size_t)(second - text)) + 1;
	bool leading_zero = second[69] == '0' || third[6] == '0';
	if (!leading_zero && (rebuilt_size != size || memcmp(rebuilt, data, size) != 0))
		fuzz_fail("a record written back is not the record read");
	free(rebuilt);
	return 0;
}

void fuzz_seeds(void (*add)(const void *data, size_t size))
{
	static const char record[] =
		GPUCC_PRELUDE_MAGIC "\n"
		"pch 43a84df6841080b914b08c373b33c79314ec6ef216246bdfa7c1f4f6007e4729 7565284\n"
		"files 5\n"
		"6f5902ac237024bdd0c176cb93063dc4f5902ac237024bdd0c176cb93063dc4f "
		"/usr/lib/llvm-19/lib/clang/19/include/__clang_cuda_runtime_wrapper.h\n"
		"0dc7f8a1ae32e4e3ac1e27e9e7b0e51c6a1fbfe4cbd07df3fad7bdf76aa2d5b0 $SOURCE_DATE_EPOCH\n"
		"0000000000000000000000000000000000000000000000000000000000000000 ./cuda_runtime.h\n"
		"dir 2049 1311302 1765112400123456789 1765112400123456789 /usr/include\n"
		"0000000000000000000000000000000000000000000000000000000000000000 /usr/include/cuda.h\n";
	add(record, sizeof record - 1);
	static const char short_count[] =
		GPUCC_PRELUDE_MAGIC "\n"
		"pch 43a84df6841080b914b08c373b33c79314ec6ef216246bdfa7c1f4f6007e4729 1\n"
		"files 2\n"
		"6f5902ac237024bdd0c176cb93063dc4f5902ac237024bdd0c176cb93063dc4f a.h\n";
	add(short_count, sizeof short_count - 1);
}
