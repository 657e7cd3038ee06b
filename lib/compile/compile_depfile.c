/*
 * lib/compile/compile_depfile.c -- make rules of dependencies: reading the one
 * clang writes with -MD -MF (a make rule, "OUTPUT: DEP DEP \<newline>
 * DEP..."), the files a compile of a source read, for the direct-mode
 * records of lib/compile/compile_source.c; and writing gpucc compile's own
 * (--depfile), spelt the same way.
 *
 * clang spells a path's blank as "\ ", a '#' as "\#" and a '$' as "$$";
 * a backslash before anything else is part of the path.  A rule's target
 * ends at the first ": " (or ':' at the end of a line): clang's target here
 * is the output file gpucc names, which holds no such sequence.  A list
 * with a NUL byte is refused; a path with a line break, or ending in a
 * backslash, cannot be written.
 */
#include "compile_source.h"

#include "atomic_file.h"
#include "errors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int push(gpucc_depfile *d, const char *start, size_t len)
{
	if (d->count == d->capacity) {
		size_t n = d->capacity ? 2 * d->capacity : 64;
		char **grown = realloc(d->paths, n * sizeof *grown);
		if (!grown)
			return gpucc_error_oom();
		d->paths = grown;
		d->capacity = n;
	}
	char *copy = malloc(len + 1);
	if (!copy)
		return gpucc_error_oom();
	size_t used = 0;
	for (size_t i = 0; i < len; i++) {
		char ch = start[i];
		if (ch == '\\' && i + 1 < len && (start[i + 1] == ' ' || start[i + 1] == '#'))
			ch = start[++i];
		else if (ch == '$' && i + 1 < len && start[i + 1] == '$')
			i++;
		copy[used++] = ch;
	}
	copy[used] = '\0';
	d->paths[d->count++] = copy;
	return 0;
}

int gpucc_depfile_parse(gpucc_depfile *out, const char *text, size_t size)
{
	memset(out, 0, sizeof *out);
	/* No file name holds a NUL: a list with one is not clang's (and the
	 * path it is in would end there). */
	const char *nul = memchr(text, '\0', size);
	if (nul)
		return gpucc_error_set(GPUCC_ECORRUPT,
		                       "clang's dependency list holds a NUL byte, at byte %zu",
		                       (size_t)(nul - text));
	size_t i = 0;
	/* The target: up to ": " or ":\n" or ":" at the end. */
	for (; i < size; i++)
		if (text[i] == ':' && (i + 1 == size || text[i + 1] == ' ' || text[i + 1] == '\n' ||
		                       text[i + 1] == '\r' || text[i + 1] == '\t'))
			break;
	if (i == size)
		return gpucc_error_set(GPUCC_ECORRUPT, "clang's dependency list has no rule");
	i++;
	while (i < size) {
		/* Blanks and line continuations between paths. */
		if (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r') {
			i++;
			continue;
		}
		if (text[i] == '\\' && i + 1 < size && (text[i + 1] == '\n' || text[i + 1] == '\r')) {
			i += 2;
			continue;
		}
		size_t start = i;
		while (i < size && text[i] != ' ' && text[i] != '\t' && text[i] != '\n' &&
		       text[i] != '\r') {
			if (text[i] == '\\' && i + 1 < size && (text[i + 1] == ' ' || text[i + 1] == '#'))
				i++;
			i++;
		}
		/* A second rule (clang's -MP phony targets) would end the list:
		 * gpucc does not ask for them. */
		if (i > start && text[i - 1] == ':')
			break;
		int rc = push(out, text + start, i - start);
		if (rc != 0) {
			gpucc_depfile_release(out);
			return rc;
		}
	}
	return 0;
}

void gpucc_depfile_release(gpucc_depfile *d)
{
	for (size_t i = 0; i < d->count; i++)
		free(d->paths[i]);
	free(d->paths);
	memset(d, 0, sizeof *d);
}

/* path into f as a rule spells it (as the parser above reads it back). */
static void put_path(FILE *f, const char *path)
{
	for (const char *p = path; *p; p++) {
		if (*p == ' ' || *p == '#')
			fputc('\\', f);
		else if (*p == '$')
			fputc('$', f);
		fputc(*p, f);
	}
}

static int compare_paths(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int gpucc_depfile_write(const char *path, const char *target, const char *const *deps,
                        size_t count)
{
	for (size_t i = 0; i <= count; i++) {
		const char *p = i < count ? deps[i] : target;
		if (strpbrk(p, "\n\r"))
			return gpucc_error_set(GPUCC_EINVALID,
			                       "'%s': a dependency file cannot name '%s', which holds a "
			                       "line break", path, p);
		/* "\\ " is an escaped blank and "\\<newline>" a continuation: no
		 * spelling keeps a last backslash apart from what follows it. */
		if (*p && p[strlen(p) - 1] == '\\')
			return gpucc_error_set(GPUCC_EINVALID,
			                       "'%s': a dependency file cannot name '%s', which ends in a "
			                       "backslash (make would read it joined to what follows)",
			                       path, p);
	}
	const char **sorted = malloc((count ? count : 1) * sizeof *sorted);
	if (!sorted)
		return gpucc_error_oom();
	memcpy(sorted, deps, count * sizeof *sorted);
	qsort(sorted, count, sizeof *sorted, compare_paths);
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);
	if (!f) {
		free(sorted);
		return gpucc_error_oom();
	}
	put_path(f, target);
	fputc(':', f);
	for (size_t i = 0; i < count; i++) {
		if (i > 0 && strcmp(sorted[i], sorted[i - 1]) == 0)
			continue;
		fputs(" \\\n ", f);
		put_path(f, sorted[i]);
	}
	fputc('\n', f);
	bool failed = ferror(f) != 0;
	failed |= fclose(f) != 0;
	free(sorted);
	if (failed) {
		free(text);
		return gpucc_error_oom();
	}
	gpucc_atomic_file out;
	int rc = gpucc_atomic_file_open(&out, path);
	if (rc == 0 && gpucc_write_all(out.fd, text, size) != 0) {
		rc = gpucc_error_set_errno("cannot write '%s'", path);
		gpucc_atomic_file_abort(&out);
	} else if (rc == 0) {
		rc = gpucc_atomic_file_commit(&out);
	}
	free(text);
	return rc;
}
