/*
 * lib/tests/test_source_pch.c -- the run's precompiled preludes
 * (lib/compile/compile_source_pch.c) without clang: which compiles may read one
 * (gpucc_source_pch_applies, gpucc_source_pch_worth) and which take the
 * extended prelude (gpucc_source_prelude_runtime); one PCH per group of
 * command lines, the unit's own arguments aside, made by the first caller
 * and made again, once, after clang refused it, none when its probe
 * compiles to other bitcode with it than without, the plain prelude then
 * for a unit that asked for the extended one (gpucc_source_pch_get,
 * _refused, with a runner that stands in for clang); and the IR check that finds the
 * "srcloc" metadata kind a PCH changes the values of, at every bit offset
 * (gpucc_source_pch_ir_trusted).
 */
#include "check.h"

#include "compile_source_run.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- a clang that makes PCHs ------------------------------------------------ */

static _Atomic int runs;
static _Atomic int bare_runs; /* probes with no prelude (-nocudainc) */
static bool fail_pch;     /* the next PCH's making fails */
static bool probe_differs; /* a probe with the PCH writes other bytes */
static bool bare_differs;  /* a probe with no prelude writes other bytes */

/* Writes the file after "-o" ("PCH", or "IR" for a probe's bitcode: other
 * bytes with -include-pch when probe_differs); counts its runs (the
 * probe without the PCH runs on a thread of its own). */
static int fake_clang(char *const *argv, int err_fd, unsigned timeout_seconds, int *status,
                      bool *timed_out)
{
	(void)err_fd;
	(void)timeout_seconds;
	*timed_out = false;
	runs++;
	*status = 0;
	bool pch = false, with_pch = false, bare = false;
	for (size_t i = 0; argv[i]; i++) {
		bare |= strcmp(argv[i], "-nocudainc") == 0;
		pch |= strcmp(argv[i], "-emit-pch") == 0;
		with_pch |= strcmp(argv[i], "-include-pch") == 0;
		bare_runs += strcmp(argv[i], "-nocudainc") == 0;
	}
	if (pch && fail_pch) {
		fail_pch = false;
		*status = 1 << 8; /* exit 1 */
		return 0;
	}
	for (size_t i = 0; argv[i]; i++)
		if (strcmp(argv[i], "-o") == 0 && argv[i + 1]) {
			FILE *f = fopen(argv[i + 1], "w");
			if (f) {
				fputs(pch                     ? "PCH"
				      : with_pch && probe_differs ? "IR'"
				      : bare && bare_differs      ? "IR of no prelude"
				                                  : "IR",
				      f);
				fclose(f);
			}
		}
	return 0;
}

/* The PCH for a unit's command line, in a run without a cache whose
 * temporary directory is dir; made only when may_make. */
static char *get_unit(gpucc_source_pch_set *set, char **argv, const char *dir, bool may_make,
                      gpucc_source_language language, const char *text, bool *runtime)
{
	context x;
	memset(&x, 0, sizeof x);
	snprintf(x.temp_dir, sizeof x.temp_dir, "%s", dir);
	arglist a = {0};
	a.real = argv;
	gpucc_source_pair p;
	memset(&p, 0, sizeof p);
	p.language = language;
	p.target_name = "sm_80";
	p.data = (const unsigned char *)text;
	p.size = strlen(text);
	return gpucc_source_pch_get(set, &x, &p, &a, may_make, runtime);
}

static char *get_made(gpucc_source_pch_set *set, char **argv, const char *dir, bool may_make)
{
	bool runtime = true;
	char *pch = get_unit(set, argv, dir, may_make, GPUCC_LANGUAGE_CUDA, "", &runtime);
	CHECK(!runtime);
	return pch;
}

static char *get(gpucc_source_pch_set *set, char **argv, const char *dir)
{
	return get_made(set, argv, dir, true);
}

