/*
 * lib/image/image_extract.c -- gpucc_image_extract (gpucc/image.h): every payload
 * of every entry of an image (or of the entries named by key) as a file
 * named for what it is,
 *
 *     <module stem>.<target, ':' as '_'>.<short key>.<extension>
 *     e.g. saxpy.nvptx.sm_90_ptx78.3f2a9c0d1e4b.ptx
 *
 * all or nothing.  Names are made from manifest fields, never taken from
 * archive member names, and are sanitised (one path component, no leading
 * '.', only [A-Za-z0-9._+-]), so nothing can land outside the directory.
 *
 * Payloads are streamed in archive order (the image is read once, front to
 * back) into new files in the directory, each verified against its digest
 * and flushed; only when every payload is good are the files given their
 * names, and the directory flushed.  A payload shared by several entries is
 * read once and copied for the others.  Entries named by key are found as
 * gpucc_image_lookup finds them, and their payloads read as the entries
 * give them: an image opened for lookup is then read through its index,
 * its whole manifest and the other entries' payloads never read.
 *
 * Until then the new files have no name: they are made with O_TMPFILE and
 * linked to their names through /proc/self/fd, so that a process killed
 * before that leaves nothing behind.  Where the file system or /proc does
 * not allow it, or past the descriptor limit (each such file stays open
 * until published), they are temporary files ".gpucc-extract.XXXXXX"
 * instead, which a killed process leaves behind.
 *
 * Existing files are refused before anything is written, unless force; a
 * directory or any other non-file named like an output, and the image's
 * own file (inputs are never modified), are refused even then (a link there
 * is replaced, never followed).  With force, a file about to be replaced is
 * first hard-linked to a backup name in the directory
 * (".gpucc-extract.<pid>.<n>": no copy), then the new one renamed over it;
 * a file without a name is linked to such a temporary name first, since
 * linkat cannot replace.  When any step fails (or, without force, a name
 * appears meanwhile; or the caller's before_commit says no), the run is
 * undone: replaced files are renamed back from their backups, names that
 * were free are removed, and so are the directories the call created; a
 * failed extraction leaves the directory as it was.  Only when every file
 * is in place are the backups removed.  A backup that cannot be renamed
 * back is kept, so that no old file is lost; a process killed while
 * renaming (after every byte is written and flushed) may leave backups and
 * one temporary name.
 */
#include "errors.h"
#include "file_identity.h"
#include "image_internal.h"

#include "gpucc/image.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHORT_KEY_DIGITS 12
#define STEM_MAX 96


/* Descriptors that stay free for the image and the libraries when the new
 * files are held open. */
#define SPARE_DESCRIPTORS 64
/* "/proc/self/fd/" and an int */
#define PROC_FD_PATH_SIZE 32

/* One file to write: which payload it holds (borrowed from the image), its
 * name in DIR, the file that holds its verified bytes before publishing
 * (unnamed, or a temporary name), and with --force the backup of the file
 * it replaced. */
typedef struct output_file {
	const gpucc_payload *payload;
	char *name;
	int fd;         /* the unnamed file, open until published; -1 when none */
	char *temp;     /* the temporary file's path; NULL when none */
	char *backup;   /* the replaced file's backup path; NULL when none */
	bool published; /* given its name, a name that was free */
} output_file;

