/*
 * lib/runtime/runtime_select.c -- choosing the entry of an image that fits a device
 * (the rules are in gpucc/runtime.h).  Pure logic over entries and a
 * device target: no driver, no I/O, so that every rule is a row of a table
 * in lib/tests/test_runtime_select.c.
 */
#include "errors.h"
#include "gpucc/runtime.h"
#include "image_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Newest PTX ISA each CUDA release can JIT (the PTX ISA release notes),
 * keyed by cuDriverGetVersion (1000 * major + 10 * minor). */
static const struct {
	int driver;
	unsigned ptx_isa;
} cuda_ptx_isas[] = {
	{8000, 50},  {9000, 60},  {9010, 61},  {9020, 62},  {10000, 63}, {10010, 64},
	{10020, 65}, {11000, 70}, {11010, 71}, {11020, 72}, {11030, 73}, {11040, 74},
	{11050, 75}, {11060, 76}, {11070, 77}, {11080, 78}, {12000, 80}, {12010, 81},
	{12020, 82}, {12030, 83}, {12040, 84}, {12050, 85}, {12060, 85}, {12070, 86},
	{12080, 87}, {12090, 88}, {13000, 90},
};

/* The newest PTX ISA gpucc (LLVM 22) can produce: a newer driver JITs
 * everything up to it. */
#define NEWEST_KNOWN_PTX_ISA 90

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

unsigned gpucc_cuda_max_ptx_isa(int driver_version)
{
	unsigned isa = 0;
	for (size_t i = 0; i < COUNT(cuda_ptx_isas); i++)
		if (driver_version >= cuda_ptx_isas[i].driver)
			isa = cuda_ptx_isas[i].ptx_isa;
	return isa > NEWEST_KNOWN_PTX_ISA ? NEWEST_KNOWN_PTX_ISA : isa;
}

int gpucc_target_from_hip_arch(gpucc_target *out, const char *gcn_arch_name)
{
	GPUCC_REQUIRE(out);
	if (!gcn_arch_name || !*gcn_arch_name)
		return gpucc_error_set(GPUCC_EINVALID, "the HIP runtime reported no architecture name");
	int rc = gpucc_target_parse(out, gcn_arch_name);
	if (rc)
		return gpucc_error_prefix("device architecture '%s'", gcn_arch_name);
	if (out->vendor != GPUCC_VENDOR_AMD)
		return gpucc_error_set(GPUCC_EINVALID, "device architecture '%s' is not an AMD GPU",
		                       gcn_arch_name);
	return 0;
}

int gpucc_target_from_cuda(gpucc_target *out, int cc_major, int cc_minor, int driver_version)
{
	GPUCC_REQUIRE(out);
	memset(out, 0, sizeof *out);
	/* sm is major * 10 + minor: a minor above 9 would read as another
	 * major, and a negative or huge value would wrap into an sm on which
	 * every PTX fits (or overflow an int). */
	if (cc_major < 1 || cc_major > 99 || cc_minor < 0 || cc_minor > 9)
		return gpucc_error_set(GPUCC_EINVALID,
		                       "the CUDA driver reported compute capability %d.%d, which is not "
		                       "a version gpucc understands",
		                       cc_major, cc_minor);
	out->vendor = GPUCC_VENDOR_NVIDIA;
	out->sm = (unsigned)cc_major * 10 + (unsigned)cc_minor;
	out->ptx_isa = gpucc_cuda_max_ptx_isa(driver_version);
	out->cuda_major = driver_version > 0 ? (unsigned)driver_version / 1000 : 0;
	return 0;
}

unsigned gpucc_hip_max_code_object(int hip_version)
{
	if (hip_version <= 0)
		return 0;
	return hip_version / 10000000 >= 6 ? 5 : 4;
}

/* ---- devices named by their target ----------------------------------------- */

/* "12.4" or "12" as major * 1000 + minor * 10 (cuDriverGetVersion's
 * form); -1 when text is not of that form. */
static int version_thousands(const char *text)
{
	size_t major_digits = strspn(text, "0123456789");
	if (major_digits == 0 || major_digits > 2)
		return -1;
	int major = atoi(text), minor = 0;
	const char *p = text + major_digits;
	if (*p == '.') {
		if (p[1] < '0' || p[1] > '9' || p[2] != '\0')
			return -1;
		minor = p[1] - '0';
	} else if (*p != '\0') {
		return -1;
	}
	return major >= 1 ? major * 1000 + minor * 10 : -1;
}

