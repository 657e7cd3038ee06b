/*
 * lib/tests/check_hooks.h -- the image layer's test hooks (meson option
 * test_hooks, lib/image/image_internal.h) for unit tests that also run in a
 * build without them.  There each hook is a stand-in that fails the test
 * loudly when asked for anything but the library's default: a case that
 * needs one starts with CHECK_NEEDS_HOOKS() (check.h), or skips the part
 * that does (check_hooks_built, CHECK_SKIP_PART), so a stand-in that aborts
 * is a case that forgot to say it needs the hooks.  Include after check.h
 * and image_internal.h.
 */
#ifndef GPUCC_CHECK_HOOKS_H
#define GPUCC_CHECK_HOOKS_H

/* Whether this build has the hooks: a case that can do part of its work
 * without them tests it, and says CHECK_SKIP_PART(CHECK_HOOKS_REASON). */
#ifdef GPUCC_TEST_HOOKS
enum { check_hooks_built = 1 };
#else
enum { check_hooks_built = 0 };

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

static inline void check_hook_missing(const char *hook)
{
	fprintf(stderr, "%s: a test hook, called in a build without them: "
	                "the case lacks CHECK_NEEDS_HOOKS()\n", hook);
	abort();
}

/* Each stand-in accepts the library's default (what a build without the
 * hooks always does), so that a case can reset it unconditionally. */
static inline void gpucc_image_force_libarchive(bool force)
{
	if (force)
		check_hook_missing(__func__);
}

static inline void gpucc_image_writer_force_libarchive(bool force)
{
	if (force)
		check_hook_missing(__func__);
}

static inline void gpucc_image_writer_omit_index(bool omit)
{
	if (omit)
		check_hook_missing(__func__);
}

static inline void gpucc_image_writer_zstd_workers(size_t workers)
{
	if (workers)
		check_hook_missing(__func__);
}
#endif

#endif
