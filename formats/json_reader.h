/*
 * formats/json_reader.h -- a small pull parser for JSON documents held in
 * memory, used where cJSON's tree of individually allocated nodes is too slow
 * (the manifest of a 10,000-entry image is read by every `gpucc list`).
 *
 * The reader walks the text once; strings are unescaped into an arena.  It
 * accepts exactly RFC 8259 JSON (nesting at most 64 deep, strings valid
 * UTF-8), except \u0000 in strings, which C strings cannot carry, and
 * reports the first syntax error with its byte offset.
 */
#ifndef GPUCC_FORMATS_JSON_READER_H
#define GPUCC_FORMATS_JSON_READER_H

#include "arena.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum json_type {
	JSON_NONE, JSON_OBJECT, JSON_ARRAY, JSON_STRING, JSON_NUMBER, JSON_TRUE, JSON_FALSE, JSON_NULL
} json_type;

typedef struct json_reader {
	const char *p, *start, *end;
	gpucc_arena *arena;
	int depth;
	bool first[64]; /* per open container: no element read yet */
	char name[64];  /* the last member name, when short */
	bool keep_long_names; /* longer names to the arena, rather than as "" */
	const char *error; /* first error, static text; NULL while none */
	size_t error_offset;
} json_reader;

void gpucc_json_reader_init(json_reader *r, const char *text, size_t size, gpucc_arena *arena);
/* The type of the next value, without consuming it (JSON_NONE on error). */
json_type gpucc_json_peek(json_reader *r);
/* Consume '{'.  Then gpucc_json_object_next gives each member's name in turn,
 * leaving the reader at its value, and false after '}'.  The name is valid
 * until the next call (copy it to keep it); one of 64 bytes or more is ""
 * unless keep_long_names is set (the caller knows no such name).  A trailing
 * ',' before '}' is an error.  Likewise for arrays. */
bool gpucc_json_object_begin(json_reader *r);
bool gpucc_json_object_next(json_reader *r, const char **name);
/* Consume '['.  gpucc_json_array_next is true while another element follows. */
bool gpucc_json_array_begin(json_reader *r);
bool gpucc_json_array_next(json_reader *r);
/* Consume a string into the arena.  A value of another type is consumed and
 * gives NULL: a type mismatch is the caller's to report, not a syntax error.
 * The same holds for gpucc_json_object_begin and gpucc_json_array_begin. */
const char *gpucc_json_string(json_reader *r);
/* Consume a string into buf (NUL-terminated) when it fits; false otherwise
 * (too long is not an error of the reader: the value is consumed). */
bool gpucc_json_string_buffer(json_reader *r, char *buf, size_t size);
/* Consume the next value when it is a string equal to s without escapes;
 * otherwise consume nothing and return false. */
bool gpucc_json_string_equals(json_reader *r, const char *s);
/* Consume a string of exactly 64 lowercase hex digits into 32 bytes; false
 * otherwise (a value of another type or form, uppercase digits included, is
 * consumed). */
bool gpucc_json_hex32(json_reader *r, unsigned char out[32]);
/* Consume a number that is a non-negative integer (digits only) at most max;
 * false otherwise (the value is consumed). */
bool gpucc_json_uint(json_reader *r, uint64_t max, uint64_t *out);
/* Consume any value. */
void gpucc_json_skip(json_reader *r);
/* True after the last value when only whitespace remains and no error. */
bool gpucc_json_finish(json_reader *r);
bool gpucc_json_failed(const json_reader *r);
/* The length of the valid UTF-8 sequence at p (avail bytes there): 1 for
 * ASCII, 2 to 4, or 0 when it is not one (overlong, surrogate, past
 * U+10FFFF, cut short). */
size_t gpucc_json_utf8_sequence(const unsigned char *p, size_t avail);

#endif
