/*
 * lib/algebra/algebra.h -- what lib/algebra/operand.c gives delta.c and merge.c: the parts of
 * a source (exactly one is set, by its kind), how they open the entries of
 * a cache within the budget of open files, and the check that image inputs
 * are whole.
 */
#ifndef GPUCC_LIB_ALGEBRA_H
#define GPUCC_LIB_ALGEBRA_H

#include "gpucc/snapshot.h"

gpucc_image *gpucc_operand_image(const gpucc_operand *s);
gpucc_cache *gpucc_operand_cache(const gpucc_operand *s);
/* gpucc_operand_snapshot is public (gpucc/snapshot.h). */

/* The image inputs (gpucc_operands_open) and entries of a cache a merge or
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

/* Open the entry of key in cache c for a merge or delta.  0 with *out;
 * GPUCC_OTHER_PATH (go on without it) when there is none to read: evicted since the keys were listed, or
 * corrupt (a miss, which c's warning handler is told of); or an error. */
int gpucc_algebra_open_entry(gpucc_image **out, gpucc_cache *c, const gpucc_digest *key,
                             gpucc_entry_budget *budget);

/* gpucc_image_check_whole of each image among sources: the uncompressed
 * ones (compressed false), which costs nothing and comes before anything is
 * read, or the compressed ones, which costs the rest of a pass and comes
 * after their payloads are copied: an input is refused when it is cut
 * short, even where every entry of it another input holds.  0 or the error
 * of the first in argument order. */
int gpucc_algebra_check_whole(gpucc_operand *const *sources, size_t count, bool compressed);

/* *opts, or the defaults when it is NULL (*opts then points at them),
 * checked as every write of the algebra checks them: its version and
 * conflict policy (GPUCC_EINVALID, set, when either is wrong). */
int gpucc_algebra_options_resolve(const gpucc_algebra_options **opts);

/* The sources of a write, for gpucc_algebra_check_compressed. */
typedef struct gpucc_algebra_inputs {
	gpucc_operand *const *sources;
	size_t count;
} gpucc_algebra_inputs;

/* gpucc_algebra_check_whole of the compressed inputs (a
 * gpucc_algebra_inputs), as gpucc_image_writer_before_publish calls it. */
int gpucc_algebra_check_compressed(void *inputs);

#endif
