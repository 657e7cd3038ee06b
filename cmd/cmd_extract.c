/*
 * cmd/cmd_extract.c -- `gpucc extract IMAGE [-C DIR]`: every payload of every
 * entry as a file named for what it is:
 *
 *     <module stem>.<target, ':' as '_'>.<short key>.<extension>
 *     e.g. saxpy.nvptx.sm_90_ptx78.3f2a9c0d1e4b.ptx
 *
 * Names are made here from manifest fields, never taken from archive member
 * names, and are sanitised (one path component, no leading '.', only
 * [A-Za-z0-9._+-]), so nothing can land outside DIR.
 *
 * All or nothing: payloads are streamed in archive order (the image is read
 * once, front to back) into new files in DIR, each verified against its
 * digest and flushed; only when every payload is good are the files given
 * their names, and the directory flushed (docs/reliability.md, "Atomic outputs").  A
 * payload shared by several entries is read once and copied for the others.
 *
 * Until then the new files have no name: they are made with O_TMPFILE and
 * linked to their names through /proc/self/fd, so that a run killed before
 * that leaves nothing behind.  Where the file system or /proc does not
 * allow it, or past the descriptor limit (each such file stays open until
 * published), they are temporary files ".gpucc-extract.XXXXXX" instead,
 * which a killed run leaves behind.
 *
 * Existing files are refused before anything is written, unless --force; a
 * directory or any other non-file named like an output, and IMAGE itself
 * (inputs are never modified), are refused even then (a link there is
 * replaced, never followed).  With --force, a file
 * about to be replaced is first hard-linked to a backup name in DIR
 * (".gpucc-extract.<pid>.<n>": no copy), then the new one renamed over it;
 * a file without a name is linked to such a temporary name first, since
 * linkat cannot replace.  When any step fails (or, without --force, a name
 * appears meanwhile; or the list of files cannot be written to standard
 * output, which is flushed before the backups go), the run is undone: replaced files are renamed back
 * from their backups, names that were free are removed, and so are the
 * directories that -C created; a failed extraction leaves DIR as it was.
 * Only when every file is in place are the backups removed.  A backup that
 * cannot be renamed back is kept, so that no old file is lost; a run
 * killed while renaming (after every byte is written and flushed) may leave
 * backups and one temporary name.
 */
#include "cmd.h"

#include <gpucc.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHORT_KEY_DIGITS 12
#define STEM_MAX 96

static const cmd_option extract_options[] = {
	{"directory", 'C', "DIR", false, "write into DIR (created if missing; default: .)"},
	{"force", 'f', NULL, false, "overwrite files that already exist"},
	{"json", 0, NULL, false, "print what was written as a JSON object"},
	{"quiet", 'q', NULL, false, "do not print the names of the files written"},
	{0},
};

/* Descriptors that stay free for the image and the libraries when the new
 * files are held open. */
#define SPARE_DESCRIPTORS 64
/* "/proc/self/fd/" and an int */
#define PROC_FD_PATH_SIZE 32

/* One file to write: which image payload it holds, its name in DIR, the
 * file that holds its verified bytes before publishing (unnamed, or a
 * temporary name), and with --force the backup of the file it replaced. */
typedef struct output_file {
	size_t payload_index;
	char *name;
	int fd;         /* the unnamed file, open until published; -1 when none */
	char *temp;     /* the temporary file's path; NULL when none */
	char *backup;   /* the replaced file's backup path; NULL when none */
	bool published; /* given its name, a name that was free */
} output_file;

typedef struct extraction {
	const cmd_args *args;
	gpucc_image *img;
	const char *dir;
	output_file *files;
	size_t file_count;
	mode_t mode;
	bool unnamed;         /* O_TMPFILE has worked in dir, so far */
	size_t unnamed_open;  /* descriptors unnamed files hold */
	size_t unnamed_max;   /* and may hold */
	unsigned spare_names; /* backup and temporary names made */
	char **made_dirs;     /* directories made for -C, outermost first */
	size_t made_count;
	struct stat image;    /* IMAGE's file, which no output may replace */
	bool image_known;
} extraction;

