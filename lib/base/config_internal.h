/*
 * lib/base/config_internal.h -- the settings in force (gpucc/config.h), for
 * the rooms that act on them, the environment the tools libgpucc starts
 * inherit, and, in test builds, the test hooks' variables.
 */
#ifndef GPUCC_LIB_CONFIG_INTERNAL_H
#define GPUCC_LIB_CONFIG_INTERNAL_H

#include "gpucc/config.h"

/* The last config gpucc_set_config was given, or every setting unset;
 * never NULL.  Borrowed until the next gpucc_set_config, which callers
 * make before other threads use libgpucc. */
const gpucc_config *gpucc_config_current(void);

/* Where temporary directories go (lib/base/temp_name.h): the config's
 * tmpdir, or /tmp when it is unset or empty. */
const char *gpucc_temp_parent(void);

/* The first of value and fallback that is set and not empty. */
const char *gpucc_config_or(const char *value, const char *fallback);

/* The largest SOURCE_DATE_EPOCH taken: the end of year 9999, past which
 * tar readers (GNU tar among them) refuse a member's time. */
#define GPUCC_SOURCE_DATE_EPOCH_MAX 253402300799LL

/* The value of the variable name in the environment the tools libgpucc
 * starts (clang, ld.lld, the compile worker) inherit unchanged: what
 * clang itself reads, for a source compile's key and record to say what
 * clang saw.  Never a setting of libgpucc's own: those are in the config. */
const char *gpucc_tool_environment(const char *name);

/* The environment the tools libgpucc starts inherit, with assignment
 * ("NAME=VALUE") in place of NAME's value: a new array, NULL-terminated,
 * whose strings are borrowed from the environment and assignment (free
 * the array only); NULL when out of memory. */
char **gpucc_tool_environment_with(char *assignment);

#ifdef GPUCC_TEST_HOOKS /* test hooks: meson option test_hooks */
/* The value of the test hook variable name (GPUCC_BACKEND_FAULT_ENV,
 * "GPUCC_TEST_WORKER_LLVM": the compile worker's, which
 * lib/compile/compile_worker.c passes it on its command line), or NULL
 * when it is unset.  Read from the environment at each call. */
const char *gpucc_test_hook(const char *name);
#endif

#endif
