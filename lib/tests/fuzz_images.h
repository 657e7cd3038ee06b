/*
 * lib/tests/fuzz_images.h -- small valid images for the fuzz targets that
 * read images (lib/tests/fuzz_images.c).
 */
#ifndef GPUCC_TESTS_FUZZ_IMAGES_H
#define GPUCC_TESTS_FUZZ_IMAGES_H

#include <gpucc.h>

#include <stddef.h>

/* The bytes (release with free) of an image of entries entries, written by
 * libgpucc, zstd-compressed at zstd_level when it is not 0.  Entry i is
 * module "m<i>.ll" for sm_90 or, one in three, gfx90a; payloads repeat
 * every five entries and one is shared by all.  Calls fuzz_fail when it
 * cannot. */
unsigned char *fuzz_make_image(size_t *size, size_t entries, int zstd_level);

#endif
