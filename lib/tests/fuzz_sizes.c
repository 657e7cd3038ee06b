/*
 * lib/tests/fuzz_sizes.c -- fuzz target: sizes as users spell them
 * (gpucc_size_parse, formats/size.c: --max-size, a cache's config,
 * $GPUCC_CACHE_MAX_SIZE) and the image limits setting built of them
 * (gpucc_image_limits_parse, lib/image/image_limits.c: $GPUCC_IMAGE_LIMITS).
 * The input, up to its first NUL byte, is the text, given to both.  Each
 * verdict is held against a plain reading of the spelling written here
 * from the documented form: digits, then K, M, G or T (either case) with
 * an optional i, then an optional B, at most INT64_MAX bytes in all; a
 * limits setting is comma-separated NAME=SIZE items (NAME expanded, ratio
 * or manifest; 0 turns a check off), each under 64 bytes.  A refusal has
 * a message and leaves the limits as they were.
 */
#include "fuzz.h"

#include <gpucc.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The size text spells, by the documented form; false when it spells none. */
static bool model_size(const char *text, uint64_t *out)
{
	const char *p = text;
	if (*p < '0' || *p > '9')
		return false;
	/* Digits past 8 EiB are refused whatever follows: noted, not wrapped. */
	uint64_t value = 0;
	bool too_large = false;
	for (; *p >= '0' && *p <= '9'; p++) {
		uint64_t digit = (uint64_t)(*p - '0');
		if (value > ((uint64_t)INT64_MAX - digit) / 10)
			too_large = true;
		else
			value = value * 10 + digit;
	}
	unsigned shift = 0;
	const char *units = "kKmMgGtT";
	const char *u = *p ? strchr(units, *p) : NULL;
	if (u) {
		shift = 10 * (unsigned)(1 + (u - units) / 2);
		p++;
		if (*p == 'i' || *p == 'I')
			p++;
	}
	if (*p == 'b' || *p == 'B')
		p++;
	if (*p)
		return false;
	if (too_large || value > ((uint64_t)INT64_MAX >> shift))
		return false;
	*out = value << shift;
	return true;
}

/* What the limits setting text makes of *limits (false: refused). */
static bool model_limits(const char *text, gpucc_image_limits *limits)
{
	for (const char *p = text; *p;) {
		size_t len = strcspn(p, ",");
		if (len >= 64)
			return false;
		char item[64];
		memcpy(item, p, len);
		item[len] = '\0';
		char *value = strchr(item, '=');
		if (!value)
			return false;
		*value++ = '\0';
		uint64_t *slot = strcmp(item, "expanded") == 0   ? &limits->expanded_size
		                 : strcmp(item, "ratio") == 0    ? &limits->expansion_ratio
		                 : strcmp(item, "manifest") == 0 ? &limits->manifest_size
		                                                 : NULL;
		uint64_t v;
		if (!slot || !model_size(value, &v))
			return false;
		*slot = v ? v : UINT64_MAX;
		p += len + (p[len] == ',');
	}
	return true;
}

static bool same_limits(const gpucc_image_limits *a, const gpucc_image_limits *b)
{
	return a->version == b->version && a->expanded_size == b->expanded_size &&
	       a->expansion_ratio == b->expansion_ratio && a->manifest_size == b->manifest_size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_string(data, size);
	if (!text)
		return 0;
	uint64_t got = 12345, want = 0;
	int rc = gpucc_size_parse(&got, text);
	bool valid = model_size(text, &want);
	if (rc != 0 && valid)
		fuzz_fail("a size refused that the documented form accepts");
	if (rc == 0 && !valid)
		fuzz_fail("a size accepted that the documented form refuses");
	if (rc == 0 && got != want)
		fuzz_fail("a size read as another value");
	if (rc != 0 && (rc != GPUCC_EINVALID || !*gpucc_error_last()->message))
		fuzz_fail("a size refused without GPUCC_EINVALID and a message");

	gpucc_image_limits limits = GPUCC_IMAGE_LIMITS_INIT, before, model;
	limits.expanded_size = 7, limits.expansion_ratio = 8, limits.manifest_size = 9;
	before = model = limits;
	rc = gpucc_image_limits_parse(&limits, text);
	valid = model_limits(text, &model);
	if ((rc == 0) != valid)
		fuzz_fail(valid ? "a limits setting refused that its form accepts"
		                : "a limits setting accepted that its form refuses");
	if (rc == 0 && !same_limits(&limits, &model))
		fuzz_fail("a limits setting read as other limits");
	if (rc != 0 && (!same_limits(&limits, &before) || !*gpucc_error_last()->message))
		fuzz_fail("a refused limits setting changed the limits or has no message");
	free(text);
	return 0;
}

void fuzz_seeds(void (*add)(const void *data, size_t size))
{
	static const char *seeds[] = {
		"5G", "512M", "4096", "64GiB", "1kb", "7T", "9223372036854775807", "8388608TiB",
		"18446744073709551616", "0", "expanded=64G,ratio=5000", "manifest=1K,ratio=0,",
		"ratio=x", "bogus=1", "manifest", "expanded=1,,ratio=2",
	};
	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
		add(seeds[i], strlen(seeds[i]));
}