static void groups(const char *dir)
{
	gpucc_source_pch_set *set = NULL;
	CHECK_INT(gpucc_source_pch_set_new(&set, fake_clang, 0), 0);
	char *unit_a[] = {"clang", "-x", "cuda", "--cuda-gpu-arch=sm_80", "-emit-llvm", "-c", "-v",
	                  "-MD", "-MF", "/t/0.d", "-o", "/t/0.bc", "--", "a.cu", NULL};
	char *unit_b[] = {"clang", "-x", "cuda", "--cuda-gpu-arch=sm_80", "-emit-llvm", "-c", "-v",
	                  "-MD", "-MF", "/t/1.d", "-o", "/t/1.bc", "--", "b.cu", NULL};
	char *other[] = {"clang", "-x", "cuda", "--cuda-gpu-arch=sm_90", "-emit-llvm", "-c", "-v",
	                 "-MD", "-MF", "/t/2.d", "-o", "/t/2.bc", "--", "a.cu", NULL};
	runs = 0;
	char *pa = get(set, unit_a, dir);
	char *pb = get(set, unit_b, dir);
	CHECK(pa && pb);
	CHECK_INT(runs, 3); /* two units of one group: one PCH, its two probes */
	CHECK_INT(bare_runs, 1); /* CUDA's: with the PCH, and with no prelude */
	if (pa && pb)
		CHECK_STR(pa, pb);
	struct stat st;
	CHECK(pa && stat(pa, &st) == 0);
	char *po = get(set, other, dir);
	CHECK(po != NULL);
	CHECK_INT(runs, 6); /* another target, another group */
	if (pa && po)
		CHECK(strcmp(pa, po) != 0);

	/* Refused: made again, under another name, for the next unit. */
	gpucc_source_pch_refused(set, pa);
	CHECK(stat(pa, &st) != 0);
	char *again = get(set, unit_b, dir);
	CHECK(again != NULL);
	CHECK_INT(runs, 9);
	if (again)
		CHECK(strcmp(again, pa) != 0);
	/* Refused twice: the group reads none for the rest of the run. */
	gpucc_source_pch_refused(set, again);
	CHECK(get(set, unit_a, dir) == NULL);
	CHECK_INT(runs, 9);
	/* A path the set no longer holds changes nothing. */
	gpucc_source_pch_refused(set, "/nowhere.pch");
	free(pa);
	free(pb);
	free(po);
	free(again);
	gpucc_source_pch_set_free(set);

	/* A unit alone in its group, without a cache: no PCH, clang not run. */
	CHECK_INT(gpucc_source_pch_set_new(&set, fake_clang, 0), 0);
	runs = 0;
	CHECK(get_made(set, unit_a, dir, false) == NULL);
	CHECK_INT(runs, 0);
	gpucc_source_pch_set_free(set);

	/* clang fails to make it: no PCH, and no second try in the run (the
	 * probe without one ran beside it). */
	CHECK_INT(gpucc_source_pch_set_new(&set, fake_clang, 0), 0);
	runs = 0;
	fail_pch = true;
	CHECK(get(set, unit_a, dir) == NULL);
	CHECK(get(set, unit_b, dir) == NULL);
	CHECK_INT(runs, 2);
	gpucc_source_pch_set_free(set);

	/* The probe compiles to other bitcode with the PCH than without: no
	 * PCH, and no second try.  (CUDA: held against the bare probe, then
	 * against the probe without the PCH, four runs.) */
	CHECK_INT(gpucc_source_pch_set_new(&set, fake_clang, 0), 0);
	runs = 0;
	probe_differs = true;
	CHECK(get(set, unit_a, dir) == NULL);
	CHECK(get(set, unit_b, dir) == NULL);
	CHECK_INT(runs, 4);
	probe_differs = false;
	gpucc_source_pch_set_free(set);

	/* A CUDA prelude that makes a unit emit something: the probe with no
	 * prelude differs, the probe without the PCH does not: a PCH. */
	CHECK_INT(gpucc_source_pch_set_new(&set, fake_clang, 0), 0);
	runs = 0;
	bare_differs = true;
	char *emitting = get(set, unit_a, dir);
	CHECK(emitting != NULL);
	CHECK_INT(runs, 4);
	bare_differs = false;
	free(emitting);
	gpucc_source_pch_set_free(set);

	/* HIP units: one whose first line is the runtime's include reads the
	 * extended prelude, a group of its own; the others the plain one.
	 * When the extended one fails its probe, the plain one. */
	CHECK_INT(gpucc_source_pch_set_new(&set, fake_clang, 0), 0);
	runs = 0;
	bool runtime = false;
	bare_runs = 0;
	const char *first = "// a kernel\n#include <hip/hip_runtime.h>\n__global__ void k() {}\n";
	char *ext = get_unit(set, unit_a, dir, true, GPUCC_LANGUAGE_HIP, first, &runtime);
	CHECK(ext != NULL && runtime);
	CHECK_INT(runs, 3);
	char *plain = get_unit(set, unit_b, dir, true, GPUCC_LANGUAGE_HIP, "__global__ void k() {}\n",
	                       &runtime);
	CHECK(plain != NULL && !runtime);
	CHECK_INT(runs, 6);
	if (ext && plain)
		CHECK(strcmp(ext, plain) != 0);
	free(ext);
	free(plain);
	probe_differs = true;
	plain = get_unit(set, other, dir, true, GPUCC_LANGUAGE_HIP, first, &runtime);
	probe_differs = false;
	CHECK(plain == NULL); /* the plain prelude of that target failed its probe too */
	CHECK_INT(runs, 12);
	CHECK_INT(bare_runs, 0); /* HIP's probes: with the PCH and without */
	free(plain);
	gpucc_source_pch_set_free(set);
	gpucc_source_pch_set_free(NULL);
}

