/*
 * cmd/tests/faultshim.c -- an LD_PRELOAD library that makes file system calls
 * fail, for the fault tests (cmd/tests/fault_io.sh): a full disk (ENOSPC) or
 * a failing device (EIO) at a chosen moment of a gpucc run, so that each
 * output path's error handling can be checked at every step; and that cuts
 * an input short at a chosen read (cmd/tests/image_shrink.sh, below).
 *
 * Controlled by environment variables, read once:
 *
 *   GPUCC_FAULT_ERRNO  ENOSPC, EIO, EDQUOT, EROFS or a number; 0 (or unset)
 *                      injects nothing but still counts and logs, which is
 *                      how a test learns how many calls a clean run makes;
 *                      SIGKILL kills the process at the call instead, as
 *                      kill -9 would at that moment
 *   GPUCC_FAULT_OPS    comma-separated calls to fail (default: all of
 *                      write,pwrite,writev,pwritev,fsync,fdatasync,
 *                      sync_file_range,copy_file_range,sendfile,fallocate,
 *                      ftruncate,rename,link,create,close)
 *   GPUCC_FAULT_AFTER  let this many matching calls succeed, fail the rest
 *                      (default 0: fail from the first)
 *   GPUCC_FAULT_COUNT  fail only this many calls, then succeed again
 *                      (default: all of them)
 *   GPUCC_FAULT_PATH   an fnmatch(3) pattern (no FNM_PATHNAME): only calls on
 *                      files whose absolute path matches count (default *)
 *   GPUCC_FAULT_LOG    append "CALL N PATH ERRNO" for every matching call
 *                      (ERRNO 0 when it was let through)
 *
 * Only regular files count (descriptors 0-2 never do, so a process can
 * still report the error); "create" is open/openat/creat with O_CREAT of a
 * path that matches, or mkstemp(64) of a template that does, or open/openat with
 * O_TMPFILE of a directory whose path with a '/' appended does; "link" is
 * link/linkat, counted as the new name (as a rename is, when that side
 * matches).  Thread-safe: the call counter is atomic.
 *
 * It also cuts a file short while a process reads it, as cp rewriting an
 * image in place does (cmd/tests/image_shrink.sh), at a chosen read:
 *
 *   GPUCC_SHRINK_PATH  an fnmatch(3) pattern for the absolute path of the
 *                      file (unset: nothing is cut, nothing counted)
 *   GPUCC_SHRINK_AT    cut it at this matching call, counted from 0 over
 *                      read, pread, pread64, mmap and mmap64 of it (unset
 *                      or negative: never, only count)
 *   GPUCC_SHRINK_TO    to this many bytes (default 0)
 *   GPUCC_SHRINK_LOG   append "CALL N PATH CUT" for every matching call
 *                      (CUT 1 for the one that cut the file)
 *
 * A read is counted, and the file cut, before the call runs, so that the
 * call sees the shorter file; a mapping after it is made, so that its
 * pages past the new end are gone, as they are when another process
 * truncates a mapped file.  These counters are separate from the fault
 * ones above and these calls never fail.
 */
/* Wrap both open and open64 (and friends) under their own names: with 64-bit
 * offsets requested, the headers would turn a definition of open into open64. */
#undef _FILE_OFFSET_BITS
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* The calls this library can fail, one bit each. */
enum {
	OP_WRITE, OP_PWRITE, OP_WRITEV, OP_PWRITEV, OP_FSYNC, OP_FDATASYNC, OP_SYNC_FILE_RANGE,
	OP_COPY_FILE_RANGE, OP_SENDFILE, OP_FALLOCATE, OP_FTRUNCATE, OP_RENAME, OP_LINK, OP_CREATE,
	OP_CLOSE, OP_COUNT
};
static const char *const op_names[OP_COUNT] = {
	"write", "pwrite", "writev", "pwritev", "fsync", "fdatasync", "sync_file_range",
	"copy_file_range", "sendfile", "fallocate", "ftruncate", "rename", "link", "create", "close",
};

static struct {
	atomic_int state; /* 0 unread, 1 reading, 2 ready */
	int error;        /* the errno to inject; 0: none */
	bool kill;        /* SIGKILL instead of an error */
	unsigned ops;     /* bit per OP_* */
	long after, count;
	char pattern[PATH_MAX];
	char log[PATH_MAX];
} config;
static atomic_long calls; /* matching calls so far */

/* The real function: the next definition after this library.  (Through
 * memcpy and void (*)(void): ISO C has no cast from data to function
 * pointers, and casts between function pointer types are fine.) */
typedef void (*any_function)(void);
#define REAL(name) ((__typeof__(&name))real_symbol(#name))
static any_function real_symbol(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);
	if (!p)
		abort(); /* nothing sensible to do without the real call */
	any_function f;
	memcpy(&f, &p, sizeof f);
	return f;
}