/* Image payloads sorted by (digest, part), to map entries' payloads to their
 * archive index without a quadratic search. */
typedef struct payload_ref {
	const gpucc_payload *payload;
	size_t index;
} payload_ref;

static int compare_payload(const gpucc_payload *a, const gpucc_payload *b)
{
	int c = gpucc_digest_compare(&a->sha256, &b->sha256);
	return c ? c : (int)a->part - (int)b->part;
}

static int compare_ref(const void *a, const void *b)
{
	return compare_payload(((const payload_ref *)a)->payload, ((const payload_ref *)b)->payload);
}

static int compare_file_name(const void *a, const void *b)
{
	return strcmp(((const output_file *)a)->name, ((const output_file *)b)->name);
}

static int compare_file_payload(const void *a, const void *b)
{
	size_t x = ((const output_file *)a)->payload_index, y = ((const output_file *)b)->payload_index;
	return x < y ? -1 : x > y;
}

/* Append s to out (of capacity size, at *used), each byte outside
 * [A-Za-z0-9._+-] replaced by '_', at most max bytes. */
static void append_sanitised(char *out, size_t size, size_t *used, const char *s, size_t max)
{
	for (size_t i = 0; s[i] && i < max && *used + 1 < size; i++) {
		unsigned char c = (unsigned char)s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		          c == '.' || c == '_' || c == '+' || c == '-';
		out[(*used)++] = ok ? (char)c : '_';
	}
	out[*used] = '\0';
}

