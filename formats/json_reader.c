/*
 * formats/json_reader.c -- the pull parser (formats/json_reader.h).
 */
#include "json_reader.h"

#include "hex.h"

#include <string.h>

#define MAX_DEPTH 64

static void fail(json_reader *r, const char *why)
{
	if (!r->error) {
		r->error = why;
		r->error_offset = (size_t)(r->p - r->start);
	}
	r->p = r->end; /* stop everything that follows */
}

size_t gpucc_json_utf8_sequence(const unsigned char *p, size_t avail)
{
	if (avail == 0)
		return 0;
	if (p[0] < 0x80)
		return 1;
	size_t len = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3
	             : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
	if (len == 0 || avail < len)
		return 0;
	/* The second byte's range excludes overlong forms, surrogates and
	 * code points past U+10FFFF. */
	unsigned char low = p[0] == 0xe0 ? 0xa0 : p[0] == 0xf0 ? 0x90 : 0x80;
	unsigned char high = p[0] == 0xed ? 0x9f : p[0] == 0xf4 ? 0x8f : 0xbf;
	if (p[1] < low || p[1] > high)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return len;
}

/* Step q (< end, at a byte >= 0x80) over one UTF-8 sequence; NULL when it
 * is not one. */
static const unsigned char *skip_utf8(const unsigned char *q, const unsigned char *end)
{
	size_t n = gpucc_json_utf8_sequence(q, (size_t)(end - q));
	return n ? q + n : NULL;
}

static void skip_space(json_reader *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
		r->p++;
}

void gpucc_json_reader_init(json_reader *r, const char *text, size_t size, gpucc_arena *arena)
{
	memset(r, 0, sizeof *r);
	r->p = r->start = text;
	r->end = text + size;
	r->arena = arena;
}

bool gpucc_json_failed(const json_reader *r)
{
	return r->error != NULL;
}

json_type gpucc_json_peek(json_reader *r)
{
	skip_space(r);
	if (r->error || r->p >= r->end)
		return JSON_NONE;
	switch (*r->p) {
	case '{': return JSON_OBJECT;
	case '[': return JSON_ARRAY;
	case '"': return JSON_STRING;
	case 't': return JSON_TRUE;
	case 'f': return JSON_FALSE;
	case 'n': return JSON_NULL;
	default:
		return (*r->p == '-' || (*r->p >= '0' && *r->p <= '9')) ? JSON_NUMBER : JSON_NONE;
	}
}

static bool expect(json_reader *r, char c)
{
	skip_space(r);
	if (r->p < r->end && *r->p == c) {
		r->p++;
		return true;
	}
	fail(r, c == ':' ? "expected ':'" : c == '{' ? "expected an object" :
	        c == '[' ? "expected an array" : "unexpected character");
	return false;
}

/* Consume the opening bracket of an object or array. */
static bool open_container(json_reader *r, char open)
{
	if (!expect(r, open))
		return false;
	if (r->depth >= MAX_DEPTH) {
		fail(r, "nesting too deep");
		return false;
	}
	r->first[r->depth++] = true;
	return true;
}

/* Before each element: true when one follows (consuming the ',' between
 * elements), false after consuming the closing bracket. */
static bool next_element(json_reader *r, char close)
{
	skip_space(r);
	if (r->error || r->depth == 0 || r->p >= r->end) {
		fail(r, "unexpected end of text");
		return false;
	}
	if (*r->p == close) {
		r->p++;
		r->depth--;
		return false;
	}
	if (r->first[r->depth - 1]) {
		r->first[r->depth - 1] = false;
		return true;
	}
	if (*r->p == ',') {
		r->p++;
		return true;
	}
	fail(r, "expected ',' or a closing bracket");
	return false;
}

bool gpucc_json_object_begin(json_reader *r)
{
	if (gpucc_json_peek(r) != JSON_OBJECT) {
		gpucc_json_skip(r);
		return false;
	}
	return open_container(r, '{');
}

static ptrdiff_t unescape(json_reader *r, char *out);
static ptrdiff_t raw_length(const json_reader *r);
static ptrdiff_t plain_length(const json_reader *r);
static void copy_plain(json_reader *r, char *out, size_t raw);

