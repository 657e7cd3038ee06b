/*
 * lib/compile/compile_module_facts.h -- what the two readers of module facts share
 * (lib/compile/compile_module_facts.c reads .ll text, lib/compile/compile_bitcode.c reads
 * .bc): one meaning for a function's name, a string attribute and the code
 * object version flag, whichever form they were read from.  Names and
 * strings here are decoded bytes (no escapes), not NUL-terminated.
 */
#ifndef GPUCC_LIB_COMPILE_MODULE_FACTS_H
#define GPUCC_LIB_COMPILE_MODULE_FACTS_H

#include "compile_impl.h"

#include <stddef.h>
#include <stdint.h>

/* A function (or, in text, any global) named name is referred to: sets
 * calls_libdevice for __nv_*, calls_rocm for __ocml_* and __ockl_*,
 * calls_hip for __atomic_work_item_fence. */
void gpucc_module_facts_note_reference(gpucc_module_facts *out, const char *name, size_t size);

/* A function named name is declared, not defined: sets calls_mangled for
 * a name that starts "_Z". */
void gpucc_module_facts_note_declaration(gpucc_module_facts *out, const char *name, size_t size);

/* A function attribute key=value: "target-cpu" joins cpus (distinct
 * values, first seen first, at most GPUCC_MODULE_MAX_CPUS, each cut to
 * fit its buffer); "target-features" is a comma-separated list that sets
 * ptx_isa, wavefront64, xnack and sramecc.  Other keys, and empty values
 * (which LLVM writes as the key alone), are ignored. */
void gpucc_module_facts_note_attribute(gpucc_module_facts *out, const char *key, size_t key_size,
                                       const char *value, size_t value_size);

/* The code object version that the module flag "amdhsa_code_object_version"
 * with this value means (500 -> 5); 0 for a value no version has. */
unsigned gpucc_module_facts_code_object_version(int64_t value);

#endif
