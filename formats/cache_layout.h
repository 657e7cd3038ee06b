/*
 * formats/cache_layout.h -- the directory that marks a cache and holds its
 * entries (cache.md), and the test for it.
 */
#ifndef GPUCC_FORMATS_CACHE_LAYOUT_H
#define GPUCC_FORMATS_CACHE_LAYOUT_H

#include <stdbool.h>

/* The directory of a cache that holds its entries (cache.md). */
#define GPUCC_CACHE_LAYOUT_DIR "v1"

/* Whether the directory open as dir_fd has a cache's layout (DIR/v1/). */
bool gpucc_cache_layout_at(int dir_fd);

#endif
