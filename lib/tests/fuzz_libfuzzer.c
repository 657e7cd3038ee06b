/*
 * lib/tests/fuzz_libfuzzer.c -- what a fuzz target needs besides libFuzzer's
 * main() when built with clang -fsanitize=fuzzer (meson option 'fuzzing',
 * scripts/fuzz): fuzz_fail, and a way to get the target's built-in seeds
 * out as files, so that a run always starts from them as well as from the
 * saved corpus:
 *
 *   GPUCC_FUZZ_SEEDS=DIR fuzz_<target>     writes DIR/seed-N and exits
 */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);

void fuzz_fail(const char *what)
{
	fprintf(stderr, "fuzz: check failed: %s\n", what);
	abort();
}

static const char *seed_dir;
static int seed_count;

static void write_seed(const void *data, size_t size)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/seed-%d", seed_dir, seed_count++);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
		fprintf(stderr, "fuzz: cannot write '%s'\n", path);
		exit(1);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	seed_dir = getenv("GPUCC_FUZZ_SEEDS");
	if (seed_dir && *seed_dir) {
		fuzz_seeds(write_seed);
		exit(0);
	}
	return 0;
}