bool gpucc_json_object_next(json_reader *r, const char **name)
{
	if (!next_element(r, '}'))
		return false;
	if (gpucc_json_peek(r) != JSON_STRING) {
		fail(r, "expected a member name");
		return false;
	}
	/* Names are read many times an entry: keep short ones in the reader
	 * instead of the arena.  JSON bounds no name, and a long one is still
	 * a name: where the caller keeps long names (an option's), it goes to
	 * the arena; elsewhere it names no field the caller knows, and is
	 * checked and given as "" without taking memory. */
	ptrdiff_t plain = plain_length(r);
	if (plain >= 0 && (size_t)plain < sizeof r->name) {
		copy_plain(r, r->name, (size_t)plain);
		*name = r->name;
	} else {
		ptrdiff_t raw = raw_length(r);
		if (raw >= 0 && (size_t)raw < sizeof r->name) {
			if (unescape(r, r->name) < 0)
				return false;
			*name = r->name;
		} else if (!r->keep_long_names) {
			if (unescape(r, NULL) < 0)
				return false;
			*name = "";
		} else if (!(*name = gpucc_json_string(r))) {
			return false;
		}
	}
	return expect(r, ':');
}

bool gpucc_json_array_begin(json_reader *r)
{
	if (gpucc_json_peek(r) != JSON_ARRAY) {
		gpucc_json_skip(r);
		return false;
	}
	return open_container(r, '[');
}

bool gpucc_json_array_next(json_reader *r)
{
	return next_element(r, ']');
}

static bool read_hex4(json_reader *r, unsigned *out)
{
	if (r->end - r->p < 4) {
		fail(r, "bad \\u escape");
		return false;
	}
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		int d = gpucc_hex_digit((unsigned char)r->p[i]);
		if (d < 0) {
			fail(r, "bad \\u escape");
			return false;
		}
		v = v << 4 | (unsigned)d;
	}
	r->p += 4;
	*out = v;
	return true;
}

static size_t put_utf8(char *out, unsigned cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Unescape the string at r->p into out (room for its raw length + 1, which
 * is always enough: escapes never expand).  Returns the length or -1. */
static ptrdiff_t unescape(json_reader *r, char *out)
{
	size_t n = 0;
	r->p++; /* the opening quote */
	while (r->p < r->end) {
		unsigned char c = (unsigned char)*r->p;
		if (c == '"') {
			r->p++;
			if (out)
				out[n] = '\0';
			return (ptrdiff_t)n;
		}
		if (c < 0x20) {
			fail(r, "control character in a string");
			return -1;
		}
		if (c != '\\') {
			const char *run = r->p;
			/* Plain bytes up to the next quote or backslash. */
			while (r->p < r->end && *r->p != '"' && *r->p != '\\' && (unsigned char)*r->p >= 0x20) {
				if ((unsigned char)*r->p < 0x80) {
					r->p++;
					continue;
				}
				const unsigned char *next = skip_utf8((const unsigned char *)r->p,
				                                      (const unsigned char *)r->end);
				if (!next) {
					fail(r, "a string is not UTF-8");
					return -1;
				}
				r->p = (const char *)next;
			}
			if (out)
				memcpy(out + n, run, (size_t)(r->p - run));
			n += (size_t)(r->p - run);
			continue;
		}
		if (++r->p >= r->end)
			break;
		char e = *r->p++;
		char single = 0;
		switch (e) {
		case '"': single = '"'; break;
		case '\\': single = '\\'; break;
		case '/': single = '/'; break;
		case 'b': single = '\b'; break;
		case 'f': single = '\f'; break;
		case 'n': single = '\n'; break;
		case 'r': single = '\r'; break;
		case 't': single = '\t'; break;
		case 'u': {
			unsigned cp;
			if (!read_hex4(r, &cp))
				return -1;
			if (cp >= 0xd800 && cp < 0xdc00) {
				unsigned low;
				if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u') {
					fail(r, "unpaired surrogate in a string");
					return -1;
				}
				r->p += 2;
				if (!read_hex4(r, &low) || low < 0xdc00 || low >= 0xe000) {
					fail(r, "unpaired surrogate in a string");
					return -1;
				}
				cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
			} else if (cp >= 0xdc00 && cp < 0xe000) {
				fail(r, "unpaired surrogate in a string");
				return -1;
			} else if (cp == 0) {
				/* C strings would end there: what follows would go unseen. */
				fail(r, "\\u0000 in a string");
				return -1;
			}
			char utf8[4];
			size_t len = put_utf8(utf8, cp);
			if (out)
				memcpy(out + n, utf8, len);
			n += len;
			continue;
		}
		default:
			fail(r, "bad escape in a string");
			return -1;
		}
		if (out)
			out[n] = single;
		n++;
	}
	fail(r, "unterminated string");
	return -1;
}

