/*
 * lib/base/file_identity.c -- when two names are one file (the same device
 * and inode, reached by the same path, another path or a link): whether an
 * output would replace an input (gpucc_output_is_input, every command's
 * "-o names the input"), and each input once (gpucc_paths_distinct, a file
 * given twice to compile or to cache import).  stat(2) follows links, as
 * the open of an input does.
 */
#include "errors.h"
#include "file_identity.h"

#include <stdlib.h>
#include <sys/stat.h>

bool gpucc_stat_same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

bool gpucc_path_names_file(const char *path, const struct stat *file)
{
	struct stat named;
	return stat(path, &named) == 0 && gpucc_stat_same_file(&named, file);
}

bool gpucc_output_is_input(const char *output, const char *input)
{
	GPUCC_REQUIRE_OR(output, false);
	GPUCC_REQUIRE_OR(input, false);
	struct stat in;
	return stat(input, &in) == 0 && gpucc_path_names_file(output, &in);
}

bool gpucc_output_is_input_fd(const char *output, int input_fd)
{
	GPUCC_REQUIRE_OR(output, false);
	struct stat in;
	return input_fd >= 0 && fstat(input_fd, &in) == 0 && gpucc_path_names_file(output, &in);
}

int gpucc_paths_distinct(const char **out, size_t *out_count, const char *const *paths,
                         size_t count)
{
	GPUCC_REQUIRE(out);
	GPUCC_REQUIRE(out_count);
	*out_count = 0;
	GPUCC_REQUIRE_EACH(paths, count);
	struct stat *seen = malloc((count ? count : 1) * sizeof *seen);
	if (!seen)
		return gpucc_error_oom();
	size_t seen_count = 0;
	for (size_t i = 0; i < count; i++) {
		struct stat st;
		bool again = false;
		if (stat(paths[i], &st) == 0) {
			for (size_t j = 0; j < seen_count && !again; j++)
				again = gpucc_stat_same_file(&seen[j], &st);
			seen[seen_count++] = st;
		}
		if (!again)
			out[(*out_count)++] = paths[i];
	}
	free(seen);
	return 0;
}
