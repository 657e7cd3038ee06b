/*
 * formats/escape.c -- the spelling of control characters in messages and text
 * output (contract in formats/escape.h).  Compiled into libgpucc and into the
 * gpucc command alike; it uses nothing but the C library and formats/hex.c.
 */
#include "escape.h"

#include "hex.h"
#include <string.h>

size_t gpucc_escape_byte(char spelt[GPUCC_ESCAPED_BYTE_MAX], unsigned char c)
{
	if (c >= 0x20 && c != 0x7f) {
		spelt[0] = (char)c;
		return 1;
	}
	spelt[0] = '\\';
	if (c == '\n' || c == '\t') {
		spelt[1] = c == '\n' ? 'n' : 't';
		return 2;
	}
	spelt[1] = 'x';
	gpucc_hex_encode(spelt + 2, &c, 1);
	return 4;
}

size_t gpucc_escape_controls(char *out, size_t size, const char *text)
{
	size_t used = 0;
	const unsigned char *p = (const unsigned char *)(text ? text : "");
	for (; *p; p++) {
		char spelt[GPUCC_ESCAPED_BYTE_MAX];
		size_t len = gpucc_escape_byte(spelt, *p);
		/* Room for this byte, and for "..." after it unless it is the
		 * last one. */
		if (used + len + (p[1] ? 3 : 0) + 1 > size)
			break;
		memcpy(out + used, spelt, len);
		used += len;
	}
	if (*p && used + 4 <= size) {
		memcpy(out + used, "...", 3);
		used += 3;
	}
	if (size)
		out[used] = '\0';
	return used;
}
