/*
 * formats/part.c -- payload kinds: names (as in manifests and on the command line)
 * and file extensions (as in member names and extracted files).
 */
#include "errors.h"

#include <string.h>

static const struct {
	const char *name;
	const char *extension;
} parts[GPUCC_PART_COUNT] = {
	[GPUCC_PART_PTX] = {"ptx", ".ptx"},
	[GPUCC_PART_CUBIN] = {"cubin", ".cubin"},
	[GPUCC_PART_HSACO] = {"hsaco", ".hsaco"},
	[GPUCC_PART_BITCODE] = {"bitcode", ".bc"},
};

const char *gpucc_part_name(gpucc_part part)
{
	return (unsigned)part < GPUCC_PART_COUNT ? parts[part].name : "unknown";
}

const char *gpucc_part_extension(gpucc_part part)
{
	return (unsigned)part < GPUCC_PART_COUNT ? parts[part].extension : ".bin";
}

int gpucc_part_from_name(gpucc_part *out, const char *name)
{
	GPUCC_REQUIRE(out);
	/* NULL is malformed text, as for every parser of the API (targets,
	 * digests, sizes, key prefixes). */
	for (int i = 0; name && i < GPUCC_PART_COUNT; i++) {
		if (strcmp(parts[i].name, name) == 0) {
			*out = (gpucc_part)i;
			return 0;
		}
	}
	return gpucc_error_set(GPUCC_EINVALID,
	                       "unknown payload kind '%s' (expected ptx, cubin, hsaco or bitcode)",
	                       name ? name : "");
}
