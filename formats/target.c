/*
 * formats/target.c -- target parsing and the one canonical spelling.
 *
 * LLVM only warns about a processor it does not know (and AMDGPU aborts on a
 * target ID used as a CPU name), so gpucc validates targets
 * itself against the tables below, which list what LLVM 19 knows
 * (`llc-19 -march=nvptx64 -mcpu=help`, `llc-19 -march=amdgcn -mcpu=help`,
 * LLVM's NVPTX.td and AMDGPUUsage for the feature support).
 */
#include "errors.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NVPTX processors and the oldest PTX ISA each accepts (NVPTX.td). */
static const struct {
	unsigned sm;
	bool accelerated;
	unsigned min_ptx;
} nvptx_processors[] = {
	{20, false, 32}, {21, false, 32}, {30, false, 32}, {32, false, 40},
	{35, false, 32}, {37, false, 41}, {50, false, 40}, {52, false, 41},
	{53, false, 42}, {60, false, 50}, {61, false, 50}, {62, false, 50},
	{70, false, 60}, {72, false, 61}, {75, false, 63}, {80, false, 70},
	{86, false, 71}, {87, false, 74}, {89, false, 78}, {90, false, 78},
	{90, true, 80},
};

static const unsigned ptx_isas[] = {
	32, 40, 41, 42, 43, 50, 60, 61, 62, 63, 64, 65, 70, 71,
	72, 73, 74, 75, 76, 77, 78, 80, 81, 82, 83, 84, 85,
};

/* AMDGPU processors and whether they support the sramecc and xnack
 * target-ID features. */
static const struct {
	const char *name;
	bool sramecc;
	bool xnack;
} amdgpu_processors[] = {
	{"gfx600", false, false}, {"gfx601", false, false}, {"gfx602", false, false},
	{"gfx700", false, false}, {"gfx701", false, false}, {"gfx702", false, false},
	{"gfx703", false, false}, {"gfx704", false, false}, {"gfx705", false, false},
	{"gfx801", false, true},  {"gfx802", false, false}, {"gfx803", false, false},
	{"gfx805", false, false}, {"gfx810", false, true},  {"gfx900", false, true},
	{"gfx902", false, true},  {"gfx904", false, true},  {"gfx906", true, true},
	{"gfx908", true, true},   {"gfx909", false, true},  {"gfx90a", true, true},
	{"gfx90c", false, true},  {"gfx940", true, true},   {"gfx941", true, true},
	{"gfx942", true, true},   {"gfx1010", false, true}, {"gfx1011", false, true},
	{"gfx1012", false, true}, {"gfx1013", false, true}, {"gfx1030", false, false},
	{"gfx1031", false, false}, {"gfx1032", false, false}, {"gfx1033", false, false},
	{"gfx1034", false, false}, {"gfx1035", false, false}, {"gfx1036", false, false},
	{"gfx1100", false, false}, {"gfx1101", false, false}, {"gfx1102", false, false},
	{"gfx1103", false, false}, {"gfx1150", false, false}, {"gfx1151", false, false},
	{"gfx1152", false, false}, {"gfx1200", false, false}, {"gfx1201", false, false},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static bool ptx_isa_known(unsigned isa)
{
	for (size_t i = 0; i < COUNT(ptx_isas); i++)
		if (ptx_isas[i] == isa)
			return true;
	return false;
}

/* Parse a run of decimal digits of at most 4 characters. */
static bool parse_small_number(const char *s, size_t len, unsigned *out)
{
	if (len == 0 || len > 4)
		return false;
	unsigned v = 0;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	*out = v;
	return true;
}

static int parse_nvptx(gpucc_target *t, const char *spelling)
{
	const char *p = spelling + 3; /* after "sm_" */
	size_t digits = strspn(p, "0123456789");
	unsigned sm;
	if (!parse_small_number(p, digits, &sm))
		return gpucc_error_set(GPUCC_EINVALID, "'%s' is not a target: expected sm_XY", spelling);
	p += digits;
	bool accelerated = false;
	if (*p == 'a') {
		accelerated = true;
		p++;
	}
	size_t i;
	for (i = 0; i < COUNT(nvptx_processors); i++)
		if (nvptx_processors[i].sm == sm && nvptx_processors[i].accelerated == accelerated)
			break;
	if (i == COUNT(nvptx_processors) && sm >= 100 && sm < 130)
		/* Blackwell: LLVM 20 writes sm_100 and sm_120 code; their driver
		 * compiles sm_90 PTX (as any newer GPU's does). */
		return gpucc_error_set(GPUCC_EINVALID,
		                       "unknown target '%s': sm_%u needs LLVM 20 or later, and LLVM 19 "
		                       "knows sm_20 to sm_90a; a Blackwell GPU runs sm_90 PTX (the "
		                       "target sm_90, which its driver compiles at load)",
		                       spelling, sm);
	if (i == COUNT(nvptx_processors))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "unknown target '%s': LLVM 19 knows sm_20 to sm_90a", spelling);
	t->vendor = GPUCC_VENDOR_NVIDIA;
	t->sm = sm;
	t->sm_accelerated = accelerated;
	t->ptx_isa = nvptx_processors[i].min_ptx;
	if (*p == '\0')
		return 0;
	unsigned isa;
	if (strncmp(p, ":ptx", 4) != 0 || !parse_small_number(p + 4, strlen(p + 4), &isa))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "'%s' is not a target: expected sm_XY[:ptxNN], e.g. sm_90:ptx80",
		                       spelling);
	if (!ptx_isa_known(isa))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "unknown PTX ISA in '%s': LLVM 19 knows ptx32 to ptx85", spelling);
	if (isa < nvptx_processors[i].min_ptx)
		return gpucc_error_set(GPUCC_EINVALID, "'%s': sm_%u%s needs PTX ISA ptx%u or newer",
		                       spelling, sm, accelerated ? "a" : "", nvptx_processors[i].min_ptx);
	t->ptx_isa = isa;
	return 0;
}

