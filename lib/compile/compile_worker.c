/*
 * lib/compile/compile_worker.c -- compile jobs in worker processes, so that LLVM's
 * death is one job's failure, not the caller's.
 *
 * LLVM runs in process and aborts or faults on valid IR it cannot select
 * (an intrinsic of a newer GPU, an fp128 argument...).  Each compile thread
 * of a session owns one worker: the program gpucc-compile-worker
 * (lib/backend_llvm/worker_main.c, beside the backend module), started by
 * lib/base/process.c with posix_spawn, not forked, since the caller may be
 * anyone's program (lib/base/process.c says why).  The worker keeps its
 * parsed state from job to job.  The thread sends it one job at a time
 * over a socket and reads the result back (lib/compile/compile_worker_protocol.h);
 * a worker that dies (a signal, an exit) or runs past the job's time fails
 * that job only, with one line, and the next job starts a new worker.
 *
 * Each worker is its own process group, and its tools (ptxas, ld.lld) are
 * in it: a stuck job is ended by killing the group, and a worker whose
 * caller dies (PR_SET_PDEATHSIG) kills its group, tools included.  Its
 * temporary files live in a temporary directory of the caller's
 * (lib/base/temp_name.h: gpucc_leftovers_remove finds it when a signal
 * ends the caller), which it removes once the worker is gone, whatever
 * became of it.  The worker's stderr (LLVM's last words)
 * goes to a file in it, from which a crash's first line is taken.
 */
#include "compile_worker.h"
#include "compile_worker_protocol.h"
#include "config_internal.h"
#include "errors.h"
#include "gpucc/common.h"
#include "process.h"
#include "temp_name.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct gpucc_worker {
	char *program;   /* gpucc-compile-worker-N */
	char llvm_version[64]; /* the LLVM it must run: its backend's, which keys name */
	gpucc_worker_limits limits;
	gpucc_process process; /* pid 0: none running */
	int socket;      /* the caller's end */
	int stderr_fd;   /* the worker's stderr, read after a crash */
	char dir[PATH_MAX];
	char other_llvm[64]; /* the LLVM a worker said it runs, not gpucc's: no
	                        more workers for this slot */
};

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

gpucc_worker *gpucc_worker_new(const char *program, const char *llvm_version,
                               const gpucc_worker_limits *limits)
{
	gpucc_worker *w = calloc(1, sizeof *w);
	if (!w || !(w->program = strdup(program))) {
		free(w);
		return NULL;
	}
	snprintf(w->llvm_version, sizeof w->llvm_version, "%s", llvm_version);
	w->limits = *limits;
	w->socket = w->stderr_fd = -1;
	return w;
}

