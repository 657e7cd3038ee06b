/*
 * lib/tests/test_process.c -- the process runner (lib/base/process.h) and
 * the temporary names with their removal (lib/base/temp_name.h,
 * gpucc_leftovers_remove), on real processes and files: exit codes, a
 * signal's name, a timeout that kills a whole process group, the streams
 * (a file, stderr with stdout, a descriptor, a pipe, descriptor 3), no
 * signal blocked in a child, a child that dies with the thread that
 * started it, a missing program's error, and what a signal's clean-up
 * removes and what it leaves.
 */
#include "check.h"

#include <gpucc.h>

#include "config_internal.h"
#include "process.h"
#include "temp_name.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void nap(void)
{
	struct timespec t = {0, 10000000};
	nanosleep(&t, NULL);
}

/* Run `sh -c script` with o (streams as given, the rest as the caller's);
 * its wait status, or -1 when it did not start. */
static int run_sh(const char *script, const gpucc_process_options *o)
{
	char *argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)script, NULL};
	gpucc_process p;
	if (gpucc_process_start(&p, argv, o) != 0)
		return -1;
	int status = -1;
	bool timed_out = true;
	CHECK_INT(gpucc_process_wait(&p, 0, &status, &timed_out), 0);
	CHECK(!timed_out);
	CHECK_INT(p.pid, 0);
	return status;
}

static void test_exit_codes(void)
{
	gpucc_process_options o = {0};
	int status = run_sh("exit 0", &o);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	status = run_sh("exit 3", &o);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 3);
	/* The forked way (a child that dies with its caller) says the same. */
	o.die_with_caller = true;
	o.own_group = true;
	status = run_sh("exit 42", &o);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 42);
}

static void test_signal_name(void)
{
	gpucc_process_options o = {0};
	int status = run_sh("kill -SEGV $$", &o);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
	char buf[GPUCC_SIGNAL_NAME_SIZE];
	CHECK_STR(gpucc_signal_name(WTERMSIG(status), buf), "SIGSEGV");
	CHECK_STR(gpucc_signal_name(SIGABRT, buf), "SIGABRT");
	CHECK_STR(gpucc_signal_name(SIGTERM, buf), "SIGTERM");
	CHECK_STR(gpucc_signal_name(SIGTRAP, buf), "SIGTRAP");
	char number[32];
	snprintf(number, sizeof number, "signal %d", SIGRTMIN + 3);
	CHECK_STR(gpucc_signal_name(SIGRTMIN + 3, buf), number);
}

/* Whether process pid has ended: gone, or a zombie nobody reaped yet. */
static bool ended(pid_t pid)
{
	char path[64], stat_line[256] = "";
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return kill(pid, 0) != 0 && errno == ESRCH;
	bool got = fgets(stat_line, sizeof stat_line, f) != NULL;
	fclose(f);
	const char *paren = strrchr(stat_line, ')'); /* "PID (NAME) STATE ..." */
	return !got || !paren || paren[1] != ' ' || paren[2] == 'Z' || paren[2] == 'X';
}

/* A shell in its own group that starts a second sleep behind its back:
 * past the timeout both go, the one the runner never saw too. */
static void timeout_kills_group(bool die_with_caller)
{
	char *pid_file = path_in_dir(die_with_caller ? "bg-forked.pid" : "bg.pid");
	char script[512];
	snprintf(script, sizeof script, "sleep 100 & echo $! > %s.new && mv %s.new %s; sleep 100",
	         pid_file, pid_file, pid_file);
	char *argv[] = {(char *)"/bin/sh", (char *)"-c", script, NULL};
	gpucc_process_options o = {.own_group = true, .die_with_caller = die_with_caller};
	gpucc_process p;
	CHECK_INT(gpucc_process_start(&p, argv, &o), 0);
	pid_t background = 0;
	while (background <= 0) { /* the alarm in main ends a hang */
		FILE *f = fopen(pid_file, "r");
		long read_pid = 0;
		if (f && fscanf(f, "%ld", &read_pid) == 1)
			background = (pid_t)read_pid;
		if (f)
			fclose(f);
		if (background <= 0)
			nap();
	}
	CHECK_INT(getpgid(background), p.pid);
	int status = 0;
	bool timed_out = false;
	CHECK_INT(gpucc_process_wait(&p, 1, &status, &timed_out), 0);
	CHECK(timed_out);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	while (!ended(background))
		nap();
}

static void test_timeout_kills_group(void)
{
	timeout_kills_group(false);
	timeout_kills_group(true);
}