static int parse_errno(const char *s)
{
	static const struct { const char *name; int value; } names[] = {
		{"ENOSPC", ENOSPC}, {"EIO", EIO}, {"EDQUOT", EDQUOT}, {"EROFS", EROFS},
		{"EFBIG", EFBIG},
	};
	if (!s || !*s)
		return 0;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(s, names[i].name) == 0)
			return names[i].value;
	return atoi(s);
}

static unsigned parse_ops(const char *s)
{
	if (!s || !*s)
		return (1u << OP_COUNT) - 1;
	unsigned ops = 0;
	char copy[512];
	snprintf(copy, sizeof copy, "%s", s);
	char *save = NULL;
	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save))
		for (int i = 0; i < OP_COUNT; i++)
			if (strcmp(w, op_names[i]) == 0)
				ops |= 1u << i;
	return ops;
}

static void load_config(void)
{
	int expected = 0;
	if (atomic_load(&config.state) == 2)
		return;
	if (!atomic_compare_exchange_strong(&config.state, &expected, 1)) {
		while (atomic_load(&config.state) != 2)
			; /* another thread is reading it: a few microseconds */
		return;
	}
	const char *v;
	v = getenv("GPUCC_FAULT_ERRNO");
	config.kill = v && strcmp(v, "SIGKILL") == 0;
	config.error = config.kill ? -1 : parse_errno(v); /* -1: inject, never set as errno */
	config.ops = parse_ops(getenv("GPUCC_FAULT_OPS"));
	config.after = (v = getenv("GPUCC_FAULT_AFTER")) ? atol(v) : 0;
	config.count = (v = getenv("GPUCC_FAULT_COUNT")) && *v ? atol(v) : -1;
	snprintf(config.pattern, sizeof config.pattern, "%s",
	         (v = getenv("GPUCC_FAULT_PATH")) && *v ? v : "*");
	snprintf(config.log, sizeof config.log, "%s", (v = getenv("GPUCC_FAULT_LOG")) ? v : "");
	atomic_store(&config.state, 2);
}

