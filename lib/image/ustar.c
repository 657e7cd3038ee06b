/*
 * lib/image/ustar.c -- single-block ustar headers, parsed and formatted (lib/image/ustar.h), after
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

/* digits octal digits of v into field, then a space (the field's other
 * bytes stay NUL). */
static void put_octal(unsigned char *field, size_t digits, uint64_t v)
{
	for (size_t i = digits; i-- > 0; v >>= 3)
		field[i] = (unsigned char)('0' + (v & 7));
	field[digits] = ' ';
}

bool gpucc_ustar_fits(const char *name, uint64_t size, int64_t mtime)
{
	const uint64_t octal11 = (uint64_t)1 << 33; /* 8^11 */
	size_t n = strlen(name);
	/* The mtime field holds up to 2^33 - 1, but libarchive's pax writer,
	 * which writes the other images, puts a pax header before every
	 * member from 2^31 - 1 on: stopping there too keeps the two writers'
	 * bytes the same (formats/image.md, "Pax extended headers"). */
	return n > 0 && n < 100 && size < octal11 && mtime >= 0 && mtime < INT32_MAX;
}

bool gpucc_ustar_format(unsigned char block[GPUCC_USTAR_BLOCK], const char *name, uint64_t size,
                        int64_t mtime)
{
	if (!gpucc_ustar_fits(name, size, mtime))
		return false;
	size_t n = strlen(name);
	memset(block, 0, GPUCC_USTAR_BLOCK);
	memcpy(block, name, n);
	put_octal(block + 100, 6, 0644); /* mode */
	put_octal(block + 108, 6, 0);    /* uid */
	put_octal(block + 116, 6, 0);    /* gid */
	put_octal(block + 124, 11, size);
	put_octal(block + 136, 11, (uint64_t)mtime);
	block[156] = '0';
	memcpy(block + 257, "ustar\0" "00", 8);
	put_octal(block + 329, 6, 0);    /* devmajor */
	put_octal(block + 337, 6, 0);    /* devminor */
	uint64_t sum = 0;
	for (size_t i = 0; i < GPUCC_USTAR_BLOCK; i++)
		sum += (i >= 148 && i < 156) ? ' ' : block[i];
	put_octal(block + 148, 6, sum); /* chksum: digits, NUL, space */
	block[154] = '\0';
	block[155] = ' ';
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

bool gpucc_ustar_is_member(const unsigned char block[GPUCC_USTAR_BLOCK], const char *name,
                           uint64_t size)
{
	gpucc_ustar_header h;
	return gpucc_ustar_parse(block, &h) && gpucc_ustar_is_regular(&h) && h.size == size &&
	       strcmp(h.name, name) == 0;
}

uint64_t gpucc_ustar_padded(uint64_t size)
{
	return (size + GPUCC_USTAR_BLOCK - 1) / GPUCC_USTAR_BLOCK * GPUCC_USTAR_BLOCK;
}
