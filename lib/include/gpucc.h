/*
 * gpucc.h -- the whole public API of libgpucc.
 *
 * libgpucc builds, reads, merges and caches precompile images of GPU kernels
 * (docs/design.md in gpucc's sources).  This umbrella header includes the parts; the gpucc command
 * uses nothing else.
 *
 * Conventions (after libgit2):
 *  - names are gpucc_<noun>_<verb>();
 *  - handles are opaque; an object returned through a `**out` first argument
 *    belongs to the caller and is released with its _free() function, which
 *    accepts NULL (a const entry or a runtime's function handle found
 *    through one is borrowed, as its function says), and is NULL when the
 *    call fails, so that freeing it then is harmless; a pointer returned
 *    directly is borrowed from its parent and lives as long as the parent;
 *  - functions return int: 0 on success, GPUCC_ERROR (-1) for a generic failure
 *    or one of the stable negative codes in gpucc/common.h for expected
 *    failures; gpucc_error_last() then describes the failure in one line
 *    (control characters spelt \n, \t or \xHH);
 *  - threads: the last error is per thread; separate handles (images,
 *    caches, compile sessions, writers, snapshots, sources) may be used on
 *    separate threads at once, one cache directory through a handle per
 *    thread; one handle must not be used by two threads at once without
 *    the caller's lock (reading an image moves its position), though what
 *    is borrowed from it (entries) may be read from any thread while it
 *    lives; functions that take no handle may be called from any thread
 *    (lib/tests/test_api.c runs such threads);
 *  - the library never prints and never exits; it reads no environment
 *    variable unless asked (gpucc_config_from_env, gpucc/config.h), and
 *    changes process-wide state (a signal handler, defaults) only when a
 *    function that says so is called.
 */
#ifndef GPUCC_H
#define GPUCC_H

#include "gpucc/common.h"
#include "gpucc/config.h"
#include "gpucc/image.h"
#include "gpucc/cache.h"
#include "gpucc/remote.h"
#include "gpucc/snapshot.h"
#include "gpucc/compile.h"
#include "gpucc/runtime.h"

#endif
