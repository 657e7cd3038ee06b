/*
 * lib/image/image_writer_impl.h -- what the image writer's two back ends
 * share: the payloads to write and where their bytes come from.
 *
 * lib/image/image_writer.c plans an image and writes it through libarchive;
 * lib/image/image_writer_plain.c writes an uncompressed image itself, copying
 * payloads on several threads, when every member fits a ustar block.
 */
#ifndef GPUCC_LIB_IMAGE_WRITER_IMPL_H
#define GPUCC_LIB_IMAGE_WRITER_IMPL_H

#include "image_internal.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum source_kind { SOURCE_FILE, SOURCE_MEMORY, SOURCE_IMAGE } source_kind;

typedef struct payload_source {
	source_kind kind;
	const char *path;    /* SOURCE_FILE, in the arena */
	const void *data;    /* SOURCE_MEMORY, borrowed */
	gpucc_image *image;  /* SOURCE_IMAGE, borrowed */
} payload_source;

/* One distinct payload of the image, in archive order. */
typedef struct output_payload {
	gpucc_payload payload;
	gpucc_image *image;           /* the source image, or NULL and ... */
	const payload_source *source; /* ... the file or memory source */
} output_payload;

/* Hand the bytes of o's payload to sink, verified: against the digest by
 * the image reader (or by checker, when not NULL), against the size and
 * digest recorded when a file was added, and as they are for memory. */
int gpucc_output_payload_copy(const output_payload *o, gpucc_payload_sink sink, void *ctx,
                              gpucc_payload_checker *checker);

/* The text of the format member into out: "gpucc-image 1.1\n" for an
 * image with an index, "gpucc-image 1\n" for one without; its length. */
#define GPUCC_FORMAT_TEXT_SIZE 32
size_t gpucc_image_format_text(char out[GPUCC_FORMAT_TEXT_SIZE], bool indexed);

/* An uncompressed image to write. */
typedef struct gpucc_plain_image {
	const char *path; /* the output, for messages */
	int fd;           /* the empty temporary file to write */
	int64_t mtime;
	bool no_sync;     /* no writeback while writing */
	const gpucc_entry *const *entries; /* sorted by key */
	size_t entry_count;
	uint64_t manifest_size;
	const unsigned char *index; /* the index member's bytes, or NULL for none */
	size_t index_size;
	const output_payload *payloads;
	size_t payload_count;
} gpucc_plain_image;

/* Write image into its fd: 0; GPUCC_OTHER_PATH when it is not for this writer (a member
 * needs more than one ustar block, or a payload comes from an image not
 * read at computed offsets), before anything is written; or an error,
 * with the file's content undefined. */
int gpucc_plain_image_write(const gpucc_plain_image *image);

/* The file w will replace when it commits (lib/image/image_writer.c), which
 * no input of its may be (lib/image/image_pack.c). */
const char *gpucc_image_writer_path(const gpucc_image_writer *w);

/* For tests, process-wide: copy with this many threads, the calling one
 * included, whatever the amount of work (0: as many as there are CPUs, up
 * to 8, for 4 MiB or more from images); and how many images the plain
 * writer wrote and how many worker threads it started. */
void gpucc_plain_writer_threads(size_t threads);
extern _Atomic unsigned long gpucc_plain_images_written;
extern _Atomic unsigned long gpucc_plain_workers_started;

#endif
