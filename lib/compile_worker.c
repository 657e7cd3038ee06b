/*
 * lib/compile_worker.c -- compile jobs in worker processes, so that LLVM's
 * death is one job's failure, not the caller's.
 *
 * LLVM runs in process and aborts or faults on valid IR it cannot select
 * (an intrinsic of a newer GPU, an fp128 argument...).  Each compile thread
 * of a session owns one worker: a child forked from the caller once the
 * backend module is loaded, so that it starts with LLVM mapped and its
 * targets initialised, and keeps its parsed device libraries from job to
 * job.  The thread sends the worker one job at a time over a socket and
 * reads the result back; a worker that dies (a signal, an exit) or runs
 * past the job's time fails that job only, with one line, and the next job
 * starts a new worker.
 *
 * Each worker is its own process group, and its tools (ptxas, ld.lld) are
 * in it: a stuck job is ended by killing the group, and a worker whose
 * caller dies (PR_SET_PDEATHSIG) kills its group, tools included.  Its
 * temporary files live in a directory the caller makes,
 * $TMPDIR/gpucc-backend-PID-XXXXXX (PID the caller's: the command's
 * interrupt handling removes it by that name), and removes once the worker
 * is gone, whatever became of it.  The worker's stderr (LLVM's last words)
 * goes to a file in it, from which a crash's first line is taken.
 *
 * Messages on the socket: a u64 length, then that many bytes of fields,
 * each a u64 (little-endian) or a length-prefixed byte string (u64 length,
 * bytes, a NUL not counted); an absent string has length UINT64_MAX.
 */
#include "compile_worker.h"
#include "errors.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ABSENT UINT64_MAX

struct gpucc_worker {
	const gpucc_backend *backend;
	gpucc_worker_limits limits;
	pid_t pid;       /* 0: none running */
	int socket;      /* the caller's end */
	int stderr_fd;   /* the worker's stderr, read after a crash */
	char dir[PATH_MAX];
};

/* ---- messages ----------------------------------------------------------------- */

typedef struct buffer {
	unsigned char *data;
	size_t size, capacity;
	bool failed;
} buffer;

static void put_bytes(buffer *b, const void *data, size_t size)
{
	if (b->failed)
		return;
	if (b->size + size > b->capacity) {
		size_t capacity = b->capacity ? b->capacity : 4096;
		while (capacity < b->size + size)
			capacity *= 2;
		unsigned char *grown = realloc(b->data, capacity);
		if (!grown) {
			b->failed = true;
			return;
		}
		b->data = grown;
		b->capacity = capacity;
	}
	if (size)
		memcpy(b->data + b->size, data, size);
	b->size += size;
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

/* One message: 0 and *out (malloc()ed), or read_exact's codes (3: too
 * large to hold). */
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
	*out = malloc(n ? (size_t)n : 1);
	if (!*out)
		return 3;
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
	return !r->bad;
}

void gpucc_worker_result_release(gpucc_backend_result *r)
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

/* ---- the worker process --------------------------------------------------------- */

static void kill_group(int sig)
{
	(void)sig;
	kill(0, SIGKILL); /* the worker and its tools */
}

/* The worker: compile each job read from fd and answer with its result,
 * until the caller closes its end.  Never returns. */
