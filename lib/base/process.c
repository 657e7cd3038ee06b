/*
 * lib/base/process.c -- starting, waiting for and killing child processes
 * (lib/base/process.h).
 *
 * A child is started with posix_spawn: glibc's starts it without copying
 * the caller's memory and runs none of the caller's fork handlers, and the
 * caller may be anyone's program, with locks (an allocator's:
 * AddressSanitizer's is not fork-safe) that a fork would copy held.  Only a
 * child that must die with its caller is forked, since posix_spawn cannot
 * ask for PR_SET_PDEATHSIG: all it needs is prepared before the fork, and
 * the child makes nothing but system calls before exec, with every signal
 * blocked until its handlers are back at their defaults.  An exec that
 * fails reports its errno back through a close-on-exec pipe, so both ways
 * tell a missing program from a program that exits 127.
 *
 * The streams' descriptors are moved above 3 before the child gets them on
 * 0 to 3, so that no dup2 overwrites a descriptor that a later one reads.
 *
 * A wait that ends looks at the child without reaping it (waitid WNOWAIT),
 * kills what is left in its group, then reaps it: while the child is not
 * reaped its pid, which is its group's id, cannot be reused, so the kill
 * cannot reach someone else's processes.
 */
#include "process.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* The descriptors the child gets on 0 to 3 (-1: left as they are) and
 * those of them this process opened, to close once the child has them. */
typedef struct plan {
	int source[4];
	int opened[4];
	int null_fd;
} plan;

static void plan_release(plan *pl)
{
	for (int i = 0; i < 4; i++)
		if (pl->opened[i] >= 0)
			close(pl->opened[i]);
	if (pl->null_fd >= 0)
		close(pl->null_fd);
}

/* fd, as a close-on-exec descriptor above 3 (a new one; fd is closed when
 * owned).  -1 with errno. */
static int above_three(int fd, bool owned)
{
	if (fd > 3 && owned)
		return fd;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, 4);
	int err = errno;
	if (owned)
		close(fd);
	errno = err;
	return high;
}

/* Open what o's streams name; pipes' other ends into p->pipes.  0 or an
 * errno value (all released). */
static int plan_make(plan *pl, gpucc_process *p, const gpucc_process_options *o)
{
	pl->null_fd = -1;
	for (int i = 0; i < 4; i++)
		pl->source[i] = pl->opened[i] = p->pipes[i] = -1;
	for (int i = 0; i < 4; i++) {
		const gpucc_process_stream *s = &o->streams[i];
		int fd = -1;
		switch (s->kind) {
		case GPUCC_PROCESS_INHERIT:
			continue;
		case GPUCC_PROCESS_NULL:
			if (pl->null_fd < 0) {
				int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
				pl->null_fd = null_fd >= 0 ? above_three(null_fd, true) : -1;
			}
			pl->source[i] = pl->null_fd;
			if (pl->null_fd < 0)
				goto fail;
			continue;
		case GPUCC_PROCESS_FD:
			fd = above_three(s->fd, false);
			break;
		case GPUCC_PROCESS_FILE:
			fd = open(s->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
			if (fd >= 0)
				fd = above_three(fd, true);
			break;
		case GPUCC_PROCESS_PIPE: {
			int ends[2];
			if (pipe2(ends, O_CLOEXEC) != 0)
				goto fail;
			int ours = i == 0 ? ends[1] : ends[0];
			fd = above_three(i == 0 ? ends[0] : ends[1], true);
			p->pipes[i] = ours;
			break;
		}
		case GPUCC_PROCESS_STDOUT:
			fd = above_three(pl->source[1] >= 0 ? pl->source[1] : 1, false);
			break;
		default:
			errno = EINVAL;
			goto fail;
		}
		if (fd < 0)
			goto fail;
		pl->source[i] = pl->opened[i] = fd;
	}
	return 0;
fail:;
	int err = errno;
	plan_release(pl);
	for (int i = 0; i < 4; i++) {
		if (p->pipes[i] >= 0)
			close(p->pipes[i]);
		p->pipes[i] = -1;
	}
	return err;
}

static const int default_signal_list[] = {SIGINT, SIGHUP, SIGPIPE};
#define DEFAULT_SIGNAL_COUNT (sizeof default_signal_list / sizeof *default_signal_list)

static int spawn(gpucc_process *p, char *const *argv, const gpucc_process_options *o,
                 const plan *pl)
{
	posix_spawn_file_actions_t actions;
	posix_spawnattr_t attr;
	int err = posix_spawn_file_actions_init(&actions);
	if (err)
		return err;
	err = posix_spawnattr_init(&attr);
	if (err) {
		posix_spawn_file_actions_destroy(&actions);
		return err;
	}
	for (int i = 0; i < 4 && !err; i++)
		if (pl->source[i] >= 0)
			err = posix_spawn_file_actions_adddup2(&actions, pl->source[i], i);
	sigset_t none, defaults;
	sigemptyset(&none);
	sigemptyset(&defaults);
	short flags = POSIX_SPAWN_SETSIGMASK;
	posix_spawnattr_setsigmask(&attr, &none);
	if (o->default_signals) {
		for (size_t i = 0; i < DEFAULT_SIGNAL_COUNT; i++)
			sigaddset(&defaults, default_signal_list[i]);
		posix_spawnattr_setsigdefault(&attr, &defaults);
		flags |= POSIX_SPAWN_SETSIGDEF;
	}
	if (o->own_group) {
		posix_spawnattr_setpgroup(&attr, 0);
		flags |= POSIX_SPAWN_SETPGROUP;
	}
	posix_spawnattr_setflags(&attr, flags);
	if (!err)
		err = posix_spawn(&p->pid, argv[0], &actions, &attr, argv, o->envp ? o->envp : environ);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&actions);
	if (err)
		p->pid = 0;
	return err;
}

