/*
 * formats/image_index.h -- the index member of an image (formats/image.md,
 * "The index"): fixed-width big-endian records that map each key to the
 * byte range of its entry's object in manifest.json and to the header
 * offsets of its payload members, and each kernel name (by its SHA-256) to
 * the entries that define it, each table behind a 256-way fan-out.
 *
 * The index is a hint that saves parsing the whole manifest, never a
 * source of truth: what a lookup finds through it is parsed from the
 * manifest and checked (its key recomputed, its payloads' digests), so a
 * lying index can make a lookup fail, never return another entry.  This
 * file builds the member's bytes (writers, and verify, which compares the
 * index an image holds with the one its manifest gives) and reads them a
 * few records at a time through a callback (lookups).
 */
#ifndef GPUCC_FORMATS_IMAGE_INDEX_H
#define GPUCC_FORMATS_IMAGE_INDEX_H

#include "gpucc/common.h"

#define GPUCC_IMAGE_INDEX_MEMBER "manifest.idx"
#define GPUCC_INDEX_MAGIC "GPUCCIX1"
#define GPUCC_INDEX_HEADER_SIZE 32
#define GPUCC_INDEX_FANOUT_SIZE 1024
#define GPUCC_INDEX_ENTRY_SIZE 48
#define GPUCC_INDEX_PAYLOAD_SIZE 8
#define GPUCC_INDEX_KERNEL_SIZE 40

/* The member's size for these record counts. */
uint64_t gpucc_index_size(uint64_t entries, uint64_t payload_refs, uint64_t kernel_records);

/* The index of entries (sorted by key, unique), into a new buffer
 * (free()) of gpucc_index_size bytes.  spans holds each entry's object in
 * the manifest as offset and length (2 per entry); manifest_size is the
 * manifest member's size; head_without_index is what the members before
 * the payloads take but for the index (the format member's and the
 * manifest's headers, data and padding): the payload header offsets are
 * those every member has when every header is one block (formats/image.md),
 * the index's own member (header, data, padding) included. */
int gpucc_index_build(unsigned char **out, size_t *out_size, const gpucc_entry *const *entries,
                      size_t count, const uint64_t *spans, uint64_t manifest_size,
                      uint64_t head_without_index);

/* Reads len bytes of the index member at offset into buf: 0, or an error
 * (set) -- a short read is an error (GPUCC_ECORRUPT, truncated). */
typedef int (*gpucc_index_read_fn)(void *ctx, uint64_t offset, void *buf, size_t len);

typedef struct gpucc_index_reader {
	gpucc_index_read_fn read;
	void *ctx;
	const char *name; /* the image, for messages */
	uint64_t size;    /* the member's size */
	uint32_t entry_count, payload_ref_count, kernel_count;
	uint64_t manifest_size;
} gpucc_index_reader;

/* One entry record. */
typedef struct gpucc_index_record {
	gpucc_digest key;
	uint32_t object_offset, object_length;
	uint32_t first_payload, payload_count;
} gpucc_index_record;

/* Read and check the header: magic, a size that matches the counts, the
 * manifest size given (the manifest member's).  r's read, ctx, name and
 * size are set by the caller.  0 or GPUCC_ECORRUPT ("corrupt index"). */
int gpucc_index_open(gpucc_index_reader *r, uint64_t manifest_size);

/* The records whose keys begin with the hex digits prefix (1 to 64,
 * lowercase): *first and *count (0 when none).  Records met on the way must
 * sit in the fan-out bucket of their first byte and, where adjacent ones
 * are compared, in strictly increasing order: else GPUCC_ECORRUPT. */
int gpucc_index_find_prefix(const gpucc_index_reader *r, const char *prefix, uint32_t *first,
                            uint32_t *count);

/* Record i (below entry_count), its ranges checked against the manifest's
 * size and the payload references (GPUCC_ECORRUPT otherwise). */
int gpucc_index_record_at(const gpucc_index_reader *r, uint32_t i, gpucc_index_record *out);

/* The header offsets of rec's payloads (rec->payload_count of them, at most
 * GPUCC_PART_COUNT). */
int gpucc_index_payload_offsets(const gpucc_index_reader *r, const gpucc_index_record *rec,
                                uint64_t *out);

/* The entry indexes whose kernel records carry the SHA-256 of kernel:
 * a new array (free(); NULL when none) in *out, their number in *count.
 * Each index is below entry_count (else GPUCC_ECORRUPT); the caller checks
 * that the entry really has the kernel. */
int gpucc_index_kernel_entries(const gpucc_index_reader *r, const char *kernel, uint32_t **out,
                               size_t *count);

#endif
