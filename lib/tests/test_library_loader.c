/*
 * lib/tests/test_library_loader.c -- lib/base/library_loader.c on real
 * libraries: the C math library (libm.so.6) that every glibc system has,
 * and names that no system has.  One load per process however many
 * threads ask, the first result repeated, tables with fallbacks and
 * optional functions, and the failure that a hook words.
 */
#include "check.h"
#include "library_loader.h"

#include <pthread.h>
#include <stdatomic.h>

static double (*math_cos)(double);
static double (*math_sqrt)(double);
static double (*math_absent)(double);

static const gpucc_library_symbol math_symbols[] = {
	{"cos", &math_cos, NULL, false},
	{"gpucc_no_such_function", &math_sqrt, "sqrt", false}, /* by its fallback */
	{"gpucc_no_such_function_either", &math_absent, NULL, true},
	{NULL, NULL, NULL, false},
};

static atomic_int math_loads;

static int load_math(gpucc_library *lib, void *ctx)
{
	atomic_fetch_add(&math_loads, 1);
	const char *const names[] = {"libgpucc-no-such-library.so.0", ctx, NULL};
	const char *why, *missing;
	if (gpucc_library_open(lib, names, 0, &why) != 0)
		return gpucc_library_fail(lib, 7, "cannot load: %s", why ? why : "?");
	if (gpucc_library_resolve(lib, math_symbols, &missing) != 0)
		return gpucc_library_fail(lib, 8, "lacks %s", missing);
	return 0;
}

static gpucc_library math_library = GPUCC_LIBRARY_INIT;

static void *load_from_thread(void *unused)
{
	(void)unused;
	return (void *)(long)gpucc_library_load(&math_library, load_math, "libm.so.6");
}

/* Eight threads at once: the hook runs once, all see it loaded. */
static void test_once_from_threads(void)
{
	pthread_t threads[8];
	for (int i = 0; i < 8; i++)
		CHECK_INT(pthread_create(&threads[i], NULL, load_from_thread, NULL), 0);
	for (int i = 0; i < 8; i++) {
		void *rc = (void *)1;
		pthread_join(threads[i], &rc);
		CHECK(rc == NULL);
	}
	CHECK_INT(atomic_load(&math_loads), 1);
	CHECK_STR(gpucc_library_error(&math_library), "");
	CHECK(math_cos != NULL && math_cos(0.0) == 1.0);
	CHECK(math_sqrt != NULL && math_sqrt(16.0) == 4.0);
	CHECK(math_absent == NULL);
	/* The first of the names that opened; both tried before it. */
	CHECK_STR(math_library.tried_names, "libgpucc-no-such-library.so.0");
	CHECK(gpucc_library_symbol_address(&math_library, "floor") != NULL);
	CHECK(gpucc_library_symbol_address(&math_library, "gpucc_no_such_function") == NULL);
	/* A later call does not run the hook again, whatever it is given. */
	CHECK_INT(gpucc_library_load(&math_library, load_math, "libgpucc-other.so"), 0);
	CHECK_INT(atomic_load(&math_loads), 1);
}

static int missing_loads;

static int load_missing(gpucc_library *lib, void *ctx)
{
	(void)ctx;
	missing_loads++;
	static const char *const names[] = {"libgpucc-no-such-library.so.0",
	                                    "libgpucc-no-such-library.so.1", NULL};
	const char *why;
	if (gpucc_library_open(lib, names, 0, &why) != 0)
		return gpucc_library_fail(lib, 5, "not installed (cannot load %s): %s", lib->tried_names,
		                          why && strstr(why, "libgpucc-no-such-library.so.1") ? "last"
		                                                                             : "other");
	return 0;
}

/* A library none of whose names loads: the hook's message and code, every
 * time, the hook run once. */
static void test_absent_library(void)
{
	static gpucc_library absent = GPUCC_LIBRARY_INIT;
	CHECK_INT(gpucc_library_load(&absent, load_missing, NULL), 5);
	CHECK_INT(gpucc_library_load(&absent, load_missing, NULL), 5);
	CHECK_INT(missing_loads, 1);
	CHECK_STR(gpucc_library_error(&absent),
	          "not installed (cannot load libgpucc-no-such-library.so.0, "
	          "libgpucc-no-such-library.so.1): last");
	CHECK(absent.handle == NULL);
	CHECK(gpucc_library_symbol_address(&absent, "cos") == NULL);
}

static double (*partial_cos)(double);
static double (*partial_missing)(double);

static int load_partial(gpucc_library *lib, void *ctx)
{
	(void)ctx;
	static const gpucc_library_symbol symbols[] = {
		{"cos", &partial_cos, NULL, false},
		{"gpucc_required_but_absent", &partial_missing, "gpucc_fallback_absent", false},
		{NULL, NULL, NULL, false},
	};
	static const char *const names[] = {"libm.so.6", NULL};
	const char *why, *missing;
	if (gpucc_library_open(lib, names, 0, &why) != 0)
		return gpucc_library_fail(lib, 1, "cannot load libm: %s", why);
	if (gpucc_library_resolve(lib, symbols, &missing) != 0)
		return gpucc_library_fail(lib, 2, "libm.so.6 lacks %s", missing);
	return 0;
}

/* A required function absent: the first such name in the message, no
 * slot left half-filled, the library closed. */
static void test_missing_symbol(void)
{
	static gpucc_library partial = GPUCC_LIBRARY_INIT;
	CHECK_INT(gpucc_library_load(&partial, load_partial, NULL), 2);
	CHECK_STR(gpucc_library_error(&partial), "libm.so.6 lacks gpucc_required_but_absent");
	CHECK(partial_cos == NULL);
	CHECK(partial_missing == NULL);
	CHECK(partial.handle == NULL);
}

static int load_silent(gpucc_library *lib, void *ctx)
{
	(void)lib;
	(void)ctx;
	return 3;
}

/* A hook that fails without a word still leaves a message. */
static void test_failure_without_message(void)
{
	static gpucc_library silent = GPUCC_LIBRARY_INIT;
	CHECK_INT(gpucc_library_load(&silent, load_silent, NULL), 3);
	CHECK(gpucc_library_error(&silent)[0] != '\0');
}

int main(void)
{
	RUN(test_once_from_threads);
	RUN(test_absent_library);
	RUN(test_missing_symbol);
	RUN(test_failure_without_message);
	return CHECK_DONE();
}
