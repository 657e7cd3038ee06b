/*
 * formats/hex.h -- the one hex codec: bytes spelt as lowercase hex digits
 * (keys and digests in manifests, snapshots, file and object names,
 * "\xHH" in messages) and hex digits read back.  Readers of names gpucc
 * writes itself (cache entry files, index key prefixes) take lowercase
 * only, so that one key has one spelling; readers of what people and
 * other programs write (digests on a command line, JSON's \u escapes,
 * HTTP's chunk sizes and %XX, LLVM's \HH) take either case.
 *
 * Plain C, nothing of libgpucc: formats/hex.c is compiled into libgpucc
 * (hidden) and into the gpucc command alike, as formats/escape.c is.
 */
#ifndef GPUCC_LIB_HEX_H
#define GPUCC_LIB_HEX_H

#include <stdbool.h>
#include <stddef.h>

/* The value of hex digit c, either case; -1 when c is none. */
int gpucc_hex_digit(int c);
/* The value of hex digit c, lowercase only; -1 when c is none. */
int gpucc_hex_digit_lower(int c);

/* How many hex digits s starts with (lowercase only when lowercase_only). */
size_t gpucc_hex_span(const char *s, bool lowercase_only);

/* bytes[0..n) into out as 2n lowercase digits; no NUL is written. */
void gpucc_hex_encode(char *out, const void *bytes, size_t n);

/* 2n hex digits at hex into out[0..n) (either case; lowercase only when
 * lowercase_only): true, or false when one of the 2n is no digit (then out
 * holds garbage).  What follows the 2n digits is not looked at. */
bool gpucc_hex_decode(void *out, const char *hex, size_t n, bool lowercase_only);

#endif
