/*
 * lib/base/process.h -- the one way gpucc runs another program: clang, the
 * compile worker, ptxas and ld.lld, a tool asked for its version.
 *
 * A child starts with no signal blocked, whatever the calling thread blocks
 * (gpucc's command blocks SIGINT, SIGTERM and SIGHUP in every thread to
 * take them on one, cmd/interrupt.c): Ctrl-C must stop the tools too.  It
 * gets the streams the caller names on its descriptors 0 to 3 and no other
 * descriptor of libgpucc's (they are all close-on-exec).  argv[0] is the
 * program's path: no PATH search.
 *
 * Also built into the LLVM backend (lib/backend_llvm/meson.build), which
 * does not link libgpucc: nothing here sets the library's last error.
 * Functions return 0 or an errno value, as posix_spawn does.
 */
#ifndef GPUCC_LIB_PROCESS_H
#define GPUCC_LIB_PROCESS_H

#include <stdbool.h>
#include <sys/types.h>

/* What one of the child's descriptors 0 to 3 is. */
typedef enum gpucc_process_stream_kind {
	GPUCC_PROCESS_INHERIT = 0, /* as the caller has it (descriptor 3: usually none) */
	GPUCC_PROCESS_NULL,        /* /dev/null */
	GPUCC_PROCESS_FD,          /* the caller's descriptor fd, which stays the caller's */
	GPUCC_PROCESS_FILE,        /* path, created or truncated, mode 0600 */
	GPUCC_PROCESS_PIPE,        /* a pipe, whose other end is gpucc_process.pipes[n] */
	GPUCC_PROCESS_STDOUT,      /* the child's descriptor 1, shared (stderr with stdout) */
} gpucc_process_stream_kind;

typedef struct gpucc_process_stream {
	gpucc_process_stream_kind kind;
	int fd;           /* GPUCC_PROCESS_FD */
	const char *path; /* GPUCC_PROCESS_FILE */
} gpucc_process_stream;

typedef struct gpucc_process_options {
	/* The child's descriptors 0 (stdin), 1, 2 and 3. */
	gpucc_process_stream streams[4];
	/* The child's environment; NULL: this process's. */
	char *const *envp;
	/* A process group of its own: what it starts is killed with it at a
	 * timeout, and what it leaves running in the group when it ends is
	 * killed then. */
	bool own_group;
	/* SIGKILL to the child when the thread that started it ends, the
	 * process with it however it dies (PR_SET_PDEATHSIG): a Ctrl-C that
	 * ends gpucc ends the child too, even one in a group of its own, which
	 * the terminal's signal does not reach. */
	bool die_with_caller;
	/* SIGINT, SIGHUP and SIGPIPE at their defaults in the child even where
	 * the caller ignores them (a program that handles its own signals). */
	bool default_signals;
} gpucc_process_options;

typedef struct gpucc_process {
	pid_t pid;      /* 0: none running */
	bool own_group;
	int pipes[4];   /* the caller's end of each GPUCC_PROCESS_PIPE stream
	                   (read from for 1 to 3, written to for 0), else -1;
	                   the caller closes them */
} gpucc_process;

/* Start argv[0] with argv as o says.  0, or an errno value (ENOENT: no
 * such program, EACCES: not executable...) when it did not start; then
 * nothing is left running or open. */
int gpucc_process_start(gpucc_process *p, char *const *argv, const gpucc_process_options *o);

/* Wait for p to end.  timeout_ms > 0: once that long has passed, kill it
 * (gpucc_process_kill) and set *timed_out (may be NULL without a timeout).
 * *status as waitpid gives it.  Then p is no longer running.  0, or an
 * errno value when the child could not be waited for (*status 0). */
int gpucc_process_wait(gpucc_process *p, unsigned long timeout_ms, int *status, bool *timed_out);

/* SIGKILL to p, and to its whole group when it has one.  Waits for
 * nothing: gpucc_process_wait still collects it. */
void gpucc_process_kill(const gpucc_process *p);

/* The name of signal sig ("SIGSEGV"), or "signal N" written into buf. */
#define GPUCC_SIGNAL_NAME_SIZE 24
const char *gpucc_signal_name(int sig, char buf[GPUCC_SIGNAL_NAME_SIZE]);

#endif
