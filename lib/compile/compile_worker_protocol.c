/*
 * lib/compile/compile_worker_protocol.c -- what a compile worker and its caller say
 * to each other over a socket (lib/compile/compile_worker_protocol.h): one job, then
 * its result, until the caller closes its end.  Built into libgpucc (the
 * caller, lib/compile/compile_worker.c) and into the worker program
 * (lib/backend_llvm/worker_main.c), which links nothing else of libgpucc.
 *
 * Messages: a u64 length, then that many bytes of fields, each a u64
 * (little-endian) or a length-prefixed byte string (u64 length, bytes, a
 * NUL not counted); an absent string has length UINT64_MAX.  Everything
 * read is checked against the message's length: a malformed message is an
 * error, never a read out of bounds.
 */
#include "compile_worker_protocol.h"

#include "byte_buffer.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ABSENT UINT64_MAX

/* ---- messages ----------------------------------------------------------------- */

typedef gpucc_buffer buffer;

static void put_bytes(buffer *b, const void *data, size_t size)
{
	gpucc_buffer_append(b, data, size); /* a failure sets b->failed */
}

static void put_u64(buffer *b, uint64_t v)
{
	unsigned char bytes[8];
	for (int i = 0; i < 8; i++)
		bytes[i] = (unsigned char)(v >> (8 * i));
	put_bytes(b, bytes, 8);
}

static void put_blob(buffer *b, const void *data, size_t size)
{
	if (!data) {
		put_u64(b, ABSENT);
		return;
	}
	put_u64(b, size);
	put_bytes(b, data, size);
	put_bytes(b, "", 1);
}

static void put_string(buffer *b, const char *s)
{
	put_blob(b, s, s ? strlen(s) : 0);
}

typedef struct reader {
	const unsigned char *data;
	size_t size, pos;
	bool bad;
} reader;

static uint64_t get_u64(reader *r)
{
	if (r->bad || r->size - r->pos < 8) {
		r->bad = true;
		return 0;
	}
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)r->data[r->pos + (size_t)i] << (8 * i);
	r->pos += 8;
	return v;
}

/* A byte string in place (NUL-terminated), or NULL when absent or bad. */
static const void *get_blob(reader *r, size_t *size)
{
	uint64_t n = get_u64(r);
	*size = 0;
	if (r->bad || n == ABSENT)
		return NULL;
	if (n >= r->size - r->pos || r->data[r->pos + n] != '\0') {
		r->bad = true;
		return NULL;
	}
	const void *p = r->data + r->pos;
	r->pos += (size_t)n + 1;
	*size = (size_t)n;
	return p;
}

static const char *get_string(reader *r)
{
	size_t size;
	return get_blob(r, &size);
}

/* A malloc()ed copy of a byte string, NULL when absent. */
static void *copy_blob(reader *r, size_t *size)
{
	const void *p = get_blob(r, size);
	if (!p)
		return NULL;
	void *copy = malloc(*size + 1);
	if (!copy) {
		r->bad = true;
		return NULL;
	}
	memcpy(copy, p, *size + 1);
	return copy;
}

static char *copy_string(reader *r)
{
	size_t size;
	return copy_blob(r, &size);
}

