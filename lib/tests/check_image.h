/*
 * lib/tests/check_image.h -- the image tests' common writer: an image of
 * count entries, entry i added by add(w, i), uncompressed or zstd at level
 * zstd, committed at path.
 */
#ifndef GPUCC_CHECK_IMAGE_H
#define GPUCC_CHECK_IMAGE_H

#include <gpucc.h>

typedef int (*check_add_entry_fn)(gpucc_image_writer *w, size_t i);

/* 0, or the first failing call's code. */
static inline int check_write_image(const char *path, int zstd, size_t count, check_add_entry_fn add)
{
	gpucc_image_writer *w;
	gpucc_write_options opts = GPUCC_WRITE_OPTIONS_INIT;
	opts.zstd_level = zstd;
	int rc = gpucc_image_writer_new(&w, path, &opts);
	for (size_t i = 0; rc == 0 && i < count; i++)
		rc = add(w, i);
	if (rc == 0)
		rc = gpucc_image_writer_commit(w);
	gpucc_image_writer_free(w);
	return rc;
}

#endif