/* The file name for payload p of entry e (see the top of this file). */
static char *file_name(const gpucc_entry *e, const gpucc_payload *p)
{
	char name[NAME_MAX + 1];
	size_t used = 0;

	/* The module's base name without its last extension. */
	const char *module = e->module ? e->module : "";
	const char *base = strrchr(module, '/');
	base = base ? base + 1 : module;
	const char *backslash = strrchr(base, '\\');
	base = backslash ? backslash + 1 : base;
	const char *dot = strrchr(base, '.');
	size_t stem_len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
	if (stem_len > STEM_MAX)
		stem_len = STEM_MAX;
	append_sanitised(name, sizeof name, &used, base, stem_len);
	if (used == 0)
		append_sanitised(name, sizeof name, &used, "module", STEM_MAX);
	if (name[0] == '.')
		name[0] = '_';

	char target[GPUCC_TARGET_NAME_SIZE + 1];
	snprintf(target, sizeof target, ".%s", e->target ? e->target : "");
	for (char *c = target; *c; c++)
		if (*c == ':')
			*c = '_';
	append_sanitised(name, sizeof name, &used, target, sizeof target);

	char key[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(key, &e->key);
	snprintf(name + used, sizeof name - used, ".%.*s%s", SHORT_KEY_DIGITS, key,
	         gpucc_part_extension(p->part));
	return strdup(name);
}

/* "/" between DIR and a name, or "" when DIR ends with one already (-C
 * out/, as the shell completes it, gave out//NAME). */
static const char *separator_after(const char *dir)
{
	size_t len = strlen(dir);
	return len && dir[len - 1] == '/' ? "" : "/";
}

static char *join_path(const char *dir, const char *name)
{
	size_t len = strlen(dir) + 1 + strlen(name) + 1;
	char *path = malloc(len);
	if (path)
		snprintf(path, len, "%s%s%s", dir, separator_after(dir), name);
	return path;
}

/* mkdir -p DIR, recording each directory it creates in x->made_dirs,
 * outermost first, so that a failed run removes those and no others. */
static int make_directory(extraction *x)
{
	struct stat st;
	if (stat(x->dir, &st) == 0)
		return S_ISDIR(st.st_mode) ? 0 : (errno = ENOTDIR, -1);
	size_t components = 1;
	for (const char *c = x->dir; *c; c++)
		components += *c == '/';
	char *copy = strdup(x->dir);
	x->made_dirs = calloc(components, sizeof *x->made_dirs);
	if (!copy || !x->made_dirs) {
		free(copy);
		errno = ENOMEM;
		return -1;
	}
	/* Each prefix that ends a component, then the whole path. */
	for (char *p = copy + 1;; p++) {
		char end = *p;
		if (end != '/' && end != '\0')
			continue;
		*p = '\0';
		if (mkdir(copy, 0777) == 0) {
			char *made = strdup(copy);
			if (!made) {
				rmdir(copy);
				free(copy);
				errno = ENOMEM;
				return -1;
			}
			x->made_dirs[x->made_count++] = made;
		} else if (errno != EEXIST) {
			int err = errno;
			free(copy);
			errno = err;
			return -1;
		}
		*p = end;
		if (end == '\0')
			break;
	}
	free(copy);
	return 0;
}

/* Remove the directories make_directory created, innermost first (each only
 * when empty), and forget them. */
static void remove_made_directories(extraction *x, bool remove)
{
	for (size_t i = x->made_count; i-- > 0;) {
		if (remove)
			rmdir(x->made_dirs[i]);
		free(x->made_dirs[i]);
	}
	free(x->made_dirs);
	x->made_dirs = NULL;
	x->made_count = 0;
}

/* Plan the output: one file per (entry, payload), with unique names. */
static int plan(extraction *x)
{
	size_t payload_count;
	if (gpucc_image_count_payloads(&payload_count, x->img) != 0)
		return cmd_fail(x->args);
	size_t entry_count = gpucc_image_entry_count(x->img);
	payload_ref *refs = calloc(payload_count + 1, sizeof *refs);
	size_t total = 0;
	for (size_t i = 0; i < entry_count; i++)
		total += gpucc_image_entry(x->img, i)->payload_count;
	x->files = calloc(total + 1, sizeof *x->files);
	if (!refs || !x->files) {
		free(refs);
		return cmd_error(x->args, EXIT_FAIL, "out of memory");
	}
	for (size_t i = 0; i < payload_count; i++)
		refs[i] = (payload_ref){gpucc_image_payload(x->img, i), i};
	qsort(refs, payload_count, sizeof *refs, compare_ref);

	int rc = EXIT_OK;
	for (size_t i = 0; i < entry_count && rc == EXIT_OK; i++) {
		const gpucc_entry *e = gpucc_image_entry(x->img, i);
		for (size_t j = 0; j < e->payload_count; j++) {
			payload_ref want = {&e->payloads[j], 0};
			payload_ref *found =
				bsearch(&want, refs, payload_count, sizeof *refs, compare_ref);
			if (!found) {
				char key[GPUCC_DIGEST_HEX_SIZE];
				gpucc_digest_to_hex(key, &e->key);
				rc = cmd_error(x->args, EXIT_BAD_INPUT,
				               "'%s': entry %.12s: %s payload is not among the image's payloads",
				               gpucc_image_name(x->img), key,
				               gpucc_part_name(e->payloads[j].part));
				break;
			}
			output_file *f = &x->files[x->file_count];
			f->fd = -1;
			f->payload_index = found->index;
			f->name = file_name(e, &e->payloads[j]);
			if (!f->name) {
				rc = cmd_error(x->args, EXIT_FAIL, "out of memory");
				break;
			}
			x->file_count++;
		}
	}
	free(refs);
	if (rc != EXIT_OK)
		return rc;

	qsort(x->files, x->file_count, sizeof *x->files, compare_file_name);
	for (size_t i = 1; i < x->file_count; i++)
		if (strcmp(x->files[i - 1].name, x->files[i].name) == 0)
			return cmd_error(x->args, EXIT_FAIL,
			                 "'%s': two payloads would both be written as '%s'",
			                 gpucc_image_name(x->img), x->files[i].name);
	/* Archive order, so that the image is read front to back. */
	qsort(x->files, x->file_count, sizeof *x->files, compare_file_payload);
	return EXIT_OK;
}

/* Refuse, before writing anything, to replace existing files. */
static int check_existing(extraction *x)
{
	bool force = cmd_flag(x->args, "force");
	for (size_t i = 0; i < x->file_count; i++) {
		char *path = join_path(x->dir, x->files[i].name);
		struct stat st;
		if (!path)
			return cmd_error(x->args, EXIT_FAIL, "out of memory");
		int exists = lstat(path, &st) == 0;
		int rc = EXIT_OK;
		if (exists && S_ISDIR(st.st_mode))
			rc = cmd_error(x->args, EXIT_FAIL, "cannot write '%s': is a directory", path);
		else if (exists && S_ISREG(st.st_mode) && x->image_known &&
		         st.st_dev == x->image.st_dev && st.st_ino == x->image.st_ino)
			rc = cmd_error(x->args, EXIT_FAIL,
			               "cannot write '%s': it is the image being extracted", path);
		else if (exists && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
			rc = cmd_error(x->args, EXIT_FAIL, "cannot write '%s': not a regular file", path);
		else if (exists && !force)
			rc = cmd_error(x->args, EXIT_FAIL,
			               "'%s' already exists (use --force to overwrite)", path);
		free(path);
		if (rc != EXIT_OK)
			return rc;
	}
	return EXIT_OK;
}

/* A new empty temporary file in DIR; its path in *out. */
static int open_temp(extraction *x, char **out)
{
	char *path = join_path(x->dir, ".gpucc-extract.XXXXXX");
	if (!path)
		return -1;
	int fd = mkstemp(path);
	if (fd < 0) {
		free(path);
		return -1;
	}
	if (fchmod(fd, x->mode) != 0) {
		close(fd);
		unlink(path);
		free(path);
		return -1;
	}
	*out = path;
	return fd;
}

static void proc_fd_path(char out[PROC_FD_PATH_SIZE], int fd)
{
	snprintf(out, PROC_FD_PATH_SIZE, "/proc/self/fd/%d", fd);
}

/* How many unnamed files may be open at once: the descriptor limit, raised
 * to its maximum, less SPARE_DESCRIPTORS. */
static size_t unnamed_file_limit(void)
{
	cmd_raise_file_limit();
	struct rlimit limit;
	if (getrlimit(RLIMIT_NOFILE, &limit) != 0)
		return 0;
	return limit.rlim_cur > SPARE_DESCRIPTORS ? (size_t)(limit.rlim_cur - SPARE_DESCRIPTORS) : 0;
}

/* A new empty file in DIR for f, open for reading and writing, with the
 * mode the umask gives: unnamed (in f->fd, which stays open) while the file
 * system, /proc and the descriptor limit allow, else a temporary file (in
 * f->temp).  The descriptor, or -1 with errno set. */
static int open_new_file(extraction *x, output_file *f)
{
	if (x->unnamed && x->unnamed_open < x->unnamed_max) {
		int fd = open(x->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, x->mode);
		char proc[PROC_FD_PATH_SIZE];
		struct stat st;
		if (fd >= 0)
			proc_fd_path(proc, fd);
		if (fd >= 0 && stat(proc, &st) == 0) {
			f->fd = fd;
			x->unnamed_open++;
			return fd;
		}
		if (fd >= 0)
			close(fd); /* no /proc to link it by */
		else if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
			return -1;
		x->unnamed = false;
	}
	return open_temp(x, &f->temp);
}

/* Copy the whole file of from (already verified) to fd. */
static int copy_file(const output_file *from, int fd)
{
	char buffer[1 << 16];
	int in = from->fd >= 0 ? from->fd : open(from->temp, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -1;
	ssize_t n;
	off_t offset = 0;
	while ((n = pread(in, buffer, sizeof buffer, offset)) > 0) {
		offset += n;
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(fd, buffer + done, (size_t)(n - done));
			if (w < 0) {
				if (errno == EINTR)
					continue;
				n = -1;
				break;
			}
			done += w;
		}
		if (n < 0)
			break;
	}
	int saved = errno;
	if (in != from->fd)
		close(in);
	errno = saved;
	return n < 0 ? -1 : 0;
}

/* Write every file to a new file, in archive order. */
static int write_new_files(extraction *x)
{
	x->unnamed = true;
	x->unnamed_max = unnamed_file_limit();
	for (size_t i = 0; i < x->file_count; i++) {
		output_file *f = &x->files[i];
		const output_file *first =
			i > 0 && x->files[i - 1].payload_index == f->payload_index ? &x->files[i - 1] : NULL;
		/* Errors name the file being extracted, not its temporary. */
		char *path = join_path(x->dir, f->name);
		if (!path)
			return cmd_error(x->args, EXIT_FAIL, "out of memory");
		int fd = open_new_file(x, f);
		if (fd < 0) {
			int rc = cmd_error(x->args, EXIT_FAIL, "cannot write '%s': %s", path,
			                   strerror(errno));
			free(path);
			return rc;
		}
		int rc = EXIT_OK;
		if (first) {
			if (copy_file(first, fd) != 0)
				rc = cmd_error(x->args, EXIT_FAIL, "cannot write '%s': %s", path,
				               strerror(errno));
		} else if (gpucc_image_copy_payload(x->img, gpucc_image_payload(x->img, f->payload_index),
		                                    fd) != 0) {
			/* A defect of the image is the reader's message, which names
			 * the image; an I/O failure names the file being written. */
			const gpucc_error *e = gpucc_error_last();
			if (e->code == GPUCC_ERROR)
				rc = cmd_error(x->args, EXIT_FAIL, "cannot write '%s': %s", path, e->message);
			else
				rc = cmd_fail(x->args);
		}
		if (rc == EXIT_OK && fsync(fd) != 0)
			rc = cmd_error(x->args, EXIT_FAIL, "cannot write '%s': %s", path, strerror(errno));
		/* An unnamed file stays open until it is linked to its name. */
		if (f->fd < 0 && close(fd) != 0 && rc == EXIT_OK)
			rc = cmd_error(x->args, EXIT_FAIL, "cannot write '%s': %s", path, strerror(errno));
		free(path);
		if (rc != EXIT_OK)
			return rc;
	}
	return EXIT_OK;
}

/* Link from to a name in DIR not taken now (".gpucc-extract.<pid>.<n>"),
 * returned in *out; flags as linkat's.  0, or -1 with errno set. */
static int link_to_spare_name(extraction *x, const char *from, int flags, char **out)
{
	for (int attempt = 0; attempt < 100; attempt++) {
		char name[64];
		snprintf(name, sizeof name, ".gpucc-extract.%ld.%u", (long)getpid(), x->spare_names++);
		char *spare = join_path(x->dir, name);
		if (!spare)
			return -1;
		if (linkat(AT_FDCWD, from, AT_FDCWD, spare, flags) == 0) {
			*out = spare;
			return 0;
		}
		int err = errno;
		free(spare);
		errno = err;
		if (err != EEXIST)
			return -1;
	}
	return -1;
}

/* Give f the name path, which must be free: link its unnamed file there,
 * or rename its temporary file without replacing.  0, or -1 with errno set
 * (EEXIST: the name is taken). */
static int publish_new(output_file *f, const char *path)
{
	if (f->fd >= 0) {
		char proc[PROC_FD_PATH_SIZE];
		proc_fd_path(proc, f->fd);
		if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) != 0)
			return -1;
		close(f->fd); /* after the fsync: no write error left to report */
		f->fd = -1;
	} else if (renameat2(AT_FDCWD, f->temp, AT_FDCWD, path, RENAME_NOREPLACE) != 0) {
		if (errno != EINVAL && errno != ENOSYS)
			return -1;
		/* No RENAME_NOREPLACE here: link() refuses existing names too. */
		if (link(f->temp, path) != 0)
			return -1;
		unlink(f->temp);
	}
	free(f->temp);
	f->temp = NULL;
	f->published = true;
	return 0;
}

