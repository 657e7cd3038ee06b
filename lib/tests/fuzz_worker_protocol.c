/*
 * lib/tests/fuzz_worker_protocol.c -- fuzz target: the messages between a
 * compile worker and its caller (lib/compile/compile_worker_protocol.c), read from
 * a socket as each side reads them.  The input's first byte picks the side:
 *
 *   even: the caller reading the rest as a worker's result
 *         (gpucc_wire_receive_result): it returns 0, 1 (the stream ended)
 *         or 3 (malformed), and a result it takes keeps the rules its users
 *         rely on: every kernel and external name a string, a payload
 *         absent exactly when its size is 0 (or present and empty);
 *   odd:  a worker reading the rest as jobs (gpucc_wire_serve) with a
 *         backend that compiles nothing and checks each job it is handed:
 *         the serve loop ends with 0 (the stream ended between messages) or
 *         4 (a malformed job), and every job handed on has its strings and
 *         arrays in place.
 *
 * A message's 8-byte size is what the peer says: the reader holds that
 * many bytes before it reads them.  Inputs that claim more than they hold
 * are cut to what they hold (the end of the stream, which a short claim
 * reaches as well), so that a run never asks for gigabytes.
 */
#include "fuzz.h"

#include "compile_worker_protocol.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_INPUT (64 << 10) /* below a socket's buffer: written before it is read */

static bool string_ok(const char *s)
{
	return s && memchr(s, '\0', (size_t)1 << 20) != NULL;
}

/* ---- the worker's side: a backend that checks what it is handed -------- */

static gpucc_backend_thread *stub_thread_new(char *error, size_t error_size)
{
	(void)error;
	(void)error_size;
	static int token;
	return (gpucc_backend_thread *)&token;
}

static void stub_thread_free(gpucc_backend_thread *t)
{
	(void)t;
}

static int stub_compile(gpucc_backend_thread *t, const gpucc_backend_job *j,
                        gpucc_backend_result *out)
{
	(void)t;
	memset(out, 0, sizeof *out);
	if (!string_ok(j->module_name) || !j->module_data || !string_ok(j->target_name) ||
	    !string_ok(j->triple) || !string_ok(j->cpu) || !string_ok(j->features))
		fuzz_fail("a job was handed on without its strings");
	if ((j->link_count && (!j->link_data || !j->link_sizes || !j->link_names)) ||
	    (j->device_lib_count &&
	     (!j->device_lib_paths || !j->device_lib_data || !j->device_lib_sizes)))
		fuzz_fail("a job was handed on without its arrays");
	volatile unsigned char sum = 0;
	for (size_t i = 0; i < j->module_size; i++)
		sum ^= ((const unsigned char *)j->module_data)[i];
	for (size_t i = 0; i < j->link_count; i++)
		for (size_t k = 0; k < j->link_sizes[i]; k++)
			sum ^= ((const unsigned char *)j->link_data[i])[k];
	for (size_t i = 0; i < j->device_lib_count; i++)
		if (j->device_lib_data[i])
			for (size_t k = 0; k < j->device_lib_sizes[i]; k++)
				sum ^= ((const unsigned char *)j->device_lib_data[i])[k];
	(void)sum;
	/* What a compile answers, from static storage (released by no one). */
	static char kernel_name[] = "f", external[] = "vprintf", ptx[] = ".version 7.8\n";
	static gpucc_backend_kernel kernels[1] = {{kernel_name, 10, 0, -1}};
	/* A worker that answers a kernel without a name ("nameless.ll"): the
	 * caller must refuse the answer. */
	kernels[0].name = strcmp(j->module_name, "nameless.ll") == 0 ? NULL : kernel_name;
	static char *externals[1] = {external};
	out->payloads[GPUCC_PART_PTX] = ptx;
	out->payload_sizes[GPUCC_PART_PTX] = sizeof ptx - 1;
	out->kernel_count = 1;
	out->kernels = kernels;
	out->external_count = 1;
	out->externals = externals;
	return 0;
}

static void stub_result_release(gpucc_backend_result *r)
{
	(void)r;
}

static const gpucc_backend stub = {
	.abi_version = GPUCC_BACKEND_ABI,
	.struct_size = sizeof(gpucc_backend),
	.llvm_version = "0",
	.thread_new = stub_thread_new,
	.thread_free = stub_thread_free,
	.compile = stub_compile,
	.result_release = stub_result_release,
};

/* ---- the caller's side --------------------------------------------------- */

static void check_result(const gpucc_backend_result *r)
{
	for (size_t i = 0; i < r->kernel_count; i++)
		if (!string_ok(r->kernels[i].name))
			fuzz_fail("a result's kernel without a name");
	for (size_t i = 0; i < r->external_count; i++)
		if (!string_ok(r->externals[i]))
			fuzz_fail("a result's external without a name");
	for (int i = 0; i < GPUCC_PART_COUNT; i++)
		if (!r->payloads[i] && r->payload_sizes[i])
			fuzz_fail("a result's absent payload with a size");
	if ((r->message && !string_ok(r->message)) || (r->diagnostics && !string_ok(r->diagnostics)))
		fuzz_fail("a result's message is not a string");
}