/* Start a worker; GPUCC_ERROR with a message when it cannot. */
static int worker_start(gpucc_worker *w)
{
	if (gpucc_temp_dir_create(w->dir, sizeof w->dir, gpucc_temp_parent()) != 0)
		return gpucc_error_set_errno("cannot create a temporary directory in '%s'",
		                             gpucc_temp_parent());
	char err_path[PATH_MAX + 16];
	snprintf(err_path, sizeof err_path, "%s/stderr", w->dir);
	w->stderr_fd = open(err_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int pair[2];
	if (w->stderr_fd < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
		int rc = gpucc_error_set_errno("cannot start a compile worker");
		if (w->stderr_fd >= 0)
			close(w->stderr_fd);
		w->stderr_fd = -1;
		remove_tree(w->dir);
		w->dir[0] = '\0';
		return rc;
	}
	/* The worker gets the socket as fd 3 and the stderr file as fd 2, in a
	 * process group of its own, with no signal blocked and SIGINT, SIGHUP
	 * and SIGPIPE at their defaults.  It reads no environment: the
	 * directory, where the backend makes its own, is on its command line
	 * (lib/backend_llvm/worker_main.c), with, in test builds, the test
	 * hooks' values read here; its environment, which its tools (ptxas,
	 * ld.lld) inherit, has $TMPDIR naming the directory too. */
	char caller[24], memory[24], tmpdir[PATH_MAX + 8];
	snprintf(caller, sizeof caller, "%ld", (long)getpid());
	snprintf(memory, sizeof memory, "%llu", (unsigned long long)w->limits.memory_bytes);
	snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", w->dir);
	char *argv[8] = {w->program, caller, w->llvm_version, w->dir, memory};
#ifdef GPUCC_TEST_HOOKS
	static const char *const hooks[] = {GPUCC_BACKEND_FAULT_ENV, "GPUCC_TEST_WORKER_LLVM"};
	char hook_args[2][512];
	size_t argc = 5;
	for (size_t i = 0; i < 2; i++) {
		const char *value = gpucc_test_hook(hooks[i]);
		if (value && *value) {
			snprintf(hook_args[i], sizeof hook_args[i], "%s=%s", hooks[i], value);
			argv[argc++] = hook_args[i];
		}
	}
#endif
	char **envp = gpucc_tool_environment_with(tmpdir);
	gpucc_process_options o = {
		.streams = {{.kind = GPUCC_PROCESS_NULL},
		            {.kind = GPUCC_PROCESS_NULL},
		            {.kind = GPUCC_PROCESS_FD, .fd = w->stderr_fd},
		            {.kind = GPUCC_PROCESS_FD, .fd = pair[1]}},
		.envp = envp,
		.own_group = true,
		.default_signals = true,
	};
	gpucc_process p = {0};
	int err = ENOMEM;
	if (envp)
		err = gpucc_process_start(&p, argv, &o);
	free(envp);
	close(pair[1]);
	if (err != 0) {
		errno = err;
		int rc = gpucc_error_set_errno("cannot start the compile worker '%s'", w->program);
		close(pair[0]);
		close(w->stderr_fd);
		w->stderr_fd = -1;
		remove_tree(w->dir);
		w->dir[0] = '\0';
		return rc;
	}
	w->process = p;
	w->socket = pair[0];
	return 0;
}

/* End the worker's process (killing its group when asked, else closing
 * its socket, which ends it between jobs) and return its wait status. */
static int worker_stop(gpucc_worker *w, bool kill_it)
{
	int status = 0;
	if (w->process.pid > 0) {
		if (kill_it)
			gpucc_process_kill(&w->process);
		if (w->socket >= 0)
			close(w->socket);
		w->socket = -1;
		/* Tools of a worker that died first are in its group still: the
		 * wait kills them. */
		gpucc_process_wait(&w->process, 0, &status, NULL);
	}
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
	free(w->program);
	free(w);
}

/* What the worker said before it died, from its stderr since offset: the
 * last error LLVM diagnosed (the backend writes each as a line
 * "gpucc-compile-worker: error: TEXT": LLVM may crash after one, which is
 * then the reason), else the first line that says something ("LLVM ERROR:
 * ...", an assertion), else "". */
static void crash_words(gpucc_worker *w, off_t offset, char *out, size_t size)
{
	static const char diagnosed[] = "gpucc-compile-worker: error: ";
	out[0] = '\0';
	char *text = malloc(65536);
	if (!text)
		return;
	ssize_t n = pread(w->stderr_fd, text, 65535, offset);
	text[n > 0 ? n : 0] = '\0';
	const char *first = NULL, *last_error = NULL;
	size_t first_len = 0, last_error_len = 0;
	for (char *line = text; *line;) {
		size_t len = strcspn(line, "\n");
		bool noise = len == 0 || line[0] == ' ' || line[0] == '#' || line[0] == '\t' ||
		             (line[0] >= '0' && line[0] <= '9') || strncmp(line, "PLEASE ", 7) == 0 ||
		             strncmp(line, "Stack dump", 10) == 0 ||
		             strncmp(line, "gpucc-compile-worker: ", 22) == 0;
		if (len > sizeof diagnosed - 1 && strncmp(line, diagnosed, sizeof diagnosed - 1) == 0 &&
		    line[len] == '\n') {
			last_error = line + sizeof diagnosed - 1;
			last_error_len = len - (sizeof diagnosed - 1);
		} else if (!noise && !first) {
			first = line;
			first_len = len;
		}
		line += len + (line[len] == '\n');
	}
	if (last_error)
		snprintf(out, size, "%.*s", (int)last_error_len, last_error);
	else if (first)
		snprintf(out, size, "%.*s", (int)first_len, first);
	free(text);
}

/* What the worker was running when it crashed, from the marks the backend
 * writes on its stderr (lib/compile/backend.h): "libnvJitLink" between its in and
 * out marks, else "LLVM". */
static const char *crashed_in(gpucc_worker *w, off_t offset)
{
	char text[16384];
	ssize_t n = pread(w->stderr_fd, text, sizeof text - 1, offset);
	if (n <= 0)
		return "LLVM";
	text[n] = '\0';
	const char *in = NULL;
	for (const char *p = text; (p = strstr(p, GPUCC_BACKEND_IN_NVJITLINK)) != NULL; p++)
		in = p;
	return in && !strstr(in, GPUCC_BACKEND_OUT_OF_NVJITLINK) ? "libnvJitLink" : "LLVM";
}

static void fail_job(gpucc_backend_result *out, int code, const gpucc_backend_job *job,
                     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void fail_job(gpucc_backend_result *out, int code, const gpucc_backend_job *job,
                     const char *fmt, ...)
{
	char what[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	gpucc_wire_result_release(out);
	size_t size = strlen(job->module_name) + strlen(job->target_name) + strlen(what) + 8;
	out->message = malloc(size);
	if (out->message)
		snprintf(out->message, size, "%s: %s: %s", job->module_name, job->target_name, what);
	out->code = code;
}

/* Keys name the LLVM the worker's backend was built with, known without
 * loading LLVM; a worker that runs another (libLLVM upgraded under an
 * installed gpucc) would compile what its key does not say. */
static int other_llvm(gpucc_worker *w, gpucc_backend_result *out, const gpucc_backend_job *job,
                      const char *runs)
{
	fail_job(out, GPUCC_EUNAVAILABLE, job,
	         "the LLVM backend runs LLVM %s, but gpucc was built with LLVM %s, "
	         "which keys name: rebuild gpucc against the installed LLVM",
	         runs, w->llvm_version);
	return out->code;
}

int gpucc_worker_compile(gpucc_worker *w, const gpucc_backend_job *job, gpucc_backend_result *out)
{
	memset(out, 0, sizeof *out);
	if (w->other_llvm[0])
		return other_llvm(w, out, job, w->other_llvm);
	if (w->process.pid == 0 && worker_start(w) != 0) {
		fail_job(out, GPUCC_EUNAVAILABLE, job, "%s", gpucc_error_last()->message);
		gpucc_error_clear();
		return out->code;
	}
	off_t offset = lseek(w->stderr_fd, 0, SEEK_END);
	struct timespec deadline = {0, 0};
	if (w->limits.timeout_seconds) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += (time_t)w->limits.timeout_seconds;
	}
	int rc = gpucc_wire_send_job(w->socket, job) == 0
	             ? gpucc_wire_receive_result(w->socket, out, &deadline)
	             : 1;
	if (rc == 0)
		return out->code;
	/* The worker is gone, or must go: the job fails, the next starts another. */
	int status = worker_stop(w, true);
	char words[2048];
	int exited = rc == 1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	/* A worker that could not start wrote before this job's offset was
	 * taken: its words are the file's first. */
	bool no_start = exited == 127;
	crash_words(w, no_start ? 0 : offset, words, sizeof words);
	const char *culprit = crashed_in(w, offset);
	if (exited == GPUCC_WORKER_EXIT_OTHER_LLVM) {
		char line[128]; /* what it said first */
		ssize_t n = pread(w->stderr_fd, line, sizeof line - 1, 0);
		line[n > 0 ? n : 0] = '\0';
		if (sscanf(line, "runs LLVM %63s", w->other_llvm) != 1)
			snprintf(w->other_llvm, sizeof w->other_llvm, "(unknown)");
	}
	worker_clean(w);
	if (rc == 2) {
		fail_job(out, GPUCC_ECOMPILE, job, "%s ran past the job time limit (%u s): stopped",
		         culprit, w->limits.timeout_seconds);
		return out->code;
	}
	if (w->other_llvm[0]) {
		other_llvm(w, out, job, w->other_llvm);
	} else if (no_start) {
		fail_job(out, GPUCC_EUNAVAILABLE, job, "the compile worker '%s' cannot start%s%s",
		         w->program, words[0] ? ": " : "", words);
	} else if (exited == GPUCC_WORKER_EXIT_NO_MEMORY) {
		fail_job(out, GPUCC_ECOMPILE, job, "the compile worker ran out of memory%s%s",
		         words[0] ? ": " : "", words);
	} else if (rc == 1 && WIFSIGNALED(status)) {
		char name[GPUCC_SIGNAL_NAME_SIZE];
		fail_job(out, GPUCC_ECOMPILE, job, "%s crashed (%s)%s%s", culprit,
		         gpucc_signal_name(WTERMSIG(status), name), words[0] ? ": " : "", words);
	} else {
		/* An exit status the protocol does not define: LLVM's fatal
		 * errors exit(1) after their words, which end the message. */
		fail_job(out, GPUCC_ECOMPILE, job, "the compile worker ended (%s %d)%s%s",
		         WIFEXITED(status) ? "exit" : "status",
		         WIFEXITED(status) ? WEXITSTATUS(status) : status, words[0] ? ": " : "", words);
	}
	return out->code;
}