/* Length of the raw text of the string at r->p, quotes excluded, or -1. */
static ptrdiff_t raw_length(const json_reader *r)
{
	const char *q = r->p + 1;
	while (q < r->end && *q != '"') {
		if (*q == '\\')
			q++;
		q++;
	}
	return q < r->end ? q - r->p - 1 : -1;
}

/* The length of the string at r->p when it is plain (no escape, no control
 * character, valid UTF-8: what the manifest writer produces), else -1 (and
 * unescape then reads it and names any defect).  One pass. */
static ptrdiff_t plain_length(const json_reader *r)
{
	const unsigned char *q = (const unsigned char *)r->p + 1;
	const unsigned char *end = (const unsigned char *)r->end;
	while (q < end && *q != '"') {
		if (*q == '\\' || *q < 0x20)
			return -1;
		if (*q < 0x80)
			q++;
		else if (!(q = skip_utf8(q, end)))
			return -1;
	}
	return q < end ? (ptrdiff_t)(q - (const unsigned char *)r->p - 1) : -1;
}

/* Copy a plain string of length raw and consume it. */
static void copy_plain(json_reader *r, char *out, size_t raw)
{
	memcpy(out, r->p + 1, raw);
	out[raw] = '\0';
	r->p += raw + 2;
}

bool gpucc_json_string_equals(json_reader *r, const char *s)
{
	if (gpucc_json_peek(r) != JSON_STRING)
		return false;
	ptrdiff_t n = plain_length(r);
	if (n < 0 || strncmp(r->p + 1, s, (size_t)n) != 0 || s[n] != '\0')
		return false;
	r->p += n + 2;
	return true;
}

const char *gpucc_json_string(json_reader *r)
{
	if (gpucc_json_peek(r) != JSON_STRING) {
		gpucc_json_skip(r);
		return NULL;
	}
	ptrdiff_t plain = plain_length(r);
	ptrdiff_t raw = plain >= 0 ? plain : raw_length(r);
	if (raw < 0) {
		fail(r, "unterminated string");
		return NULL;
	}
	char *out = gpucc_arena_alloc(r->arena, (size_t)raw + 1);
	if (!out) {
		fail(r, "out of memory");
		return NULL;
	}
	if (plain >= 0) {
		copy_plain(r, out, (size_t)plain);
		return out;
	}
	return unescape(r, out) < 0 ? NULL : out;
}

bool gpucc_json_string_buffer(json_reader *r, char *buf, size_t size)
{
	skip_space(r);
	if (r->p >= r->end || *r->p != '"') {
		gpucc_json_skip(r);
		return false;
	}
	ptrdiff_t plain = plain_length(r);
	if (plain >= 0 && (size_t)plain < size) {
		copy_plain(r, buf, (size_t)plain);
		return true;
	}
	ptrdiff_t raw = raw_length(r);
	if (raw < 0) {
		fail(r, "unterminated string");
		return false;
	}
	if ((size_t)raw + 1 > size) {
		unescape(r, NULL);
		return false;
	}
	return unescape(r, buf) >= 0;
}

/* Consume a number per the JSON grammar; sets *integer when it is digits
 * only. */
