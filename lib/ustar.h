/*
 * lib/ustar.h -- reading single-block ustar headers, the only headers a v1
 * image's writer produces (formats/image.md).
 *
 * libgpucc reads the members of uncompressed images through these headers
 * directly (no libarchive, see lib/libarchive_loader.h), and hands anything
 * else -- compressed images, pax extended headers, links, GNU extensions,
 * damaged headers -- to libarchive, which reads it properly and names the
 * defect.  So "not plain" is never an error here, only a reason to fall back.
 */
#ifndef GPUCC_LIB_USTAR_H
#define GPUCC_LIB_USTAR_H

#include <stdbool.h>
#include <stdint.h>

#define GPUCC_USTAR_BLOCK 512

typedef struct gpucc_ustar_header {
	char name[257]; /* prefix "/" name, as tar joins them */
	uint64_t size;
	char type;      /* typeflag: '0' (or '\0') for a regular file */
} gpucc_ustar_header;

/* Parse block as a POSIX ustar header ("ustar\0" "00" magic, valid
 * checksum, octal size).  False when it is not one. */
bool gpucc_ustar_parse(const unsigned char block[GPUCC_USTAR_BLOCK], gpucc_ustar_header *out);
/* True when every byte of block is zero (the end-of-archive marker). */
bool gpucc_ustar_is_zero(const unsigned char block[GPUCC_USTAR_BLOCK]);
/* True for the typeflags of a regular file. */
bool gpucc_ustar_is_regular(const gpucc_ustar_header *h);
/* The size of a member's data rounded up to whole blocks. */
uint64_t gpucc_ustar_padded(uint64_t size);

#endif
