/*
 * lib/base/config_internal.h -- the settings in force (gpucc/config.h), for
 * the rooms that act on them, and the one look-up of the environment the
 * tools libgpucc starts inherit.
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

#endif