int gpucc_cuda_version_parse(int *out, const char *text)
{
	GPUCC_REQUIRE(out);
	GPUCC_REQUIRE(text);
	int version = version_thousands(text);
	if (version < 0)
		return gpucc_error_set(GPUCC_EINVALID, "'%s' is not a CUDA version such as 12.4", text);
	*out = version;
	return 0;
}

int gpucc_hip_version_parse(int *out, const char *text)
{
	GPUCC_REQUIRE(out);
	GPUCC_REQUIRE(text);
	int version = version_thousands(text);
	if (version < 0)
		return gpucc_error_set(GPUCC_EINVALID, "'%s' is not a HIP version such as 5.2", text);
	/* hipDriverGetVersion: major x 10^7 + minor x 10^5 (+ patch). */
	*out = version / 1000 * 10000000 + version % 1000 / 10 * 100000;
	return 0;
}

void gpucc_device_target_options_init(gpucc_device_target_options *opts)
{
	GPUCC_REQUIRE_VOID(opts);
	*opts = (gpucc_device_target_options)GPUCC_DEVICE_TARGET_OPTIONS_INIT;
}

/* The NVIDIA device spelling names: sm_XY alone; the code-only spellings
 * are refused, each saying which device to name instead, so that a PTX
 * ISA is said in one place only (the driver's version). */
static int nvidia_device(gpucc_target *out, const char *spelling, int driver)
{
	const char *p = spelling + 3;
	size_t digits = strspn(p, "0123456789");
	if (digits >= 2 && digits <= 3 && p[0] != '0' && p[digits] == '\0') {
		unsigned sm = (unsigned)atoi(p);
		if (gpucc_target_from_cuda(out, (int)sm / 10, (int)sm % 10, driver) != 0)
			return gpucc_error_last()->code;
		if (driver == 0)
			out->ptx_isa = gpucc_cuda_max_ptx_isa(INT_MAX);
		return 0;
	}
	gpucc_target t;
	if (gpucc_target_parse(&t, spelling) != 0)
		return gpucc_error_set(GPUCC_EINVALID,
		                       "'%s' is not an NVIDIA device: expected sm_XY for compute "
		                       "capability X.Y",
		                       spelling);
	if (t.sm_accelerated)
		return gpucc_error_set(GPUCC_EINVALID,
		                       "'%s' names code that runs only on sm_%u: give the device, sm_%u",
		                       spelling, t.sm, t.sm);
	if (t.sm_family)
		return gpucc_error_set(GPUCC_EINVALID,
		                       "'%s' names code for the family of sm_%u: give a device, such as "
		                       "sm_%u",
		                       spelling, t.sm, t.sm);
	if (strchr(spelling, ':'))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "'%s' names a PTX ISA, which devices do not have: give sm_%u, and "
		                       "the CUDA version of its driver",
		                       spelling, t.sm);
	return gpucc_error_set(GPUCC_EINVALID,
	                       "'%s' is not an NVIDIA device: expected sm_XY for compute capability "
	                       "X.Y",
	                       spelling);
}

int gpucc_device_from_target(gpucc_device *out, const char *spelling,
                             const gpucc_device_target_options *opts)
{
	GPUCC_REQUIRE(out);
	GPUCC_REQUIRE(spelling);
	memset(out, 0, sizeof *out);
	gpucc_device_target_options o = GPUCC_DEVICE_TARGET_OPTIONS_INIT;
	if (opts) {
		int rc = gpucc_options_version_check("device target options", opts->version,
		                                     GPUCC_DEVICE_TARGET_OPTIONS_VERSION);
		if (rc)
			return rc;
		o = *opts;
	}
	out->runtime = GPUCC_RUNTIME_NONE;
	if (strncmp(spelling, "sm_", 3) == 0) {
		int rc = nvidia_device(&out->target, spelling, o.cuda_driver_version);
		if (rc) {
			memset(&out->target, 0, sizeof out->target);
			return rc;
		}
		out->driver_version = o.cuda_driver_version;
	} else {
		if (gpucc_target_parse(&out->target, spelling) != 0)
			return gpucc_error_last()->code;
		out->target.code_object_max = gpucc_hip_max_code_object(o.hip_version);
		out->driver_version = o.hip_version;
	}
	out->target_known = true;
	snprintf(out->arch, sizeof out->arch, "%s", spelling);
	return 0;
}

