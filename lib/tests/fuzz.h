/*
 * lib/tests/fuzz.h -- the interface of gpucc's fuzz targets.
 *
 * Each target defines LLVMFuzzerTestOneInput (the libFuzzer entry point, so
 * the same file builds as a libFuzzer target with clang -fsanitize=fuzzer,
 * meson option 'fuzzing', scripts/fuzz) and fuzz_seeds, which hands valid
 * inputs to start from.  Two mains exist:
 *
 *   - lib/tests/fuzz_driver.c, in the test suite: replays the saved corpus
 *     and regression inputs (testdata/fuzz/<target>/, in the text form of
 *     fuzz_text.c) once each, then mutates the seeds deterministically for a
 *     fixed number of rounds; a crash, a sanitizer report or a failed check
 *     fails the test, naming the input or the round;
 *   - libFuzzer's own, with lib/tests/fuzz_libfuzzer.c for fuzz_fail and
 *     for writing the seeds out (GPUCC_FUZZ_SEEDS=DIR).
 */
#ifndef GPUCC_TESTS_FUZZ_H
#define GPUCC_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Call add once per seed; the caller copies the bytes. */
void fuzz_seeds(void (*add)(const void *data, size_t size));

/* A target's own check failed: report and abort (the driver names the
 * input).  Defined by each main. */
void fuzz_fail(const char *what) __attribute__((noreturn));

/* ---- the text form of saved inputs (fuzz_text.c) ----------------------- */

#define FUZZ_TEXT_MAX_SIZE (16 << 20) /* decoded inputs past this are refused */

/* Decode text into a new buffer (*out, release with free).  0, or -1 with
 * a reason in error. */
int fuzz_text_decode(unsigned char **out, size_t *out_size, const char *text, size_t size,
                     char error[128]);
/* Encode data as a NUL-terminated text (release with free), with note, when
 * not NULL, as comment lines first.  NULL when out of memory. */
char *fuzz_text_encode(const unsigned char *data, size_t size, const char *note);
/* Read and decode the file at path. */
int fuzz_text_read_file(unsigned char **out, size_t *out_size, const char *path, char error[128]);

/* ---- help for targets (fuzz_support.c) ---------------------------------- */

/* Point stdio's stdout and stderr at /dev/null until fuzz_quiet_end, for
 * code that prints usage or error messages on every rejected input.  Only
 * stdio is redirected: sanitizer reports, written to file descriptor 2,
 * still appear. */
void fuzz_quiet_begin(void);
void fuzz_quiet_end(void);

/* The input as a NUL-terminated string (release with free): what a parser
 * of C strings sees of it is up to its first NUL byte. */
char *fuzz_string(const uint8_t *data, size_t size);

/* A private scratch directory for the whole process (created on first use,
 * in $TMPDIR, else /dev/shm, else /tmp; removed at exit), and the removal of
 * everything inside a directory. */
const char *fuzz_scratch_dir(void);
void fuzz_remove_tree(const char *path);

#endif
