/*
 * lib/image/entry.h -- internal helpers for entries: deep copies owned by an arena.
 */
#ifndef GPUCC_LIB_ENTRY_H
#define GPUCC_LIB_ENTRY_H

#include "arena.h"
#include "gpucc/common.h"

/* Copy src and everything it points to into arena; payloads are copied as
 * given.  GPUCC_ERROR when out of memory. */
int gpucc_entry_copy(gpucc_arena *arena, gpucc_entry *dst, const gpucc_entry *src);

#endif