/* Send errno to the parent and end the child that could not exec. */
static void exec_failed(int report) __attribute__((noreturn));

static void exec_failed(int report)
{
	int err = errno;
	ssize_t written = write(report, &err, sizeof err);
	(void)written;
	_exit(127);
}

/* The forked child: system calls only, then exec; its errno goes to
 * report when exec fails.  Every signal is blocked on entry. */
static void child(char *const *argv, char *const *envp, const gpucc_process_options *o,
                  const plan *pl, pid_t parent, int report) __attribute__((noreturn));

static void child(char *const *argv, char *const *envp, const gpucc_process_options *o,
                  const plan *pl, pid_t parent, int report)
{
	if (o->own_group)
		setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent) /* the caller's thread ended before the prctl */
		_exit(127);
	for (int i = 0; i < 4; i++)
		if (pl->source[i] >= 0 && dup2(pl->source[i], i) != i)
			exec_failed(report);
	/* The caller's handlers must not run here; ignored signals stay
	 * ignored through exec, as posix_spawn leaves them. */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction was;
		if (sigaction(sig, NULL, &was) != 0)
			continue;
		bool ignored = !(was.sa_flags & SA_SIGINFO) && was.sa_handler == SIG_IGN;
		bool reset = false;
		for (size_t i = 0; o->default_signals && i < DEFAULT_SIGNAL_COUNT; i++)
			reset = reset || default_signal_list[i] == sig;
		if (reset || (!ignored && ((was.sa_flags & SA_SIGINFO) || was.sa_handler != SIG_DFL)))
			sigaction(sig, &dfl, NULL);
	}
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(argv[0], argv, envp);
	exec_failed(report);
}

static int fork_exec(gpucc_process *p, char *const *argv, const gpucc_process_options *o,
                     const plan *pl)
{
	int report[2];
	if (pipe2(report, O_CLOEXEC) != 0)
		return errno;
	char *const *envp = o->envp ? o->envp : environ;
	pid_t parent = getpid();
	sigset_t all, was;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &was);
	pid_t pid = fork();
	if (pid == 0) {
		close(report[0]);
		child(argv, envp, o, pl, parent, report[1]);
	}
	int err = pid < 0 ? errno : 0;
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	close(report[1]);
	if (pid > 0) {
		if (o->own_group)
			setpgid(pid, pid); /* either side may win the race; both set the same */
		int child_err = 0;
		ssize_t n;
		while ((n = read(report[0], &child_err, sizeof child_err)) < 0 && errno == EINTR)
			;
		if (n == (ssize_t)sizeof child_err) {
			err = child_err ? child_err : EIO;
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
			pid = 0;
		}
	}
	close(report[0]);
	p->pid = pid > 0 ? pid : 0;
	return err;
}

