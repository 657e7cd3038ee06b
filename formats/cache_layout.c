/*
 * formats/cache_layout.c -- whether a directory holds a cache: its layout
 * directory (cache.md), which the cache's open and the image reader (which
 * tells a cache given as an image) both ask.
 */
#include "cache_layout.h"

#include <fcntl.h>
#include <sys/stat.h>

bool gpucc_cache_layout_at(int dir_fd)
{
	struct stat st;
	return fstatat(dir_fd, GPUCC_CACHE_LAYOUT_DIR, &st, 0) == 0 && S_ISDIR(st.st_mode);
}
