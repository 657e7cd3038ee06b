/*
 * formats/arena.h -- a grow-only allocator that owns the strings and arrays
 * of parsed or copied entries, so that a manifest or a writer releases them
 * all at once.  Not thread-safe; one owner.
 */
#ifndef GPUCC_FORMATS_ARENA_H
#define GPUCC_FORMATS_ARENA_H

#include <stddef.h>

typedef struct gpucc_arena gpucc_arena;

gpucc_arena *gpucc_arena_new(void);
/* An arena whose first block is about `expected` bytes (at most the usual
 * first block, at least a small one): for a parse whose text bounds what it
 * keeps, such as a manifest of one entry. */
gpucc_arena *gpucc_arena_new_sized(size_t expected);
void gpucc_arena_free(gpucc_arena *a);
/* size zeroed bytes, aligned for any type; NULL when out of memory. */
void *gpucc_arena_alloc(gpucc_arena *a, size_t size);
/* The bytes a holds from the system (its blocks' capacities). */
size_t gpucc_arena_bytes(const gpucc_arena *a);
/* Fault in the pages of [p, p + size) in one call (Linux 5.14's
 * MADV_POPULATE_WRITE; nothing elsewhere), for memory about to be written
 * page after page: on a virtual machine one fault per 4 KiB page costs
 * about twice what the call does per page.  Best effort. */
void gpucc_memory_prefault(void *p, size_t size);
/* A copy of s (NULL stays NULL); NULL when out of memory. */
char *gpucc_arena_strdup(gpucc_arena *a, const char *s);

#endif
