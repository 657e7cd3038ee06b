/*
 * lib/image/image_internal.h -- what the image reader offers the rest of libgpucc
 * beyond the public API: streaming a payload into a sink, for the writer
 * (merge, delta, cache import) and the payload readers.
 */
#ifndef GPUCC_LIB_IMAGE_INTERNAL_H
#define GPUCC_LIB_IMAGE_INTERNAL_H

#include "gpucc/image.h"
#include "input_file.h" /* gpucc_payload_sink */
#include "payload_checker.h"


/* A defect of one member of an image, as every reader words it:
 * GPUCC_ECORRUPT, "'IMAGE': member 'NAME': WHAT". */
int gpucc_image_member_error(const char *image_name, const char *member, const char *what);

/* Fill the 0 fields of limits with the defaults (lib/image/image_limits.c). */
void gpucc_image_limits_complete(gpucc_image_limits *limits);
/* Where the program's user sets the limits (gpucc_image_set_default_limits),
 * or NULL when it said nothing. */
const char *gpucc_image_limits_setting_name(void);
#define GPUCC_DIGEST_MISMATCH "SHA-256 digest mismatch (the payload is corrupt)"
#define GPUCC_TRUNCATED_MEMBER "truncated: the image ends inside it"

/* Stream payload p of img into sink, then check its size and SHA-256
 * (GPUCC_ECORRUPT naming the image and member when they differ).  Reads in
 * archive order are one forward pass; uncompressed images are read at
 * computed offsets (formats/image.md, "Random access"). */
int gpucc_image_stream_payload(gpucc_image *img, const gpucc_payload *p, gpucc_payload_sink sink,
                               void *ctx);

/* Like gpucc_image_stream_payload, but the digest is compared on checker's
 * thread: a mismatch is reported by gpucc_payload_checker_finish, and img
 * must stay open (and, for a memory image, its bytes unchanged) until then.
 * Everything else -- headers, sizes, truncation -- is checked here. */
int gpucc_image_stream_payload_checked(gpucc_image *img, const gpucc_payload *p,
                                       gpucc_payload_sink sink, void *ctx,
                                       gpucc_payload_checker *checker);

/* Where a payload's member lies in an uncompressed image read at computed
 * offsets, for reading it without the image (from other threads): the
 * header must be the member's own single block at header_offset (else the
 * image must be read through gpucc_image_stream_payload, which finds what
 * is wrong), its data follows, and it is verified by whoever reads it. */
typedef struct gpucc_payload_location {
	int fd;                    /* the image's file, or -1 and ... */
	const unsigned char *data; /* ... its bytes (image_size of them) */
	uint64_t image_size;
	uint64_t header_offset;
} gpucc_payload_location;

/* 0 with *out; GPUCC_OTHER_PATH when img is not read at computed offsets (compressed, or
 * not laid out as formats/image.md says, or parked); or an error.  Safe
 * alongside any other read of img; other threads may read through *out
 * while img stays open. */
int gpucc_image_payload_location(gpucc_image *img, const gpucc_payload *p,
                                 gpucc_payload_location *out);

/* Park img, an image opened from the regular file at path: close its
 * descriptor, and reopen path for each read of a payload (or a verify) and
 * close it again after, failing (GPUCC_ERROR) if path is no longer the file
 * that was opened, unchanged: device, inode, size and modification time.
 * For holding more images open than there may be open files (a merge of
 * 1,000 inputs, or from a cache of 100,000 entries).  A compressed image
 * keeps its decompressor between reads, so that reading its payloads in
 * archive order stays one pass.  A parked image is read on one thread
 * (unlike any other: gpucc/image.h, "Threads"), and
 * gpucc_image_payload_location answers GPUCC_OTHER_PATH for it.  Images of other kinds
 * (memory, pipes) are left as they are.  0 or an error. */
int gpucc_image_park(gpucc_image *img, const char *path);
bool gpucc_image_is_parked(const gpucc_image *img);

/* Whether img holds every member its manifest lists and its end-of-archive
 * marker, as far as that can be told without reading payloads again: an
 * uncompressed image in a file or in memory by its length (free), a
 * compressed one by reading on from where its payload reads left the
 * decompressor to the marker (the members not read yet are decompressed
 * and skipped; names and sizes checked, not digests), which leaves it to
 * start again for a later read.  An image from a pipe passes.  For merge,
 * delta and cache import, which read only some payloads of an input whose
 * other entries another input holds: a truncated input must not pass
 * unnoticed.  0, or GPUCC_ECORRUPT naming the image and the defect. */
int gpucc_image_check_whole(gpucc_image *img);

/* Build img's payload list and their offsets now, as any use of payloads
 * would (a failure is reported, message and all, by that use): for opening
 * the inputs of a merge on several threads. */
void gpucc_image_prepare_payloads(gpucc_image *img);

/* Leave the temporary files that killed writers left beside the output
 * alone at commit: for the cache, whose gc removes them. */
void gpucc_image_writer_leave_leftovers(gpucc_image_writer *w);

/* Have gpucc_image_writer_commit call check(ctx) once the image is written
 * and before it is published: an error from it (already set) abandons the
 * output.  For checks of the sources that are cheapest after the copy
 * (gpucc_image_check_whole of a compressed input). */
void gpucc_image_writer_before_publish(gpucc_image_writer *w, int (*check)(void *ctx), void *ctx);

/* The entries of an image opened for lookup whose index lists kernel, each
 * checked (as gpucc_image_lookup checks it) and holding the kernel: a new
 * array (free()) of borrowed entries in *out, their number in *count.  1
 * when img is not read through its index (its manifest is parsed: look
 * through its entries), else 0 or an error. */
int gpucc_image_kernel_candidates(const gpucc_entry ***out, size_t *count, const gpucc_image *img,
                                  const char *kernel);

/* True while img is read through its index, its manifest not parsed (for
 * tests). */
bool gpucc_image_reads_by_index(const gpucc_image *img);

/* Order of payload members in an image: by digest, then by extension. */
int gpucc_payload_archive_compare(const gpucc_payload *a, const gpucc_payload *b);

/* Have gpucc_image_free call fn(ctx) after releasing img: a memory image
 * owning its bytes (gpucc_image_open_mapped unmaps them). */
void gpucc_image_on_free(gpucc_image *img, void (*fn)(void *ctx), void *ctx);

#ifdef GPUCC_TEST_HOOKS /* test hooks: meson option test_hooks */
/* Read images only through libarchive, never through their ustar headers
 * directly (for tests that compare the two readers; process-wide). */
void gpucc_image_force_libarchive(bool force);

/* Write images only through libarchive, never the plain writer
 * (lib/image/image_writer_plain.c; for tests that compare the two writers;
 * process-wide). */
void gpucc_image_writer_force_libarchive(bool force);

/* Write images without their index member, in the format before it
 * (minor version 0: formats/image.md), as older gpucc wrote them: for
 * tests of readers of such images; process-wide. */
void gpucc_image_writer_omit_index(bool omit);

/* Compress zstd images on this many threads (0: as many as there are CPUs,
 * up to 4; for tests, process-wide).  The bytes are the same for any
 * number. */
void gpucc_image_writer_zstd_workers(size_t workers);
#endif

/* True when payloads of img are read at computed offsets (for tests). */
bool gpucc_image_has_random_access(const gpucc_image *img);

/* How many times gpucc_image_fetch_payload fell back from bisection to a
 * walk of every payload header (for tests; process-wide). */
extern _Atomic unsigned long gpucc_image_fetch_walks;

#endif
