/*
 * lib/embed/embed_backend.h -- the one entry point `gpucc embed` needs from the
 * LLVM backend module (lib/backend_llvm/embed.c), looked up with dlsym by
 * lib/embed/embed.c once gpucc_backend_load (lib/compile/backend.h) has loaded the module.
 * Like the rest of the module it calls nothing in libgpucc: strings in,
 * malloc()ed bytes out.
 */
#ifndef GPUCC_LIB_EMBED_BACKEND_H
#define GPUCC_LIB_EMBED_BACKEND_H

#include <stddef.h>

#define GPUCC_EMBED_ENTRY "gpucc_backend_embed_object"

/* Emit a relocatable ELF object for triple (normalised by LLVM: x86_64 or
 * aarch64 Linux) that defines symbol, size bytes aligned to alignment in
 * section, and symbol_size, a 64-bit constant holding size.  The bytes
 * themselves are left out: on success returns 0, *out (release with free())
 * holds the object less symbol's size bytes, and the object is *out's first
 * *image_offset bytes, then the size bytes of the image, then the rest of
 * *out.  On failure returns GPUCC_EINVALID (a triple it does not write
 * objects for) or GPUCC_ERROR (LLVM failed, out of memory) with a one-line
 * reason in error. */
typedef int (*gpucc_embed_entry_fn)(const char *triple, const char *symbol, const char *section,
                                    unsigned alignment, size_t size, void **out, size_t *out_size,
                                    size_t *image_offset, char *error, size_t error_size);

#endif
