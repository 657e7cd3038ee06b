/*
 * lib/tests/fuzz_depfile.c -- fuzz target: the dependency lists clang
 * writes with -MD -MF (one make rule), as gpucc_depfile_parse
 * (lib/compile/compile_depfile.c) reads them for the direct-mode records of
 * sources.  The input is the file's bytes.  A refusal is GPUCC_ECORRUPT with
 * a message and leaves nothing; an accepted list has no empty path and none
 * holding a blank other than a space or a line break (the separators), and
 * written back by gpucc_depfile_write (compile --depfile) it parses again
 * to the same paths, sorted and each once.
 *
 * A list with a NUL byte is refused.  A path that ends in a backslash
 * cannot be spelt apart from what follows it ("\ " is an escaped blank,
 * "\<newline>" a continuation): the writer refuses it (GPUCC_EINVALID) and
 * leaves no file.
 */
#include "fuzz.h"

#include "compile_source.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int compare_paths(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* d's paths sorted, each once, into a new array (*count of them). */
static char **sorted_unique(const gpucc_depfile *d, size_t *count)
{
	char **paths = malloc((d->count ? d->count : 1) * sizeof *paths);
	if (!paths)
		fuzz_fail("out of memory");
	if (d->count) /* d->paths is NULL for a rule without prerequisites */
		memcpy(paths, d->paths, d->count * sizeof *paths);
	qsort(paths, d->count, sizeof *paths, compare_paths);
	size_t n = 0;
	for (size_t i = 0; i < d->count; i++)
		if (n == 0 || strcmp(paths[n - 1], paths[i]) != 0)
			paths[n++] = paths[i];
	*count = n;
	return paths;
}

static char *read_back(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		fuzz_fail("the written dependency file cannot be opened");
	char *text = NULL;
	size_t used = 0, capacity = 0;
	for (;;) {
		if (used == capacity) {
			capacity = capacity ? 2 * capacity : 4096;
			char *grown = realloc(text, capacity);
			if (!grown)
				fuzz_fail("out of memory");
			text = grown;
		}
		size_t n = fread(text + used, 1, capacity - used, f);
		used += n;
		if (n == 0)
			break;
	}
	fclose(f);
	*size = used;
	return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gpucc_depfile d;
	int rc = gpucc_depfile_parse(&d, (const char *)data, size);
	if (rc != 0) {
		if (rc != GPUCC_ECORRUPT && rc != GPUCC_ERROR)
			fuzz_fail("a refusal that is neither GPUCC_ECORRUPT nor out of memory");
		if (!*gpucc_error_last()->message)
			fuzz_fail("a refusal without a message");
		if (d.count || d.paths)
			fuzz_fail("a refusal left paths");
		return 0;
	}
	if (memchr(data, '\0', size))
		fuzz_fail("a list holding a NUL byte was taken");
	bool ends_in_backslash = false;
	for (size_t i = 0; i < d.count; i++) {
		const char *p = d.paths[i];
		size_t len = strlen(p);
		if (len == 0)
			fuzz_fail("an empty path");
		if (strpbrk(p, "\t\n\r"))
			fuzz_fail("a path holding a separator");
		ends_in_backslash |= p[len - 1] == '\\';
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/k.d", fuzz_scratch_dir());
	if (ends_in_backslash) {
		size_t n;
		char **want = sorted_unique(&d, &n);
		if (gpucc_depfile_write(path, "k.o", (const char *const *)want, n) != GPUCC_EINVALID)
			fuzz_fail("a path ending in a backslash was written");
		if (access(path, F_OK) == 0)
			fuzz_fail("a refused write left its file");
		free(want);
	} else {
		size_t n;
		char **want = sorted_unique(&d, &n);
		if (gpucc_depfile_write(path, "k.o", (const char *const *)want, n) != 0)
			fuzz_fail("an accepted list cannot be written back");
		size_t written_size;
		char *written = read_back(path, &written_size);
		gpucc_depfile again;
		if (gpucc_depfile_parse(&again, written, written_size) != 0)
			fuzz_fail("a list written back does not parse");
		if (again.count != n)
			fuzz_fail("a list written back parses to another number of paths");
		for (size_t i = 0; i < n; i++)
			if (strcmp(again.paths[i], want[i]) != 0)
				fuzz_fail("a list written back parses to other paths");
		gpucc_depfile_release(&again);
		free(written);
		free(want);
		unlink(path);
	}
	gpucc_depfile_release(&d);
	return 0;
}

void fuzz_seeds(void (*add)(const void *data, size_t size))
{
	static const char *seeds[] = {
		"k.o: src/k.hip /usr/include/hip/hip_runtime.h \\\n  inc\\ dir\\#1/op$$x.h flags.rsp\n",
		"/tmp/gpucc-1/k.bc: \\\n  /work/a.cu \\\n  /usr/lib/llvm-19/lib/clang/19/include/__clang_cuda_runtime_wrapper.h\n",
		"k.o: a.h\nb.h:\n",
		"k.o:\n",
		"no rule here\n",
		"C:\\x.o: C:\\src\\k.hip\r\n",
		"k.o: dir\\ \\\n  b.h\n",
	};
	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
		add(seeds[i], strlen(seeds[i]));
}