static char *read_all(const char *path)
{
	static char text[4096];
	text[0] = '\0';
	FILE *f = fopen(path, "r");
	if (!f)
		return text;
	size_t n = fread(text, 1, sizeof text - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

static void test_output_to_file(void)
{
	char *out = path_in_dir("out.txt");
	gpucc_process_options o = {
		.streams = {{.kind = GPUCC_PROCESS_NULL},
		            {.kind = GPUCC_PROCESS_FILE, .path = out},
		            {.kind = GPUCC_PROCESS_STDOUT}},
	};
	CHECK_INT(run_sh("echo out; cat; echo err >&2", &o), 0);
	CHECK_STR(read_all(out), "out\nerr\n");
	struct stat st;
	CHECK(stat(out, &st) == 0 && (st.st_mode & 0777) == 0600);
	/* Truncated when it exists. */
	CHECK_INT(run_sh("echo again", &o), 0);
	CHECK_STR(read_all(out), "again\n");
}

static void test_streams(void)
{
	/* A descriptor of the caller's as stderr, another as descriptor 3; both
	 * stay the caller's. */
	char *err_path = path_in_dir("err.txt"), *three_path = path_in_dir("three.txt");
	int err_fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int three_fd = open(three_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(err_fd >= 0 && three_fd >= 0);
	gpucc_process_options o = {
		.streams = {{.kind = GPUCC_PROCESS_NULL},
		            {.kind = GPUCC_PROCESS_NULL},
		            {.kind = GPUCC_PROCESS_FD, .fd = err_fd},
		            {.kind = GPUCC_PROCESS_FD, .fd = three_fd}},
	};
	CHECK_INT(run_sh("echo to-null; echo to-err >&2; echo to-three >&3", &o), 0);
	CHECK(fcntl(err_fd, F_GETFD) >= 0 && fcntl(three_fd, F_GETFD) >= 0);
	close(err_fd);
	close(three_fd);
	CHECK_STR(read_all(err_path), "to-err\n");
	CHECK_STR(read_all(three_path), "to-three\n");

	/* A pipe: what the child prints, read by the caller. */
	char *argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)"echo piped", NULL};
	gpucc_process_options piped = {
		.streams = {{.kind = GPUCC_PROCESS_NULL}, {.kind = GPUCC_PROCESS_PIPE}},
	};
	gpucc_process p;
	CHECK_INT(gpucc_process_start(&p, argv, &piped), 0);
	CHECK(p.pipes[0] == -1 && p.pipes[1] >= 0 && p.pipes[2] == -1);
	char text[64];
	size_t used = 0;
	ssize_t n;
	while ((n = read(p.pipes[1], text + used, sizeof text - 1 - used)) > 0)
		used += (size_t)n;
	text[used] = '\0';
	close(p.pipes[1]);
	CHECK_STR(text, "piped\n");
	int status;
	CHECK_INT(gpucc_process_wait(&p, 0, &status, NULL), 0);
	CHECK_INT(status, 0);
}

/* A child starts with no signal blocked, whatever its caller blocks
 * (gpucc's command blocks SIGTERM in every thread), both ways. */
static void test_no_signal_blocked(void)
{
	sigset_t term, was;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &term, &was);
	for (int forked = 0; forked < 2; forked++) {
		gpucc_process_options o = {.die_with_caller = forked, .own_group = forked};
		int status = run_sh("kill -TERM $$; exit 0", &o);
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	}
	pthread_sigmask(SIG_SETMASK, &was, NULL);
}

static void *start_and_end(void *process)
{
	char *argv[] = {(char *)"/bin/sleep", (char *)"100", NULL};
	gpucc_process_options o = {.own_group = true, .die_with_caller = true};
	CHECK_INT(gpucc_process_start(process, argv, &o), 0);
	return NULL; /* the thread ends, and the child with it */
}

static void test_dies_with_caller(void)
{
	gpucc_process p;
	pthread_t thread;
	CHECK_INT(pthread_create(&thread, NULL, start_and_end, &p), 0);
	pthread_join(thread, NULL);
	int status = 0;
	CHECK_INT(gpucc_process_wait(&p, 0, &status, NULL), 0);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

static void test_missing_program(void)
{
	char *argv[] = {(char *)"/nonexistent/gpucc-no-such-program", NULL};
	for (int forked = 0; forked < 2; forked++) {
		gpucc_process_options o = {
			.streams = {{.kind = GPUCC_PROCESS_NULL}, {.kind = GPUCC_PROCESS_PIPE}},
			.die_with_caller = forked,
			.own_group = forked,
		};
		gpucc_process p;
		CHECK_INT(gpucc_process_start(&p, argv, &o), ENOENT);
		CHECK_INT(p.pid, 0);
		CHECK_INT(p.pipes[1], -1);
	}
	/* Not executable. */
	char *text_file = path_in_dir("not-a-program");
	FILE *f = fopen(text_file, "w");
	CHECK(f != NULL);
	if (f)
		fclose(f);
	char *not_executable[] = {text_file, NULL};
	gpucc_process_options o = {0};
	gpucc_process p;
	CHECK_INT(gpucc_process_start(&p, not_executable, &o), EACCES);
	/* A stream that cannot be opened: nothing starts. */
	gpucc_process_options bad_file = {
		.streams = {{.kind = GPUCC_PROCESS_NULL},
		            {.kind = GPUCC_PROCESS_FILE, .path = "/nonexistent/dir/out"}},
	};
	char *true_argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)"exit 0", NULL};
	CHECK_INT(gpucc_process_start(&p, true_argv, &bad_file), ENOENT);
	CHECK_INT(p.pid, 0);
}

