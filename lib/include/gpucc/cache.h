/*
 * gpucc/cache.h -- the local cache of entries (owned by the cache-algebra work).
 */
#ifndef GPUCC_CACHE_H
#define GPUCC_CACHE_H

#include "common.h"
#include "image.h"

#endif
