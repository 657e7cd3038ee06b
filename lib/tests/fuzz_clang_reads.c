/*
 * lib/tests/fuzz_clang_reads.c -- fuzz target: what direct mode reads of a
 * source's compile besides clang's dependency list
 * (lib/compile/compile_source_reads.c): the input's first byte picks
 *
 *   0: clang -v's stderr, as gpucc_clang_verbose_take takes -v's own lines
 *      out of it: what remains is lines of the input, whole and in order,
 *      and every directory, configuration file and path it took is bytes
 *      of the input;
 *   1: a source's text, as gpucc_source_text_scan finds the time macros and
 *      the names __has_include and __has_embed ask for: the macro is one of
 *      the three, spelt in the input, and each name is spelt in it, once
 *      in the list;
 *   2: a response file, and 3: a configuration file (written to a scratch
 *      file and named as "@FILE", or as clang's configuration file), as
 *      gpucc_argument_files reads them and what they name in turn: it ends
 *      (a file naming itself included), every file it lists is a regular
 *      file, listed once, the first the one named, and every file it lists
 *      as absent is none.
 */
#include "fuzz.h"

#include "compile_source.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool in_input(const char *text, size_t size, const char *s)
{
	size_t n = strlen(s);
	return n <= size && memmem(text, size, s, n) != NULL;
}

static bool list_in_input(const gpucc_strlist *l, const char *text, size_t size)
{
	for (size_t i = 0; i < l->count; i++)
		if (!in_input(text, size, l->items[i]))
			return false;
	return true;
}

static void verbose(const char *input, size_t size)
{
	char *err = malloc(size + 1), *copy = malloc(size + 1);
	if (!err || !copy)
		fuzz_fail("out of memory");
	memcpy(err, input, size);
	err[size] = '\0';
	memcpy(copy, err, size + 1);
	size_t text_size = strlen(copy); /* clang's stderr is read as a C string */
	gpucc_clang_search s = {0};
	gpucc_clang_verbose_take(err, &s);
	/* What remains: whole lines of the input, in order. */
	const char *from = copy;
	for (const char *p = err; *p;) {
		size_t len = strcspn(p, "\n");
		bool newline = p[len] == '\n';
		bool found = false;
		while (*from && !found) {
			size_t flen = strcspn(from, "\n");
			found = flen == len && memcmp(from, p, len) == 0 && (from[flen] == '\n') == newline;
			from += flen + (from[flen] == '\n');
		}
		if (!found)
			fuzz_fail("what -v's lines leave is not lines of the input, in order");
		p += len + newline;
	}
	if (!list_in_input(&s.configs, copy, text_size) || !list_in_input(&s.quote, copy, text_size) ||
	    !list_in_input(&s.angle, copy, text_size) || !list_in_input(&s.missing, copy, text_size))
		fuzz_fail("a directory or configuration file that the input does not spell");
	if ((s.installed_dir && !in_input(copy, text_size, s.installed_dir)) ||
	    (s.resource_dir && !in_input(copy, text_size, s.resource_dir)) ||
	    (s.hip_found && !in_input(copy, text_size, s.hip_found)))
		fuzz_fail("a path that the input does not spell");
	gpucc_clang_search_release(&s);
	free(err);
	free(copy);
}

static void source_text(const char *text, size_t size)
{
	const char *time_macro = NULL;
	gpucc_strlist names = {0};
	gpucc_source_text_scan(text, size, &time_macro, &names);
	if (time_macro) {
		if (strcmp(time_macro, "__DATE__") != 0 && strcmp(time_macro, "__TIME__") != 0 &&
		    strcmp(time_macro, "__TIMESTAMP__") != 0)
			fuzz_fail("a time macro that is none of the three");
		if (!in_input(text, size, time_macro))
			fuzz_fail("a time macro that the text does not spell");
	}
	if (!names.failed) {
		for (size_t i = 0; i < names.count; i++) {
			if (!*names.items[i] || !in_input(text, size, names.items[i]))
				fuzz_fail("an included name that the text does not spell");
			for (size_t k = 0; k < i; k++)
				if (strcmp(names.items[k], names.items[i]) == 0)
					fuzz_fail("an included name listed twice");
		}
	}
	gpucc_strlist_release(&names);
}

static bool regular(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void argument_file(const uint8_t *data, size_t size, bool config)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/args.rsp", fuzz_scratch_dir());
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		fuzz_fail("cannot write the argument file");
	char at[4100];
	snprintf(at, sizeof at, "@%s", path);
	const char *args[] = {"-O2", at};
	gpucc_strlist configs = {0}, files = {0}, absent = {0};
	if (config)
		gpucc_strlist_push(&configs, path, strlen(path));
	gpucc_argument_files(args, config ? 1 : 2, &configs, &files, &absent);
	if (!files.failed) {
		if (files.count == 0 || strcmp(files.items[0], path) != 0)
			fuzz_fail("the file named is not listed first");
		for (size_t i = 0; i < files.count; i++) {
			if (!regular(files.items[i]))
				fuzz_fail("a file listed that is not a regular file");
			for (size_t k = 0; k < i; k++)
				if (strcmp(files.items[k], files.items[i]) == 0)
					fuzz_fail("a file listed twice");
		}
	}
	for (size_t i = 0; i < absent.count; i++)
		if (regular(absent.items[i]))
			fuzz_fail("a file listed as absent that is a regular file");
	gpucc_strlist_release(&configs);
	gpucc_strlist_release(&files);
	gpucc_strlist_release(&absent);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	const char *text = (const char *)data + 1;
	switch (data[0] % 4) {
	case 0: verbose(text, size - 1); break;
	case 1: source_text(text, size - 1); break;
	default: argument_file(data + 1, size - 1, data[0] % 4 == 3); break;
	}
	return 0;
}

void fuzz_seeds(void (*add)(const void *data, size_t size))
{
	static const char *seeds[] = {
		("\x00" "Debian clang version 19.1.7 (3)\nTarget: x86_64-pc-linux-gnu\nThread model: posix\n"
		 "InstalledDir: /usr/lib/llvm-19/bin\nFound HIP installation: /usr, version 5.2.21153\n"
		 "Configuration file: /etc/clang/x.cfg\n"
		 " \"/usr/lib/llvm-19/bin/clang\" -cc1 -resource-dir /usr/lib/llvm-19/lib/clang/19 -x hip k.hip\n"
		 "clang -cc1 version 19.1.7 based upon LLVM 19.1.7 default target x86_64-pc-linux-gnu\n"
		 "ignoring nonexistent directory \"/usr/local/include\"\n"
		 "#include \"...\" search starts here:\n inc dir\n"
		 "#include <...> search starts here:\n /usr/include\n /System (framework directory)\n"
		 "End of search list.\nk.hip:3:1: warning: something\n"),
		("\x01" "#if __has_include(<hip/hip_runtime.h>) && __has_include_next (\"a.h\")\n"
		 "const char *when = __DATE__ \" \" __TIME__;\n#embed __has_embed(<data.bin>)\n"
		 "int x__TIMESTAMP__y; __has_include(NAME)\n"),
		("\x02" "-O3 \"-I inc dir\" 'a b' @args.rsp -DX=\\\"y\\\" \\\n -fprofile-use=/tmp\n"),
		("\x03" "# a configuration file\n  --target=amdgcn-amd-amdhsa\n@nested.cfg -isystem /usr/include\n"),
	};
	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
		add(seeds[i], strlen(seeds[i] + 1) + 1);
}
