/*
 * gpucc/snapshot.h -- snapshots, deltas and merges (owned by the cache-algebra work).
 */
#ifndef GPUCC_SNAPSHOT_H
#define GPUCC_SNAPSHOT_H

#include "common.h"
#include "image.h"

#endif