int gpucc_device_compile_target(char out[GPUCC_TARGET_NAME_SIZE], const gpucc_device *d)
{
	GPUCC_REQUIRE(out);
	out[0] = '\0';
	GPUCC_REQUIRE(d);
	if (!d->target_known)
		return gpucc_error_set(GPUCC_ENOTFOUND, "gpucc does not know the processor '%s'",
		                       d->arch);
	if (d->target.vendor == GPUCC_VENDOR_NVIDIA)
		snprintf(out, GPUCC_TARGET_NAME_SIZE, "%s", gpucc_target_cpu(&d->target));
	else
		gpucc_target_format(out, &d->target);
	return 0;
}

/* ---- one entry against one device ---------------------------------------- */

/* The AMDGPU code object version an entry was compiled for (its
 * "code-object" option), 0 when it records none. */
static unsigned entry_code_object(const gpucc_entry *e)
{
	for (size_t i = 0; i < e->option_count; i++)
		if (strcmp(e->options[i].name, "code-object") == 0)
			return (unsigned)strtoul(e->options[i].value, NULL, 10);
	return 0;
}

/* Whether the device's HIP runtime loads the entry's code object version. */
static bool runtime_loads_code_object(const gpucc_entry *e, const gpucc_target *device)
{
	unsigned version = entry_code_object(e);
	return device->code_object_max == 0 || version == 0 || version <= device->code_object_max;
}

/* sramecc or xnack of an entry against the device's mode. */
static bool feature_fits(gpucc_feature entry, gpucc_feature device)
{
	if (entry == GPUCC_FEATURE_ANY || entry == GPUCC_FEATURE_UNSUPPORTED)
		return true;
	return entry == device;
}

static int feature_specificity(gpucc_feature f)
{
	return f == GPUCC_FEATURE_ON || f == GPUCC_FEATURE_OFF;
}

/* Integrated (Tegra) GPUs: NVIDIA supports cubin compatibility across minor
 * revisions only among desktop GPUs, never to or from these. */
static bool sm_is_tegra(unsigned sm)
{
	return sm == 32 || sm == 53 || sm == 62 || sm == 72 || sm == 87 || sm == 101 || sm == 110;
}

/* Whether a cubin built for t loads on a device of device_sm: the same sm;
 * else a later minor revision of the same major (a cubin for sm_80 runs on
 * sm_86 and sm_89, not on sm_75 or sm_90; one for sm_100 or sm_100f on
 * sm_103), except for arch-specific code (sm_90a runs only on sm_90,
 * sm_100a only on sm_100) and Tegra. */
static bool cubin_runs_on(const gpucc_target *t, unsigned device_sm)
{
	if (t->sm == device_sm)
		return true;
	return !t->sm_accelerated && t->sm / 10 == device_sm / 10 && t->sm < device_sm &&
	       !sm_is_tegra(t->sm) && !sm_is_tegra(device_sm);
}

/* Whether the driver can JIT PTX built for t on the device: PTX for sm_X
 * runs on sm >= X, sm_Xa only on sm_X, sm_Xf on the later minors of X's
 * major (its family: sm_100f on sm_100 and sm_103, not on sm_120); and the
 * driver must know its ISA. */
static bool ptx_runs_on(const gpucc_target *t, const gpucc_target *device)
{
	bool arch_ok = t->sm_accelerated ? t->sm == device->sm
	               : t->sm_family    ? t->sm / 10 == device->sm / 10 && t->sm <= device->sm
	                                 : t->sm <= device->sm;
	return arch_ok && t->ptx_isa <= device->ptx_isa;
}

/* The CUDA major of the tool that made e's cubin (the "nvjitlink" option,
 * else the "ptxas" one, "13.0.88"), or 0 when the entry does not say (made
 * by pack, say). */