static bool runtime_first(const char *text)
{
	return gpucc_source_prelude_runtime(GPUCC_LANGUAGE_HIP, (const unsigned char *)text,
	                                    strlen(text));
}

/* Which units take the extended prelude: the runtime's include first, with
 * nothing before it but white space and comments. */
static void runtime_prelude(void)
{
	CHECK(runtime_first("#include <hip/hip_runtime.h>\n__global__ void k() {}\n"));
	CHECK(runtime_first("#include <hip/hip_runtime.h>"));
	CHECK(runtime_first("\xef\xbb\xbf#include <hip/hip_runtime.h>\n") == false); /* a BOM */
	CHECK(runtime_first("/* Copyright\n * x */\n// y\n\n  #  include<hip/hip_runtime.h> // z\n"));
	CHECK(runtime_first("#include /* a */ <hip/hip_runtime.h> /* b */\r\nint x;\n"));
	CHECK(!runtime_first("#define N 4\n#include <hip/hip_runtime.h>\n"));
	CHECK(!runtime_first("#include \"hip/hip_runtime.h\"\n"));
	CHECK(!runtime_first("#include <hip/hip_runtime.h> int x;\n"));
	CHECK(!runtime_first("#include <hip/hip_runtime.hpp>\n"));
	CHECK(!runtime_first("#include <hip/hip_runtime.h\n"));
	CHECK(!runtime_first("#include <hip/hip_runtime.h> /* unended\n"));
	CHECK(!runtime_first("// a line \\\n#include <hip/hip_runtime.h>\n")); /* continued */
	CHECK(!runtime_first("#inc\\\nlude <hip/hip_runtime.h>\n"));
	CHECK(!runtime_first("/* unended\n#include <hip/hip_runtime.h>\n"));
	CHECK(!runtime_first("include <hip/hip_runtime.h>\n")); /* no '#' */
	CHECK(!runtime_first(""));
	CHECK(!runtime_first("#"));
	CHECK(!runtime_first("#include"));
	CHECK(!gpucc_source_prelude_runtime(GPUCC_LANGUAGE_CUDA,
	                                    (const unsigned char *)"#include <hip/hip_runtime.h>\n",
	                                    29));
}

