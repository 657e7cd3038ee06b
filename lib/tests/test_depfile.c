/*
 * lib/tests/test_depfile.c -- clang's dependency lists as the direct-mode
 * records read them (gpucc_depfile_parse, lib/compile/compile_depfile.c): the rule's
 * target left out, paths split on unescaped blanks and line continuations,
 * "\ ", "\#" and "$$" unescaped, other backslashes kept; text that holds
 * no rule refused; damaged text never crashes.
 */
#include "check.h"

#include "compile_source.h"

#include <stdlib.h>
#include <string.h>

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
	return check_failures ? 1 : 0;
}