static void log_call(int op, long n, const char *path, int err)
{
	if (!config.log[0])
		return;
	int fd = REAL(open)(config.log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	char line[PATH_MAX + 64];
	int len = snprintf(line, sizeof line, "%s %ld %s %d\n", op_names[op], n, path, err);
	if (len > (int)sizeof line - 1)
		len = (int)sizeof line - 1;
	ssize_t written = REAL(write)(fd, line, (size_t)len);
	(void)written;
	REAL(close)(fd);
}

/* Whether this call on path fails; sets errno when it does.  Counts and
 * logs every matching call. */
static bool inject(int op, const char *path)
{
	load_config();
	if (!(config.ops & (1u << op)) || fnmatch(config.pattern, path, 0) != 0)
		return false;
	long n = atomic_fetch_add(&calls, 1);
	bool fail = config.error && n >= config.after &&
	            (config.count < 0 || n < config.after + config.count);
	log_call(op, n, path, fail ? config.error : 0);
	if (fail && config.kill)
		kill(getpid(), SIGKILL);
	if (fail)
		errno = config.error;
	return fail;
}

/* The path of a descriptor open on a regular file (not 0-2), or false. */
static bool fd_path(int fd, char *out, size_t size)
{
	struct stat st;
	int saved = errno;
	bool ok = false;
	if (fd > 2 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		char link[64];
		snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
		ssize_t n = readlink(link, out, size - 1);
		if (n > 0) {
			out[n] = '\0';
			ok = true;
		}
	}
	errno = saved;
	return ok;
}

static bool inject_fd(int op, int fd)
{
	char path[PATH_MAX];
	return fd_path(fd, path, sizeof path) && inject(op, path);
}

/* An absolute path for a path relative to dirfd (or the working directory). */
static bool absolute(int dirfd, const char *path, char *out, size_t size)
{
	if (path[0] == '/') {
		snprintf(out, size, "%s", path);
		return true;
	}
	char base[PATH_MAX];
	int saved = errno;
	bool ok;
	if (dirfd == AT_FDCWD) {
		ok = getcwd(base, sizeof base) != NULL;
	} else {
		char link[64];
		snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
		ssize_t n = readlink(link, base, sizeof base - 1);
		ok = n > 0;
		if (ok)
			base[n] = '\0';
	}
	errno = saved;
	if (ok)
		snprintf(out, size, "%s/%s", base, path);
	return ok;
}

static bool inject_path(int op, int dirfd, const char *path)
{
	char full[PATH_MAX * 2];
	return absolute(dirfd, path, full, sizeof full) && inject(op, full);
}

/* A rename or a link counts once, as the path of whichever side matches,
 * the new name first. */
static bool inject_two_paths(int op, int from_dir, const char *from, int to_dir, const char *to)
{
	char full[PATH_MAX * 2];
	load_config();
	if (absolute(to_dir, to, full, sizeof full) && fnmatch(config.pattern, full, 0) == 0)
		return inject(op, full);
	return inject_path(op, from_dir, from);
}

/* ---- cutting a file short while it is read --------------------------------- */

static struct {
	atomic_int state; /* 0 unread, 1 reading, 2 ready */
	char pattern[PATH_MAX]; /* "": off */
	long at;
	off_t to;
	char log[PATH_MAX];
} shrink;
static atomic_long shrink_calls; /* matching calls so far */

static void shrink_load_config(void)
{
	int expected = 0;
	if (atomic_load(&shrink.state) == 2)
		return;
	if (!atomic_compare_exchange_strong(&shrink.state, &expected, 1)) {
		while (atomic_load(&shrink.state) != 2)
			; /* another thread is reading it */
		return;
	}
	const char *v;
	snprintf(shrink.pattern, sizeof shrink.pattern, "%s",
	         (v = getenv("GPUCC_SHRINK_PATH")) ? v : "");
	shrink.at = (v = getenv("GPUCC_SHRINK_AT")) && *v ? atol(v) : -1;
	shrink.to = (v = getenv("GPUCC_SHRINK_TO")) && *v ? (off_t)atoll(v) : 0;
	snprintf(shrink.log, sizeof shrink.log, "%s", (v = getenv("GPUCC_SHRINK_LOG")) ? v : "");
	atomic_store(&shrink.state, 2);
}

/* Count a read or mapping of fd when its file matches, and cut the file
 * short at the chosen call.  Leaves errno as it was. */
static void shrink_count(const char *call, int fd)
{
	shrink_load_config();
	char path[PATH_MAX];
	if (!shrink.pattern[0] || !fd_path(fd, path, sizeof path) ||
	    fnmatch(shrink.pattern, path, 0) != 0)
		return;
	int saved = errno;
	long n = atomic_fetch_add(&shrink_calls, 1);
	bool cut = n == shrink.at;
	if (cut && truncate(path, shrink.to) != 0)
		abort(); /* the test would prove nothing */
	if (shrink.log[0]) {
		int log = REAL(open)(shrink.log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (log >= 0) {
			char line[PATH_MAX + 64];
			int len = snprintf(line, sizeof line, "%s %ld %s %d\n", call, n, path, cut);
			if (len > (int)sizeof line - 1)
				len = (int)sizeof line - 1;
			ssize_t written = REAL(write)(log, line, (size_t)len);
			(void)written;
			REAL(close)(log);
		}
	}
	errno = saved;
}

ssize_t read(int fd, void *buf, size_t n)
{
	shrink_count("read", fd);
	return REAL(read)(fd, buf, n);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	shrink_count("pread", fd);
	return REAL(pread)(fd, buf, n, off);
}

ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
	shrink_count("pread", fd);
	return REAL(pread64)(fd, buf, n, off);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *m = REAL(mmap)(addr, len, prot, flags, fd, off);
	if (m != MAP_FAILED && fd >= 0 && !(flags & MAP_ANONYMOUS))
		shrink_count("mmap", fd);
	return m;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	void *m = REAL(mmap64)(addr, len, prot, flags, fd, off);
	if (m != MAP_FAILED && fd >= 0 && !(flags & MAP_ANONYMOUS))
		shrink_count("mmap", fd);
	return m;
}

/* ---- the wrapped calls ------------------------------------------------------ */

ssize_t write(int fd, const void *buf, size_t n)
{
	return inject_fd(OP_WRITE, fd) ? -1 : REAL(write)(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	return inject_fd(OP_PWRITE, fd) ? -1 : REAL(pwrite)(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	return inject_fd(OP_PWRITE, fd) ? -1 : REAL(pwrite64)(fd, buf, n, off);
}

ssize_t writev(int fd, const struct iovec *iov, int count)
{
	return inject_fd(OP_WRITEV, fd) ? -1 : REAL(writev)(fd, iov, count);
}

ssize_t pwritev(int fd, const struct iovec *iov, int count, off_t off)
{
	return inject_fd(OP_PWRITEV, fd) ? -1 : REAL(pwritev)(fd, iov, count, off);
}

int fsync(int fd)
{
	return inject_fd(OP_FSYNC, fd) ? -1 : REAL(fsync)(fd);
}

int fdatasync(int fd)
{
	return inject_fd(OP_FDATASYNC, fd) ? -1 : REAL(fdatasync)(fd);
}

int sync_file_range(int fd, off_t off, off_t n, unsigned int flags)
{
	return inject_fd(OP_SYNC_FILE_RANGE, fd) ? -1 : REAL(sync_file_range)(fd, off, n, flags);
}

ssize_t copy_file_range(int in, off_t *in_off, int out, off_t *out_off, size_t n,
                        unsigned int flags)
{
	return inject_fd(OP_COPY_FILE_RANGE, out)
	               ? -1
	               : REAL(copy_file_range)(in, in_off, out, out_off, n, flags);
}

ssize_t sendfile(int out, int in, off_t *off, size_t n)
{
	return inject_fd(OP_SENDFILE, out) ? -1 : REAL(sendfile)(out, in, off, n);
}

int fallocate(int fd, int mode, off_t off, off_t n)
{
	return inject_fd(OP_FALLOCATE, fd) ? -1 : REAL(fallocate)(fd, mode, off, n);
}

int posix_fallocate(int fd, off_t off, off_t n)
{
	/* Returns the error instead of setting errno. */
	return inject_fd(OP_FALLOCATE, fd) ? errno : REAL(posix_fallocate)(fd, off, n);
}

int ftruncate(int fd, off_t n)
{
	return inject_fd(OP_FTRUNCATE, fd) ? -1 : REAL(ftruncate)(fd, n);
}

int close(int fd)
{
	if (inject_fd(OP_CLOSE, fd)) {
		/* Linux releases the descriptor even when close reports an error. */
		int err = errno;
		REAL(close)(fd);
		errno = err;
		return -1;
	}
	return REAL(close)(fd);
}

int rename(const char *from, const char *to)
{
	if (inject_two_paths(OP_RENAME, AT_FDCWD, from, AT_FDCWD, to))
		return -1;
	return REAL(rename)(from, to);
}

int renameat(int from_dir, const char *from, int to_dir, const char *to)
{
	if (inject_two_paths(OP_RENAME, from_dir, from, to_dir, to))
		return -1;
	return REAL(renameat)(from_dir, from, to_dir, to);
}

int renameat2(int from_dir, const char *from, int to_dir, const char *to, unsigned int flags)
{
	if (inject_two_paths(OP_RENAME, from_dir, from, to_dir, to))
		return -1;
	return REAL(renameat2)(from_dir, from, to_dir, to, flags);
}

int link(const char *from, const char *to)
{
	if (inject_two_paths(OP_LINK, AT_FDCWD, from, AT_FDCWD, to))
		return -1;
	return REAL(link)(from, to);
}

int linkat(int from_dir, const char *from, int to_dir, const char *to, int flags)
{
	if (inject_two_paths(OP_LINK, from_dir, from, to_dir, to))
		return -1;
	return REAL(linkat)(from_dir, from, to_dir, to, flags);
}

/* open and openat take a mode only with O_CREAT or O_TMPFILE. */
static mode_t mode_of(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}
#define MODE_ARGUMENT(mode, flags)                                                                 \
	mode_t mode;                                                                               \
	do {                                                                                       \
		va_list ap;                                                                        \
		va_start(ap, flags);                                                               \
		mode = mode_of(flags, ap);                                                         \
		va_end(ap);                                                                        \
	} while (0)

/* Every open variant: on x86_64 (64-bit offsets everywhere) open64 is open,
 * and open is openat relative to the working directory. */
static int open_or_fail(int dirfd, const char *path, int flags, mode_t mode)
{
	if ((flags & O_CREAT) && inject_path(OP_CREATE, dirfd, path))
		return -1;
	if ((flags & O_TMPFILE) == O_TMPFILE) {
		/* An unnamed file in the directory path: "path/" stands for it. */
		char in_dir[PATH_MAX + 2];
		snprintf(in_dir, sizeof in_dir, "%s/", path);
		if (inject_path(OP_CREATE, dirfd, in_dir))
			return -1;
	}
	return REAL(openat)(dirfd, path, flags, mode);
}

int open(const char *path, int flags, ...)
{
	MODE_ARGUMENT(mode, flags);
	return open_or_fail(AT_FDCWD, path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	MODE_ARGUMENT(mode, flags);
	return open_or_fail(AT_FDCWD, path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	MODE_ARGUMENT(mode, flags);
	return open_or_fail(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
	MODE_ARGUMENT(mode, flags);
	return open_or_fail(dirfd, path, flags, mode);
}

int creat(const char *path, mode_t mode)
{
	if (inject_path(OP_CREATE, AT_FDCWD, path))
		return -1;
	return REAL(creat)(path, mode);
}

int mkstemp(char *template)
{
	/* glibc creates the file through an internal open: name the
	 * directory's pattern, since the final name is not known yet. */
	if (inject_path(OP_CREATE, AT_FDCWD, template))
		return -1;
	return REAL(mkstemp)(template);
}

/* What mkstemp is with 64-bit offsets requested (as gpucc builds). */
int mkstemp64(char *template)
{
	if (inject_path(OP_CREATE, AT_FDCWD, template))
		return -1;
	return REAL(mkstemp64)(template);
}
