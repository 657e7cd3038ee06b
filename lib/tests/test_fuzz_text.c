/*
 * lib/tests/test_fuzz_text.c -- the text form of saved fuzz inputs
 * (lib/tests/fuzz_text.c): exact encodings of small cases, the escapes that
 * keep editors and comments from changing data, bad texts refused, and
 * round trips of pseudo-random buffers.
 */
#include "check.h"
#include "fuzz.h"

void fuzz_fail(const char *what)
{
	fprintf(stderr, "fuzz_fail: %s\n", what);
	abort();
}

/* Decode text; the bytes as a NUL-terminated string (NULL when refused). */
static char *decoded(const char *text, size_t *size)
{
	unsigned char *out;
	char error[128];
	if (fuzz_text_decode(&out, size, text, strlen(text), error) != 0)
		return NULL;
	char *s = realloc(out, *size + 1);
	s[*size] = '\0';
	return s;
}

static void round_trip(const unsigned char *data, size_t size)
{
	char *text = fuzz_text_encode(data, size, "a note\nof two lines");
	CHECK(text != NULL);
	unsigned char *back;
	size_t back_size;
	char error[128];
	CHECK_INT(fuzz_text_decode(&back, &back_size, text, strlen(text), error), 0);
	CHECK_INT(back_size, size);
	CHECK(memcmp(back, data, size) == 0);
	/* What editors do to text must not change the data: no line ends in
	 * a space, and CRLF line ends decode the same. */
	CHECK(strstr(text, " \n") == NULL);
	free(back);
	free(text);
}

static void test_exact_encodings(void)
{
	char *t = fuzz_text_encode((const unsigned char *)"{\"a\": 1}\n", 9, NULL);
	CHECK_STR(t, "{\"a\": 1}\\n\n");
	free(t);
	static const unsigned char tar_like[] = {'u', 's', 't', 'a', 'r', 0, 0, 0, 0, 0, '\\', 0x80};
	t = fuzz_text_encode(tar_like, sizeof tar_like, NULL);
	CHECK_STR(t, "ustar\\x00{5}\\\\\\x80\n");
	free(t);
	t = fuzz_text_encode((const unsigned char *)"#x", 2, "from a test");
	CHECK_STR(t, "# from a test\n\\x23x\n");
	free(t);
	t = fuzz_text_encode((const unsigned char *)"a ", 2, NULL);
	CHECK_STR(t, "a\\x20\n");
	free(t);
	static const unsigned char brace[] = {0x01, '{', '1', '}'};
	t = fuzz_text_encode(brace, sizeof brace, NULL);
	CHECK_STR(t, "\\x01\\x7b1}\n");
	free(t);
	t = fuzz_text_encode((const unsigned char *)"", 0, NULL);
	CHECK_STR(t, "");
	free(t);
}

static void test_decoding(void)
{
	size_t size;
	char *s = decoded("# comment\r\nab\r\nc\\x41{3}\\n\\\\", &size);
	CHECK_STR(s, "abcAAA\n\\");
	free(s);
	s = decoded("\\x00{2}", &size);
	CHECK(s && size == 2 && s[0] == 0 && s[1] == 0);
	free(s);
	CHECK(decoded("a\\", &size) == NULL);
	CHECK(decoded("\\q", &size) == NULL);
	CHECK(decoded("\\x4", &size) == NULL);
	CHECK(decoded("\\x41{}", &size) == NULL);
	CHECK(decoded("\\x41{0}", &size) == NULL);
	CHECK(decoded("\\x41{3", &size) == NULL);
	CHECK(decoded("\\x41{99999999999999999999}", &size) == NULL);
	CHECK(decoded("tab\there", &size) == NULL);
}

static void test_round_trips(void)
{
	uint64_t state = 0x9e3779b97f4a7c15ULL;
	unsigned char buf[4096];
	for (int n = 0; n < 300; n++) {
		size_t size = (size_t)(n * 13 % (int)sizeof buf);
		for (size_t i = 0; i < size; i++) {
			state ^= state << 13;
			state ^= state >> 7;
			state ^= state << 17;
			/* Mostly a few byte values, so that runs, '#', ' ', '{' and
			 * line ends meet at every column. */
			static const unsigned char alphabet[] = {0, 0, ' ', '#', '{', '}', '\n', '\\', 'x', '7', 0xff};
			buf[i] = n % 3 ? alphabet[state % sizeof alphabet] : (unsigned char)state;
		}
		round_trip(buf, size);
	}
}

int main(void)
{
	RUN(test_exact_encodings);
	RUN(test_decoding);
	RUN(test_round_trips);
	return CHECK_DONE();
}