/* --force, path taken: keep what is there under a backup name (a hard link
 * to it, in f->backup), then rename f's file over it.  On failure path is
 * as it was, no backup remains, and *no_backup says whether the backup
 * could not be made. */
static int publish_over(extraction *x, output_file *f, const char *path, bool *no_backup)
{
	char *backup = NULL;
	*no_backup = link_to_spare_name(x, path, 0, &backup) != 0;
	if (*no_backup)
		return -1;
	if (f->fd >= 0) {
		/* linkat cannot replace: a temporary name first, renamed below
		 * (a run killed in between leaves it). */
		char proc[PROC_FD_PATH_SIZE];
		proc_fd_path(proc, f->fd);
		if (link_to_spare_name(x, proc, AT_SYMLINK_FOLLOW, &f->temp) != 0)
			goto failed;
		close(f->fd);
		f->fd = -1;
	}
	if (rename(f->temp, path) != 0)
		goto failed;
	free(f->temp);
	f->temp = NULL;
	f->backup = backup;
	return 0;
failed:;
	int err = errno;
	unlink(backup);
	free(backup);
	errno = err;
	return -1;
}

/* Flush the directory, so that the renames survive a crash (best effort:
 * some file systems refuse to fsync a directory). */
static void sync_directory(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* Undo publish, last file first: a replaced file is renamed back from its
 * backup (kept, with f->backup set, when that fails: see the top of this
 * file), a name that was free is removed. */
static void roll_back(extraction *x)
{
	for (size_t i = x->file_count; i-- > 0;) {
		output_file *f = &x->files[i];
		if (!f->published && !f->backup)
			continue;
		char *path = join_path(x->dir, f->name);
		if (path && f->backup) {
			if (rename(f->backup, path) == 0) {
				free(f->backup);
				f->backup = NULL;
			}
		} else if (path) {
			unlink(path);
		}
		f->published = false;
		free(path);
	}
	sync_directory(x->dir);
}

/* --json: the directory and, per file written, its name and payload. */
static void print_json(const extraction *x)
{
	fputs("{\"image\": ", stdout);
	cmd_json_string(stdout, x->args->positional[0]);
	fputs(", \"directory\": ", stdout);
	cmd_json_string(stdout, x->dir);
	fputs(", \"files\": [", stdout);
	for (size_t i = 0; i < x->file_count; i++) {
		const gpucc_payload *p = gpucc_image_payload(x->img, x->files[i].payload_index);
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &p->sha256);
		fputs(i ? ", {\"name\": " : "{\"name\": ", stdout);
		cmd_json_string(stdout, x->files[i].name);
		printf(", \"part\": \"%s\", \"size\": %" PRIu64 ", \"sha256\": \"%s\"}",
		       gpucc_part_name(p->part), p->size, hex);
	}
	fputs("]}\n", stdout);
}

