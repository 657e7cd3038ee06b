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
 * once, front to back) into temporary files in DIR, each verified against
 * its digest; only when every payload is good are the temporary files
 * flushed and renamed to their names, and the directory flushed (README,
 * "Atomic outputs").  A payload shared by several entries is read once and
 * copied for the others.  Existing files are refused before anything is
 * written, unless --force; without it, a rename that fails after others
 * succeeded (a name that appeared meanwhile) removes the files this run
 * published, so that a failed extraction leaves nothing behind.
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

/* One file to write: which image payload it holds, its name in DIR, and the
 * temporary file that holds its verified bytes before publishing. */
typedef struct output_file {
	size_t payload_index;
	char *name;
	char *temp; /* NULL until written */
	bool published; /* renamed to its name, a name that was free */
} output_file;

typedef struct extraction {
	const cmd_args *args;
	gpucc_image *img;
	const char *dir;
	output_file *files;
	size_t file_count;
	mode_t mode;
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

static char *join_path(const char *dir, const char *name)
{
	size_t len = strlen(dir) + 1 + strlen(name) + 1;
	char *path = malloc(len);
	if (path)
		snprintf(path, len, "%s/%s", dir, name);
	return path;
}

/* mkdir -p: create dir and any missing parents. */
static int make_directory(const char *dir)
{
	struct stat st;
	if (stat(dir, &st) == 0)
		return S_ISDIR(st.st_mode) ? 0 : (errno = ENOTDIR, -1);
	char *copy = strdup(dir);
	if (!copy)
		return -1;
	for (char *p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, 0777) != 0 && errno != EEXIST) {
			free(copy);
			return -1;
		}
		*p = '/';
	}
	free(copy);
	return mkdir(dir, 0777) == 0 || errno == EEXIST ? 0 : -1;
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

/* Copy the whole file at from (already verified) to fd. */
static int copy_file(const char *from, int fd)
{
	char buffer[1 << 16];
	int in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -1;
	ssize_t n;
	while ((n = read(in, buffer, sizeof buffer)) > 0) {
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(fd, buffer + done, (size_t)(n - done));
			if (w < 0) {
				if (errno == EINTR)
					continue;
				close(in);
				return -1;
			}
			done += w;
		}
	}
	int saved = errno;
	close(in);
	errno = saved;
	return n < 0 ? -1 : 0;
}

