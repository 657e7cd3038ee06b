/*
 * formats/hex.c -- the hex codec (formats/hex.h).
 */
#include "hex.h"

/* Each digit's value plus one, 0 for "no digit": decoding is on the path
 * of every manifest read, three digests an entry. */
static const unsigned char values_plus_one[256] = {
	['0'] = 1,   ['1'] = 2,   ['2'] = 3,   ['3'] = 4,   ['4'] = 5,   ['5'] = 6,
	['6'] = 7,   ['7'] = 8,   ['8'] = 9,   ['9'] = 10,  ['a'] = 11,  ['b'] = 12,
	['c'] = 13,  ['d'] = 14,  ['e'] = 15,  ['f'] = 16,  ['A'] = 11,  ['B'] = 12,
	['C'] = 13,  ['D'] = 14,  ['E'] = 15,  ['F'] = 16,
};

int gpucc_hex_digit(int c)
{
	return c < 0 || c > 255 ? -1 : (int)values_plus_one[c] - 1;
}

int gpucc_hex_digit_lower(int c)
{
	return c >= 'A' && c <= 'F' ? -1 : gpucc_hex_digit(c);
}

size_t gpucc_hex_span(const char *s, bool lowercase_only)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;
	while (lowercase_only ? gpucc_hex_digit_lower(p[n]) >= 0 : gpucc_hex_digit(p[n]) >= 0)
		n++;
	return n;
}

void gpucc_hex_encode(char *out, const void *bytes, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *b = bytes;
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
}

bool gpucc_hex_decode(void *out, const char *hex, size_t n, bool lowercase_only)
{
	const unsigned char *h = (const unsigned char *)hex;
	unsigned char *o = out;
	for (size_t i = 0; i < n; i++) {
		int hi = lowercase_only ? gpucc_hex_digit_lower(h[2 * i]) : gpucc_hex_digit(h[2 * i]);
		if (hi < 0)
			return false;
		int lo = lowercase_only ? gpucc_hex_digit_lower(h[2 * i + 1])
		                        : gpucc_hex_digit(h[2 * i + 1]);
		if (lo < 0)
			return false;
		o[i] = (unsigned char)(hi << 4 | lo);
	}
	return true;
}
