/*
 * lib/algebra.h -- what snapshot.c shares with delta.c and merge.c: the
 * parts of a source (exactly one is set, by its kind), and how merge and
 * delta open the entries of a cache.
 */
#ifndef GPUCC_LIB_ALGEBRA_H
#define GPUCC_LIB_ALGEBRA_H

#include "gpucc/snapshot.h"

gpucc_image *gpucc_source_image(const gpucc_source *s);
gpucc_cache *gpucc_source_cache(const gpucc_source *s);
/* gpucc_source_snapshot is public (gpucc/snapshot.h). */

/* The image inputs (gpucc_sources_open) and entries of a cache a merge or
 * delta holds open, counted against the limit on open files: up to half of
 * it they keep their descriptors (and are copied on several threads);
 * beyond, they are parked (gpucc_image_park) and reopened one at a time as
 * they are copied. */
typedef struct gpucc_entry_budget {
	size_t open; /* entry images holding a descriptor */
	size_t limit;
} gpucc_entry_budget;

void gpucc_entry_budget_init(gpucc_entry_budget *b);
/* The limit of gpucc_entry_budget_init: half the open-file limit. */
size_t gpucc_entry_budget_limit(void);

/* Open the entry of key in cache c for a merge or delta.  0 with *out; 1
 * when there is none to read: evicted since the keys were listed, or
 * corrupt (a miss, which c's warning handler is told of); or an error. */
int gpucc_algebra_open_entry(gpucc_image **out, gpucc_cache *c, const gpucc_digest *key,
                             gpucc_entry_budget *budget);

#endif
