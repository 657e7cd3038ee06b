/*
 * lib/image/image_limits.c -- the bounds on what reading an untrusted image may
 * cost (gpucc/image.h, formats/image.md "Limits"): their defaults, the
 * defaults a program sets for its whole process (the gpucc command from its
 * GPUCC_IMAGE_LIMITS), and the NAME=VALUE spelling that sets them.  The
 * library itself reads no environment: the program decides.
 */
#include "image_internal.h"

#include "errors.h"
#include "manifest.h" /* GPUCC_MANIFEST_MAX_SIZE */

#include "gpucc/cache.h" /* gpucc_size_parse */

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_EXPANDED_SIZE ((uint64_t)32 << 30)
#define DEFAULT_EXPANSION_RATIO 1000
#define DEFAULT_MANIFEST_SIZE ((uint64_t)128 << 20)

static pthread_mutex_t defaults_lock = PTHREAD_MUTEX_INITIALIZER;
static gpucc_image_limits process_defaults = GPUCC_IMAGE_LIMITS_INIT;
static char setting_name[64]; /* "" when the program named none */

void gpucc_image_limits_complete(gpucc_image_limits *limits)
{
	if (!limits->expanded_size)
		limits->expanded_size = DEFAULT_EXPANDED_SIZE;
	if (!limits->expansion_ratio)
		limits->expansion_ratio = DEFAULT_EXPANSION_RATIO;
	if (!limits->manifest_size)
		limits->manifest_size = DEFAULT_MANIFEST_SIZE;
	if (limits->manifest_size > GPUCC_MANIFEST_MAX_SIZE)
		limits->manifest_size = GPUCC_MANIFEST_MAX_SIZE;
}

/* One NAME=VALUE of a limits setting into limits. */
static int parse_limit(gpucc_image_limits *limits, const char *item, size_t len)
{
	char text[64];
	if (len >= sizeof text)
		return gpucc_error_set(GPUCC_EINVALID, "'%.*s' is too long", (int)len, item);
	memcpy(text, item, len);
	text[len] = '\0';
	char *value = strchr(text, '=');
	uint64_t *slot = NULL;
	if (value) {
		*value++ = '\0';
		slot = strcmp(text, "expanded") == 0   ? &limits->expanded_size
		       : strcmp(text, "ratio") == 0    ? &limits->expansion_ratio
		       : strcmp(text, "manifest") == 0 ? &limits->manifest_size
		                                       : NULL;
	}
	if (!slot)
		return gpucc_error_set(GPUCC_EINVALID,
		                       "'%.*s' is not NAME=VALUE with NAME expanded, ratio or manifest",
		                       (int)len, item);
	uint64_t v;
	if (gpucc_size_parse(&v, value) != 0)
		return GPUCC_EINVALID;
	*slot = v ? v : UINT64_MAX;
	return 0;
}

int gpucc_image_limits_parse(gpucc_image_limits *out, const char *text)
{
	GPUCC_REQUIRE(out);
	GPUCC_REQUIRE(text);
	if (gpucc_options_version_check("image limits", out->version, GPUCC_IMAGE_LIMITS_VERSION))
		return GPUCC_EINVALID;
	gpucc_image_limits limits = *out;
	for (const char *p = text; *p;) {
		size_t len = strcspn(p, ",");
		int rc = parse_limit(&limits, p, len);
		if (rc)
			return rc;
		p += len + (p[len] == ',');
	}
	*out = limits;
	return 0;
}

int gpucc_image_set_default_limits(const gpucc_image_limits *limits, const char *setting)
{
	gpucc_image_limits given = GPUCC_IMAGE_LIMITS_INIT;
	if (limits) {
		if (gpucc_options_version_check("image limits", limits->version, GPUCC_IMAGE_LIMITS_VERSION))
			return GPUCC_EINVALID;
		given = *limits;
	}
	if (setting && strlen(setting) >= sizeof setting_name)
		return gpucc_error_set(GPUCC_EINVALID, "the setting's name '%.20s...' is too long", setting);
	pthread_mutex_lock(&defaults_lock);
	process_defaults = given;
	snprintf(setting_name, sizeof setting_name, "%s", setting ? setting : "");
	pthread_mutex_unlock(&defaults_lock);
	return 0;
}

int gpucc_image_default_limits(gpucc_image_limits *out)
{
	GPUCC_REQUIRE(out);
	pthread_mutex_lock(&defaults_lock);
	gpucc_image_limits limits = process_defaults;
	pthread_mutex_unlock(&defaults_lock);
	gpucc_image_limits_complete(&limits);
	*out = limits;
	return 0;
}

const char *gpucc_image_limits_setting_name(void)
{
	/* Set before the program's threads read images (the contract of
	 * gpucc_image_set_default_limits), so read without the lock. */
	return setting_name[0] ? setting_name : NULL;
}
