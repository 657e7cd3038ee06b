/*
 * lib/image/ustar.h -- reading and writing single-block ustar headers, the only
 * headers a v1 image's writer produces (formats/image.md).
 *
 * libgpucc reads and writes the members of uncompressed images through these
 * headers directly (no libarchive, see lib/base/libarchive_loader.h), and hands anything
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
/* True when block is the header of a regular file named name (prefix and
 * name joined) of size bytes. */
bool gpucc_ustar_is_member(const unsigned char block[GPUCC_USTAR_BLOCK], const char *name,
                           uint64_t size);
/* True for the typeflags of a regular file. */
bool gpucc_ustar_is_regular(const gpucc_ustar_header *h);
/* Format the header of a regular file named name, size bytes, mode 0644,
 * uid and gid 0, no owner names, modified at mtime, into block: the bytes
 * libarchive's restricted-pax writer produces for such a member, down to
 * the spacing of its numeric fields.  False when the member needs more
 * than one block there (a name of 100 bytes or more, a size or mtime
 * beyond 11 octal digits); the caller then writes through libarchive. */
bool gpucc_ustar_format(unsigned char block[GPUCC_USTAR_BLOCK], const char *name, uint64_t size,
                        int64_t mtime);
/* True when gpucc_ustar_format would format that member. */
bool gpucc_ustar_fits(const char *name, uint64_t size, int64_t mtime);
/* The size of a member's data rounded up to whole blocks. */
uint64_t gpucc_ustar_padded(uint64_t size);

#endif
