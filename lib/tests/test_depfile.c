/*
 * lib/tests/test_depfile.c -- clang's dependency lists as the direct-mode
 * records read them (gpucc_depfile_parse, lib/compile/compile_depfile.c): the rule's
 * target left out, paths split on unescaped blanks and line continuations,
 * "\ ", "\#" and "$$" unescaped, other backslashes kept; text that holds
 * no rule refused, and so is a NUL byte; damaged text never crashes; and
 * what gpucc_depfile_write refuses (a path ending in a backslash) and
 * writes back.
 */
#include "check.h"

#include "compile_source.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void parses(const char *text, size_t want_count, const char *const *want)
{
	gpucc_depfile d;
	CHECK_INT(gpucc_depfile_parse(&d, text, strlen(text)), 0);
	CHECK_INT(d.count, want_count);
	for (size_t i = 0; i < want_count && i < d.count; i++)
		CHECK_STR(d.paths[i], want[i]);
	gpucc_depfile_release(&d);
}

int main(void)
{
	static const char *const plain[] = {"k.hip", "/usr/include/hip/hip_runtime.h", "inc/a.h"};
	parses("/tmp/gpucc-backend-1-x/0.bc: k.hip \\\n  /usr/include/hip/hip_runtime.h \\\n  inc/a.h\n",
	       3, plain);
	static const char *const escaped[] = {"my dir/k.hip", "a#b.h", "c$d.h", "back\\slash.h"};
	parses("out.bc: my\\ dir/k.hip a\\#b.h c$$d.h back\\slash.h\n", 4, escaped);
	/* CRLF line ends and tabs, as some tools write them. */
	static const char *const crlf[] = {"a.cu", "b.h"};
	parses("o.bc:\ta.cu \\\r\n\tb.h\r\n", 2, crlf);
	/* No dependency at all, and a rule at the end of the text. */
	parses("o.bc:\n", 0, NULL);
	parses("o.bc:", 0, NULL);

	gpucc_depfile d;
	CHECK_INT(gpucc_depfile_parse(&d, "no rule here\n", 13), GPUCC_ECORRUPT);
	/* A NUL byte would end the path it is in. */
	CHECK_INT(gpucc_depfile_parse(&d, "o.bc: a.h\0b.h\n", 14), GPUCC_ECORRUPT);
	CHECK(strstr(gpucc_error_last()->message, "NUL byte, at byte 9") != NULL);
	CHECK(d.count == 0 && d.paths == NULL);
	CHECK_INT(gpucc_depfile_parse(&d, "", 0), GPUCC_ECORRUPT);
	/* Every prefix of a list: parsed or refused, never a crash. */
	const char *list = "o.bc: a\\ b.h \\\n c$$.h d\\#.h\n";
	for (size_t n = 0; n <= strlen(list); n++) {
		char *copy = malloc(n ? n : 1);
		memcpy(copy, list, n);
		if (gpucc_depfile_parse(&d, copy, n) == 0)
			gpucc_depfile_release(&d);
		free(copy);
	}

	/* Written back: a path ending in a backslash has no spelling that
	 * reads back alone; the write refuses it and leaves no file. */
	CHECK(check_dir_create("test_depfile") == 0);
	const char *out = path_in_dir("k.d");
	const char *const trailing[] = {"a.h", "dir\\"};
	CHECK_INT(gpucc_depfile_write(out, "k.o", trailing, 2), GPUCC_EINVALID);
	CHECK(strstr(gpucc_error_last()->message, "ends in a backslash") != NULL);
	CHECK(access(out, F_OK) != 0);
	const char *const inside[] = {"a\\b.h", "c d.h"};
	CHECK_INT(gpucc_depfile_write(out, "k.o", inside, 2), 0);
	size_t size = 0;
	char *text = check_read_file(out, &size);
	CHECK(text != NULL);
	if (text) {
		CHECK_INT(gpucc_depfile_parse(&d, text, size), 0);
		CHECK_INT(d.count, 2);
		if (d.count == 2) {
			CHECK_STR(d.paths[0], inside[0]);
			CHECK_STR(d.paths[1], inside[1]);
		}
		gpucc_depfile_release(&d);
		free(text);
	}
	check_dir_remove();
	return check_failures ? 1 : 0;
}