static void applies(void)
{
	const char *none[] = {NULL};
	const char *defines[] = {"-DN=4", "-I", "inc", "-std=c++17"};
	const char *include[] = {"-include", "pre.h"};
	const char *joined[] = {"-includepre.h"};
	const char *imacros[] = {"-imacros", "m.h"};
	const char *debug[] = {"-g"};
	CHECK(gpucc_source_pch_applies(GPUCC_LANGUAGE_CUDA, false, false, none, 0));
	CHECK(gpucc_source_pch_applies(GPUCC_LANGUAGE_CUDA, false, false, defines, 4));
	CHECK(gpucc_source_pch_applies(GPUCC_LANGUAGE_HIP, false, false, none, 0));
	CHECK(!gpucc_source_pch_applies(GPUCC_LANGUAGE_OPENCL, false, false, none, 0));
	CHECK(!gpucc_source_pch_applies(GPUCC_LANGUAGE_CUDA, true, false, none, 0));
	CHECK(!gpucc_source_pch_applies(GPUCC_LANGUAGE_CUDA, false, true, none, 0));
	CHECK(!gpucc_source_pch_applies(GPUCC_LANGUAGE_CUDA, false, false, include, 2));
	CHECK(!gpucc_source_pch_applies(GPUCC_LANGUAGE_CUDA, false, false, joined, 1));
	CHECK(!gpucc_source_pch_applies(GPUCC_LANGUAGE_CUDA, false, false, imacros, 2));
	CHECK(!gpucc_source_pch_applies(GPUCC_LANGUAGE_CUDA, false, false, debug, 1));

	const char *plain = "__global__ void k(float *x) { x[0] = 1.0f; }\n";
	const char *inline_asm = "__global__ void k(int *x) { asm(\"trap;\"); }\n";
	const char *cub = "#include <cub/block/block_reduce.cuh>\n";
	CHECK(gpucc_source_pch_worth((const unsigned char *)plain, strlen(plain)));
	CHECK(!gpucc_source_pch_worth((const unsigned char *)inline_asm, strlen(inline_asm)));
	CHECK(!gpucc_source_pch_worth((const unsigned char *)cub, strlen(cub)));
	CHECK(gpucc_source_pch_worth((const unsigned char *)cub, 3)); /* "#in" */
	const char *path = "// testdata/polybench_cuda/gemm.cu\n#include \"cuda_runtime.h\"\n";
	CHECK(gpucc_source_pch_worth((const unsigned char *)path, strlen(path)));
}

/* ---- the IR check ---------------------------------------------------------- */

typedef struct bits {
	unsigned char data[256];
	size_t at; /* bits written */
} bits;

static void put(bits *b, unsigned value, unsigned width)
{
	for (unsigned i = 0; i < width; i++, b->at++)
		if ((value >> i) & 1)
			b->data[b->at >> 3] |= (unsigned char)(1u << (b->at & 7));
}

/* A field as LLVM's bitstream writes a 6-bit VBR. */
static void vbr6(bits *b, unsigned value)
{
	do {
		unsigned chunk = value & 31;
		value >>= 5;
		put(b, chunk | (value ? 32 : 0), 6);
	} while (value);
}

/* size bytes of filler with name as an unabbreviated METADATA_KIND
 * record's operands (code 6, count, kind id, the characters) at bit
 * offset. */
static size_t record_at(bits *b, size_t offset, const char *name, size_t size)
{
	memset(b, 0, sizeof *b);
	for (size_t i = 0; i < size; i++)
		b->data[i] = (unsigned char)(0x5a ^ (i * 7));
	b->at = offset;
	/* Clear where the record goes, then write it. */
	size_t len = strlen(name);
	for (size_t i = offset; i < offset + 6 * 2 * (len + 3); i++)
		b->data[i >> 3] &= (unsigned char)~(1u << (i & 7));
	vbr6(b, 6);
	vbr6(b, (unsigned)len + 1);
	vbr6(b, 9);
	for (size_t i = 0; i < len; i++)
		vbr6(b, (unsigned char)name[i]);
	return size;
}

static void ir_check(void)
{
	bits b;
	for (size_t offset = 0; offset < 24; offset++) {
		size_t size = record_at(&b, 64 + offset, "srcloc", 64);
		CHECK(!gpucc_source_pch_ir_trusted(b.data, size));
		size = record_at(&b, 64 + offset, "srclod", 64);
		CHECK(gpucc_source_pch_ir_trusted(b.data, size));
		size = record_at(&b, 64 + offset, "range", 64);
		CHECK(gpucc_source_pch_ir_trusted(b.data, size));
	}
	/* The record ending at the last bit of the buffer. */
	size_t size = record_at(&b, 8 * 40 - 90, "srcloc", 40); /* 90 bits: 3 fields, 6 characters */
	CHECK(!gpucc_source_pch_ir_trusted(b.data, size));
	/* Too short to be bitcode: nothing to find. */
	CHECK(gpucc_source_pch_ir_trusted(b.data, 4));
}

int main(void)
{
	char dir[] = "/tmp/gpucc-test-pch-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	groups(dir);
	applies();
	runtime_prelude();
	ir_check();
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	CHECK_INT(system(cmd), 0);
	return CHECK_DONE();
}
