/*
 * lib/tests/test_target.c -- target parsing: canonical spellings, defaults,
 * and the targets LLVM 19 does not know, which must be errors.
 */
#include "check.h"

#include <gpucc.h>

static const char *canonical(const char *spelling)
{
	static char out[GPUCC_TARGET_NAME_SIZE];
	gpucc_target t;
	if (gpucc_target_parse(&t, spelling) != 0)
		return gpucc_error_last()->message;
	gpucc_target_format(out, &t);
	return out;
}

static void test_nvptx(void)
{
	CHECK_STR(canonical("sm_90"), "sm_90:ptx78");
	CHECK_STR(canonical("sm_90:ptx80"), "sm_90:ptx80");
	CHECK_STR(canonical("sm_90a"), "sm_90a:ptx80");
	CHECK_STR(canonical("sm_80"), "sm_80:ptx70");
	CHECK_STR(canonical("sm_20"), "sm_20:ptx32");
	gpucc_target t;
	CHECK_INT(gpucc_target_parse(&t, "sm_86:ptx85"), 0);
	CHECK_INT(t.vendor, GPUCC_VENDOR_NVIDIA);
	CHECK_INT(t.sm, 86);
	CHECK_INT(t.ptx_isa, 85);
	CHECK_STR(gpucc_target_triple(&t), "nvptx64-nvidia-cuda");
	CHECK_STR(gpucc_target_cpu(&t), "sm_86");
	char features[64];
	gpucc_target_llvm_features(features, &t);
	CHECK_STR(features, "+ptx85");
}

static void test_amdgpu(void)
{
	CHECK_STR(canonical("gfx90a"), "gfx90a");
	CHECK_STR(canonical("gfx90a:xnack-:sramecc+"), "gfx90a:sramecc+:xnack-");
	CHECK_STR(canonical("gfx942:xnack+"), "gfx942:xnack+");
	CHECK_STR(canonical("gfx1030"), "gfx1030");
	gpucc_target t;
	CHECK_INT(gpucc_target_parse(&t, "gfx908:sramecc-:xnack+"), 0);
	CHECK_INT(t.vendor, GPUCC_VENDOR_AMD);
	CHECK_INT(t.sramecc, GPUCC_FEATURE_OFF);
	CHECK_INT(t.xnack, GPUCC_FEATURE_ON);
	CHECK_STR(gpucc_target_cpu(&t), "gfx908");
	CHECK_STR(gpucc_target_triple(&t), "amdgcn-amd-amdhsa");
	char features[64];
	gpucc_target_llvm_features(features, &t);
	CHECK_STR(features, "-sramecc,+xnack");
	CHECK_INT(gpucc_target_parse(&t, "gfx1100"), 0);
	CHECK_INT(t.xnack, GPUCC_FEATURE_UNSUPPORTED);
}

static void test_unknown_targets_are_errors(void)
{
	static const char *const bad[] = {
		"", "sm_", "sm_91", "sm_100", "sm_90b", "sm_90:ptx99", "sm_90:ptx70",
		"sm_90:ptx", "sm_90:", "sm_90:xnack+", "gfx943", "gfx9000", "gfx90a:xnack",
		"gfx90a:foo+", "gfx1030:xnack+", "gfx1030:sramecc-", "gfx90a:xnack+:xnack-",
		"gfx90a:sramecc+:", "nvidia", "GFX90A", "sm_9O",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		gpucc_target t;
		int rc = gpucc_target_parse(&t, bad[i]);
		if (rc != GPUCC_EINVALID)
			fprintf(stderr, "  '%s' parsed (rc %d)\n", bad[i], rc);
		CHECK_INT(rc, GPUCC_EINVALID);
	}
	gpucc_target t;
	gpucc_target_parse(&t, "sm_90:ptx70");
	CHECK_ERROR_HAS("ptx78");
	gpucc_target_parse(&t, "gfx943");
	CHECK_ERROR_HAS("gfx943");
	/* Newer than LLVM 19: the refusal says what would know them. */
	CHECK_INT(gpucc_target_parse(&t, "sm_100"), GPUCC_EINVALID);
	CHECK_ERROR_HAS("sm_100 needs LLVM 20 or later");
	CHECK_ERROR_HAS("runs sm_90 PTX");
	CHECK_INT(gpucc_target_parse(&t, "sm_120a"), GPUCC_EINVALID);
	CHECK_ERROR_HAS("sm_120 needs LLVM 20");
	CHECK_INT(gpucc_target_parse(&t, "gfx950"), GPUCC_EINVALID);
	CHECK_ERROR_HAS("'gfx950': it needs LLVM 20");
}

int main(void)
{
	RUN(test_nvptx);
	RUN(test_amdgpu);
	RUN(test_unknown_targets_are_errors);
	return CHECK_DONE();
}
