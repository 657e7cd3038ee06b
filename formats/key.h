/*
 * formats/key.h -- the key schema (formats/key.md): an entry's identity as a
 * SHA-256 over a versioned list of length-prefixed fields.  Needs no LLVM:
 * every component is a string or a digest known before compiling.
 */
#ifndef GPUCC_FORMATS_KEY_H
#define GPUCC_FORMATS_KEY_H

#include "gpucc/common.h"

#define GPUCC_KEY_SCHEMA 1

/* One named component of a key, in schema order, for `compile --explain`. */
typedef struct gpucc_key_component {
	const char *name; /* "schema", "gpucc", "llvm", "device-libs", "target", "options", "module" */
	char *value;      /* printable form (hex for the module digest); owned */
} gpucc_key_component;

#define GPUCC_KEY_COMPONENTS 7

/* Compute the key of e from e->gpucc_version, llvm_version, device_libs,
 * target, options and module_sha256 (key_schema must be GPUCC_KEY_SCHEMA).
 * Arrays must already be in canonical order (sorted by name); GPUCC_EINVALID
 * otherwise. */
int gpucc_key_compute(gpucc_digest *out, const gpucc_entry *e);
/* The printable components of e's key; free them with gpucc_key_components_free. */
int gpucc_key_components(gpucc_key_component out[GPUCC_KEY_COMPONENTS], const gpucc_entry *e);
void gpucc_key_components_free(gpucc_key_component c[GPUCC_KEY_COMPONENTS]);

#endif
