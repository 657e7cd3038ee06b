/*
 * lib/tests/test_snapshot_text.c -- snapshots of many items: the text form
 * parsed by position (every line 130 bytes) and line by line (CRLF, blank
 * lines, upper case) must give the same snapshot, sorted as qsort sorts it,
 * with a bad line named by its number and a conflict found wherever the
 * two items land (lib/algebra/snapshot_text.c, lib/algebra/snapshot_sort.c).
 */
#include "check.h"

#include <gpucc.h>

#include <stdint.h>

#define COUNT 100000 /* above the sizes parsed and sorted on several threads */
#define LINE 130

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static unsigned char next_byte(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (unsigned char)(rng_state >> 24);
}

static void random_items(gpucc_snapshot_item *items, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (int j = 0; j < 32; j++) {
			items[i].key.bytes[j] = next_byte();
			items[i].content.bytes[j] = next_byte();
		}
}

/* items as text: each line 64 hex digits, ' ', 64 more, then eol. */
static char *as_text(const gpucc_snapshot_item *items, size_t n, const char *eol, bool upper,
                     size_t *size)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	size_t line = LINE - 1 + strlen(eol);
	char *text = malloc(n * line + 1), *p = text;
	for (size_t i = 0; i < n; i++, p += line) {
		for (int j = 0; j < 32; j++) {
			p[2 * j] = digits[items[i].key.bytes[j] >> 4];
			p[2 * j + 1] = digits[items[i].key.bytes[j] & 15];
			p[65 + 2 * j] = digits[items[i].content.bytes[j] >> 4];
			p[65 + 2 * j + 1] = digits[items[i].content.bytes[j] & 15];
		}
		p[64] = ' ';
		memcpy(p + LINE - 1, eol, strlen(eol));
	}
	*size = n * line;
	return text;
}

static int by_key(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(gpucc_digest));
}

/* s holds exactly want (sorted, unique), in order. */
static void check_same(const gpucc_snapshot *s, const gpucc_snapshot_item *want, size_t n)
{
	CHECK_INT(gpucc_snapshot_count(s), n);
	if (gpucc_snapshot_count(s) == n)
		CHECK(memcmp(gpucc_snapshot_items(s), want, n * sizeof *want) == 0);
}

static gpucc_snapshot_item *items, *sorted;

static void test_fixed_width(void)
{
	size_t size;
	char *text = as_text(items, COUNT, "\n", false, &size);
	gpucc_snapshot *s = NULL;
	CHECK_INT(gpucc_snapshot_parse_text(&s, text, size, "fixed"), 0);
	check_same(s, sorted, COUNT);
	gpucc_snapshot_free(s);
	/* The last line without its newline. */
	CHECK_INT(gpucc_snapshot_parse_text(&s, text, size - 1, "fixed"), 0);
	check_same(s, sorted, COUNT);
	gpucc_snapshot_free(s);
	free(text);
}

static void test_line_by_line(void)
{
	size_t size;
	char *text = as_text(items, COUNT, "\r\n", true, &size);
	gpucc_snapshot *s = NULL;
	CHECK_INT(gpucc_snapshot_parse_text(&s, text, size, "crlf"), 0);
	check_same(s, sorted, COUNT);
	gpucc_snapshot_free(s);
	free(text);
	/* Lines of 130 bytes but one blank line among them: by lines too. */
	text = as_text(items, COUNT, "\n", false, &size);
	char *blank = malloc(size + 1);
	memcpy(blank, text, 500 * LINE);
	blank[500 * LINE] = '\n';
	memcpy(blank + 500 * LINE + 1, text + 500 * LINE, size - 500 * LINE);
	CHECK_INT(gpucc_snapshot_parse_text(&s, blank, size + 1, "blank"), 0);
	check_same(s, sorted, COUNT);
	gpucc_snapshot_free(s);
	free(blank);
	free(text);
}

static void test_bad_line_named(void)
{
	size_t size;
	char *text = as_text(items, COUNT, "\n", false, &size);
	text[(size_t)70000 * LINE + 3] = 'g'; /* line 70001 */
	gpucc_snapshot *s = NULL;
	CHECK_INT(gpucc_snapshot_parse_text(&s, text, size, "bad"), GPUCC_ECORRUPT);
	CHECK_ERROR_HAS("'bad' line 70001: expected 'KEY CONTENT'");
	CHECK(s == NULL);
	free(text);
}

static void test_repeats(void)
{
	/* Every item twice, the copies last: collapsed to one each. */
	gpucc_snapshot_item *twice = malloc(2 * COUNT * sizeof *twice);
	memcpy(twice, items, COUNT * sizeof *twice);
	memcpy(twice + COUNT, items, COUNT * sizeof *twice);
	gpucc_snapshot *s = NULL;
	CHECK_INT(gpucc_snapshot_new(&s, twice, 2 * COUNT), 0);
	check_same(s, sorted, COUNT);
	gpucc_snapshot_free(s);
	/* One repeat with another content: a conflict naming its key. */
	twice[COUNT + 4321].content.bytes[7] ^= 1;
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &twice[COUNT + 4321].key);
	CHECK_INT(gpucc_snapshot_new(&s, twice, 2 * COUNT), GPUCC_ECONFLICT);
	CHECK_ERROR_HAS(hex);
	CHECK_ERROR_HAS("appears twice with different contents");
	free(twice);
}

int main(void)
{
	items = malloc(COUNT * sizeof *items);
	sorted = malloc(COUNT * sizeof *sorted);
	random_items(items, COUNT);
	memcpy(sorted, items, COUNT * sizeof *sorted);
	qsort(sorted, COUNT, sizeof *sorted, by_key);
	RUN(test_fixed_width);
	RUN(test_line_by_line);
	RUN(test_bad_line_named);
	RUN(test_repeats);
	free(items);
	free(sorted);
	return CHECK_DONE();
}
