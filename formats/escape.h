/*
 * formats/escape.h -- how gpucc spells text that may hold control characters
 * (a name from a command line, a file system or an image) in messages and
 * text output: a control character (below 0x20, and 0x7f) as \n, \t or
 * \xHH, every other byte as it is, so that a name holding a newline keeps
 * its message on one line and no escape sequence reaches a terminal.  A
 * backslash is no control character: spelt text spelt again is unchanged.
 *
 * The one speller of both libgpucc (every message, formats/error.c; warnings,
 * lib/cache/cache.c) and the gpucc command (cmd/options.c): formats/escape.c is
 * compiled into each, hidden in libgpucc, which exports only its public
 * header.  So this header includes nothing of libgpucc's.
 */
#ifndef GPUCC_LIB_ESCAPE_H
#define GPUCC_LIB_ESCAPE_H

#include <stddef.h>

/* The most bytes one byte is spelt in ("\xHH"). */
#define GPUCC_ESCAPED_BYTE_MAX 4

/* Byte c as text spells it, into spelt (no NUL added); returns its
 * length, 1 to GPUCC_ESCAPED_BYTE_MAX. */
size_t gpucc_escape_byte(char spelt[GPUCC_ESCAPED_BYTE_MAX], unsigned char c);

/* text (NULL reads as "") spelt into out (size bytes, NUL included; out
 * is untouched when size is 0), cut after a whole byte's spelling and
 * ended with "..." when it does not fit.  Returns the length written. */
size_t gpucc_escape_controls(char *out, size_t size, const char *text);

#endif