static int parse_feature(const char *spelling, const char *name, bool supported, char sign,
                         gpucc_feature *out)
{
	if (!supported)
		return gpucc_error_set(GPUCC_EINVALID, "'%s': this processor has no %s feature",
		                       spelling, name);
	if (*out != GPUCC_FEATURE_ANY)
		return gpucc_error_set(GPUCC_EINVALID, "'%s': %s given twice", spelling, name);
	*out = sign == '+' ? GPUCC_FEATURE_ON : GPUCC_FEATURE_OFF;
	return 0;
}

static int parse_amdgpu(gpucc_target *t, const char *spelling)
{
	size_t len = strcspn(spelling, ":");
	size_t i;
	for (i = 0; i < COUNT(amdgpu_processors); i++)
		if (strlen(amdgpu_processors[i].name) == len &&
		    strncmp(amdgpu_processors[i].name, spelling, len) == 0)
			break;
	if (i == COUNT(amdgpu_processors) && len == 6 && strncmp(spelling, "gfx950", 6) == 0)
		return gpucc_error_set(GPUCC_EINVALID,
		                       "unknown target 'gfx950': it needs LLVM 20 or later; LLVM 19 knows "
		                       "gfx942 at most of the MI300 family");
	if (i == COUNT(amdgpu_processors))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "unknown target '%.*s': not an AMDGPU processor LLVM 19 knows",
		                       (int)len, spelling);
	t->vendor = GPUCC_VENDOR_AMD;
	snprintf(t->processor, sizeof t->processor, "%s", amdgpu_processors[i].name);
	t->sramecc = amdgpu_processors[i].sramecc ? GPUCC_FEATURE_ANY : GPUCC_FEATURE_UNSUPPORTED;
	t->xnack = amdgpu_processors[i].xnack ? GPUCC_FEATURE_ANY : GPUCC_FEATURE_UNSUPPORTED;

	/* Either order is accepted; the canonical spelling puts sramecc first. */
	const char *p = spelling + len;
	while (*p == ':') {
		p++;
		size_t flen = strcspn(p, ":");
		char sign = flen ? p[flen - 1] : 0;
		int rc;
		if (flen == 8 && strncmp(p, "sramecc", 7) == 0 && (sign == '+' || sign == '-')) {
			gpucc_feature f = t->sramecc == GPUCC_FEATURE_UNSUPPORTED ? GPUCC_FEATURE_ANY : t->sramecc;
			rc = parse_feature(spelling, "sramecc", amdgpu_processors[i].sramecc, sign, &f);
			t->sramecc = f;
		} else if (flen == 6 && strncmp(p, "xnack", 5) == 0 && (sign == '+' || sign == '-')) {
			gpucc_feature f = t->xnack == GPUCC_FEATURE_UNSUPPORTED ? GPUCC_FEATURE_ANY : t->xnack;
			rc = parse_feature(spelling, "xnack", amdgpu_processors[i].xnack, sign, &f);
			t->xnack = f;
		} else {
			rc = gpucc_error_set(GPUCC_EINVALID,
			                     "'%s': unknown target feature '%.*s' (expected sramecc+, "
			                     "sramecc-, xnack+ or xnack-)",
			                     spelling, (int)flen, p);
		}
		if (rc)
			return rc;
		p += flen;
	}
	return 0;
}

