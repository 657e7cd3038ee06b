/*
 * lib/compile_depfile.c -- reading the dependency list clang writes with
 * -MD -MF (a make rule, "OUTPUT: DEP DEP \<newline> DEP..."): the files a
 * compile of a source read, for the direct-mode records of
 * lib/compile_source.c.
 *
 * clang spells a path's blank as "\ ", a '#' as "\#" and a '$' as "$$";
 * a backslash before anything else is part of the path.  A rule's target
 * ends at the first ": " (or ':' at the end of a line): clang's target here
 * is the output file gpucc names, which holds no such sequence.
 */
#include "compile_source.h"

#include "errors.h"

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
