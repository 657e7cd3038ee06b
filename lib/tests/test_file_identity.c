/*
 * lib/tests/test_file_identity.c -- when two names are one file
 * (lib/base/file_identity.c): an output that would replace an input, by
 * the same path, another path, a hard or a symbolic link, or an open
 * descriptor; and each input once, in the order given.  Real files in a
 * scratch directory.
 */
#include "check.h"
#include "file_identity.h"

#include <gpucc.h>

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static char a[256], b[256], hard[256], soft[256], other_path[256], missing[256];

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void setup(void)
{
	snprintf(a, sizeof a, "%s", path_in_dir("a.ll"));
	snprintf(b, sizeof b, "%s", path_in_dir("b.ll"));
	snprintf(hard, sizeof hard, "%s", path_in_dir("hard.ll"));
	snprintf(soft, sizeof soft, "%s", path_in_dir("soft.ll"));
	snprintf(other_path, sizeof other_path, "%s/./a.ll", check_dir);
	snprintf(missing, sizeof missing, "%s", path_in_dir("missing.ll"));
	write_file(a, "same bytes\n");
	write_file(b, "same bytes\n"); /* equal bytes, another file */
	CHECK_INT(link(a, hard), 0);
	CHECK_INT(symlink("a.ll", soft), 0);
}

/* Each row: an output and an input, and whether writing the one would
 * replace the other. */
static void test_output_is_input(void)
{
	const struct {
		const char *output, *input;
		bool same;
	} rows[] = {
		{a, a, true},          {a, other_path, true}, {hard, a, true},   {soft, a, true},
		{a, soft, true},       {a, b, false},         {b, a, false},     {missing, a, false},
		{a, missing, false},   {missing, missing, false},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		bool got = gpucc_output_is_input(rows[i].output, rows[i].input);
		if (got != rows[i].same)
			fprintf(stderr, "  row %zu: '%s' over '%s'\n", i, rows[i].output, rows[i].input);
		CHECK(got == rows[i].same);
	}
	/* The same through a descriptor, as of standard input. */
	int fd = open(soft, O_RDONLY);
	CHECK(fd >= 0);
	CHECK(gpucc_output_is_input_fd(a, fd));
	CHECK(gpucc_output_is_input_fd(hard, fd));
	CHECK(!gpucc_output_is_input_fd(b, fd));
	CHECK(!gpucc_output_is_input_fd(missing, fd));
	close(fd);
	CHECK(!gpucc_output_is_input_fd(a, -1));
	/* The internal halves the rooms use. */
	struct stat st_a, st_b;
	CHECK_INT(stat(a, &st_a), 0);
	CHECK_INT(stat(b, &st_b), 0);
	CHECK(gpucc_path_names_file(hard, &st_a));
	CHECK(!gpucc_path_names_file(b, &st_a));
	CHECK(!gpucc_stat_same_file(&st_a, &st_b));
	CHECK(gpucc_stat_same_file(&st_a, &st_a));
}

static void test_paths_distinct(void)
{
	const char *paths[] = {a, b, other_path, missing, hard, soft, missing, b};
	const char *out[8];
	size_t n = 99;
	CHECK_INT(gpucc_paths_distinct(out, &n, paths, 8), 0);
	/* a first, under the name first given; b; a name of nothing kept each
	 * time, for its open to say why. */
	CHECK_INT(n, 4);
	if (n == 4) {
		CHECK_STR(out[0], a);
		CHECK_STR(out[1], b);
		CHECK_STR(out[2], missing);
		CHECK_STR(out[3], missing);
	}
	n = 99;
	CHECK_INT(gpucc_paths_distinct(out, &n, NULL, 0), 0);
	CHECK_INT(n, 0);
	const char *with_null[] = {a, NULL};
	CHECK_INT(gpucc_paths_distinct(out, &n, with_null, 2), GPUCC_EINVALID);
	CHECK_ERROR_HAS("'paths[1]' is NULL");
}

int main(void)
{
	if (check_dir_create("file-identity") != 0)
		skip("cannot make a scratch directory");
	setup();
	RUN(test_output_is_input);
	RUN(test_paths_distinct);
	check_dir_remove();
	return CHECK_DONE();
}