static void worker_main(const gpucc_backend *b, int fd, int stderr_fd, const char *dir,
                        const gpucc_worker_limits *limits, pid_t caller)
{
	/* Its own process group, which dies with the caller. */
	setpgid(0, 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = kill_group;
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGPIPE, &sa, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != caller)
		_exit(1);
	/* Keep stderr and the socket, as 2 and 3, and nothing else of the
	 * caller's: another worker's socket held open here would keep that
	 * worker from ever seeing its end. */
	dup2(stderr_fd, STDERR_FILENO);
	if (fd != 3) {
		dup2(fd, 3);
		fd = 3;
	}
	close_range(4, ~0U, 0);
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull >= 0) {
		dup2(devnull, STDIN_FILENO);
		dup2(devnull, STDOUT_FILENO);
		close(devnull);
	}
	if (limits->memory_bytes) {
		struct rlimit rl = {(rlim_t)limits->memory_bytes, (rlim_t)limits->memory_bytes};
		setrlimit(RLIMIT_AS, &rl);
	}
	/* The backend makes its directory under $TMPDIR: under ours. */
	setenv("TMPDIR", dir, 1);
	char error[512];
	gpucc_backend_thread *thread = b->thread_new(error, sizeof error);
	if (!thread) {
		fprintf(stderr, "%s\n", error);
		_exit(3);
	}
	static const struct timespec no_deadline;
	for (;;) {
		unsigned char *message = NULL;
		size_t size = 0;
		if (receive_message(fd, &message, &size, &no_deadline) != 0)
			break;
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
		if (!ok || reply.failed || send_message(fd, &reply) != 0)
			_exit(4);
		free(reply.data);
	}
	b->thread_free(thread);
	_exit(0);
}

/* ---- the caller's side ---------------------------------------------------------- */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