static bool exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
}

/* What a signal's clean-up removes: this process's temporary files beside
 * the output, the lock when held, this process's temporary directories
 * whole; never another process's. */
static void test_leftovers(void)
{
	char output[256], ours[512], theirs[512], lock_copy[512], other_output[512];
	snprintf(output, sizeof output, "%s/out.img", check_dir);
	gpucc_temp_file_path(ours, sizeof ours, output, 7);
	char expected[512];
	snprintf(expected, sizeof expected, "%s/.out.img.tmp.%ld.7", check_dir, (long)getpid());
	CHECK_STR(ours, expected);
	CHECK(gpucc_temp_file_is_of(".out.img.tmp.123.4", output, 0));
	CHECK(gpucc_temp_file_is_of(".out.img.tmp.123.4", output, 123));
	CHECK(!gpucc_temp_file_is_of(".out.img.tmp.123.4", output, 12));
	CHECK(!gpucc_temp_file_is_of(".out.imgx.tmp.123.4", output, 0));
	snprintf(theirs, sizeof theirs, "%s/.out.img.tmp.%ld.7", check_dir, (long)getpid() + 1);
	snprintf(other_output, sizeof other_output, "%s/.other.img.tmp.%ld.7", check_dir,
	         (long)getpid());
	char *lock = gpucc_lock_path_of(output);
	snprintf(expected, sizeof expected, "%s/.out.img.lock", check_dir);
	CHECK_STR(lock, expected);
	snprintf(lock_copy, sizeof lock_copy, "%s", lock ? lock : "");
	free(lock);
	touch(ours);
	touch(theirs);
	touch(other_output);
	touch(lock_copy);

	/* Temporary directories in the config's tmpdir: ours, with a tree in it, and
	 * another process's. */
	char tmpdir[256], our_dir[512], their_dir[512], inner[600];
	snprintf(tmpdir, sizeof tmpdir, "%s/tmp", check_dir);
	CHECK_INT(mkdir(tmpdir, 0700), 0);
	gpucc_config config = GPUCC_CONFIG_INIT;
	config.tmpdir = tmpdir;
	CHECK_INT(gpucc_set_config(&config), 0);
	CHECK_STR(gpucc_temp_parent(), tmpdir);
	CHECK_INT(gpucc_temp_dir_create(our_dir, sizeof our_dir, gpucc_temp_parent()), 0);
	char short_buffer[8];
	CHECK_INT(gpucc_temp_dir_create(short_buffer, sizeof short_buffer, tmpdir), -1);
	CHECK_INT(errno, ENAMETOOLONG);
	snprintf(expected, sizeof expected, "%s/gpucc-backend-%ld-", tmpdir, (long)getpid());
	CHECK(strncmp(our_dir, expected, strlen(expected)) == 0);
	snprintf(inner, sizeof inner, "%s/deeper", our_dir);
	CHECK_INT(mkdir(inner, 0700), 0);
	snprintf(inner, sizeof inner, "%s/deeper/file", our_dir);
	touch(inner);
	snprintf(their_dir, sizeof their_dir, "%s/gpucc-backend-%ld-abcdef", tmpdir,
	         (long)getpid() + 1);
	CHECK_INT(mkdir(their_dir, 0700), 0);

	/* Without the flags: the output's temporary files only. */
	gpucc_leftovers_remove(output, 0);
	CHECK(!exists(ours));
	CHECK(exists(theirs) && exists(other_output) && exists(lock_copy));
	CHECK(exists(our_dir) && exists(their_dir));

	touch(ours);
	gpucc_leftovers_remove(output, GPUCC_LEFTOVERS_LOCK | GPUCC_LEFTOVERS_TEMP_DIRS);
	CHECK(!exists(ours) && !exists(lock_copy) && !exists(our_dir));
	CHECK(exists(theirs) && exists(other_output) && exists(their_dir));
	gpucc_leftovers_remove(NULL, GPUCC_LEFTOVERS_LOCK); /* nothing to do */

	CHECK_INT(gpucc_set_config(NULL), 0);
}

int main(void)
{
	alarm(300); /* a hang is a failure, not a stuck test run */
	if (check_dir_create("process") != 0) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_exit_codes);
	RUN(test_signal_name);
	RUN(test_timeout_kills_group);
	RUN(test_output_to_file);
	RUN(test_streams);
	RUN(test_no_signal_blocked);
	RUN(test_dies_with_caller);
	RUN(test_missing_program);
	RUN(test_leftovers);
	check_dir_remove();
	return CHECK_DONE();
}
