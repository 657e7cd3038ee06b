/*
 * lib/tests/fuzz_key_prefix.c -- fuzz target: key prefixes as given on the
 * command line (`gpucc show IMAGE KEY`, `gpucc cat`), resolved by
 * gpucc_image_lookup in an image of 64 entries, and full keys as parsed by
 * gpucc_digest_from_hex (`gpucc cache lookup`, pack specs).  The input, up
 * to its first NUL byte, is the prefix.  Every verdict is checked against a
 * plain scan of the image's keys: a prefix is accepted only when it is 1 to
 * 64 hex digits (either case) matching exactly one key, which is the entry
 * returned; not found and ambiguous only when no key or several match; and
 * a digest parses only from 64 hex digits, back to the same hex.
 */
#include "fuzz.h"
#include "fuzz_images.h"

#include <gpucc.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ENTRIES 64

static gpucc_image *image;
static unsigned char *image_bytes;

static gpucc_image *the_image(void)
{
	if (!image) {
		size_t size;
		image_bytes = fuzz_make_image(&size, ENTRIES, 0);
		if (gpucc_image_open_memory(&image, image_bytes, size, "fuzz.gpucc") != 0 ||
		    gpucc_image_entry_count(image) != ENTRIES)
			fuzz_fail("cannot open the image of keys");
	}
	return image;
}

static bool all_hex(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* Entries whose key hex starts with prefix, case-insensitively; the first
 * one in *first. */
static size_t count_matches(const gpucc_image *img, const char *prefix, size_t len,
                            const gpucc_entry **first)
{
	size_t n = 0;
	*first = NULL;
	for (size_t i = 0; i < gpucc_image_entry_count(img); i++) {
		char hex[GPUCC_DIGEST_HEX_SIZE];
		gpucc_digest_to_hex(hex, &gpucc_image_entry(img, i)->key);
		if (strncasecmp(hex, prefix, len) == 0) {
			if (n++ == 0)
				*first = gpucc_image_entry(img, i);
		}
	}
	return n;
}

static void check_lookup(const char *prefix)
{
	const gpucc_image *img = the_image();
	size_t len = strlen(prefix);
	static const gpucc_entry unset; /* lookup must overwrite it */
	const gpucc_entry *found = &unset, *expected;
	int rc = gpucc_image_lookup(&found, img, prefix);
	if (len == 0 || len > 64 || !all_hex(prefix, len)) {
		if (rc != GPUCC_EINVALID || found != NULL)
			fuzz_fail("a prefix that is not 1 to 64 hex digits is not refused as invalid");
		return;
	}
	size_t matches = count_matches(img, prefix, len, &expected);
	if (matches == 1 && (rc != 0 || found != expected))
		fuzz_fail("a unique prefix does not give its entry");
	if (matches == 0 && (rc != GPUCC_ENOTFOUND || found != NULL))
		fuzz_fail("a prefix of no key is not 'not found'");
	if (matches > 1 && (rc != GPUCC_EAMBIGUOUS || found != NULL ||
	                    !strstr(gpucc_error_last()->message, "ambiguous")))
		fuzz_fail("a prefix of several keys is not 'ambiguous'");
}

static void check_digest(const char *hex)
{
	gpucc_digest d;
	size_t len = strlen(hex);
	int rc = gpucc_digest_from_hex(&d, hex);
	if ((rc == 0) != (len == 64 && all_hex(hex, len)))
		fuzz_fail("a digest accepted or refused wrongly");
	if (rc != 0)
		return;
	char back[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(back, &d);
	for (size_t i = 0; i < 64; i++)
		if (back[i] != tolower((unsigned char)hex[i]))
			fuzz_fail("a digest does not print back as its hex");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *prefix = fuzz_string(data, size);
	check_lookup(prefix);
	check_digest(prefix);
	free(prefix);
	return 0;
}

void fuzz_seeds(void (*add)(const void *data, size_t size))
{
	const gpucc_image *img = the_image();
	static const size_t lengths[] = {1, 2, 3, 7, 12, 63, 64, 65};
	for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
		char hex[GPUCC_DIGEST_HEX_SIZE + 1];
		gpucc_digest_to_hex(hex, &gpucc_image_entry(img, i)->key);
		if (lengths[i] == 65)
			strcat(hex, "0");
		if (i % 2)
			for (char *c = hex; *c; c++)
				*c = (char)toupper((unsigned char)*c);
		add(hex, lengths[i]);
	}
	add("", 0);
	add("g", 1);
	add("12345678901234567890123456789012345678901234567890123456789012345", 65);
}
