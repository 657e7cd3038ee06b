/*
 * lib/base/input_file.c -- opening the input files libgpucc reads by the names
 * users give (gpucc_open_input_file: the one place that refuses what is not
 * a regular file, and words it), with those names quoted on one line;
 * reading them in chunks, and their SHA-256.
 */
#include "errors.h"
#include "escape.h"
#include "input_file.h"

#include <errno.h>
#include <fcntl.h>

#include "sha256.h"
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gpucc_error_set_open(const char *noun, const char *path)
{
	int err = errno;
	char shown[GPUCC_SHOWN_PATH_SIZE];
	const char *space = noun ? " " : "";
	noun = noun ? noun : "";
	if (err != ENAMETOOLONG) {
		errno = err;
		return gpucc_error_set_errno("cannot open %s%s'%s'", noun, space, path);
	}
	gpucc_escape_controls(shown, sizeof shown, path);
	return gpucc_error_set(GPUCC_EINVALID, "cannot open %s%s'%s': %s (the name has %zu bytes)",
	                       noun, space, shown, strerror(err), strlen(path));
}

int gpucc_open_input_file(int *out_fd, struct stat *out_st, const char *path, const char *noun,
                          const char *kind, int refuse_code)
{
	char shown[GPUCC_SHOWN_PATH_SIZE];
	gpucc_escape_controls(shown, sizeof shown, path);
	const char *space = noun ? " " : "";
	noun = noun ? noun : "";
	/* O_NONBLOCK: opening a FIFO without it waits for a writer. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENAMETOOLONG)
		return gpucc_error_set(refuse_code, "cannot open %s%s'%s': %s (the name has %zu bytes)",
		                       noun, space, shown, strerror(ENAMETOOLONG), strlen(path));
	if (fd < 0)
		return gpucc_error_set_errno("cannot open %s%s'%s'", noun, space, shown);
	struct stat st;
	int rc = 0, flags;
	if (fstat(fd, &st) != 0)
		rc = gpucc_error_set_errno("cannot read %s%s'%s'", noun, space, shown);
	else if (!S_ISREG(st.st_mode))
		rc = gpucc_error_set(refuse_code, "%s%s'%s' is %s, not %s", noun, space, shown,
		                     S_ISDIR(st.st_mode) ? "a directory" : "a FIFO, socket or device",
		                     kind);
	else if ((flags = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
		rc = gpucc_error_set_errno("cannot read %s%s'%s'", noun, space, shown);
	if (rc) {
		close(fd);
		return rc;
	}
	if (out_st)
		*out_st = st;
	*out_fd = fd;
	return 0;
}

int gpucc_open_regular_file(int *out_fd, const char *path)
{
	return gpucc_open_input_file(out_fd, NULL, path, NULL, "a regular file", GPUCC_EINVALID);
}

int gpucc_read_file_chunks(const char *path, gpucc_payload_sink sink, void *ctx)
{
	int fd;
	int rc = gpucc_open_regular_file(&fd, path);
	if (rc)
		return rc;
	unsigned char buffer[1 << 16];
	for (;;) {
		ssize_t n = read(fd, buffer, sizeof buffer);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = gpucc_error_set_errno("cannot read '%s'", path);
			break;
		}
		if (n == 0 || (rc = sink(ctx, buffer, (size_t)n)))
			break;
	}
	close(fd);
	return rc;
}

typedef struct file_digest {
	gpucc_sha256 ctx;
	uint64_t total;
	gpucc_payload_sink sink; /* or NULL */
	void *sink_ctx;
} file_digest;

static int hash_chunk(void *ctx, const void *data, size_t size)
{
	file_digest *d = ctx;
	gpucc_sha256_update(&d->ctx, data, size);
	d->total += size;
	return d->sink ? d->sink(d->sink_ctx, data, size) : 0;
}

int gpucc_digest_file_to(gpucc_digest *out, uint64_t *out_size, const char *path,
                         gpucc_payload_sink sink, void *ctx)
{
	file_digest d = {.total = 0, .sink = sink, .sink_ctx = ctx};
	gpucc_sha256_init(&d.ctx);
	int rc = gpucc_read_file_chunks(path, hash_chunk, &d);
	if (rc)
		return rc;
	gpucc_sha256_final(&d.ctx, out->bytes);
	if (out_size)
		*out_size = d.total;
	return 0;
}

int gpucc_digest_file(gpucc_digest *out, uint64_t *out_size, const char *path)
{
	GPUCC_REQUIRE(out);
	GPUCC_REQUIRE(path);
	return gpucc_digest_file_to(out, out_size, path, NULL, NULL);
}
