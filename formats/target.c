/*
 * formats/target.c -- target parsing and the one canonical spelling.
 *
 * LLVM only warns about a processor it does not know (and AMDGPU aborts on a
 * target ID used as a CPU name), so gpucc validates targets
 * itself against the tables below, which list what LLVM 19 to 22 know, and
 * the oldest LLVM major that knows each processor and PTX ISA
 * (`llc-N -march=nvptx64 -mcpu=help`, `llc-N -march=amdgcn -mcpu=help`,
 * LLVM's NVPTX.td and AMDGPUUsage for the feature support).  Which LLVM a
 * compile has is not a format's concern: lib/compile_llvm.c refuses a
 * target no backend present knows.
 */
#include "errors.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NVPTX processors, the oldest PTX ISA each accepts (NVPTX.td; what
 * `llc -mcpu=X` writes by default) and the oldest LLVM major that knows
 * them.  variant: 'a' for sm_XYa (arch-specific: that processor alone),
 * 'f' for sm_XYf (family-specific: the processors of its family), else 0. */
static const struct {
	const char *name;
	unsigned sm;
	char variant;
	unsigned min_ptx;
	unsigned llvm;
} nvptx_processors[] = {
	{"sm_20", 20, 0, 32, 19},   {"sm_21", 21, 0, 32, 19},   {"sm_30", 30, 0, 32, 19},
	{"sm_32", 32, 0, 40, 19},   {"sm_35", 35, 0, 32, 19},   {"sm_37", 37, 0, 41, 19},
	{"sm_50", 50, 0, 40, 19},   {"sm_52", 52, 0, 41, 19},   {"sm_53", 53, 0, 42, 19},
	{"sm_60", 60, 0, 50, 19},   {"sm_61", 61, 0, 50, 19},   {"sm_62", 62, 0, 50, 19},
	{"sm_70", 70, 0, 60, 19},   {"sm_72", 72, 0, 61, 19},   {"sm_75", 75, 0, 63, 19},
	{"sm_80", 80, 0, 70, 19},   {"sm_86", 86, 0, 71, 19},   {"sm_87", 87, 0, 74, 19},
	{"sm_89", 89, 0, 78, 19},   {"sm_90", 90, 0, 78, 19},   {"sm_90a", 90, 'a', 80, 19},
	/* Blackwell and Thor: LLVM 20 added sm_100, sm_101 and sm_120 with
	 * their 'a'; the rest is taken as LLVM 22's, the oldest checked. */
	{"sm_100", 100, 0, 86, 20},   {"sm_100a", 100, 'a', 86, 20}, {"sm_100f", 100, 'f', 88, 22},
	{"sm_101", 101, 0, 86, 20},   {"sm_101a", 101, 'a', 86, 20}, {"sm_101f", 101, 'f', 88, 22},
	{"sm_103", 103, 0, 88, 22},   {"sm_103a", 103, 'a', 88, 22}, {"sm_103f", 103, 'f', 88, 22},
	{"sm_110", 110, 0, 90, 22},   {"sm_110a", 110, 'a', 90, 22}, {"sm_110f", 110, 'f', 90, 22},
	{"sm_120", 120, 0, 87, 20},   {"sm_120a", 120, 'a', 87, 20}, {"sm_120f", 120, 'f', 88, 22},
	{"sm_121", 121, 0, 88, 22},   {"sm_121a", 121, 'a', 88, 22}, {"sm_121f", 121, 'f', 88, 22},
};

/* PTX ISA versions and the oldest LLVM major that writes them. */
static const struct {
	unsigned isa;
	unsigned llvm;
} ptx_isas[] = {
	{32, 19}, {40, 19}, {41, 19}, {42, 19}, {43, 19}, {50, 19}, {60, 19}, {61, 19},
	{62, 19}, {63, 19}, {64, 19}, {65, 19}, {70, 19}, {71, 19}, {72, 19}, {73, 19},
	{74, 19}, {75, 19}, {76, 19}, {77, 19}, {78, 19}, {80, 19}, {81, 19}, {82, 19},
	{83, 19}, {84, 19}, {85, 19}, {86, 20}, {87, 20}, {88, 22}, {90, 22},
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
	{"gfx950", true, true},      {"gfx1153", false, false}, {"gfx1250", false, false},
	{"gfx1251", false, false},
};

/* The AMDGPU processors not every LLVM from 19 to 22 knows: the oldest
 * and the newest LLVM major that do (0: no newest).  MI350 came with LLVM
 * 20; the rest are taken as LLVM 22's, the oldest checked; LLVM 21 dropped
 * gfx941 (llc-22 -mcpu=help). */