static unsigned cubin_cuda_major(const gpucc_entry *e)
{
	const char *v = gpucc_entry_option(e, "nvjitlink");
	if (!v)
		v = gpucc_entry_option(e, "ptxas");
	if (!v || *v < '1' || *v > '9')
		return 0;
	unsigned long major = strtoul(v, NULL, 10);
	return major < 1000 ? (unsigned)major : 0;
}

/* Whether the device's driver loads a cubin of e: NVIDIA promises that a
 * driver loads the cubins of its own major's toolkits (minor version
 * compatibility), not of a newer major's (CUDA 13's ptxas for a CUDA 12
 * driver); PTX, JIT-compiled by the driver itself, then serves. */
static bool driver_loads_cubin(const gpucc_entry *e, const gpucc_target *device)
{
	unsigned major = cubin_cuda_major(e);
	return device->cuda_major == 0 || major == 0 || major <= device->cuda_major;
}

bool gpucc_entry_fits(gpucc_selection *out, const gpucc_entry *e, const gpucc_target *device)
{
	GPUCC_REQUIRE_OR(e, false);
	GPUCC_REQUIRE_OR(device, false);
	gpucc_target t;
	/* A target this gpucc cannot parse does not fit (and leaves the last
	 * error set, which only a failing call's caller reads). */
	if (gpucc_target_parse(&t, e->target) != 0 || t.vendor != device->vendor)
		return false;
	gpucc_selection s = {.entry = e};
	if (t.vendor == GPUCC_VENDOR_AMD) {
		if (strcmp(t.processor, device->processor) != 0 ||
		    !feature_fits(t.sramecc, device->sramecc) || !feature_fits(t.xnack, device->xnack) ||
		    !runtime_loads_code_object(e, device))
			return false;
		s.part = GPUCC_PART_HSACO;
		s.exact = t.sramecc == device->sramecc && t.xnack == device->xnack;
	} else {
		/* Exact cubin, else PTX to JIT, else a cubin of an earlier minor
		 * revision (the order of gpucc/runtime.h). */
		bool cubin = gpucc_entry_payload(e, GPUCC_PART_CUBIN) != NULL &&
		             driver_loads_cubin(e, device);
		bool ptx = gpucc_entry_payload(e, GPUCC_PART_PTX) != NULL;
		if (cubin && t.sm == device->sm) {
			s.part = GPUCC_PART_CUBIN;
			s.exact = true;
		} else if (ptx && ptx_runs_on(&t, device)) {
			s.part = GPUCC_PART_PTX;
		} else if (cubin && cubin_runs_on(&t, device->sm)) {
			s.part = GPUCC_PART_CUBIN;
		} else {
			return false;
		}
	}
	s.payload = gpucc_entry_payload(e, s.part);
	if (!s.payload)
		return false;
	if (out)
		*out = s;
	return true;
}

/* True when candidate a should be preferred over b (both fit one device). */
static bool better(const gpucc_selection *a, const gpucc_selection *b)
{
	if (a->exact != b->exact)
		return a->exact;
	gpucc_target ta, tb;
	if (gpucc_target_parse(&ta, a->entry->target) == 0 &&
	    gpucc_target_parse(&tb, b->entry->target) == 0) {
		if (ta.vendor == GPUCC_VENDOR_AMD) {
			int sa = feature_specificity(ta.sramecc) + feature_specificity(ta.xnack);
			int sb = feature_specificity(tb.sramecc) + feature_specificity(tb.xnack);
			if (sa != sb)
				return sa > sb;
		} else if (!a->exact && a->part != b->part) {
			/* Fallbacks: PTX to JIT before a cubin of an earlier minor. */
			return a->part == GPUCC_PART_PTX;
		} else if (!a->exact && a->part == GPUCC_PART_CUBIN) {
			/* Cubins of earlier minors: the closest to the device. */
			if (ta.sm != tb.sm)
				return ta.sm > tb.sm;
			if (ta.ptx_isa != tb.ptx_isa)
				return ta.ptx_isa > tb.ptx_isa;
		} else {
			if (ta.ptx_isa != tb.ptx_isa)
				return ta.ptx_isa > tb.ptx_isa;
			if (ta.sm != tb.sm)
				return ta.sm > tb.sm;
			if (ta.sm_accelerated != tb.sm_accelerated)
				return ta.sm_accelerated;
			if (ta.sm_family != tb.sm_family) /* its family's features */
				return ta.sm_family;
		}
	}
	return gpucc_digest_compare(&a->entry->key, &b->entry->key) < 0;
}

