/*
 * lib/tests/test_api.c -- the public API as a package author meets it:
 * linked against libgpucc.so and including nothing but <gpucc.h>, each
 * case holds one documented contract (error codes, messages, what a
 * call accepts) to what the library does.  The other unit tests link
 * the static library and reach internals; this one cannot.
 */
#include "check.h"

#include <gpucc.h>

#include <stdio.h>
#include <string.h>

/* A path of 5,000 bytes, too long to open (ENAMETOOLONG), with a newline
 * in it that messages must spell. */
static const char *too_long_path(void)
{
	static char path[5001];
	memset(path, 'a', sizeof path - 1);
	path[10] = '\n';
	path[sizeof path - 1] = '\0';
	return path;
}

/* gpucc_image_open_mapped's errors are gpucc_image_open's, and
 * gpucc_image_fetch_payload's name the file as they do: a name too long
 * to open is GPUCC_EINVALID, its message cut to a line a terminal shows
 * (gpucc_image_open's 'an absurd one cut'), not GPUCC_ERROR and a
 * kilobyte of 'a'. */
static void test_open_too_long_name(void)
{
	const char *path = too_long_path();
	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open(&img, path), GPUCC_EINVALID);
	CHECK(strlen(gpucc_error_last()->message) < 400);
	CHECK_INT(gpucc_image_open_mapped(&img, path), GPUCC_EINVALID);
	CHECK(img == NULL);
	CHECK(strlen(gpucc_error_last()->message) < 400);
	CHECK_ERROR_HAS("aaaaaaaaaa\\naaa");
	CHECK_ERROR_HAS("the name has 5000 bytes");

	gpucc_digest digest;
	memset(&digest, 0, sizeof digest);
	void *data = &digest;
	size_t size = 1;
	CHECK_INT(gpucc_image_fetch_payload(&data, &size, path, &digest, GPUCC_PART_PTX),
	          GPUCC_EINVALID);
	CHECK(data == NULL);
	CHECK_INT(size, 0);
	CHECK(strlen(gpucc_error_last()->message) < 400);
	CHECK_ERROR_HAS("the name has 5000 bytes");
}

/* An empty output path (a script's unset variable) is GPUCC_EINVALID,
 * said as what it is: not "'' is a directory", and for the image writer
 * at once, not at commit after everything was added. */
static void test_empty_output_path(void)
{
	gpucc_image_writer *w = NULL;
	CHECK_INT(gpucc_image_writer_new(&w, "", NULL), GPUCC_EINVALID);
	CHECK(w == NULL);
	CHECK_ERROR_HAS("empty");
	gpucc_image_writer_free(w);

	gpucc_snapshot *s = NULL;
	CHECK_INT(gpucc_snapshot_new(&s, NULL, 0), 0);
	CHECK_INT(gpucc_snapshot_write(s, ""), GPUCC_EINVALID);
	CHECK_ERROR_HAS("empty");
	CHECK(strstr(gpucc_error_last()->message, "directory") == NULL);
	gpucc_snapshot_free(s);

	CHECK_INT(gpucc_merge_lock_acquire(""), GPUCC_EINVALID);
	CHECK_ERROR_HAS("empty");
	CHECK_INT(gpucc_embed_write_header("", "symbol"), GPUCC_EINVALID);
	CHECK_ERROR_HAS("empty");
	CHECK(strstr(gpucc_error_last()->message, "directory") == NULL);
	/* A name ending in a slash does name a directory. */
	CHECK_INT(gpucc_merge_lock_acquire("some/dir/"), GPUCC_EINVALID);
	CHECK_ERROR_HAS("is a directory");
}

/* The parsers of text take NULL for malformed text, GPUCC_EINVALID, as
 * they take "": none of them crashes on it. */
static void test_parsers_take_null(void)
{
	gpucc_part part = GPUCC_PART_HSACO;
	CHECK_INT(gpucc_part_from_name(&part, NULL), GPUCC_EINVALID);
	CHECK_INT(part, GPUCC_PART_HSACO);
	CHECK_ERROR_HAS("unknown payload kind ''");
	CHECK_INT(gpucc_part_from_name(&part, "PTX"), GPUCC_EINVALID);
	CHECK_INT(gpucc_part_from_name(&part, "ptx"), 0);
	CHECK_INT(part, GPUCC_PART_PTX);

	gpucc_target target;
	CHECK_INT(gpucc_target_parse(&target, NULL), GPUCC_EINVALID);
	gpucc_digest digest;
	CHECK_INT(gpucc_digest_from_hex(&digest, NULL), GPUCC_EINVALID);
	uint64_t size;
	CHECK_INT(gpucc_size_parse(&size, NULL), GPUCC_EINVALID);
	CHECK_INT(gpucc_target_from_hip_arch(&target, NULL), GPUCC_EINVALID);
}

int main(void)
{
	RUN(test_parsers_take_null);
	RUN(test_open_too_long_name);
	RUN(test_empty_output_path);
	return CHECK_DONE();
}