static const struct {
	const char *name;
	unsigned llvm, last;
} amdgpu_newer[] = {
	{"gfx950", 20, 0}, {"gfx1153", 22, 0}, {"gfx1250", 22, 0}, {"gfx1251", 22, 0},
	{"gfx941", 19, 20},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The oldest LLVM major that writes PTX ISA isa; 0 for one none does. */
static unsigned ptx_isa_llvm(unsigned isa)
{
	for (size_t i = 0; i < COUNT(ptx_isas); i++)
		if (ptx_isas[i].isa == isa)
			return ptx_isas[i].llvm;
	return 0;
}

static unsigned amdgpu_llvm(size_t i, unsigned *last)
{
	*last = 0;
	for (size_t k = 0; k < COUNT(amdgpu_newer); k++) {
		if (strcmp(amdgpu_newer[k].name, amdgpu_processors[i].name) == 0) {
			*last = amdgpu_newer[k].last;
			return amdgpu_newer[k].llvm;
		}
	}
	return 19;
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
	char variant = 0;
	if (*p == 'a' || *p == 'f')
		variant = *p++;
	size_t i;
	for (i = 0; i < COUNT(nvptx_processors); i++)
		if (nvptx_processors[i].sm == sm && nvptx_processors[i].variant == variant)
			break;
	if (i == COUNT(nvptx_processors))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "unknown target '%s': gpucc knows sm_20 to sm_90a (LLVM 19) and "
		                       "sm_100 to sm_121f (LLVM 20 to 22)", spelling);
	t->vendor = GPUCC_VENDOR_NVIDIA;
	t->sm = sm;
	t->sm_accelerated = variant == 'a';
	t->sm_family = variant == 'f';
	t->ptx_isa = nvptx_processors[i].min_ptx;
	if (*p == '\0')
		return 0;
	unsigned isa;
	if (strncmp(p, ":ptx", 4) != 0 || !parse_small_number(p + 4, strlen(p + 4), &isa))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "'%s' is not a target: expected sm_XY[a|f][:ptxNN], e.g. sm_90:ptx80",
		                       spelling);
	if (!ptx_isa_llvm(isa))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "unknown PTX ISA in '%s': gpucc knows ptx32 to ptx85 (LLVM 19) and "
		                       "ptx86 to ptx90 (LLVM 20 to 22)", spelling);
	if (isa < nvptx_processors[i].min_ptx)
		return gpucc_error_set(GPUCC_EINVALID, "'%s': %s needs PTX ISA ptx%u or newer",
		                       spelling, nvptx_processors[i].name, nvptx_processors[i].min_ptx);
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
	if (i == COUNT(amdgpu_processors))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "unknown target '%.*s': not an AMDGPU processor LLVM 19 to 22 "
		                       "knows", (int)len, spelling);
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
		snprintf(out, GPUCC_TARGET_NAME_SIZE, "sm_%u%s:ptx%u", t->sm,
		         t->sm_accelerated ? "a" : t->sm_family ? "f" : "", t->ptx_isa);
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

/* The row of t's processor in nvptx_processors; COUNT when none. */
static size_t nvptx_row(const gpucc_target *t)
{
	char variant = t->sm_accelerated ? 'a' : t->sm_family ? 'f' : 0;
	size_t i;
	for (i = 0; i < COUNT(nvptx_processors); i++)
		if (nvptx_processors[i].sm == t->sm && nvptx_processors[i].variant == variant)
			break;
	return i;
}

static size_t amdgpu_row(const gpucc_target *t)
{
	size_t i;
	for (i = 0; i < COUNT(amdgpu_processors); i++)
		if (strcmp(amdgpu_processors[i].name, t->processor) == 0)
			break;
	return i;
}

const char *gpucc_target_cpu(const gpucc_target *t)
{
	GPUCC_REQUIRE_OR(t, NULL);
	if (t->vendor == GPUCC_VENDOR_AMD) {
		size_t i = amdgpu_row(t);
		return i < COUNT(amdgpu_processors) ? amdgpu_processors[i].name : "";
	}
	size_t i = nvptx_row(t);
	return i < COUNT(nvptx_processors) ? nvptx_processors[i].name : "";
}

unsigned gpucc_target_llvm_major(const gpucc_target *t, unsigned *last)
{
	unsigned none;
	if (!last)
		last = &none;
	*last = 0;
	GPUCC_REQUIRE_OR(t, 0);
	if (t->vendor == GPUCC_VENDOR_AMD) {
		size_t i = amdgpu_row(t);
		return i < COUNT(amdgpu_processors) ? amdgpu_llvm(i, last) : 0;
	}
	size_t i = nvptx_row(t);
	unsigned isa = ptx_isa_llvm(t->ptx_isa);
	if (i == COUNT(nvptx_processors) || !isa)
		return 0;
	return nvptx_processors[i].llvm > isa ? nvptx_processors[i].llvm : isa;
}

const char *gpucc_target_processor_name(gpucc_vendor vendor, size_t index, unsigned *llvm_major,
                                        unsigned *last)
{
	unsigned oldest = 0, newest = 0;
	const char *name = NULL;
	if (vendor == GPUCC_VENDOR_NVIDIA && index < COUNT(nvptx_processors)) {
		oldest = nvptx_processors[index].llvm;
		name = nvptx_processors[index].name;
	} else if (vendor == GPUCC_VENDOR_AMD && index < COUNT(amdgpu_processors)) {
		oldest = amdgpu_llvm(index, &newest);
		name = amdgpu_processors[index].name;
	}
	if (llvm_major)
		*llvm_major = oldest;
	if (last)
		*last = newest;
	return name;
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