static bool entry_has_kernel(const gpucc_entry *e, const char *kernel)
{
	for (size_t k = 0; k < e->kernel_count; k++)
		if (strcmp(e->kernels[k].name, kernel) == 0)
			return true;
	return false;
}

/* ---- messages -------------------------------------------------------------- */

/* A bounded list "a, b, c" of distinct strings; "..." once full. */
typedef struct name_list {
	char text[512];
	size_t used;
	bool full;
} name_list;

static void name_list_add(name_list *l, const char *name)
{
	if (l->full)
		return;
	/* Skip duplicates ("," separated whole words). */
	size_t len = strlen(name);
	for (const char *p = l->text; (p = strstr(p, name)) != NULL; p += len)
		if ((p == l->text || p[-1] == ' ') && (p[len] == ',' || p[len] == '\0'))
			return;
	int n = snprintf(l->text + l->used, sizeof l->text - l->used, "%s%s", l->used ? ", " : "", name);
	if (n < 0 || (size_t)n >= sizeof l->text - l->used - 5) {
		l->text[l->used] = '\0';
		snprintf(l->text + l->used, sizeof l->text - l->used, "%s...", l->used ? ", " : "");
		l->full = true;
		return;
	}
	l->used += (size_t)n;
}

/* The vendor of an entry's target, also of one this gpucc cannot parse
 * (a newer sm or gfx) by its prefix; 0 when it cannot be told. */
static gpucc_vendor target_vendor(const char *target)
{
	gpucc_target t;
	if (gpucc_target_parse(&t, target) == 0)
		return t.vendor;
	if (strncmp(target, "sm_", 3) == 0)
		return GPUCC_VENDOR_NVIDIA;
	if (strncmp(target, "gfx", 3) == 0)
		return GPUCC_VENDOR_AMD;
	return (gpucc_vendor)0;
}

static const char *vendor_name(gpucc_vendor v)
{
	return v == GPUCC_VENDOR_NVIDIA ? "NVIDIA" : "AMD";
}

static void describe_device(char *out, size_t size, const gpucc_target *d)
{
	if (d->vendor == GPUCC_VENDOR_NVIDIA && d->ptx_isa == 0) {
		snprintf(out, size, "sm_%u (driver JITs no PTX)", d->sm);
	} else if (d->vendor == GPUCC_VENDOR_NVIDIA) {
		snprintf(out, size, "sm_%u (driver JITs PTX ISA up to %u.%u)", d->sm, d->ptx_isa / 10,
		         d->ptx_isa % 10);
	} else {
		char name[GPUCC_TARGET_NAME_SIZE];
		gpucc_target_format(name, d);
		if (d->code_object_max)
			snprintf(out, size, "%s (HIP loads code objects up to v%u)", name, d->code_object_max);
		else
			snprintf(out, size, "%s", name);
	}
}

/* ---- choosing -------------------------------------------------------------- */

