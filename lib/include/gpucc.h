/*
 * gpucc.h -- the whole public API of libgpucc.
 *
 * libgpucc builds, reads, merges and caches precompile images of GPU kernels
 * (see DESIGN.md).  This umbrella header includes the parts; the gpucc command
 * uses nothing else.
 *
 * Conventions (after libgit2):
 *  - names are gpucc_<noun>_<verb>();
 *  - handles are opaque; an object returned through a `**out` first argument
 *    belongs to the caller and is released with its _free() function, which
 *    accepts NULL; a pointer returned directly is borrowed from its parent and
 *    lives as long as the parent;
 *  - functions return int: 0 on success, GPUCC_ERROR (-1) for a generic failure
 *    or one of the stable negative codes in gpucc/common.h for expected
 *    failures; gpucc_error_last() then describes the failure in one line
 *    (control characters spelt \n, \t or \xHH);
 *  - the library never prints and never exits.
 */
#ifndef GPUCC_H
#define GPUCC_H

#include "gpucc/common.h"
#include "gpucc/image.h"
#include "gpucc/cache.h"
#include "gpucc/snapshot.h"
#include "gpucc/compile.h"
#include "gpucc/runtime.h"

#endif
