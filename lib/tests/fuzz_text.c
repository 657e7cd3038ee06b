/*
 * lib/tests/fuzz_text.c -- the text form of saved fuzz inputs
 * (testdata/fuzz/README.md): binary inputs kept as text, as libarchive keeps its fixtures,
 * readable where the input is text (manifests, target strings, command
 * lines) and compact where it is a tar (runs of NUL bytes).
 *
 * The form, one file per input:
 *   - a line starting with '#' is a comment (a note on where the input came
 *     from); line breaks and carriage returns are not data;
 *   - a byte 0x20..0x7e other than '\' stands for itself;
 *   - "\\" is a backslash, "\n" a newline byte (the encoder breaks the line
 *     after it), "\xHH" any byte, "\xHH{N}" that byte N times (N >= 1).
 * The encoder escapes what would otherwise be misread: '#' starting a line,
 * a space ending one (editors strip them), '{' right after "\xHH".
 */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing byte buffer; on allocation failure it sets failed and stays. */
typedef struct text_buffer {
	unsigned char *data;
	size_t size, cap;
	int failed;
} text_buffer;

static void put(text_buffer *b, const void *bytes, size_t n)
{
	if (b->failed)
		return;
	if (b->size + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->size + n)
			cap *= 2;
		unsigned char *grown = realloc(b->data, cap);
		if (!grown) {
			b->failed = 1;
			return;
		}
		b->data = grown;
		b->cap = cap;
	}
	memcpy(b->data + b->size, bytes, n);
	b->size += n;
}

static int hex_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int fuzz_text_decode(unsigned char **out, size_t *out_size, const char *text, size_t size,
                     char error[128])
{
	text_buffer b = {0};
	size_t i = 0;
	int line_start = 1;
	*out = NULL;
	*out_size = 0;
	while (i < size) {
		unsigned char c = (unsigned char)text[i];
		if (c == '\n' || c == '\r') {
			line_start = c == '\n' ? 1 : line_start;
			i++;
			continue;
		}
		if (line_start && c == '#') {
			const char *nl = memchr(text + i, '\n', size - i);
			i = nl ? (size_t)(nl - text) : size;
			continue;
		}
		line_start = 0;
		if (c != '\\') {
			if (c < 0x20 || c > 0x7e) {
				snprintf(error, 128, "byte 0x%02x at offset %zu must be escaped", c, i);
				goto fail;
			}
			put(&b, &c, 1);
			i++;
			continue;
		}
		if (i + 1 >= size) {
			snprintf(error, 128, "a lone '\\' at the end");
			goto fail;
		}
		char kind = text[i + 1];
		if (kind == '\\' || kind == 'n') {
			put(&b, kind == 'n' ? "\n" : "\\", 1);
			i += 2;
			continue;
		}
		int hi = i + 3 < size ? hex_value((unsigned char)text[i + 2]) : -1;
		int lo = i + 3 < size ? hex_value((unsigned char)text[i + 3]) : -1;
		if (kind != 'x' || hi < 0 || lo < 0) {
			snprintf(error, 128, "bad escape at offset %zu (expected \\\\, \\n or \\xHH)", i);
			goto fail;
		}
		unsigned char byte = (unsigned char)(hi << 4 | lo);
		i += 4;
		size_t count = 1;
		if (i < size && text[i] == '{') {
			size_t j = i + 1;
			count = 0;
			while (j < size && text[j] >= '0' && text[j] <= '9' && count <= FUZZ_TEXT_MAX_SIZE)
				count = count * 10 + (size_t)(text[j++] - '0');
			if (j >= size || text[j] != '}' || j == i + 1 || count == 0 ||
			    count > FUZZ_TEXT_MAX_SIZE) {
				snprintf(error, 128, "bad repeat count at offset %zu", i);
				goto fail;
			}
			i = j + 1;
		}
		if (b.size + count > FUZZ_TEXT_MAX_SIZE) {
			snprintf(error, 128, "input larger than %d bytes", FUZZ_TEXT_MAX_SIZE);
			goto fail;
		}
		for (size_t k = 0; k < count; k++)
			put(&b, &byte, 1);
	}
	if (b.failed) {
		snprintf(error, 128, "out of memory");
		goto fail;
	}
	*out = b.data ? b.data : malloc(1);
	*out_size = b.size;
	return *out ? 0 : -1;
fail:
	free(b.data);
	return -1;
}

