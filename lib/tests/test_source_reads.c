/*
 * lib/tests/test_source_reads.c -- what direct mode reads of a compile
 * besides clang's -MD list (lib/compile/compile_source_reads.c): clang -v's lines
 * taken out of its diagnostics, with the search list, the directories it
 * ignored, the configuration files it read, where it is installed and the
 * HIP installation it found; the files arguments name,
 * response and configuration files read as clang reads them (quotes,
 * escapes, comments, continuations, nesting and its bound, a missing one);
 * the time macros and __has_include names a text asks for, whole words
 * only.  Damaged input never crashes.
 */
#include "check.h"

#include "compile_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void check_list(const gpucc_strlist *l, size_t count, const char *const *want)
{
	CHECK_INT(l->count, count);
	for (size_t i = 0; i < count && i < l->count; i++)
		CHECK_STR(l->items[i], want[i]);
	CHECK(!l->failed);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void verbose(void)
{
	char err[] = "clang-19: warning: argument unused during compilation: '-x' [-Wunused]\n"
	             "Debian clang version 19.1.7 (3~deb12u1)\n"
	             "Target: amdgcn-amd-amdhsa\n"
	             "Thread model: posix\n"
	             "InstalledDir: /usr/lib/llvm-19/bin\n"
	             "Configuration file: /p/./x.cfg\n"
	             "Found HIP installation: /usr, version 5.2.21153\n"
	             " (in-process)\n"
	             " \"/usr/lib/llvm-19/bin/clang\" -cc1 -triple amdgcn-amd-amdhsa -v -resource-dir "
	             "/usr/lib/llvm-19/lib/clang/19 -x cl k.cl\n"
	             "clang -cc1 version 19.1.7 based upon LLVM 19.1.7 default target x86_64\n"
	             "ignoring nonexistent directory \"gen\"\n"
	             "ignoring duplicate directory \"inc\"\n"
	             "#include \"...\" search starts here:\n"
	             " quoted\n"
	             "#include <...> search starts here:\n"
	             " inc\n"
	             " /Library/Frameworks (framework directory)\n"
	             " /usr/include\n"
	             "End of search list.\n"
	             "k.cl:1:5: warning: unused variable 'x'\n"
	             "    1 | int x;\n"
	             "      |     ^\n";
	gpucc_clang_search s = {0};
	gpucc_clang_verbose_take(err, &s);
	/* The diagnostics stay as clang wrote them, the driver's too. */
	CHECK_STR(err, "clang-19: warning: argument unused during compilation: '-x' [-Wunused]\n"
	               "k.cl:1:5: warning: unused variable 'x'\n"
	               "    1 | int x;\n"
	               "      |     ^\n");
	static const char *const quote[] = {"quoted"};
	static const char *const angle[] = {"inc", "/Library/Frameworks", "/usr/include"};
	static const char *const missing[] = {"gen"};
	static const char *const configs[] = {"/p/./x.cfg"};
	check_list(&s.quote, 1, quote);
	check_list(&s.angle, 3, angle);
	check_list(&s.missing, 1, missing);
	check_list(&s.configs, 1, configs);
	CHECK(s.installed_dir && strcmp(s.installed_dir, "/usr/lib/llvm-19/bin") == 0);
	CHECK(s.resource_dir && strcmp(s.resource_dir, "/usr/lib/llvm-19/lib/clang/19") == 0);
	CHECK(s.hip_found && strcmp(s.hip_found, "/usr") == 0);
	gpucc_clang_search_release(&s);

	/* A driver that failed before -v's search list: its error stays. */
	char failed[] = "clang version 19.1.7\nTarget: x\nclang-19: error: unknown argument: '-fx'\n";
	gpucc_clang_verbose_take(failed, &s);
	CHECK_STR(failed, "clang-19: error: unknown argument: '-fx'\n");
	CHECK_INT(s.angle.count, 0);
	gpucc_clang_search_release(&s);
}

static void argument_files(void)
{
	char dir[] = "/tmp/gpucc-test-reads-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char cwd[4096];
	CHECK(getcwd(cwd, sizeof cwd) != NULL);
	CHECK_INT(chdir(dir), 0);
	CHECK_INT(system("mkdir -p cfg sub"), 0);
	write_file("a.rsp", "-DX=1 '@b.rsp' \"-Xclang\" lib\\ 1.bc @missing.rsp\n");
	write_file("b.rsp", "-fprofile-use=p.prof -Isub\n");
	write_file("lib 1.bc", "x");
	write_file("p.prof", "x");
	write_file("cfg/x.cfg", "# a comment naming @not-read.rsp\n  -DY=2 \\\n @nested.rsp\n");
	write_file("cfg/nested.rsp", "-O1\n");
	write_file("self.rsp", "@self.rsp\n"); /* clang refuses this; gpucc must end */
	/* 2^40 expansions if each were followed every time it is named. */
	write_file("fan.rsp", "@fan.rsp @fan.rsp @fan.rsp @fan.rsp @fan.rsp @fan.rsp\n");
	static const char *const args[] = {"-I",       "sub",      "@a.rsp",
	                                   "@self.rsp", "@fan.rsp", "-include",
	                                   "p.prof",    "-fprofile-use=sub"};
	gpucc_strlist configs = {0}, files = {0}, absent = {0};
	gpucc_strlist_push_new(&configs, "cfg/x.cfg");
	gpucc_argument_files(args, sizeof args / sizeof args[0], &configs, &files, &absent);
	static const char *const want_files[] = {"a.rsp",   "b.rsp",     "p.prof",        "lib 1.bc",
	                                         "self.rsp", "fan.rsp", "cfg/x.cfg", "cfg/nested.rsp"};
	static const char *const want_absent[] = {"missing.rsp", "sub/default.profdata"};
	check_list(&files, 8, want_files);
	check_list(&absent, 2, want_absent);
	gpucc_strlist_release(&configs);
	gpucc_strlist_release(&files);
	gpucc_strlist_release(&absent);
	CHECK_INT(chdir(cwd), 0);
	char rm[128];
	snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
	CHECK_INT(system(rm), 0);
}

static void text_scan(void)
{
	const char *text = "#define MY__TIME__X 1\n"
	                   "#if __has_include(<a/b.h>) && __has_include_next ( \"c.h\" )\n"
	                   "#elif __has_include(NAME) || __has_include(<a/b.h>)\n"
	                   "#elif __has_embed(\"data.bin\" limit(4))\n"
	                   "#endif\n"
	                   "const char *d = __DATE__;\n";
	const char *macro = NULL;
	gpucc_strlist names = {0};
	gpucc_source_text_scan(text, strlen(text), &macro, &names);
	CHECK(macro != NULL && strcmp(macro, "__DATE__") == 0);
	static const char *const want[] = {"a/b.h", "c.h", "data.bin"};
	check_list(&names, 3, want);
	gpucc_strlist_release(&names);
	/* A longer identifier is not the macro. */
	macro = NULL;
	const char *longer = "int __TIME__s, x__TIMESTAMP__;";
	gpucc_source_text_scan(longer, strlen(longer), &macro, &names);
	CHECK(macro == NULL);
	/* Every prefix of the text: scanned, never read past its end. */
	for (size_t n = 0; n <= strlen(text); n++) {
		char *copy = malloc(n ? n : 1);
		memcpy(copy, text, n);
		macro = NULL;
		gpucc_source_text_scan(copy, n, &macro, &names);
		free(copy);
	}
	gpucc_strlist_release(&names);
}

int main(void)
{
	verbose();
	argument_files();
	text_scan();
	return check_failures ? 1 : 0;
}
