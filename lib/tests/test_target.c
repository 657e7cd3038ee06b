/*
 * lib/tests/test_target.c -- target parsing: canonical spellings, defaults,
 * the LLVM that knows each target, and the targets no LLVM from 19 to 22
 * knows, which must be errors.
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
		"", "sm_", "sm_91", "sm_102", "sm_90b", "sm_90f", "sm_100b", "sm_100:ptx85",
		"sm_90:ptx89", "sm_110:ptx88", "gfx951", "gfx1252", "gfx950:foo+", "gfx1250:xnack+", "sm_90:ptx99", "sm_90:ptx70",
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
	gpucc_target_parse(&t, "sm_102");
	CHECK_ERROR_HAS("sm_100 to sm_121f");
	gpucc_target_parse(&t, "sm_100:ptx85");
	CHECK_ERROR_HAS("sm_100 needs PTX ISA ptx86 or newer");
}

/* The processors newer than LLVM 19, their default PTX ISA (what llc-22
 * writes for each), and the LLVM majors that know them. */
static void test_newer_targets(void)
{
	static const struct {
		const char *spelling, *canonical, *cpu;
		unsigned oldest, newest;
	} table[] = {
		{"sm_90", "sm_90:ptx78", "sm_90", 19, 0},
		{"sm_90a", "sm_90a:ptx80", "sm_90a", 19, 0},
		{"sm_90:ptx86", "sm_90:ptx86", "sm_90", 20, 0},
		{"sm_90:ptx88", "sm_90:ptx88", "sm_90", 22, 0},
		{"sm_100", "sm_100:ptx86", "sm_100", 20, 0},
		{"sm_100a", "sm_100a:ptx86", "sm_100a", 20, 0},
		{"sm_100f", "sm_100f:ptx88", "sm_100f", 22, 0},
		{"sm_101", "sm_101:ptx86", "sm_101", 20, 0},
		{"sm_103", "sm_103:ptx88", "sm_103", 22, 0},
		{"sm_103a", "sm_103a:ptx88", "sm_103a", 22, 0},
		{"sm_110", "sm_110:ptx90", "sm_110", 22, 0},
		{"sm_110f", "sm_110f:ptx90", "sm_110f", 22, 0},
		{"sm_120", "sm_120:ptx87", "sm_120", 20, 0},
		{"sm_120a:ptx88", "sm_120a:ptx88", "sm_120a", 22, 0},
		{"sm_120f", "sm_120f:ptx88", "sm_120f", 22, 0},
		{"sm_121", "sm_121:ptx88", "sm_121", 22, 0},
		{"sm_121f", "sm_121f:ptx88", "sm_121f", 22, 0},
		{"gfx942", "gfx942", "gfx942", 19, 0},
		{"gfx941", "gfx941", "gfx941", 19, 20},
		{"gfx950", "gfx950", "gfx950", 20, 0},
		{"gfx950:sramecc+:xnack-", "gfx950:sramecc+:xnack-", "gfx950", 20, 0},
		{"gfx1151", "gfx1151", "gfx1151", 19, 0},
		{"gfx1153", "gfx1153", "gfx1153", 22, 0},
		{"gfx1201", "gfx1201", "gfx1201", 19, 0},
		{"gfx1250", "gfx1250", "gfx1250", 22, 0},
		{"gfx1251", "gfx1251", "gfx1251", 22, 0},
	};
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
		gpucc_target t;
		if (gpucc_target_parse(&t, table[i].spelling) != 0) {
			fprintf(stderr, "  '%s': %s\n", table[i].spelling, gpucc_error_last()->message);
			CHECK(false);
			continue;
		}
		CHECK_STR(canonical(table[i].spelling), table[i].canonical);
		CHECK_STR(gpucc_target_cpu(&t), table[i].cpu);
		unsigned newest = 99;
		CHECK_INT(gpucc_target_llvm_major(&t, &newest), table[i].oldest);
		CHECK_INT(newest, table[i].newest);
	}
	gpucc_target t;
	CHECK_INT(gpucc_target_parse(&t, "sm_100f"), 0);
	CHECK(t.sm == 100 && t.sm_family && !t.sm_accelerated);
	CHECK_INT(gpucc_target_parse(&t, "sm_100a"), 0);
	CHECK(t.sm == 100 && !t.sm_family && t.sm_accelerated);
	/* Every processor listed is one that parses, with its LLVM. */
	const char *name;
	unsigned oldest;
	size_t count = 0;
	for (size_t i = 0; (name = gpucc_target_processor_name(GPUCC_VENDOR_NVIDIA, i, &oldest, NULL));
	     i++, count++) {
		CHECK_INT(gpucc_target_parse(&t, name), 0);
		CHECK_INT(gpucc_target_llvm_major(&t, NULL), oldest);
	}
	for (size_t i = 0; (name = gpucc_target_processor_name(GPUCC_VENDOR_AMD, i, &oldest, NULL));
	     i++, count++) {
		CHECK_INT(gpucc_target_parse(&t, name), 0);
		CHECK_INT(gpucc_target_llvm_major(&t, NULL), oldest);
	}
	CHECK(count > 80);
}

int main(void)
{
	RUN(test_nvptx);
	RUN(test_amdgpu);
	RUN(test_unknown_targets_are_errors);
	RUN(test_newer_targets);
	return CHECK_DONE();
}
