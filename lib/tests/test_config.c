/*
 * lib/tests/test_config.c -- libgpucc's settings come from the program
 * (gpucc/config.h), never from the environment by themselves: a caller
 * that sets GPUCC_* variables and SOURCE_DATE_EPOCH but does not ask gets
 * the defaults, one that calls gpucc_config_from_env gets them; and the
 * SIGBUS handler of lib/image/sigbus_guard.h is installed only after
 * gpucc_image_set_sigbus_guard(true) (asked with sigaction).  The
 * environment a tool is started with (the compile worker's) is the
 * process's with one variable replaced.
 */
#include "check.h"

#include <gpucc.h>

#include "config_internal.h"
#include "sigbus_guard.h"

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

extern char **environ;

/* The mtime of the first member of the image at path (the ustar header's
 * octal field at offset 136); -1 when it cannot be read. */
static long long first_mtime(const char *path)
{
	size_t size = 0;
	unsigned char *bytes = check_read_file(path, &size);
	long long value = -1;
	if (bytes && size >= 512) {
		char field[13];
		memcpy(field, bytes + 136, 12);
		field[12] = '\0';
		value = strtoll(field, NULL, 8);
	}
	free(bytes);
	return value;
}

/* Write an empty image at path with the write defaults: 0, or the error. */
static int write_empty(const char *path)
{
	gpucc_image_writer *w = NULL;
	int rc = gpucc_image_writer_new(&w, path, NULL);
	if (rc == 0)
		rc = gpucc_image_writer_commit(w);
	gpucc_image_writer_free(w);
	return rc;
}

/* The variables a user might set, set; each test puts back what it needs. */
static void set_variables(const char *epoch)
{
	setenv("GPUCC_CACHE_DIR", path_in_dir("env-cache"), 1);
	setenv("XDG_CACHE_HOME", "/env-xdg", 1);
	setenv("HOME", "/env-home", 1);
	setenv("SOURCE_DATE_EPOCH", epoch, 1);
	setenv("GPUCC_LIBARCHIVE", "/nonexistent/libarchive.so.13", 1);
	setenv("GPUCC_BACKEND", "/nonexistent/libgpucc-llvm19.so", 1);
	setenv("TMPDIR", "/nonexistent", 1);
}

/* Not asked: the variables change nothing. */
static void test_environment_not_asked(void)
{
	set_variables("1700000000");
	/* libarchive loads by its usual name, not the one the variable gives. */
	CHECK(strstr(gpucc_libarchive_version(), "not loadable") == NULL);
	char *dir = (char *)"not touched";
	CHECK_INT(gpucc_cache_default_dir(&dir), GPUCC_ENOTFOUND);
	CHECK(dir == NULL);
	const char *path = path_in_dir("not-asked.gpucc");
	CHECK_INT(write_empty(path), 0);
	CHECK_INT(first_mtime(path), 0);
	/* A malformed SOURCE_DATE_EPOCH is no writer's error. */
	setenv("SOURCE_DATE_EPOCH", "12abc", 1);
	CHECK_INT(write_empty(path), 0);
	CHECK_INT(first_mtime(path), 0);
}

/* Asked: each setting is the variable's, copied. */
static void test_environment_asked(void)
{
	set_variables("1700000000");
	gpucc_config *cfg = NULL;
	CHECK_INT(gpucc_config_from_env(&cfg), 0);
	CHECK(cfg != NULL);
	if (!cfg)
		return;
	CHECK_INT(cfg->version, GPUCC_CONFIG_VERSION);
	CHECK_STR(cfg->cache_dir, path_in_dir("env-cache"));
	CHECK_STR(cfg->home, "/env-home");
	CHECK_STR(cfg->tmpdir, "/nonexistent");
	CHECK_STR(cfg->backend, "/nonexistent/libgpucc-llvm19.so");
	CHECK(cfg->source_date_epoch_set);
	CHECK_INT(cfg->source_date_epoch, 1700000000);
	CHECK_INT(gpucc_set_config(cfg), 0);
	gpucc_config_free(cfg);
	/* The copy in force outlives the caller's config and the variable. */
	unsetenv("GPUCC_CACHE_DIR");
	char *dir = NULL;
	CHECK_INT(gpucc_cache_default_dir(&dir), 0);
	CHECK_STR(dir, path_in_dir("env-cache"));
	gpucc_free(dir);
	const char *path = path_in_dir("asked.gpucc");
	CHECK_INT(write_empty(path), 0);
	CHECK_INT(first_mtime(path), 1700000000);

	/* Back to the defaults. */
	CHECK_INT(gpucc_set_config(NULL), 0);
	CHECK_INT(write_empty(path), 0);
	CHECK_INT(first_mtime(path), 0);
	CHECK_INT(gpucc_cache_default_dir(&dir), GPUCC_ENOTFOUND);
}

/* A malformed SOURCE_DATE_EPOCH is gpucc_config_from_env's error, naming
 * it; a config of another version or an epoch out of range is refused. */
