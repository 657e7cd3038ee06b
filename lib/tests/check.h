/*
 * lib/tests/check.h -- the few assertions the C unit tests need.  A failed
 * check prints file:line and the expression and makes the test exit 1;
 * skip() exits 77, which meson counts as skipped.  Each test program runs its
 * cases in order from main().  A case that cannot run in this build or on
 * this machine says why with CHECK_SKIP(REASON) and returns: it is printed
 * ("skip CASE: REASON"), counted, and logged where GPUCC_SKIP_LOG names a
 * file (scripts/test counts the lines); a program whose every case skipped
 * exits 77.  CHECK_SKIP_PART(REASON) does the same for a part of a case,
 * which goes on.
 */
#ifndef GPUCC_TESTS_CHECK_H
#define GPUCC_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;
/* Cases run, how many of them skipped, and how many ran with a part
 * skipped; the reasons of the case running. */
static int check_cases, check_skipped, check_parts_skipped;
static const char *check_skip_reason, *check_part_skip_reason;

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

/* Skip the running case: return from it, its reason recorded. */
#define CHECK_SKIP(reason)                                                       \
	do {                                                                         \
		check_skip_reason = (reason);                                            \
		return;                                                                  \
	} while (0)

/* Skip a part of the running case, which goes on: RUN prints, counts and
 * logs it once for the case ("CASE (part)"), with the first reason given. */
#define CHECK_SKIP_PART(reason)                                                  \
	do {                                                                         \
		if (!check_part_skip_reason)                                             \
			check_part_skip_reason = (reason);                                   \
	} while (0)

/* The reason a case or a part that needs the test hooks gives. */
#define CHECK_HOOKS_REASON "needs the library's test hooks (meson -Dtest_hooks=true)"

/* A case that drives the library's test hooks (meson option test_hooks:
 * forcing a reader or writer, a pause before a publish, a backend of the
 * test's own) starts with this: a build without them skips it. */
#ifdef GPUCC_TEST_HOOKS
#define CHECK_NEEDS_HOOKS() ((void)0)
#else
#define CHECK_NEEDS_HOOKS() CHECK_SKIP(CHECK_HOOKS_REASON)
#endif

/* "PROGRAM: CASE: REASON" appended to the file GPUCC_SKIP_LOG names, if
 * any, in one write (O_APPEND: tests running at once may share it). */
static inline void check_log_skip(const char *file, const char *test, const char *reason)
{
	const char *log = getenv("GPUCC_SKIP_LOG");
	FILE *f = log && *log ? fopen(log, "a") : NULL;
	if (!f)
		return;
	const char *base = strrchr(file, '/');
	char line[512];
	int n = snprintf(line, sizeof line, "%.*s: %s: %s\n", (int)strcspn(base ? base + 1 : file, "."),
	                 base ? base + 1 : file, test, reason);
	setvbuf(f, NULL, _IONBF, 0);
	if (n > 0)
		fwrite(line, 1, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1, f);
	fclose(f);
}

#define RUN(test)                                                                \
	do {                                                                         \
		int check_before_ = check_failures;                                      \
		check_skip_reason = check_part_skip_reason = NULL;                       \
		test();                                                                  \
		check_cases++;                                                           \
		if (check_skip_reason && check_failures == check_before_) {              \
			check_skipped++;                                                     \
			fprintf(stderr, "skip %s: %s\n", #test, check_skip_reason);          \
			check_log_skip(__FILE__, #test, check_skip_reason);                  \
		} else if (check_part_skip_reason && check_failures == check_before_) {  \
			check_parts_skipped++;                                               \
			fprintf(stderr, "ok   %s (a part skipped: %s)\n", #test, check_part_skip_reason); \
			check_log_skip(__FILE__, #test " (part)", check_part_skip_reason);   \
		} else {                                                                 \
			fprintf(stderr, "%s %s\n", check_failures == check_before_ ? "ok  " : "FAIL", #test); \
		}                                                                        \
	} while (0)

/* main's exit status: 1 when a check failed, else 77 when every case
 * skipped, else 0; says how many cases skipped. */
static inline int check_done(void)
{
	(void)check_skip_reason; /* set by CHECK_SKIP*, read by RUN: maybe neither here */
	(void)check_part_skip_reason;
	if (check_skipped || check_parts_skipped)
		fprintf(stderr, "%d of %d case(s) skipped, %d with a part skipped\n", check_skipped,
		        check_cases, check_parts_skipped);
	if (check_failures) {
		fprintf(stderr, "%d check(s) failed\n", check_failures);
		return 1;
	}
	return check_cases && check_skipped == check_cases ? 77 : 0;
}
#define CHECK_DONE() check_done()

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