static void remove_tree(const char *path)
{
	nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

gpucc_worker *gpucc_worker_new(const gpucc_backend *b, const gpucc_worker_limits *limits)
{
	gpucc_worker *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->backend = b;
	w->limits = *limits;
	w->socket = w->stderr_fd = -1;
	return w;
}

/* Start a worker; GPUCC_ERROR with a message when it cannot. */
static int worker_start(gpucc_worker *w)
{
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/tmp";
	int n = snprintf(w->dir, sizeof w->dir, "%s/gpucc-backend-%ld-XXXXXX", tmp, (long)getpid());
	if (n < 0 || (size_t)n >= sizeof w->dir || !mkdtemp(w->dir)) {
		int rc = gpucc_error_set_errno("cannot create a temporary directory in '%s'", tmp);
		w->dir[0] = '\0';
		return rc;
	}
	char err_path[PATH_MAX + 16];
	snprintf(err_path, sizeof err_path, "%s/stderr", w->dir);
	w->stderr_fd = open(err_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int pair[2];
	if (w->stderr_fd < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
		int rc = gpucc_error_set_errno("cannot start a compile worker");
		remove_tree(w->dir);
		w->dir[0] = '\0';
		return rc;
	}
	pid_t caller = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		close(pair[0]);
		worker_main(w->backend, pair[1], w->stderr_fd, w->dir, &w->limits, caller);
	}
	close(pair[1]);
	if (pid < 0) {
		int rc = gpucc_error_set_errno("cannot start a compile worker");
		close(pair[0]);
		remove_tree(w->dir);
		w->dir[0] = '\0';
		return rc;
	}
	/* Also here, so that a kill of the group cannot miss a worker that has
	 * not run yet. */
	setpgid(pid, pid);
	w->pid = pid;
	w->socket = pair[0];
	return 0;
}

/* End the worker's process (killing its group when asked, else closing
 * its socket, which ends it between jobs) and return its wait status. */
static int worker_stop(gpucc_worker *w, bool kill_it)
{
	int status = 0;
	if (w->pid > 0) {
		if (kill_it)
			kill(-w->pid, SIGKILL);
		if (w->socket >= 0)
			close(w->socket);
		w->socket = -1;
		while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
			;
		/* Tools of a worker that died first are in its group still. */
		kill(-w->pid, SIGKILL);
	}
	w->pid = 0;
	return status;
}

/* Close what is left of a stopped worker and remove its directory. */
static void worker_clean(gpucc_worker *w)
{
	if (w->socket >= 0)
		close(w->socket);
	if (w->stderr_fd >= 0)
		close(w->stderr_fd);
	if (w->dir[0])
		remove_tree(w->dir);
	w->socket = w->stderr_fd = -1;
	w->dir[0] = '\0';
}

void gpucc_worker_free(gpucc_worker *w)
{
	if (!w)
		return;
	worker_stop(w, false);
	worker_clean(w);
	free(w);
}

/* The first line of what the worker wrote on stderr since offset that says
 * something ("LLVM ERROR: ...", an assertion), else "". */
static void crash_words(gpucc_worker *w, off_t offset, char *out, size_t size)
{
	out[0] = '\0';
	char text[4096];
	ssize_t n = pread(w->stderr_fd, text, sizeof text - 1, offset);
	if (n <= 0)
		return;
	text[n] = '\0';
	for (char *line = text; *line;) {
		size_t len = strcspn(line, "\n");
		bool noise = len == 0 || line[0] == ' ' || line[0] == '#' || line[0] == '\t' ||
		             (line[0] >= '0' && line[0] <= '9') || strncmp(line, "PLEASE ", 7) == 0 ||
		             strncmp(line, "Stack dump", 10) == 0;
		if (!noise) {
			snprintf(out, size, "%.*s", (int)len, line);
			return;
		}
		line += len + (line[len] == '\n');
	}
}

static void fail_job(gpucc_backend_result *out, int code, const gpucc_backend_job *job,
                     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void fail_job(gpucc_backend_result *out, int code, const gpucc_backend_job *job,
                     const char *fmt, ...)
{
	char what[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	gpucc_worker_result_release(out);
	size_t size = strlen(job->module_name) + strlen(job->target_name) + strlen(what) + 8;
	out->message = malloc(size);
	if (out->message)
		snprintf(out->message, size, "%s: %s: %s", job->module_name, job->target_name, what);
	out->code = code;
}

static const char *signal_name(int sig)
{
	switch (sig) {
	case SIGABRT: return "SIGABRT";
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	case SIGILL: return "SIGILL";
	case SIGFPE: return "SIGFPE";
	case SIGKILL: return "SIGKILL";
	case SIGTRAP: return "SIGTRAP";
	default: return NULL;
	}
}

int gpucc_worker_compile(gpucc_worker *w, const gpucc_backend_job *job, gpucc_backend_result *out)
{
	memset(out, 0, sizeof *out);
	if (w->pid == 0 && worker_start(w) != 0) {
		fail_job(out, GPUCC_ERROR, job, "%s", gpucc_error_last()->message);
		gpucc_error_clear();
		return out->code;
	}
	buffer message = {0};
	encode_job(&message, job);
	if (message.failed) {
		free(message.data);
		fail_job(out, GPUCC_ERROR, job, "out of memory");
		return out->code;
	}
	off_t offset = lseek(w->stderr_fd, 0, SEEK_END);
	struct timespec deadline = {0, 0};
	if (w->limits.timeout_seconds) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += (time_t)w->limits.timeout_seconds;
	}
	int sent = send_message(w->socket, &message);
	free(message.data);
	unsigned char *reply = NULL;
	size_t size = 0;
	int rc = sent == 0 ? receive_message(w->socket, &reply, &size, &deadline) : 1;
	if (rc == 0) {
		reader r = {reply, size, 0, false};
		bool ok = decode_result(&r, out);
		free(reply);
		if (ok)
			return out->code;
		gpucc_worker_result_release(out);
		rc = 1;
	}
	/* The worker is gone, or must go: the job fails, the next starts another. */
	int status = worker_stop(w, true);
	char words[400];
	crash_words(w, offset, words, sizeof words);
	worker_clean(w);
	if (rc == 2) {
		fail_job(out, GPUCC_ECOMPILE, job, "LLVM ran past the job time limit (%u s): stopped",
		         w->limits.timeout_seconds);
		return out->code;
	}
	if (rc == 1 && WIFSIGNALED(status)) {
		const char *name = signal_name(WTERMSIG(status));
		char number[24];
		snprintf(number, sizeof number, "signal %d", WTERMSIG(status));
		fail_job(out, GPUCC_ECOMPILE, job, "LLVM crashed (%s)%s%s", name ? name : number,
		         words[0] ? ": " : "", words);
	} else {
		fail_job(out, GPUCC_ERROR, job, "the compile worker ended (%s %d)%s%s",
		         WIFEXITED(status) ? "exit" : "status",
		         WIFEXITED(status) ? WEXITSTATUS(status) : status, words[0] ? ": " : "", words);
	}
	return out->code;
}