/* size bytes of data on one end of a socket pair, the other end in *other
 * (-1 when none could be made). */
static int socket_with(const uint8_t *data, size_t size, int *other)
{
	int fds[2];
	*other = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0)
		return -1;
	for (size_t at = 0; at < size;) {
		ssize_t n = write(fds[1], data + at, size - at);
		if (n <= 0) {
			close(fds[0]);
			close(fds[1]);
			return -1;
		}
		at += (size_t)n;
	}
	shutdown(fds[1], SHUT_WR);
	*other = fds[1];
	return fds[0];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool once;
	if (!once) {
		signal(SIGPIPE, SIG_IGN);
		once = true;
	}
	if (size < 1)
		return 0;
	bool jobs = data[0] & 1;
	data++;
	size = size - 1 < MAX_INPUT ? size - 1 : MAX_INPUT;
	/* Each message's claimed size cut to what follows it. */
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	for (size_t at = 0; at + 8 <= size;) {
		uint64_t claim = 0; /* little-endian, as the wire's integers */
		for (int i = 0; i < 8; i++)
			claim |= (uint64_t)copy[at + i] << (8 * i);
		uint64_t left = size - at - 8;
		if (claim > left) {
			claim = left;
			for (int i = 0; i < 8; i++)
				copy[at + i] = (uint8_t)(claim >> (8 * i));
		}
		at += 8 + (size_t)claim;
	}
	int other, fd = socket_with(copy, size, &other);
	free(copy);
	if (fd < 0)
		return 0;
	if (jobs) {
		int status = gpucc_wire_serve(&stub, fd);
		if (status != 0 && status != 4)
			fuzz_fail("the serve loop ended with another status than 0 or 4");
	} else {
		static const struct timespec no_deadline;
		gpucc_backend_result r;
		int rc;
		while ((rc = gpucc_wire_receive_result(fd, &r, &no_deadline)) == 0) {
			check_result(&r);
			gpucc_wire_result_release(&r);
		}
		if (rc != 1 && rc != 3)
			fuzz_fail("receiving a result gave another code than 0, 1 or 3");
	}
	close(fd);
	close(other);
	return 0;
}

/* ---- seeds: a job as the caller sends it, and the worker's answer ------- */

static void add_bytes_of(void (*add)(const void *, size_t), uint8_t side, int fd)
{
	uint8_t buf[MAX_INPUT + 1];
	buf[0] = side;
	size_t n = 1;
	ssize_t got;
	while (n < sizeof buf && (got = read(fd, buf + n, sizeof buf - n)) > 0)
		n += (size_t)got;
	add(buf, n);
}

void fuzz_seeds(void (*add)(const void *data, size_t size))
{
	static const char module[] = "define void @f() { ret void }\n";
	static const char lib_text[] = "; a generated library\n";
	const void *lib_data[1] = {lib_text};
	const size_t lib_sizes[1] = {sizeof lib_text - 1};
	const char *lib_paths[1] = {"oclc_isa_version_900.ll"};
	const void *link_data[1] = {module};
	const size_t link_sizes[1] = {sizeof module - 1};
	const char *link_names[1] = {"other.ll"};
	gpucc_backend_job job = {
		.module_name = "f.ll", .module_data = module, .module_size = sizeof module - 1,
		.link_count = 1, .link_data = link_data, .link_sizes = link_sizes,
		.link_names = link_names, .target_name = "gfx900", .vendor = GPUCC_VENDOR_AMD,
		.triple = "amdgcn-amd-amdhsa", .cpu = "gfx900", .features = "", .opt_level = 2,
		.code_object_version = 5, .device_lib_count = 1, .device_lib_paths = lib_paths,
		.device_lib_data = lib_data, .device_lib_sizes = lib_sizes, .ld_lld = "ld.lld",
	};
	int jobs[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, jobs) != 0)
		return;
	/* Two jobs, sent; then what a worker answers them: a result, and one
	 * with a kernel without a name. */
	gpucc_backend_job nameless = job;
	nameless.module_name = "nameless.ll";
	if (gpucc_wire_send_job(jobs[1], &job) == 0 && gpucc_wire_send_job(jobs[1], &nameless) == 0) {
		shutdown(jobs[1], SHUT_WR);
		uint8_t sent[MAX_INPUT];
		ssize_t n = read(jobs[0], sent, sizeof sent);
		if (n > 0) {
			uint8_t seed[MAX_INPUT + 1];
			seed[0] = 1;
			memcpy(seed + 1, sent, (size_t)n);
			add(seed, (size_t)n + 1);
			int other, fd = socket_with(sent, (size_t)n, &other);
			if (fd >= 0) {
				gpucc_wire_serve(&stub, fd);
				shutdown(fd, SHUT_WR);
				add_bytes_of(add, 0, other);
				close(fd);
				close(other);
			}
		}
	}
	close(jobs[0]);
	close(jobs[1]);
}