int gpucc_target_parse(gpucc_target *out, const char *spelling)
{
	GPUCC_REQUIRE(out);
	gpucc_target t;
	memset(&t, 0, sizeof t);
	int rc;
	if (!spelling || !*spelling)
		return gpucc_error_set(GPUCC_EINVALID, "empty target");
	if (strncmp(spelling, "sm_", 3) == 0)
		rc = parse_nvptx(&t, spelling);
	else if (strncmp(spelling, "gfx", 3) == 0)
		rc = parse_amdgpu(&t, spelling);
	else
		rc = gpucc_error_set(GPUCC_EINVALID,
		                     "unknown target '%s': expected sm_XY[:ptxNN] or "
		                     "gfxNNN[:sramecc±][:xnack±]",
		                     spelling);
	if (rc == 0)
		*out = t;
	return rc;
}

void gpucc_target_format(char out[GPUCC_TARGET_NAME_SIZE], const gpucc_target *t)
{
	GPUCC_REQUIRE_VOID(out);
	out[0] = '\0'; /* no target: nothing for a caller to print */
	GPUCC_REQUIRE_VOID(t);
	if (t->vendor == GPUCC_VENDOR_NVIDIA) {
		snprintf(out, GPUCC_TARGET_NAME_SIZE, "sm_%u%s:ptx%u", t->sm, t->sm_accelerated ? "a" : "",
		         t->ptx_isa);
		return;
	}
	snprintf(out, GPUCC_TARGET_NAME_SIZE, "%s%s%s", t->processor,
	         t->sramecc == GPUCC_FEATURE_ON ? ":sramecc+"
	         : t->sramecc == GPUCC_FEATURE_OFF ? ":sramecc-" : "",
	         t->xnack == GPUCC_FEATURE_ON ? ":xnack+" : t->xnack == GPUCC_FEATURE_OFF ? ":xnack-" : "");
}

const char *gpucc_target_triple(const gpucc_target *t)
{
	GPUCC_REQUIRE_OR(t, NULL);
	return t->vendor == GPUCC_VENDOR_NVIDIA ? "nvptx64-nvidia-cuda" : "amdgcn-amd-amdhsa";
}

const char *gpucc_target_cpu(const gpucc_target *t)
{
	static const char *const names[] = {
		"sm_20", "sm_21", "sm_30", "sm_32", "sm_35", "sm_37", "sm_50",
		"sm_52", "sm_53", "sm_60", "sm_61", "sm_62", "sm_70", "sm_72",
		"sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a",
	};
	GPUCC_REQUIRE_OR(t, NULL);
	if (t->vendor == GPUCC_VENDOR_AMD) {
		for (size_t i = 0; i < COUNT(amdgpu_processors); i++)
			if (strcmp(amdgpu_processors[i].name, t->processor) == 0)
				return amdgpu_processors[i].name;
		return "";
	}
	for (size_t i = 0; i < COUNT(nvptx_processors); i++)
		if (nvptx_processors[i].sm == t->sm && nvptx_processors[i].accelerated == t->sm_accelerated)
			return names[i];
	return "";
}

void gpucc_target_llvm_features(char out[64], const gpucc_target *t)
{
	GPUCC_REQUIRE_VOID(out);
	out[0] = '\0'; /* no target: nothing for a caller to print */
	GPUCC_REQUIRE_VOID(t);
	if (t->vendor == GPUCC_VENDOR_NVIDIA) {
		snprintf(out, 64, "+ptx%u", t->ptx_isa);
		return;
	}
	const char *sramecc = t->sramecc == GPUCC_FEATURE_ON ? "+sramecc"
	                      : t->sramecc == GPUCC_FEATURE_OFF ? "-sramecc" : "";
	const char *xnack = t->xnack == GPUCC_FEATURE_ON ? "+xnack"
	                    : t->xnack == GPUCC_FEATURE_OFF ? "-xnack" : "";
	snprintf(out, 64, "%s%s%s", sramecc, *sramecc && *xnack ? "," : "", xnack);
}
