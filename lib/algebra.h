/*
 * lib/algebra.h -- what snapshot.c shares with delta.c and merge.c: the
 * parts of a source (exactly one is set, by its kind).
 */
#ifndef GPUCC_LIB_ALGEBRA_H
#define GPUCC_LIB_ALGEBRA_H

#include "gpucc/snapshot.h"

gpucc_image *gpucc_source_image(const gpucc_source *s);
gpucc_cache *gpucc_source_cache(const gpucc_source *s);
const gpucc_snapshot *gpucc_source_snapshot(const gpucc_source *s);

#endif