typedef struct extraction {
	gpucc_image *img;
	bool force;
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

/* Payloads in archive order (by digest, then extension), and of one
 * payload (order and size): image payloads are sorted so to map entries'
 * payloads to them without a quadratic search, and files so to read the
 * image front to back, each payload once. */
static int compare_payload(const gpucc_payload *a, const gpucc_payload *b)
{
	int c = gpucc_payload_archive_compare(a, b);
	return c ? c : (a->size > b->size) - (a->size < b->size);
}

static int compare_payload_ptr(const void *a, const void *b)
{
	return compare_payload(*(const gpucc_payload *const *)a, *(const gpucc_payload *const *)b);
}

static int compare_entry_key(const void *a, const void *b)
{
	return gpucc_digest_compare(&(*(const gpucc_entry *const *)a)->key,
	                            &(*(const gpucc_entry *const *)b)->key);
}

static int compare_file_name(const void *a, const void *b)
{
	return strcmp(((const output_file *)a)->name, ((const output_file *)b)->name);
}

static int compare_file_payload(const void *a, const void *b)
{
	return compare_payload(((const output_file *)a)->payload, ((const output_file *)b)->payload);
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

/* Every entry of the image, its whole manifest parsed (an image opened for
 * lookup parses it now): a new array (free()) in *out, *count long. */
static int all_entries(extraction *x, const gpucc_entry ***out, size_t *count)
{
	int rc = gpucc_image_load_manifest(x->img);
	if (rc)
		return rc;
	size_t n = gpucc_image_entry_count(x->img);
	const gpucc_entry **entries = calloc(n + 1, sizeof *entries);
	if (!entries)
		return gpucc_error_oom();
	for (size_t i = 0; i < n; i++)
		entries[i] = gpucc_image_entry(x->img, i);
	*out = entries;
	*count = n;
	return 0;
}

/* The entries keys name, each found as gpucc_image_lookup finds it (its
 * error, naming the key, when none or several match), an entry named twice
 * once: a new array (free()) in *out, *count long. */
static int named_entries(extraction *x, const char *const *keys, size_t key_count,
                         const gpucc_entry ***out, size_t *count)
{
	const gpucc_entry **entries = calloc(key_count + 1, sizeof *entries);
	if (!entries)
		return gpucc_error_oom();
	for (size_t i = 0; i < key_count; i++) {
		int rc = gpucc_image_lookup(&entries[i], x->img, keys[i]);
		if (rc) {
			free(entries);
			return rc;
		}
	}
	qsort(entries, key_count, sizeof *entries, compare_entry_key);
	size_t n = 0;
	for (size_t i = 0; i < key_count; i++)
		if (n == 0 || compare_entry_key(&entries[n - 1], &entries[i]) != 0)
			entries[n++] = entries[i];
	*out = entries;
	*count = n;
	return 0;
}

/* The image's payloads sorted by compare_payload: a new array (free()) in
 * *out, *count long. */
static int sorted_payloads(extraction *x, const gpucc_payload ***out, size_t *count)
{
	size_t n;
	if (gpucc_image_count_payloads(&n, x->img) != 0)
		return GPUCC_ERROR; /* the reader's error */
	const gpucc_payload **sorted = calloc(n + 1, sizeof *sorted);
	if (!sorted)
		return gpucc_error_oom();
	for (size_t i = 0; i < n; i++)
		sorted[i] = gpucc_image_payload(x->img, i);
	qsort(sorted, n, sizeof *sorted, compare_payload_ptr);
	*out = sorted;
	*count = n;
	return 0;
}

/* The payload entry e lists j-th, in *out: the image's own, which must be
 * among sorted (the image's payloads), or, sorted NULL (entries named by
 * key, the manifest perhaps not read), e's own, which the reader finds and
 * checks as it reads it. */
static int entry_payload(extraction *x, const gpucc_entry *e, size_t j,
                         const gpucc_payload *const *sorted, size_t sorted_count,
                         const gpucc_payload **out)
{
	const gpucc_payload *want = &e->payloads[j];
	if (!sorted) {
		*out = want;
		return 0;
	}
	const gpucc_payload *const *found =
		bsearch(&want, sorted, sorted_count, sizeof *sorted, compare_payload_ptr);
	if (found) {
		*out = *found;
		return 0;
	}
	char key[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(key, &e->key);
	return gpucc_error_set(GPUCC_ECORRUPT,
	                       "'%s': entry %.12s: %s payload is not among the image's payloads",
	                       gpucc_image_name(x->img), key, gpucc_part_name(want->part));
}

/* One file per (entry, payload) of entries, into x->files. */
static int plan_files(extraction *x, const gpucc_entry *const *entries, size_t entry_count,
                      const gpucc_payload *const *sorted, size_t sorted_count)
{
	size_t total = 0;
	for (size_t i = 0; i < entry_count; i++)
		total += entries[i]->payload_count;
	x->files = calloc(total + 1, sizeof *x->files);
	if (!x->files)
		return gpucc_error_oom();
	for (size_t i = 0; i < entry_count; i++) {
		const gpucc_entry *e = entries[i];
		for (size_t j = 0; j < e->payload_count; j++) {
			output_file *f = &x->files[x->file_count];
			f->fd = -1;
			int rc = entry_payload(x, e, j, sorted, sorted_count, &f->payload);
			if (rc)
				return rc;
			f->name = file_name(e, &e->payloads[j]);
			if (!f->name)
				return gpucc_error_oom();
			x->file_count++;
		}
	}
	return 0;
}

/* Plan the output: one file per (entry, payload) of every entry or of
 * those opts names, with unique names, in archive order. */
static int plan(extraction *x, const gpucc_extract_options *opts)
{
	const gpucc_entry **entries = NULL;
	const gpucc_payload **sorted = NULL;
	size_t entry_count = 0, sorted_count = 0;
	int rc = opts->key_count ? named_entries(x, opts->keys, opts->key_count, &entries, &entry_count)
	                         : all_entries(x, &entries, &entry_count);
	if (rc == 0 && opts->key_count == 0)
		rc = sorted_payloads(x, &sorted, &sorted_count);
	if (rc == 0)
		rc = plan_files(x, entries, entry_count, sorted, sorted_count);
	free(entries);
	free(sorted);
	if (rc != 0)
		return rc;

	qsort(x->files, x->file_count, sizeof *x->files, compare_file_name);
	for (size_t i = 1; i < x->file_count; i++)
		if (strcmp(x->files[i - 1].name, x->files[i].name) == 0)
			return gpucc_error_set(GPUCC_ERROR,
			                 "'%s': two payloads would both be written as '%s'",
			                 gpucc_image_name(x->img), x->files[i].name);
	/* Archive order, so that the image is read front to back. */
	qsort(x->files, x->file_count, sizeof *x->files, compare_file_payload);
	return 0;
}

/* Refuse, before writing anything, to replace existing files. */
static int check_existing(extraction *x)
{
	for (size_t i = 0; i < x->file_count; i++) {
		char *path = join_path(x->dir, x->files[i].name);
		struct stat st;
		if (!path)
			return gpucc_error_oom();
		int exists = lstat(path, &st) == 0;
		int rc = 0;
		if (exists && S_ISDIR(st.st_mode))
			rc = gpucc_error_set(GPUCC_ERROR, "cannot write '%s': is a directory", path);
		else if (exists && S_ISREG(st.st_mode) && x->image_known &&
		         gpucc_stat_same_file(&st, &x->image))
			rc = gpucc_error_set(GPUCC_ERROR,
			                     "cannot write '%s': it is the image being extracted", path);
		else if (exists && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
			rc = gpucc_error_set(GPUCC_ERROR, "cannot write '%s': not a regular file", path);
		else if (exists && !x->force)
			rc = gpucc_error_set(GPUCC_ERROR,
			                     "'%s' already exists (not replaced without force)", path);
		free(path);
		if (rc != 0)
			return rc;
	}
	return 0;
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
			i > 0 && compare_payload(x->files[i - 1].payload, f->payload) == 0 ? &x->files[i - 1]
			                                                                  : NULL;
		/* Errors name the file being extracted, not its temporary. */
		char *path = join_path(x->dir, f->name);
		if (!path)
			return gpucc_error_oom();
		int fd = open_new_file(x, f);
		if (fd < 0) {
			int rc = gpucc_error_set(GPUCC_ERROR, "cannot write '%s': %s", path,
			                         strerror(errno));
			free(path);
			return rc;
		}
		int rc = 0;
		if (first) {
			if (copy_file(first, fd) != 0)
				rc = gpucc_error_set(GPUCC_ERROR, "cannot write '%s': %s", path,
				                     strerror(errno));
		} else if (gpucc_image_copy_payload(x->img, f->payload, fd) != 0) {
			/* A defect of the image is the reader's message, which names
			 * the image; an I/O failure names the file being written. */
			const gpucc_error *e = gpucc_error_last();
			rc = e->code ? e->code : GPUCC_ERROR;
			if (rc == GPUCC_ERROR) {
				char *why = strdup(e->message); /* the message set below replaces it */
				rc = gpucc_error_set(GPUCC_ERROR, "cannot write '%s': %s", path,
				                     why ? why : "out of memory");
				free(why);
			}
		}
		if (rc == 0 && fsync(fd) != 0)
			rc = gpucc_error_set(GPUCC_ERROR, "cannot write '%s': %s", path, strerror(errno));
		/* An unnamed file stays open until it is linked to its name. */
		if (f->fd < 0 && close(fd) != 0 && rc == 0)
			rc = gpucc_error_set(GPUCC_ERROR, "cannot write '%s': %s", path, strerror(errno));
		free(path);
		if (rc != 0)
			return rc;
	}
	return 0;
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

/* Give every file its name; without force never replace a file that
 * appeared since check_existing, with it keep a backup of each file
 * replaced until all are in place.  Then the caller's before_commit, whose
 * failure (a report that cannot be written) undoes the extraction as any
 * other failure does, then the backups go. */
static int publish(extraction *x, const gpucc_extract_options *opts)
{
	for (size_t i = 0; i < x->file_count; i++) {
		output_file *f = &x->files[i];
		char *path = join_path(x->dir, f->name);
		if (!path) {
			roll_back(x);
			return gpucc_error_oom();
		}
		bool no_backup = false;
		int ok = publish_new(f, path) == 0;
		if (!ok && errno == EEXIST && x->force)
			ok = publish_over(x, f, path, &no_backup) == 0;
		if (!ok) {
			int rc;
			if (no_backup)
				rc = gpucc_error_set(GPUCC_ERROR, "cannot back up '%s' to replace it: %s", path,
				                     strerror(errno));
			else if (errno == EEXIST && !x->force)
				rc = gpucc_error_set(GPUCC_ERROR,
				                     "'%s' already exists (not replaced without force)", path);
			else
				rc = gpucc_error_set(GPUCC_ERROR, "cannot write '%s': %s", path, strerror(errno));
			free(path);
			roll_back(x);
			return rc;
		}
		free(path);
	}
	sync_directory(x->dir);
	if (opts->before_commit) {
		gpucc_extract_file *list = calloc(x->file_count + 1, sizeof *list);
		if (!list) {
			roll_back(x);
			return gpucc_error_oom();
		}
		for (size_t i = 0; i < x->file_count; i++)
			list[i] = (gpucc_extract_file){x->files[i].name, x->files[i].payload};
		int rc = opts->before_commit(opts->ctx, list, x->file_count);
		free(list);
		if (rc != 0) {
			roll_back(x);
			return rc < 0 ? rc : GPUCC_ERROR;
		}
	}
	for (size_t i = 0; i < x->file_count; i++) {
		if (x->files[i].backup)
			unlink(x->files[i].backup);
		free(x->files[i].backup);
		x->files[i].backup = NULL;
	}
	return 0;
}

/* The process's umask, read without changing it (umask(2) can only set it,
 * which would race with other threads creating files): /proc/self/status
 * has it since Linux 4.7; 022 where it cannot be read. */
static mode_t process_umask(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[128];
	unsigned mask = 022;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "Umask: %o", &mask) == 1)
			break;
	if (f)
		fclose(f);
	return (mode_t)(mask & 0777);
}

void gpucc_extract_options_init(gpucc_extract_options *opts)
{
	GPUCC_REQUIRE_VOID(opts);
	*opts = (gpucc_extract_options)GPUCC_EXTRACT_OPTIONS_INIT;
}

/* The caller's options (NULL: the defaults) as this libgpucc's struct, in
 * *out: a version 1 struct, which ends at ctx and may be that short, with
 * the later fields' defaults.  GPUCC_EINVALID for another version, or keys
 * counted but missing. */
static int read_options(gpucc_extract_options *out, const gpucc_extract_options *opts)
{
	*out = (gpucc_extract_options)GPUCC_EXTRACT_OPTIONS_INIT;
	if (!opts)
		return 0;
	if (opts->version != 1 && opts->version != GPUCC_EXTRACT_OPTIONS_VERSION)
		return gpucc_error_set(GPUCC_EINVALID,
		                       "extract options of version %u: this libgpucc knows versions 1 "
		                       "and %u (set the field version, or start from the header's _INIT)",
		                       opts->version, GPUCC_EXTRACT_OPTIONS_VERSION);
	memcpy(out, opts, opts->version == 1 ? offsetof(gpucc_extract_options, keys) : sizeof *out);
	if (out->key_count != 0 && !out->keys)
		return gpucc_error_null_argument("gpucc_image_extract", "opts->keys");
	for (size_t i = 0; i < out->key_count; i++)
		if (!out->keys[i])
			return gpucc_error_null_element("gpucc_image_extract", "opts->keys", i);
	return 0;
}

int gpucc_image_extract(gpucc_image *img, const char *dir, const gpucc_extract_options *opts)
{
	GPUCC_REQUIRE(img);
	GPUCC_REQUIRE(dir);
	gpucc_extract_options o;
	int rc = read_options(&o, opts);
	if (rc)
		return rc;
	opts = &o;
	if (!*dir)
		return gpucc_error_set(GPUCC_EINVALID, "an empty string is not a directory");
	extraction x = {.img = img, .dir = dir, .force = opts->force};
	x.mode = 0666 & ~process_umask();
	/* Inputs are never modified: force would rename a payload over the
	 * image (or a link to it) named like one of its outputs.  An image
	 * opened from a file is named by its path. */
	x.image_known = stat(gpucc_image_name(img), &x.image) == 0;
	if ((rc = plan(&x, opts)) != 0)
		goto cleanup;
	if (make_directory(&x) != 0) {
		rc = gpucc_error_set(GPUCC_ERROR, "cannot create directory '%s': %s", x.dir,
		                     strerror(errno));
		goto cleanup;
	}
	if ((rc = check_existing(&x)) != 0 || (rc = write_new_files(&x)) != 0)
		goto cleanup;
	rc = publish(&x, opts);
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
	/* Only empty ones go: leave nothing we made. */
	remove_made_directories(&x, rc != 0);
	return rc;
}