static int write_all(int fd, const void *data, size_t size)
{
	const unsigned char *p = data;
	while (size) {
		ssize_t n = send(fd, p, size, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		size -= (size_t)n;
	}
	return 0;
}

static int send_message(int fd, const buffer *b)
{
	buffer header = {0};
	put_u64(&header, b->size);
	int rc = header.failed ? -1 : write_all(fd, header.data, header.size);
	free(header.data);
	return rc == 0 ? write_all(fd, b->data, b->size) : -1;
}

/* Wait until fd is readable or the deadline (CLOCK_MONOTONIC; tv_sec 0:
 * none) passes: 1 readable, 0 timed out, -1 error. */
static int wait_readable(int fd, const struct timespec *deadline)
{
	for (;;) {
		int timeout = -1;
		if (deadline->tv_sec) {
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			long long ms = (long long)(deadline->tv_sec - now.tv_sec) * 1000 +
			               (deadline->tv_nsec - now.tv_nsec) / 1000000;
			if (ms <= 0)
				return 0;
			timeout = ms > INT_MAX ? INT_MAX : (int)ms;
		}
		struct pollfd p = {fd, POLLIN, 0};
		int n = poll(&p, 1, timeout);
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 ? -1 : n > 0 ? 1 : 0;
	}
}

/* Read exactly size bytes: 0, 1 on end of stream or error, 2 past the deadline. */
static int read_exact(int fd, void *data, size_t size, const struct timespec *deadline)
{
	unsigned char *p = data;
	while (size) {
		int ready = wait_readable(fd, deadline);
		if (ready == 0)
			return 2;
		if (ready < 0)
			return 1;
		ssize_t n = read(fd, p, size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 1;
		p += n;
		size -= (size_t)n;
	}
	return 0;
}

/* One message: 0 and *out (malloc()ed), or read_exact's codes, 3 for a
 * size past 1 TiB, 4 when there is no memory for it (*size: its size). */
static int receive_message(int fd, unsigned char **out, size_t *size,
                           const struct timespec *deadline)
{
	unsigned char header[8];
	int rc = read_exact(fd, header, sizeof header, deadline);
	if (rc)
		return rc;
	reader r = {header, sizeof header, 0, false};
	uint64_t n = get_u64(&r);
	if (n > ((uint64_t)1 << 40))
		return 3;
	*size = (size_t)n;
	*out = malloc(n ? (size_t)n : 1);
	if (!*out)
		return 4;
	if ((rc = read_exact(fd, *out, (size_t)n, deadline)) != 0) {
		free(*out);
		*out = NULL;
		return rc;
	}
	*size = (size_t)n;
	return 0;
}

/* ---- jobs and results on the wire --------------------------------------------- */

static void encode_job(buffer *b, const gpucc_backend_job *j)
{
	put_string(b, j->module_name);
	put_blob(b, j->module_data, j->module_size);
	put_u64(b, j->link_count);
	for (size_t i = 0; i < j->link_count; i++) {
		put_blob(b, j->link_data[i], j->link_sizes[i]);
		put_string(b, j->link_names[i]);
	}
	put_string(b, j->target_name);
	put_u64(b, (uint64_t)j->vendor);
	put_string(b, j->triple);
	put_string(b, j->cpu);
	put_string(b, j->features);
	put_u64(b, j->sm);
	put_u64(b, j->sm_accelerated);
	put_u64(b, (uint64_t)j->opt_level);
	put_u64(b, j->fast_math);
	put_u64(b, j->ftz);
	put_u64(b, j->debug_info);
	put_u64(b, (uint64_t)j->code_object_version);
	put_u64(b, j->device_lib_count);
	for (size_t i = 0; i < j->device_lib_count; i++) {
		put_string(b, j->device_lib_paths[i]);
		const void *data = j->device_lib_data ? j->device_lib_data[i] : NULL;
		put_blob(b, data, data ? j->device_lib_sizes[i] : 0);
	}
	put_string(b, j->ptxas);
	put_string(b, j->ld_lld);
	put_string(b, j->nvjitlink);
	put_u64(b, j->ld_lld_in_process);
}

/* The arrays a decoded job points into, owned by the worker. */
typedef struct job_arrays {
	const void **link_data, **lib_data;
	size_t *link_sizes, *lib_sizes;
	const char **link_names, **lib_paths;
} job_arrays;

static void job_arrays_free(job_arrays *a)
{
	free(a->link_data);
	free(a->lib_data);
	free(a->link_sizes);
	free(a->lib_sizes);
	free(a->link_names);
	free(a->lib_paths);
	memset(a, 0, sizeof *a);
}

/* Decode a job in place (its strings point into r's bytes).  False when
 * the message is malformed. */
static bool decode_job(reader *r, gpucc_backend_job *j, job_arrays *a)
{
	memset(j, 0, sizeof *j);
	memset(a, 0, sizeof *a);
	j->module_name = get_string(r);
	j->module_data = get_blob(r, &j->module_size);
	uint64_t links = get_u64(r);
	if (r->bad || links > r->size)
		return false;
	j->link_count = (size_t)links;
	a->link_data = calloc(links + 1, sizeof *a->link_data);
	a->link_sizes = calloc(links + 1, sizeof *a->link_sizes);
	a->link_names = calloc(links + 1, sizeof *a->link_names);
	if (!a->link_data || !a->link_sizes || !a->link_names)
		return false;
	for (size_t i = 0; i < j->link_count; i++) {
		a->link_data[i] = get_blob(r, &a->link_sizes[i]);
		a->link_names[i] = get_string(r);
	}
	j->link_data = a->link_data;
	j->link_sizes = a->link_sizes;
	j->link_names = a->link_names;
	j->target_name = get_string(r);
	j->vendor = (gpucc_vendor)get_u64(r);
	j->triple = get_string(r);
	j->cpu = get_string(r);
	j->features = get_string(r);
	j->sm = (unsigned)get_u64(r);
	j->sm_accelerated = get_u64(r) != 0;
	j->opt_level = (int)get_u64(r);
	j->fast_math = get_u64(r) != 0;
	j->ftz = get_u64(r) != 0;
	j->debug_info = get_u64(r) != 0;
	j->code_object_version = (int)get_u64(r);
	uint64_t libs = get_u64(r);
	if (r->bad || libs > r->size)
		return false;
	j->device_lib_count = (size_t)libs;
	a->lib_paths = calloc(libs + 1, sizeof *a->lib_paths);
	a->lib_data = calloc(libs + 1, sizeof *a->lib_data);
	a->lib_sizes = calloc(libs + 1, sizeof *a->lib_sizes);
	if (!a->lib_paths || !a->lib_data || !a->lib_sizes)
		return false;
	for (size_t i = 0; i < j->device_lib_count; i++) {
		a->lib_paths[i] = get_string(r);
		a->lib_data[i] = get_blob(r, &a->lib_sizes[i]);
	}
	j->device_lib_paths = a->lib_paths;
	j->device_lib_data = a->lib_data;
	j->device_lib_sizes = a->lib_sizes;
	j->ptxas = get_string(r);
	j->ld_lld = get_string(r);
	j->nvjitlink = get_string(r);
	j->ld_lld_in_process = get_u64(r) != 0;
	return !r->bad && j->module_name && j->module_data && j->target_name && j->triple &&
	       j->cpu && j->features;
}

static void encode_result(buffer *b, const gpucc_backend_result *out)
{
	put_u64(b, (uint64_t)(int64_t)out->code);
	put_string(b, out->message);
	put_string(b, out->diagnostics);
	for (int i = 0; i < GPUCC_PART_COUNT; i++)
		put_blob(b, out->payloads[i], out->payload_sizes[i]);
	put_u64(b, out->kernel_count);
	for (size_t i = 0; i < out->kernel_count; i++) {
		put_string(b, out->kernels[i].name);
		put_u64(b, (uint64_t)out->kernels[i].registers);
		put_u64(b, (uint64_t)out->kernels[i].shared_bytes);
		put_u64(b, (uint64_t)out->kernels[i].scratch_bytes);
	}
	put_u64(b, out->external_count);
	for (size_t i = 0; i < out->external_count; i++)
		put_string(b, out->externals[i]);
	put_string(b, out->ptxas_refused);
	put_u64(b, out->no_kernels ? 1 : 0);
}

static bool decode_result(reader *r, gpucc_backend_result *out)
{
	memset(out, 0, sizeof *out);
	out->code = (int)(int64_t)get_u64(r);
	out->message = copy_string(r);
	out->diagnostics = copy_string(r);
	for (int i = 0; i < GPUCC_PART_COUNT; i++)
		out->payloads[i] = copy_blob(r, &out->payload_sizes[i]);
	uint64_t kernels = get_u64(r);
	if (r->bad || kernels > r->size)
		return false;
	out->kernels = calloc(kernels + 1, sizeof *out->kernels);
	if (!out->kernels)
		return false;
	out->kernel_count = (size_t)kernels;
	for (size_t i = 0; i < out->kernel_count; i++) {
		out->kernels[i].name = copy_string(r);
		out->kernels[i].registers = (int64_t)get_u64(r);
		out->kernels[i].shared_bytes = (int64_t)get_u64(r);
		out->kernels[i].scratch_bytes = (int64_t)get_u64(r);
		if (!out->kernels[i].name)
			r->bad = true;
	}
	uint64_t externals = get_u64(r);
	if (r->bad || externals > r->size)
		return false;
	out->externals = calloc(externals + 1, sizeof *out->externals);
	if (!out->externals)
		return false;
	out->external_count = (size_t)externals;
	for (size_t i = 0; i < out->external_count; i++)
		if (!(out->externals[i] = copy_string(r)))
			r->bad = true;
	out->ptxas_refused = copy_string(r);
	out->no_kernels = get_u64(r) != 0;
	return !r->bad;
}

void gpucc_wire_result_release(gpucc_backend_result *r)
{
	if (!r)
		return;
	free(r->message);
	free(r->diagnostics);
	for (int i = 0; i < GPUCC_PART_COUNT; i++)
		free(r->payloads[i]);
	for (size_t i = 0; r->kernels && i < r->kernel_count; i++)
		free(r->kernels[i].name);
	free(r->kernels);
	for (size_t i = 0; r->externals && i < r->external_count; i++)
		free(r->externals[i]);
	free(r->externals);
	free(r->ptxas_refused);
	memset(r, 0, sizeof *r);
}


/* ---- both ends ---------------------------------------------------------------- */

int gpucc_wire_send_job(int fd, const gpucc_backend_job *job)
{
	buffer message = {0};
	encode_job(&message, job);
	int rc = message.failed ? -1 : send_message(fd, &message);
	free(message.data);
	return rc;
}

int gpucc_wire_receive_result(int fd, gpucc_backend_result *out, const struct timespec *deadline)
{
	memset(out, 0, sizeof *out);
	unsigned char *reply = NULL;
	size_t size = 0;
	int rc = receive_message(fd, &reply, &size, deadline);
	if (rc != 0)
		return rc;
	reader r = {reply, size, 0, false};
	bool ok = decode_result(&r, out);
	free(reply);
	if (ok)
		return 0;
	gpucc_wire_result_release(out);
	return 3;
}

int gpucc_wire_serve(const gpucc_backend *b, int fd)
{
	char error[512];
	gpucc_backend_thread *thread = b->thread_new(error, sizeof error);
	if (!thread) {
		/* The caller reads the worker's stderr after its end. */
		size_t len = strlen(error);
		error[len] = '\n';
		ssize_t ignored = write(STDERR_FILENO, error, len + 1);
		(void)ignored;
		return 3;
	}
	static const struct timespec no_deadline;
	int status = 0;
	for (;;) {
		unsigned char *message = NULL;
		size_t size = 0;
		int rc = receive_message(fd, &message, &size, &no_deadline);
		if (rc == 4) {
			/* The caller reads the worker's stderr after its end. */
			char line[64];
			int len = snprintf(line, sizeof line, "cannot hold a job of %zu bytes\n", size);
			ssize_t ignored = write(STDERR_FILENO, line, (size_t)len);
			(void)ignored;
			status = GPUCC_WORKER_EXIT_NO_MEMORY;
			break;
		}
		if (rc != 0) {
			status = rc == 3 ? 4 : 0; /* a malformed job, or the caller closed its end */
			break;
		}
		reader r = {message, size, 0, false};
		gpucc_backend_job job;
		job_arrays arrays;
		gpucc_backend_result out;
		memset(&out, 0, sizeof out);
		bool ok = decode_job(&r, &job, &arrays);
		if (ok)
			b->compile(thread, &job, &out);
		buffer reply = {0};
		if (ok)
			encode_result(&reply, &out);
		if (ok)
			b->result_release(&out);
		job_arrays_free(&arrays);
		free(message);
		ok = ok && !reply.failed && send_message(fd, &reply) == 0;
		free(reply.data);
		if (!ok) {
			status = 4;
			break;
		}
	}
	b->thread_free(thread);
	return status;
}
