/*
 * lib/backend_llvm/worker_main.c -- gpucc-compile-worker: the process in
 * which libgpucc compiles a job (lib/compile/compile_worker.c starts it), so that
 * LLVM's crash, abort or hang ends this process, not the caller.
 *
 * usage (by libgpucc only):
 *   gpucc-compile-worker CALLER-PID LLVM-VERSION TEMP-DIR MEMORY-BYTES [HOOK=VALUE...]
 *   TEMP-DIR  where its temporary directories go (its caller made it for
 *             this worker; its tools, ptxas and ld.lld, inherit it as
 *             $TMPDIR from the environment the caller gives the worker)
 *   MEMORY-BYTES  its address space's bound; 0: none
 *   HOOK=VALUE  builds with the test hooks only (meson option test_hooks):
 *             GPUCC_BACKEND_FAULT=VALUE (lib/compile/backend.h) and
 *             GPUCC_TEST_WORKER_LLVM=VERSION, the LLVM it claims to run
 *   fd 3  the socket to the caller (lib/compile/compile_worker_protocol.h)
 *   fd 2  where LLVM's last words go (a file the caller reads after a crash)
 * It reads no environment: its caller reads libgpucc's (lib/base/config.c)
 * and passes on what the worker needs here.
 *
 * It runs in a process group of its own (the caller kills the group to stop
 * a job, tools included), dies with its caller (PR_SET_PDEATHSIG, then the
 * whole group), and, given MEMORY-BYTES, bounds its address space.  It
 * compiles nothing when the LLVM it runs is not LLVM-VERSION, the one its
 * caller was built with and names in keys (libLLVM upgraded under an
 * installed gpucc): exit GPUCC_WORKER_EXIT_OTHER_LLVM.
 */
#include "backend.h"
#include "backend_llvm.h"
#include "compile_worker_protocol.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

/* The backend's table, linked into this program. */
const gpucc_backend *gpucc_backend_get(unsigned abi_version);

/* Built with AddressSanitizer (the test suite's second build), the worker
 * would catch LLVM's faults itself and exit 1; they must end it by their
 * signal, as in any other build, so that its caller reports "LLVM crashed
 * (SIGSEGV)".  AddressSanitizer calls this, when it is there, at start-up. */
__attribute__((visibility("default"), used)) const char *__asan_default_options(void);
__attribute__((visibility("default"), used)) const char *__asan_default_options(void)
{
	return "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0";
}

static void kill_group(int sig)
{
	(void)sig;
	kill(0, SIGKILL); /* this worker and its tools */
}

#ifdef GPUCC_TEST_HOOKS
/* value when arg is "name=VALUE", else NULL. */
static const char *hook_value(const char *arg, const char *name)
{
	size_t n = strlen(name);
	return strncmp(arg, name, n) == 0 && arg[n] == '=' ? arg + n + 1 : NULL;
}
#endif

int main(int argc, char **argv)
{
	if (argc < 5)
		return 2;
	const char *fault = NULL, *claim = NULL;
	for (int i = 5; i < argc; i++) {
#ifdef GPUCC_TEST_HOOKS
		const char *v;
		if ((v = hook_value(argv[i], GPUCC_BACKEND_FAULT_ENV)) != NULL)
			fault = v;
		else if ((v = hook_value(argv[i], "GPUCC_TEST_WORKER_LLVM")) != NULL)
			claim = v;
		else
#endif
			return 2;
	}
	pid_t caller = (pid_t)strtol(argv[1], NULL, 10);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = kill_group;
	sigaction(SIGTERM, &sa, NULL);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != caller) /* the caller died before the line above */
		return 1;
	rlim_t bytes = (rlim_t)strtoull(argv[4], NULL, 10);
	if (bytes) {
		struct rlimit rl = {bytes, bytes};
		setrlimit(RLIMIT_AS, &rl);
	}
	backend_settings_set(argv[3], fault);
	const gpucc_backend *b = gpucc_backend_get(GPUCC_BACKEND_ABI);
	if (!b)
		return 3;
	const char *runs = b->llvm_version;
	/* Test builds: the LLVM this worker claims to run (compile_bad). */
	if (claim && *claim)
		runs = claim;
	if (!runs || strcmp(runs, argv[2]) != 0) {
		fprintf(stderr, "runs LLVM %s\n", runs ? runs : "(unknown)");
		return GPUCC_WORKER_EXIT_OTHER_LLVM;
	}
	int status = gpucc_wire_serve(b, 3);
	backend_nvjitlink_settle(); /* no exit while libnvJitLink initialises */
	return status;
}
