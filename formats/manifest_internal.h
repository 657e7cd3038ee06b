/*
 * formats/manifest_internal.h -- what the manifest's files share beyond
 * formats/manifest.h: the entry check the reader makes with parts of it
 * skipped.
 */
#ifndef GPUCC_FORMATS_MANIFEST_INTERNAL_H
#define GPUCC_FORMATS_MANIFEST_INTERNAL_H

#include "manifest.h"

#include <stdbool.h>

/* gpucc_entry_validate, but check_target false skips the target and triple
 * (already known good), check_key false skips recomputing the key. */
int gpucc_manifest_validate_entry(const gpucc_entry *e, bool check_target, bool check_key);

#endif