/* Give every file its name; without --force never replace a file that
 * appeared since check_existing, with it keep a backup of each file
 * replaced until all are in place.  Names (or, json, the JSON object) are
 * printed only then, unless quiet, and flushed before the backups go: a
 * report that cannot be written (standard output closed or full) undoes
 * the extraction, as any other failure does, rather than leave files that
 * no one was told of. */
static int publish(extraction *x, bool quiet, bool json, bool dir_given)
{
	bool force = cmd_flag(x->args, "force");
	for (size_t i = 0; i < x->file_count; i++) {
		output_file *f = &x->files[i];
		char *path = join_path(x->dir, f->name);
		if (!path) {
			roll_back(x);
			return cmd_error(x->args, EXIT_FAIL, "out of memory");
		}
		bool no_backup = false;
		int ok = publish_new(f, path) == 0;
		if (!ok && errno == EEXIST && force)
			ok = publish_over(x, f, path, &no_backup) == 0;
		if (!ok) {
			int rc;
			if (no_backup)
				rc = cmd_error(x->args, EXIT_FAIL, "cannot back up '%s' to replace it: %s",
				               path, strerror(errno));
			else if (errno == EEXIST && !force)
				rc = cmd_error(x->args, EXIT_FAIL,
				               "'%s' already exists (use --force to overwrite)", path);
			else
				rc = cmd_error(x->args, EXIT_FAIL, "cannot write '%s': %s", path,
				               strerror(errno));
			free(path);
			roll_back(x);
			return rc;
		}
		free(path);
	}
	sync_directory(x->dir);
	/* DIR is spelt (a control character in it would reach the terminal
	 * or split the row); names are sanitised already. */
	errno = 0;
	for (size_t i = 0; i < x->file_count && !quiet && !json; i++) {
		if (dir_given) {
			cmd_put_shown(stdout, x->dir);
			fputs(separator_after(x->dir), stdout);
		}
		printf("%s\n", x->files[i].name);
	}
	if (json)
		print_json(x);
	int flushed = fflush(stdout), err = errno;
	if (flushed != 0 || ferror(stdout)) {
		roll_back(x);
		return cmd_error(x->args, EXIT_FAIL,
		                 "cannot write the list of files to standard output (nothing was "
		                 "extracted)%s%s",
		                 err ? ": " : "", err ? strerror(err) : "");
	}
	for (size_t i = 0; i < x->file_count; i++) {
		if (x->files[i].backup)
			unlink(x->files[i].backup);
		free(x->files[i].backup);
		x->files[i].backup = NULL;
	}
	return EXIT_OK;
}

