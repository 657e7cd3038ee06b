/*
 * lib/ustar.c -- single-block ustar header parsing (lib/ustar.h), after
 * POSIX.1-2001 "pax" format's ustar header layout: name[100] at 0, size[12]
 * at 124, chksum[8] at 148, typeflag at 156, magic[6] at 257, version[2] at
 * 263, prefix[155] at 345.
 */
#include "ustar.h"

#include <string.h>

/* An octal numeric field: optional leading spaces, digits, then NUL or
 * spaces to the end. */
static bool parse_octal(const unsigned char *field, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0, digits = 0;
	while (i < len && field[i] == ' ')
		i++;
	for (; i < len && field[i] >= '0' && field[i] <= '7'; i++, digits++) {
		if (v >> 60)
			return false;
		v = v * 8 + (uint64_t)(field[i] - '0');
	}
	for (; i < len; i++)
		if (field[i] != ' ' && field[i] != '\0')
			return false;
	if (digits == 0)
		return false;
	*out = v;
	return true;
}

bool gpucc_ustar_parse(const unsigned char block[GPUCC_USTAR_BLOCK], gpucc_ustar_header *out)
{
	if (memcmp(block + 257, "ustar", 6) != 0 || memcmp(block + 263, "00", 2) != 0)
		return false;
	uint64_t stored, sum = 0;
	if (!parse_octal(block + 148, 8, &stored))
		return false;
	for (size_t i = 0; i < GPUCC_USTAR_BLOCK; i++)
		sum += (i >= 148 && i < 156) ? ' ' : block[i];
	if (sum != stored || !parse_octal(block + 124, 12, &out->size))
		return false;
	/* Fields need not be NUL-terminated when full. */
	char name[101], prefix[156];
	memcpy(name, block, 100);
	name[100] = '\0';
	memcpy(prefix, block + 345, 155);
	prefix[155] = '\0';
	size_t p = strlen(prefix), n = strlen(name);
	if (p) {
		memcpy(out->name, prefix, p);
		out->name[p++] = '/';
	}
	memcpy(out->name + p, name, n + 1); /* at most 155 + 1 + 100 + 1 bytes */
	out->type = (char)block[156];
	return true;
}

bool gpucc_ustar_is_zero(const unsigned char block[GPUCC_USTAR_BLOCK])
{
	for (size_t i = 0; i < GPUCC_USTAR_BLOCK; i++)
		if (block[i])
			return false;
	return true;
}

bool gpucc_ustar_is_regular(const gpucc_ustar_header *h)
{
	return h->type == '0' || h->type == '\0';
}

uint64_t gpucc_ustar_padded(uint64_t size)
{
	return (size + GPUCC_USTAR_BLOCK - 1) / GPUCC_USTAR_BLOCK * GPUCC_USTAR_BLOCK;
}