static void number(json_reader *r, bool *integer)
{
	const char *q = r->p;
	*integer = true;
	if (q < r->end && *q == '-') {
		*integer = false;
		q++;
	}
	if (q >= r->end || *q < '0' || *q > '9') {
		fail(r, "bad number");
		return;
	}
	if (*q == '0' && q + 1 < r->end && q[1] >= '0' && q[1] <= '9') {
		fail(r, "bad number (leading zero)");
		return;
	}
	while (q < r->end && *q >= '0' && *q <= '9')
		q++;
	if (q < r->end && *q == '.') {
		*integer = false;
		q++;
		if (q >= r->end || *q < '0' || *q > '9') {
			fail(r, "bad number");
			return;
		}
		while (q < r->end && *q >= '0' && *q <= '9')
			q++;
	}
	if (q < r->end && (*q == 'e' || *q == 'E')) {
		*integer = false;
		q++;
		if (q < r->end && (*q == '+' || *q == '-'))
			q++;
		if (q >= r->end || *q < '0' || *q > '9') {
			fail(r, "bad number");
			return;
		}
		while (q < r->end && *q >= '0' && *q <= '9')
			q++;
	}
	r->p = q;
}

/* Lowercase hex digit values; 0xf0 marks a byte that is not one.  Digests
 * and keys have one spelling (manifest.md), so 'A'-'F' are not digits here
 * (a JSON \u escape takes either case: gpucc_hex_digit). */
static const unsigned char hex_table[256] = {
#define X16 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0
	X16, X16, X16,
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0,
	X16,
	X16,
	0xf0, 10, 11, 12, 13, 14, 15, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0,
	X16, X16, X16, X16, X16, X16, X16, X16, X16,
#undef X16
};

bool gpucc_json_hex32(json_reader *r, unsigned char out[32])
{
	if (gpucc_json_peek(r) != JSON_STRING) {
		gpucc_json_skip(r);
		return false;
	}
	const unsigned char *s = (const unsigned char *)r->p + 1;
	if (r->end - r->p < 66 || s[64] != '"') {
		gpucc_json_skip(r);
		return false;
	}
	unsigned bad = 0;
	for (int i = 0; i < 32; i++) {
		unsigned hi = hex_table[s[2 * i]], lo = hex_table[s[2 * i + 1]];
		bad |= hi | lo;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	r->p += 66;
	return (bad & 0xf0) == 0;
}

bool gpucc_json_uint(json_reader *r, uint64_t max, uint64_t *out)
{
	if (gpucc_json_peek(r) != JSON_NUMBER) {
		gpucc_json_skip(r);
		return false;
	}
	const char *digits = r->p;
	bool integer;
	number(r, &integer);
	if (r->error || !integer)
		return false;
	uint64_t v = 0;
	for (const char *q = digits; q < r->p; q++) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*q - '0');
	}
	if (v > max)
		return false;
	*out = v;
	return true;
}

static bool literal(json_reader *r, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0) {
		fail(r, "unexpected character");
		return false;
	}
	r->p += n;
	return true;
}

void gpucc_json_skip(json_reader *r)
{
	const char *name;
	bool integer;
	switch (gpucc_json_peek(r)) {
	case JSON_OBJECT:
		if (gpucc_json_object_begin(r))
			while (gpucc_json_object_next(r, &name))
				gpucc_json_skip(r);
		break;
	case JSON_ARRAY:
		if (gpucc_json_array_begin(r))
			while (gpucc_json_array_next(r))
				gpucc_json_skip(r);
		break;
	case JSON_STRING:
		unescape(r, NULL);
		break;
	case JSON_NUMBER:
		number(r, &integer);
		break;
	case JSON_TRUE:
		literal(r, "true");
		break;
	case JSON_FALSE:
		literal(r, "false");
		break;
	case JSON_NULL:
		literal(r, "null");
		break;
	case JSON_NONE:
		fail(r, r->p >= r->end ? "unexpected end of text" : "unexpected character");
		break;
	}
}

bool gpucc_json_finish(json_reader *r)
{
	skip_space(r);
	if (!r->error && r->p != r->end)
		fail(r, "text after the document");
	return !r->error;
}
