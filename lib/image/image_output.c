/*
 * lib/image/image_output.c -- what both image writers (lib/image/image_writer.c through
 * libarchive, lib/image/image_writer_plain.c by itself) write alike: the format
 * member's text and the verified bytes of each payload, from the file,
 * memory or image it was added from (lib/image/image_writer_impl.h).
 */
#include "image_writer_impl.h"

#include "errors.h"
#include "input_file.h"
#include "manifest.h" /* the format version */

#include <stdio.h>

/* A sink passing on no more than left bytes: a payload file that grew
 * must not spill into the next member before the change is reported. */
typedef struct bounded_sink {
	gpucc_payload_sink sink;
	void *ctx;
	uint64_t left;
} bounded_sink;

static int pass_at_most(void *ctx, const void *data, size_t size)
{
	bounded_sink *b = ctx;
	if (size > b->left)
		size = (size_t)b->left;
	b->left -= size;
	return size ? b->sink(b->ctx, data, size) : 0;
}

int gpucc_output_payload_copy(const output_payload *o, gpucc_payload_sink sink, void *ctx,
                              gpucc_payload_checker *checker)
{
	if (o->image) {
		/* The reader verifies digest and size itself, or has the checker
		 * verify the digest. */
		if (checker)
			return gpucc_image_stream_payload_checked(o->image, &o->payload, sink, ctx,
			                                          checker);
		return gpucc_image_stream_payload(o->image, &o->payload, sink, ctx);
	}
	switch (o->source->kind) {
	case SOURCE_IMAGE:
		return gpucc_error_set(GPUCC_ERROR, "internal error: image source without an image");
	case SOURCE_MEMORY:
		return o->payload.size ? sink(ctx, o->source->data, (size_t)o->payload.size) : 0;
	case SOURCE_FILE:
		break;
	}
	/* Files may have changed since they were hashed. */
	gpucc_digest got;
	uint64_t bytes = 0;
	bounded_sink bounded = {sink, ctx, o->payload.size};
	int rc = gpucc_digest_file_to(&got, &bytes, o->source->path, pass_at_most, &bounded);
	if (rc == 0 && (bytes != o->payload.size || gpucc_digest_compare(&got, &o->payload.sha256)))
		rc = gpucc_error_set(GPUCC_ECORRUPT, "'%s' changed while the image was being written",
		                     o->source->path);
	return rc;
}

size_t gpucc_image_format_text(char out[GPUCC_FORMAT_TEXT_SIZE], bool indexed)
{
	int n = indexed ? snprintf(out, GPUCC_FORMAT_TEXT_SIZE, "gpucc-image %d.%d\n",
	                           GPUCC_IMAGE_FORMAT_VERSION, GPUCC_IMAGE_FORMAT_MINOR)
	                : snprintf(out, GPUCC_FORMAT_TEXT_SIZE, "gpucc-image %d\n",
	                           GPUCC_IMAGE_FORMAT_VERSION);
	return n > 0 ? (size_t)n : 0;
}