/* The encoder's state: the text so far and where its last line stands. */
typedef struct encoder {
	text_buffer b;
	size_t column;
	int after_hex;  /* the last thing written was \xHH or \xHH{N} */
	int last_space; /* ... was a literal space */
} encoder;

/* End the current line; a literal space there would not survive an editor,
 * so it becomes \x20. */
static void end_line(encoder *e)
{
	if (e->last_space) {
		e->b.size--;
		put(&e->b, "\\x20", 4);
	}
	put(&e->b, "\n", 1);
	e->column = 0;
	e->after_hex = 0;
	e->last_space = 0;
}

/* Break the line when n more characters would take it past 76 columns. */
static void make_room(encoder *e, size_t n)
{
	if (e->column && e->column + n > 76)
		end_line(e);
}

/* Write one token (a literal byte or an escape) of n characters. */
static void token(encoder *e, const char *text, size_t n, int is_hex)
{
	make_room(e, n);
	put(&e->b, text, n);
	e->column += n;
	e->after_hex = is_hex;
	e->last_space = n == 1 && text[0] == ' ';
}

char *fuzz_text_encode(const unsigned char *data, size_t size, const char *note)
{
	encoder e = {0};
	for (const char *n = note; n && *n;) {
		size_t len = strcspn(n, "\n");
		put(&e.b, "# ", 2);
		put(&e.b, n, len);
		put(&e.b, "\n", 1);
		n += len + (n[len] == '\n');
	}
	for (size_t i = 0; i < size;) {
		unsigned char c = data[i];
		size_t run = 1;
		while (i + run < size && data[i + run] == c)
			run++;
		int literal = c >= 0x20 && c <= 0x7e && c != '\\';
		char escape[32];
		if (c == '\n') {
			token(&e, "\\n", 2, 0);
			end_line(&e);
		} else if (c == '\\') {
			token(&e, "\\\\", 2, 0);
		} else if (run >= (literal ? 16u : 3u)) {
			/* Runs of bytes that need escaping pay off from 3; of plain
			 * characters (a tar's octal zeros, padding) only when long. */
			int n = snprintf(escape, sizeof escape, "\\x%02x{%zu}", c, run);
			token(&e, escape, (size_t)n, 1);
			i += run - 1;
		} else {
			make_room(&e, 4); /* where a single byte lands decides its escaping */
			if (literal && !(c == '#' && e.column == 0) && !(c == '{' && e.after_hex)) {
				escape[0] = (char)c;
				token(&e, escape, 1, 0);
			} else {
				snprintf(escape, sizeof escape, "\\x%02x", c);
				token(&e, escape, 4, 1);
			}
		}
		i++;
	}
	if (e.column)
		end_line(&e);
	put(&e.b, "", 1);
	if (e.b.failed) {
		free(e.b.data);
		return NULL;
	}
	return (char *)e.b.data;
}

int fuzz_text_read_file(unsigned char **out, size_t *out_size, const char *path, char error[128])
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(error, 128, "cannot open");
		return -1;
	}
	text_buffer b = {0};
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		put(&b, chunk, n);
	int read_error = ferror(f);
	fclose(f);
	if (read_error || b.failed) {
		free(b.data);
		snprintf(error, 128, read_error ? "cannot read" : "out of memory");
		return -1;
	}
	int rc = fuzz_text_decode(out, out_size, (const char *)b.data, b.size, error);
	free(b.data);
	return rc;
}
