/*
 * lib/tests/fuzz.h -- the interface of gpucc's fuzz targets.
 *
 * Each target defines LLVMFuzzerTestOneInput (the libFuzzer entry point, so
 * the same file builds as a libFuzzer target with clang -fsanitize=fuzzer)
 * and fuzz_seeds, which hands the driver valid inputs to start from.  In the
 * test suite, lib/tests/fuzz_driver.c supplies main(): it mutates the seeds
 * deterministically for a fixed number of rounds and feeds every mutant to
 * the target, so a crash, a sanitizer report or a failed check fails the
 * test with the round that caused it.
 */
#ifndef GPUCC_TESTS_FUZZ_H
#define GPUCC_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Call add once per seed; the driver copies the bytes. */
void fuzz_seeds(void (*add)(const void *data, size_t size));

/* A target's own check failed: report and abort (the driver names the round). */
void fuzz_fail(const char *what);

#endif
