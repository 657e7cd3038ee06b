/*
 * formats/snapshot_format.h -- snapshot format v1 (formats/snapshot.md): a
 * header, the (key, content digest) items sorted by key, and a SHA-256 of
 * everything before it.  The items on disk are laid out exactly as an array
 * of gpucc_snapshot_item, so a snapshot is read with one read and checked
 * with one pass.
 */
#ifndef GPUCC_FORMATS_SNAPSHOT_FORMAT_H
#define GPUCC_FORMATS_SNAPSHOT_FORMAT_H

#include "gpucc/common.h"

#include <stdint.h>

#define GPUCC_SNAPSHOT_MAGIC "\x89gpucc-snapshot\n"
#define GPUCC_SNAPSHOT_MAGIC_SIZE 16
#define GPUCC_SNAPSHOT_VERSION 1
#define GPUCC_SNAPSHOT_HEADER_SIZE 32
#define GPUCC_SNAPSHOT_ITEM_SIZE 64 /* key, then content digest */
#define GPUCC_SNAPSHOT_TRAILER_SIZE 32
/* Counts past this are refused as absurd (2^32 items are 256 GiB). */
#define GPUCC_SNAPSHOT_MAX_COUNT ((uint64_t)1 << 32)

/* The file size of a snapshot of count items. */
uint64_t gpucc_snapshot_format_size(uint64_t count);

/* The header for count items. */
void gpucc_snapshot_format_header(unsigned char out[GPUCC_SNAPSHOT_HEADER_SIZE], uint64_t count);

/* True when data starts with the snapshot magic, or, when shorter than the
 * magic, begins it: a snapshot cut short, not some other file. */
bool gpucc_snapshot_format_is_snapshot(const void *data, size_t size);

/* Check a header against the size of the whole file and return the item
 * count: GPUCC_ECORRUPT (bad magic, reserved bits, a size that does not
 * match the count) or GPUCC_EVERSION, naming name. */
int gpucc_snapshot_format_check_header(uint64_t *count, const unsigned char *header,
                                       uint64_t file_size, const char *name);

/* Check a whole snapshot held in data (header, size, trailing checksum,
 * strictly increasing keys); on success *items points at the first item in
 * data and *count is their number.  Errors as above, naming name. */
int gpucc_snapshot_format_decode(const unsigned char **items, uint64_t *count,
                                 const unsigned char *data, size_t size, const char *name);

/* The trailer of a snapshot: SHA-256 over its header and its count items
 * (count * GPUCC_SNAPSHOT_ITEM_SIZE bytes, sorted and unique).  The file is
 * then header, items, trailer, written as they are. */
void gpucc_snapshot_format_trailer(unsigned char out[GPUCC_SNAPSHOT_TRAILER_SIZE],
                                   const unsigned char header[GPUCC_SNAPSHOT_HEADER_SIZE],
                                   const unsigned char *items, uint64_t count);

#endif