int gpucc_select(gpucc_selection *out, const gpucc_entry *const *entries, size_t count,
                 const char *kernel, const gpucc_target *device, const char *name)
{
	GPUCC_REQUIRE(out);
	GPUCC_REQUIRE_EACH(entries, count);
	GPUCC_REQUIRE(device);
	memset(out, 0, sizeof *out);
	if (!name)
		name = "image";
	if (device->vendor != GPUCC_VENDOR_NVIDIA && device->vendor != GPUCC_VENDOR_AMD)
		return gpucc_error_set(GPUCC_EINVALID, "gpucc_select: the device has no vendor");

	size_t with_kernel = 0;
	bool found = false;
	gpucc_selection best = {0};
	name_list targets = {0}, kernels = {0};
	for (size_t i = 0; i < count; i++) {
		const gpucc_entry *e = entries[i];
		for (size_t k = 0; k < e->kernel_count; k++)
			name_list_add(&kernels, e->kernels[k].name);
		if (kernel && !entry_has_kernel(e, kernel))
			continue;
		with_kernel++;
		/* The message lists the code the device's vendor could run: an
		 * AMD code object says nothing to an NVIDIA device's user.  One
		 * whose vendor cannot be told is listed. */
		gpucc_vendor vendor = target_vendor(e->target);
		if (vendor && vendor != device->vendor)
			continue;
		char target[GPUCC_TARGET_NAME_SIZE + 48];
		const gpucc_payload *code = gpucc_entry_payload(e, GPUCC_PART_CUBIN);
		if (!code)
			code = gpucc_entry_payload(e, GPUCC_PART_HSACO);
		if (!code)
			code = gpucc_entry_payload(e, GPUCC_PART_PTX);
		if (code && code->part == GPUCC_PART_CUBIN && !driver_loads_cubin(e, device))
			snprintf(target, sizeof target, "%s (cubin for a CUDA %u driver%s)", e->target,
			         cubin_cuda_major(e),
			         gpucc_entry_payload(e, GPUCC_PART_PTX) ? ", ptx" : "");
		else if (code && code->part == GPUCC_PART_HSACO && !runtime_loads_code_object(e, device))
			snprintf(target, sizeof target, "%s (code object v%u, which a HIP runtime loads from "
			         "HIP %u on)", e->target, entry_code_object(e),
			         entry_code_object(e) >= 5 ? 6u : 5u);
		else
			snprintf(target, sizeof target, "%s (%s)", e->target,
			         code ? gpucc_part_name(code->part) : "no code");
		name_list_add(&targets, target);
		gpucc_selection s;
		if (!gpucc_entry_fits(&s, e, device))
			continue;
		if (!found || better(&s, &best))
			best = s;
		found = true;
	}
	if (found) {
		*out = best;
		return 0;
	}
	char dev[96];
	describe_device(dev, sizeof dev, device);
	if (kernel && with_kernel == 0)
		return gpucc_error_set(GPUCC_ENOTFOUND, "kernel '%s' is not in '%s' (its kernels: %s)",
		                       kernel, name, kernels.used ? kernels.text : "none");
	if (count == 0)
		return gpucc_error_set(GPUCC_ENOTFOUND, "'%s' has no entries", name);
	if (!targets.used)
		return gpucc_error_set(GPUCC_ENOTFOUND,
		                       "no entry of '%s'%s%s%s runs on %s: the image has no %s code%s",
		                       name, kernel ? " with kernel '" : "", kernel ? kernel : "",
		                       kernel ? "'" : "", dev, vendor_name(device->vendor),
		                       kernel ? " for that kernel" : "");
	return gpucc_error_set(GPUCC_ENOTFOUND,
	                       "no entry of '%s'%s%s%s runs on %s: the image has %s code for %s",
	                       name, kernel ? " with kernel '" : "", kernel ? kernel : "",
	                       kernel ? "'" : "", dev, vendor_name(device->vendor), targets.text);
}

int gpucc_image_select(gpucc_selection *out, const gpucc_image *img, const char *kernel,
                       const gpucc_target *device)
{
	GPUCC_REQUIRE(out);
	GPUCC_REQUIRE(img);
	GPUCC_REQUIRE(device);
	if (kernel) {
		/* Through the index of an image opened for lookup: only the
		 * entries that hold the kernel are parsed.  When none of them
		 * fits (or the index cannot be read), the whole manifest is, so
		 * that the error lists what the image holds. */
		const gpucc_entry **candidates = NULL;
		size_t n = 0;
		int by_index = gpucc_image_kernel_candidates(&candidates, &n, img, kernel);
		int rc = by_index == 0 && n > 0
		         ? gpucc_select(out, candidates, n, kernel, device, gpucc_image_name(img))
		         : 1;
		free(candidates);
		if (rc == 0)
			return 0;
		if (by_index < 0)
			return by_index; /* an error of the index or of an entry it names */
	}
	if (gpucc_image_load_manifest(img) != 0)
		return gpucc_error_last()->code;
	size_t count = gpucc_image_entry_count(img);
	const gpucc_entry **entries = malloc((count ? count : 1) * sizeof *entries);
	if (!entries)
		return gpucc_error_oom();
	for (size_t i = 0; i < count; i++)
		entries[i] = gpucc_image_entry(img, i);
	int rc = gpucc_select(out, entries, count, kernel, device, gpucc_image_name(img));
	free(entries);
	return rc;
}