static int run_extract(const cmd_args *args)
{
	const char *dir_option;
	if (cmd_path_value(&dir_option, args, "directory", "a directory") != EXIT_OK)
		return EXIT_USAGE;
	extraction x = {.args = args, .dir = dir_option && *dir_option ? dir_option : "."};
	int rc;
	bool json = cmd_flag(args, "json");
	if (json && cmd_flag(args, "quiet"))
		return cmd_error(args, EXIT_USAGE, "-q and --json exclude each other");

	mode_t mask = umask(0);
	umask(mask);
	x.mode = 0666 & ~mask;

	if (gpucc_image_open(&x.img, args->positional[0]) != 0) {
		rc = cmd_fail(args);
		goto cleanup;
	}
	/* Inputs are never modified: --force would rename a payload over
	 * IMAGE (or a link to it) named like one of its outputs. */
	x.image_known = stat(args->positional[0], &x.image) == 0;
	if ((rc = plan(&x)) != EXIT_OK)
		goto cleanup;
	if (make_directory(&x) != 0) {
		rc = cmd_error(args, EXIT_FAIL, "cannot create directory '%s': %s", x.dir,
		               strerror(errno));
		goto cleanup;
	}
	if ((rc = check_existing(&x)) != EXIT_OK || (rc = write_new_files(&x)) != EXIT_OK)
		goto cleanup;
	rc = publish(&x, cmd_flag(args, "quiet"), json, dir_option != NULL);
cleanup:
	for (size_t i = 0; i < x.file_count; i++) {
		output_file *f = &x.files[i];
		if (f->fd >= 0)
			close(f->fd);
		if (f->temp)
			unlink(f->temp);
		free(f->temp);
		free(f->backup); /* one that could not be renamed back stays */
		free(f->name);
	}
	free(x.files);
	gpucc_image_free(x.img);
	/* Only empty ones go: leave nothing we made. */
	remove_made_directories(&x, rc != EXIT_OK);
	return rc;
}