static void test_config_refusals(void)
{
	const char *bad[] = {"-1", " 12", "+5", "12abc", "1e9", "253402300800"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		setenv("SOURCE_DATE_EPOCH", bad[i], 1);
		gpucc_config *cfg = (gpucc_config *)&bad;
		CHECK_INT(gpucc_config_from_env(&cfg), GPUCC_EINVALID);
		CHECK(cfg == NULL);
		CHECK_ERROR_HAS("SOURCE_DATE_EPOCH='");
		CHECK_ERROR_HAS("is not a non-negative integer of at most 253402300799");
	}
	setenv("SOURCE_DATE_EPOCH", "", 1); /* empty: unset */
	gpucc_config *cfg = NULL;
	CHECK_INT(gpucc_config_from_env(&cfg), 0);
	CHECK(cfg && !cfg->source_date_epoch_set);
	gpucc_config_free(cfg);
	unsetenv("SOURCE_DATE_EPOCH");

	CHECK_INT(gpucc_config_from_env(NULL), GPUCC_EINVALID);
	gpucc_config mine;
	gpucc_config_init(&mine);
	CHECK_INT(mine.version, GPUCC_CONFIG_VERSION);
	CHECK(mine.tmpdir == NULL && !mine.source_date_epoch_set);
	mine.version = 99;
	CHECK_INT(gpucc_set_config(&mine), GPUCC_EINVALID);
	CHECK_ERROR_HAS("config");
	mine.version = GPUCC_CONFIG_VERSION;
	mine.source_date_epoch_set = true;
	mine.source_date_epoch = -1;
	CHECK_INT(gpucc_set_config(&mine), GPUCC_EINVALID);
	gpucc_config_free(NULL);
}

/* SIGBUS's disposition when the program started: the default, or a
 * sanitizer runtime's handler. */
static struct sigaction initial;

/* Whether SIGBUS's disposition is still the one the program started with. */
static bool sigbus_is_initial(void)
{
	struct sigaction now;
	if (sigaction(SIGBUS, NULL, &now) != 0 ||
	    (now.sa_flags & SA_SIGINFO) != (initial.sa_flags & SA_SIGINFO))
		return false;
	return (now.sa_flags & SA_SIGINFO) ? now.sa_sigaction == initial.sa_sigaction
	                                   : now.sa_handler == initial.sa_handler;
}

/* No SIGBUS handler unless the program asks: an image file opened and read
 * leaves SIGBUS as it found it, and no guard can be had; once asked, a
 * guard installs libgpucc's and its end puts back what was there. */
static void test_sigbus_only_when_asked(void)
{
	CHECK(sigbus_is_initial());
	unsetenv("SOURCE_DATE_EPOCH");
	const char *path = path_in_dir("sigbus.gpucc");
	CHECK_INT(write_empty(path), 0);
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open(&img, path), 0);
	CHECK_INT(gpucc_image_entry_count(img), 0);
	gpucc_image_free(img);
	CHECK(sigbus_is_initial());

	void *page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(page != MAP_FAILED);
	if (page == MAP_FAILED)
		return;
	CHECK(!gpucc_sigbus_guard_enabled());
	gpucc_sigbus_guard g;
	CHECK_INT(gpucc_sigbus_guard_begin(&g, page, 4096), -1);
	CHECK(sigbus_is_initial());

	gpucc_image_set_sigbus_guard(true);
	CHECK_INT(gpucc_sigbus_guard_begin(&g, page, 4096), 0);
	CHECK(!sigbus_is_initial()); /* installed while the guard is held */
	CHECK(!gpucc_sigbus_guard_end(&g));
	CHECK(sigbus_is_initial());
	CHECK_INT(gpucc_image_open(&img, path), 0);
	gpucc_image_free(img);
	CHECK(sigbus_is_initial());
	gpucc_image_set_sigbus_guard(false);
	CHECK_INT(gpucc_sigbus_guard_begin(&g, page, 4096), -1);
	munmap(page, 4096);
}

/* gpucc_tool_environment_with: the process's variables, NAME's value
 * replaced, the rest unchanged and in order. */
static void test_tool_environment_with(void)
{
	const char *had = getenv("TMPDIR");
	char *saved = had ? strdup(had) : NULL;
	setenv("TMPDIR", "/elsewhere", 1);
	setenv("TMPDIRECTORY", "kept", 1); /* a longer name that starts alike */
	char assignment[] = "TMPDIR=/worker/dir";
	char **envp = gpucc_tool_environment_with(assignment);
	CHECK(envp != NULL);
	size_t count = 0, tmpdirs = 0, others = 0;
	for (; envp && envp[count]; count++) {
		if (strncmp(envp[count], "TMPDIR=", 7) == 0) {
			tmpdirs++;
			CHECK(envp[count] == assignment);
		}
		others += strcmp(envp[count], "TMPDIRECTORY=kept") == 0;
	}
	CHECK_INT(tmpdirs, 1);
	CHECK_INT(others, 1);
	CHECK(count > 0 && envp[count - 1] == assignment);
	size_t environment = 0;
	while (environ[environment])
		environment++;
	CHECK_INT(count, environment);
	free(envp);
	unsetenv("TMPDIRECTORY");
	if (saved)
		setenv("TMPDIR", saved, 1);
	else
		unsetenv("TMPDIR");
	free(saved);
}

int main(void)
{
	if (check_dir_create("config") != 0 || sigaction(SIGBUS, NULL, &initial) != 0)
		return 1;
	RUN(test_environment_not_asked);
	RUN(test_environment_asked);
	RUN(test_config_refusals);
	RUN(test_tool_environment_with);
	RUN(test_sigbus_only_when_asked);
	if (check_dir_remove() != 0)
		return 1;
	return CHECK_DONE();
}