/* Write every file to its temporary, in archive order. */
static int write_temporaries(extraction *x)
{
	for (size_t i = 0; i < x->file_count; i++) {
		output_file *f = &x->files[i];
		const output_file *first =
			i > 0 && x->files[i - 1].payload_index == f->payload_index ? &x->files[i - 1] : NULL;
		int fd = open_temp(x, &f->temp);
		if (fd < 0)
			return cmd_error(x->args, EXIT_FAIL, "cannot create a file in '%s': %s", x->dir,
			                 strerror(errno));
		/* Errors name the file being extracted, not its temporary. */
		char *path = join_path(x->dir, f->name);
		if (!path) {
			close(fd);
			return cmd_error(x->args, EXIT_FAIL, "out of memory");
		}
		int rc = EXIT_OK;
		if (first) {
			if (copy_file(first->temp, fd) != 0)
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
		if (close(fd) != 0 && rc == EXIT_OK)
			rc = cmd_error(x->args, EXIT_FAIL, "cannot write '%s': %s", path, strerror(errno));
		free(path);
		if (rc != EXIT_OK)
			return rc;
	}
	return EXIT_OK;
}

/* Remove the files publish renamed into place before it failed: without
 * --force, each had a free name, so it is this run's own. */
static void unpublish(extraction *x)
{
	for (size_t i = 0; i < x->file_count; i++) {
		if (!x->files[i].published)
			continue;
		char *path = join_path(x->dir, x->files[i].name);
		if (path)
			unlink(path);
		free(path);
		x->files[i].published = false;
	}
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

/* Rename temporaries to their names; without --force, never replace a file
 * that appeared since check_existing.  Names are printed only once all are
 * in place. */
static int publish(extraction *x, bool quiet, bool dir_given)
{
	bool force = cmd_flag(x->args, "force");
	for (size_t i = 0; i < x->file_count; i++) {
		output_file *f = &x->files[i];
		char *path = join_path(x->dir, f->name);
		if (!path)
			return cmd_error(x->args, EXIT_FAIL, "out of memory");
		int ok;
		if (force) {
			ok = rename(f->temp, path) == 0;
		} else {
			ok = renameat2(AT_FDCWD, f->temp, AT_FDCWD, path, RENAME_NOREPLACE) == 0;
			if (!ok && (errno == EINVAL || errno == ENOSYS)) {
				/* No RENAME_NOREPLACE here: link() refuses existing names too. */
				ok = link(f->temp, path) == 0;
				if (ok)
					unlink(f->temp);
			}
		}
		if (!ok) {
			int rc = errno == EEXIST
			                 ? cmd_error(x->args, EXIT_FAIL,
			                             "'%s' already exists (use --force to overwrite)", path)
			                 : cmd_error(x->args, EXIT_FAIL, "cannot write '%s': %s", path,
			                             strerror(errno));
			free(path);
			if (!force)
				unpublish(x);
			return rc;
		}
		free(f->temp);
		f->temp = NULL;
		f->published = true;
		free(path);
	}
	sync_directory(x->dir);
	for (size_t i = 0; i < x->file_count && !quiet; i++) {
		if (dir_given) {
			char *path = join_path(x->dir, x->files[i].name);
			printf("%s\n", path ? path : x->files[i].name);
			free(path);
		} else {
			printf("%s\n", x->files[i].name);
		}
	}
	return EXIT_OK;
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

static int run_extract(const cmd_args *args)
{
	const char *dir_option = cmd_value(args, "directory");
	extraction x = {.args = args, .dir = dir_option && *dir_option ? dir_option : "."};
	bool created_dir = false;
	int rc;

	mode_t mask = umask(0);
	umask(mask);
	x.mode = 0666 & ~mask;

	if (gpucc_image_open(&x.img, args->positional[0]) != 0) {
		rc = cmd_fail(args);
		goto cleanup;
	}
	if ((rc = plan(&x)) != EXIT_OK)
		goto cleanup;
	struct stat st;
	created_dir = stat(x.dir, &st) != 0;
	if (make_directory(x.dir) != 0) {
		created_dir = false;
		rc = cmd_error(args, EXIT_FAIL, "cannot create directory '%s': %s", x.dir,
		               strerror(errno));
		goto cleanup;
	}
	if ((rc = check_existing(&x)) != EXIT_OK || (rc = write_temporaries(&x)) != EXIT_OK)
		goto cleanup;
	bool json = cmd_flag(args, "json");
	rc = publish(&x, json || cmd_flag(args, "quiet"), dir_option != NULL);
	if (rc == EXIT_OK && json)
		print_json(&x);
cleanup:
	for (size_t i = 0; i < x.file_count; i++) {
		if (x.files[i].temp) {
			unlink(x.files[i].temp);
			free(x.files[i].temp);
		}
		free(x.files[i].name);
	}
	free(x.files);
	gpucc_image_free(x.img);
	if (rc != EXIT_OK && created_dir)
		rmdir(x.dir); /* only when empty: leave nothing we made */
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
		"verified and flushed before any file appears: a corrupt image, or a failed\n"
		"write, leaves no file behind.\n"
		"Existing files are refused unless --force.  Prints the files written;\n"
		"--json prints {\"image\", \"directory\", \"files\": [{\"name\", \"part\",\n"
		"\"size\", \"sha256\"}, ...]} instead, names relative to the directory.\n"
		"Members that no entry lists are never read; 'gpucc verify' checks them.",
	.options = extract_options,
	.min_positional = 1,
	.max_positional = 1,
	.run = run_extract,
};