const cmd_spec cmd_extract_spec = {
	.name = "extract",
	.synopsis = "IMAGE [-C DIR] [--force] [-q | --json]",
	.summary = "write every payload of an image to a file",
	.description =
		"Each payload of each entry becomes a file in DIR named\n"
		"<module stem>.<target with ':' as '_'>.<short key>.<ext>, e.g.\n"
		"saxpy.nvptx.sm_90_ptx78.3f2a9c0d1e4b.ptx; names are built from the manifest\n"
		"and sanitised, so nothing is written outside DIR.  Every payload is\n"
		"verified and flushed before any file appears, and a run that fails leaves\n"
		"DIR as it was: files --force replaced are put back, and directories made\n"
		"for -C removed.  A list of files that cannot be written (standard output\n"
		"closed or full) fails the run so too.\n"
		"Existing files are refused unless --force (a directory or other non-file,\n"
		"or IMAGE itself, even then; a link is replaced, not followed).  Prints the\n"
		"files written; --json prints {\"image\", \"directory\", \"files\": [{\"name\",\n"
		"\"part\", \"size\", \"sha256\"}, ...]} instead, names relative to the\n"
		"directory; -q and --json exclude each other (129).\n"
		"Members that no entry lists are never read; 'gpucc verify' checks them.",
	.options = extract_options,
	.min_positional = 1,
	.max_positional = 1,
	.run = run_extract,
};
