/*
 * lib/tests/fuzz_target.c -- fuzz target: target strings (formats/target.c), as
 * given to `gpucc compile --target` and read from manifests.  The input, up
 * to its first NUL byte, is the spelling.  A refusal is GPUCC_EINVALID with
 * a message; an accepted target has one canonical spelling that fits its
 * buffer, parses again to the same target and formats to itself, and names
 * a triple, an LLVM CPU and features that agree with it.
 */
#include "fuzz.h"

#include <gpucc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool same_target(const gpucc_target *a, const gpucc_target *b)
{
	return a->vendor == b->vendor && a->sm == b->sm && a->sm_accelerated == b->sm_accelerated &&
	       a->sm_family == b->sm_family &&
	       a->ptx_isa == b->ptx_isa && strcmp(a->processor, b->processor) == 0 &&
	       a->sramecc == b->sramecc && a->xnack == b->xnack;
}

static void check_accepted(const gpucc_target *t)
{
	char canonical[GPUCC_TARGET_NAME_SIZE];
	gpucc_target_format(canonical, t);
	if (strlen(canonical) + 1 >= GPUCC_TARGET_NAME_SIZE)
		fuzz_fail("a canonical spelling fills its buffer (truncated?)");
	gpucc_target again;
	if (gpucc_target_parse(&again, canonical) != 0)
		fuzz_fail("a canonical spelling does not parse");
	if (!same_target(t, &again))
		fuzz_fail("a canonical spelling parses to another target");
	char twice[GPUCC_TARGET_NAME_SIZE];
	gpucc_target_format(twice, &again);
	if (strcmp(canonical, twice) != 0)
		fuzz_fail("formatting is not idempotent");

	const char *cpu = gpucc_target_cpu(t);
	char features[64];
	gpucc_target_llvm_features(features, t);
	if (!cpu[0] || strncmp(canonical, cpu, strlen(cpu)) != 0 ||
	    (canonical[strlen(cpu)] != '\0' && canonical[strlen(cpu)] != ':'))
		fuzz_fail("the LLVM CPU is not the processor of the canonical spelling");
	if (t->vendor == GPUCC_VENDOR_NVIDIA) {
		char expected[64];
		snprintf(expected, sizeof expected, "+ptx%u", t->ptx_isa);
		if (t->ptx_isa == 0 || strcmp(features, expected) != 0 ||
		    strcmp(gpucc_target_triple(t), "nvptx64-nvidia-cuda") != 0)
			fuzz_fail("an NVIDIA target with the wrong PTX feature or triple");
	} else if (t->vendor == GPUCC_VENDOR_AMD) {
		/* Exactly the features given, in LLVM's form. */
		bool sramecc = t->sramecc == GPUCC_FEATURE_ON || t->sramecc == GPUCC_FEATURE_OFF;
		bool xnack = t->xnack == GPUCC_FEATURE_ON || t->xnack == GPUCC_FEATURE_OFF;
		if ((strstr(features, "sramecc") != NULL) != sramecc ||
		    (strstr(features, "xnack") != NULL) != xnack ||
		    (strstr(canonical, ":sramecc") != NULL) != sramecc ||
		    (strstr(canonical, ":xnack") != NULL) != xnack ||
		    strcmp(gpucc_target_triple(t), "amdgcn-amd-amdhsa") != 0)
			fuzz_fail("an AMD target whose features or triple disagree");
	} else {
		fuzz_fail("an accepted target of no vendor");
	}
	/* Some LLVM from 19 to 22 knows every accepted target, oldest first. */
	unsigned last, oldest = gpucc_target_llvm_major(t, &last);
	if (oldest < 19 || oldest > 22 || (last && last < oldest))
		fuzz_fail("an accepted target no LLVM from 19 to 22 knows");
	if (t->sm_accelerated && t->sm_family)
		fuzz_fail("an NVIDIA target both arch- and family-specific");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *spelling = fuzz_string(data, size);
	gpucc_target t;
	int rc = gpucc_target_parse(&t, spelling);
	if (rc == 0)
		check_accepted(&t);
	else if (rc != GPUCC_EINVALID || !gpucc_error_last()->message[0])
		fuzz_fail("a refusal that is not GPUCC_EINVALID with a message");
	free(spelling);
	return 0;
}

void fuzz_seeds(void (*add)(const void *data, size_t size))
{
	static const char *const seeds[] = {
		"sm_90", "sm_90:ptx78", "sm_90a:ptx80", "sm_20:ptx32", "sm_86:ptx85", "sm_75",
		"gfx90a", "gfx90a:xnack-", "gfx90a:sramecc+:xnack-", "gfx908:xnack+:sramecc-",
		"gfx942:sramecc-", "gfx1030", "gfx1100", "gfx600", "gfx1201",
		/* LLVM 20 and 22's: 'a' and 'f' variants, PTX ISA 9.0, MI350, gfx1250. */
		"sm_100", "sm_100f:ptx88", "sm_121a", "sm_110:ptx90", "gfx950:sramecc+:xnack-",
		"gfx1250", "gfx941",
	};
	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
		add(seeds[i], strlen(seeds[i]));
}
