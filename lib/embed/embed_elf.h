/*
 * lib/embed/embed_elf.h -- the relocatable ELF object gpucc_embed_image
 * writes (lib/embed/embed_elf.c): which host triples it is written for, and
 * its bytes less the image's, which lib/embed/embed.c writes around the
 * image as it copies it.
 */
#ifndef GPUCC_LIB_EMBED_ELF_H
#define GPUCC_LIB_EMBED_ELF_H

#include <stddef.h>
#include <stdint.h>

/* An object less the image's bytes: the object is bytes' first
 * image_offset bytes, then the image, then the rest of bytes. */
typedef struct gpucc_embed_frame {
	unsigned char *bytes; /* release with free() */
	size_t size;
	size_t image_offset;
} gpucc_embed_frame;

/* Lay out the object for triple (x86_64 or aarch64 Linux, 64-bit
 * pointers) that defines symbol, size bytes aligned to alignment (a power
 * of two up to 4096) in section, and symbol_size, a uint64_t holding size,
 * into *out.  The object is byte for byte the one LLVM's ELF writer emits
 * for those two globals (llc -O0 -relocation-model=pic, the module named
 * "gpucc-embed").  0, GPUCC_EINVALID naming a triple or section it does not
 * write objects for (the message begins with "host triple" or "section"),
 * or GPUCC_ERROR (out of memory). */
int gpucc_embed_elf_frame(gpucc_embed_frame *out, const char *triple, const char *symbol,
                          const char *section, unsigned alignment, uint64_t size);

#endif
