/*
 * lib/tests/check.h -- the few assertions the C unit tests need.  A failed
 * check prints file:line and the expression and makes the test exit 1;
 * skip() exits 77, which meson counts as skipped.  Each test program runs its
 * cases in order from main().
 */
#ifndef GPUCC_TESTS_CHECK_H
#define GPUCC_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;

#define CHECK(expr)                                                              \
	do {                                                                         \
		if (!(expr)) {                                                           \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #expr); \
			check_failures++;                                                    \
		}                                                                        \
	} while (0)

#define CHECK_INT(a, b)                                                          \
	do {                                                                         \
		long long check_a_ = (long long)(a), check_b_ = (long long)(b);          \
		if (check_a_ != check_b_) {                                              \
			fprintf(stderr, "%s:%d: check failed: %s == %s (%lld != %lld)\n",    \
			        __FILE__, __LINE__, #a, #b, check_a_, check_b_);             \
			check_failures++;                                                    \
		}                                                                        \
	} while (0)

#define CHECK_STR(a, b)                                                          \
	do {                                                                         \
		const char *check_a_ = (a), *check_b_ = (b);                             \
		if (!check_a_ || !check_b_ || strcmp(check_a_, check_b_) != 0) {         \
			fprintf(stderr, "%s:%d: check failed: %s == %s ('%s' != '%s')\n",    \
			        __FILE__, __LINE__, #a, #b, check_a_ ? check_a_ : "(null)",  \
			        check_b_ ? check_b_ : "(null)");                             \
			check_failures++;                                                    \
		}                                                                        \
	} while (0)

/* The error message of the last libgpucc call must contain needle. */
#define CHECK_ERROR_HAS(needle)                                                  \
	CHECK(strstr(gpucc_error_last()->message, (needle)) != NULL ||               \
	      (fprintf(stderr, "  message was: %s\n", gpucc_error_last()->message), 0))

#define RUN(test)                                                                \
	do {                                                                         \
		int check_before_ = check_failures;                                      \
		test();                                                                  \
		fprintf(stderr, "%s %s\n", check_failures == check_before_ ? "ok  " : "FAIL", #test); \
	} while (0)

#define CHECK_DONE() (check_failures ? (fprintf(stderr, "%d check(s) failed\n", check_failures), 1) : 0)

/* A scratch directory for the whole test program: check_dir_create makes
 * it, path_in_dir names files in it (eight names live at once), and
 * check_dir_remove deletes it with everything in it. */
static char check_dir[64];

static inline int check_dir_create(const char *program)
{
	snprintf(check_dir, sizeof check_dir, "/tmp/gpucc-%s-XXXXXX", program);
	return mkdtemp(check_dir) ? 0 : -1;
}

static inline char *path_in_dir(const char *name)
{
	static char paths[8][256];
	static int next;
	char *p = paths[next++ % 8];
	snprintf(p, 256, "%s/%s", check_dir, name);
	return p;
}

static inline int check_dir_remove(void)
{
	char command[128];
	snprintf(command, sizeof command, "rm -rf '%s'", check_dir);
	return system(command);
}

/* The whole file at path, in memory (release with free); *size is its
 * length.  NULL when it cannot be read. */
static inline void *check_read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	*size = 0;
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	void *data = n >= 0 ? malloc((size_t)n + 1) : NULL;
	*size = data ? fread(data, 1, (size_t)n, f) : 0;
	fclose(f);
	return data;
}

static inline void skip(const char *reason)
{
	fprintf(stderr, "SKIP: %s\n", reason);
	exit(77);
}

#endif
