/*
 * formats/size.c -- sizes as users spell them ("5G", "512M", "4096",
 * "64GiB"): the cache's bound, image limits (gpucc/cache.h:
 * gpucc_size_parse).
 */
#include "errors.h"

#include "gpucc/cache.h" /* gpucc_size_parse */

#include <stdint.h>

int gpucc_size_parse(uint64_t *out, const char *text)
{
	GPUCC_REQUIRE(out);
	const char *p = text;
	if (!p || *p < '0' || *p > '9')
		return gpucc_error_set(GPUCC_EINVALID, "'%s' is not a size (e.g. 5G, 512M, 4096)",
		                       text ? text : "");
	uint64_t value = 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (value > (UINT64_MAX - 9) / 10)
			return gpucc_error_set(GPUCC_EINVALID, "size '%s' is too large (at most 8 EiB)", text);
		value = value * 10 + (uint64_t)(*p - '0');
	}
	unsigned shift = 0;
	switch (*p) {
	case 'k': case 'K': shift = 10; p++; break;
	case 'm': case 'M': shift = 20; p++; break;
	case 'g': case 'G': shift = 30; p++; break;
	case 't': case 'T': shift = 40; p++; break;
	default: break;
	}
	if (shift && (*p == 'i' || *p == 'I'))
		p++;
	if (*p == 'b' || *p == 'B')
		p++;
	if (*p)
		return gpucc_error_set(GPUCC_EINVALID, "'%s' is not a size (e.g. 5G, 512M, 4096)", text);
	/* Sizes are file sizes (off_t): at most INT64_MAX. */
	if (value > ((uint64_t)INT64_MAX >> shift))
		return gpucc_error_set(GPUCC_EINVALID, "size '%s' is too large (at most 8 EiB)", text);
	*out = value << shift;
	return 0;
}