int gpucc_process_start(gpucc_process *p, char *const *argv, const gpucc_process_options *o)
{
	memset(p, 0, sizeof *p);
	plan pl;
	int err = plan_make(&pl, p, o);
	if (err)
		return err;
	err = o->die_with_caller ? fork_exec(p, argv, o, &pl) : spawn(p, argv, o, &pl);
	plan_release(&pl);
	if (err) {
		for (int i = 0; i < 4; i++) {
			if (p->pipes[i] >= 0)
				close(p->pipes[i]);
			p->pipes[i] = -1;
		}
		errno = err;
		return err;
	}
	/* Here too, so that a kill of the group cannot miss a child that has
	 * not run yet. */
	if (o->own_group)
		setpgid(p->pid, p->pid);
	p->own_group = o->own_group;
	return 0;
}

void gpucc_process_kill(const gpucc_process *p)
{
	if (p->pid <= 0)
		return;
	if (p->own_group)
		kill(-p->pid, SIGKILL);
	kill(p->pid, SIGKILL);
}

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int gpucc_process_wait(gpucc_process *p, unsigned long timeout_ms, int *status, bool *timed_out)
{
	*status = 0;
	if (timed_out)
		*timed_out = false;
	if (p->pid <= 0)
		return ECHILD;
	int64_t deadline = timeout_ms ? now_ms() + (int64_t)timeout_ms : 0;
	int pidfd = -1;
#ifdef SYS_pidfd_open
	if (deadline)
		pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
#endif
	int err = 0;
	for (;;) {
		siginfo_t info;
		memset(&info, 0, sizeof info);
		if (waitid(P_PID, (id_t)p->pid, &info, WEXITED | WNOWAIT | (deadline ? WNOHANG : 0)) != 0) {
			if (errno == EINTR)
				continue;
			err = errno;
			break;
		}
		if (info.si_pid == p->pid)
			break;
		int64_t left = deadline - now_ms();
		if (left <= 0) {
			gpucc_process_kill(p);
			if (timed_out)
				*timed_out = true;
			deadline = 0; /* now wait for it to go */
			continue;
		}
		if (pidfd >= 0) {
			struct pollfd readable = {pidfd, POLLIN, 0};
			poll(&readable, 1, left > 1000 ? 1000 : (int)left);
		} else {
			struct timespec nap = {0, 5000000};
			nanosleep(&nap, NULL);
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	/* What it left in its group (a crash handler's child, a tool's). */
	if (p->own_group && !err)
		kill(-p->pid, SIGKILL);
	if (!err) {
		while (waitpid(p->pid, status, 0) < 0) {
			if (errno != EINTR) {
				err = errno;
				*status = 0;
				break;
			}
		}
	}
	p->pid = 0;
	return err;
}

const char *gpucc_signal_name(int sig, char buf[GPUCC_SIGNAL_NAME_SIZE])
{
	switch (sig) {
	case SIGABRT: return "SIGABRT";
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	case SIGILL: return "SIGILL";
	case SIGFPE: return "SIGFPE";
	case SIGTRAP: return "SIGTRAP";
	case SIGSYS: return "SIGSYS";
	case SIGKILL: return "SIGKILL";
	case SIGTERM: return "SIGTERM";
	case SIGINT: return "SIGINT";
	case SIGHUP: return "SIGHUP";
	case SIGQUIT: return "SIGQUIT";
	case SIGPIPE: return "SIGPIPE";
	case SIGXCPU: return "SIGXCPU";
	case SIGXFSZ: return "SIGXFSZ";
	default:
		snprintf(buf, GPUCC_SIGNAL_NAME_SIZE, "signal %d", sig);
		return buf;
	}
}
