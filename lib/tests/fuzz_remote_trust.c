/*
 * lib/tests/fuzz_remote_trust.c -- fuzz target: a remote's trust file
 * (trust=KEYS-FILE, formats/remote.md "Signatures"), parsed whole by
 * gpucc_remote_parse_trusted_keys.  A refusal names a reason and a line
 * within the input and leaves no keys; an accepted file gives at least one
 * key, each of which is spelt, in hex, on a line of the input outside any
 * comment.
 */
#include "fuzz.h"

#include "remote_impl.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Whether the 64 hex digits of key start a line's content (after blanks)
 * in text, before any '#' on that line. */
static bool spelt_on_a_line(const char *text, size_t size, const unsigned char key[32])
{
	char hex[65];
	for (size_t i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", key[i]);
	const char *p = text, *end = text + size;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *stop = nl ? nl : end;
		while (p < stop && (*p == ' ' || *p == '\t'))
			p++;
		if (stop - p >= 64) {
			bool same = true;
			for (size_t i = 0; i < 64 && same; i++)
				same = tolower((unsigned char)p[i]) == hex[i];
			if (same)
				return true;
		}
		p = nl ? nl + 1 : end;
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	unsigned char(*keys)[32] = NULL;
	size_t count = 0, line = 0, lines = 1;
	const char *why = NULL;
	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';
	int rc = gpucc_remote_parse_trusted_keys(text, size, &keys, &count, &line, &why);
	if (rc != 0) {
		if (!why || !*why)
			fuzz_fail("a refusal without a reason");
		if (keys || count)
			fuzz_fail("a refusal left keys");
		if (line > lines)
			fuzz_fail("a refusal names a line past the input's end");
		return 0;
	}
	if (count == 0 || !keys)
		fuzz_fail("accepted with no key");
	for (size_t k = 0; k < count; k++)
		if (!spelt_on_a_line(text, size, keys[k]))
			fuzz_fail("a key that no line of the input spells");
	free(keys);
	return 0;
}

void fuzz_seeds(void (*add)(const void *data, size_t size))
{
	static const char *seeds[] = {
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n",
		"# ci writer\n  E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855 # x\r\n\n",
		("\t0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
		 "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"),
		"# nothing but comments\n\n",
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 extra\n",
	};
	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
		add(seeds[i], strlen(seeds[i]));
}
