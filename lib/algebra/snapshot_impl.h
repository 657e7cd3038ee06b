/*
 * lib/algebra/snapshot_impl.h -- making a snapshot from items gathered
 * elsewhere (lib/algebra/operand.c: the snapshot of an image or a cache).
 */
#ifndef GPUCC_LIB_SNAPSHOT_IMPL_H
#define GPUCC_LIB_SNAPSHOT_IMPL_H

#include "gpucc/snapshot.h"

/* Take items (malloc'd, count of them, in any order) as a new snapshot:
 * sorted, identical duplicates collapsed; a key with two contents is
 * GPUCC_ECONFLICT, named by what ("'x.gpucc'", "cache 'dir'").  items is
 * the snapshot's or freed, whatever the outcome. */
int gpucc_snapshot_from_items(gpucc_snapshot **out, gpucc_snapshot_item *items, size_t count,
                              const char *what);

/* malloc(size), a large block asked of the kernel in large pages (fewer
 * page faults on first touch), or NULL (lib/algebra/snapshot_sort.c). */
void *gpucc_snapshot_alloc(size_t size);

/* gpucc_snapshot_alloc for count items (at least one), or NULL. */
gpucc_snapshot_item *gpucc_snapshot_items_alloc(size_t count);

/* Sort *items (count of them, malloc'd; the sorted array may replace it,
 * the old one then freed) and collapse identical repeats, updating *count;
 * a key with two contents is GPUCC_ECONFLICT, named by what. */
int gpucc_snapshot_items_normalise(gpucc_snapshot_item **items, size_t *count, const char *what);

#endif
