/*
 * lib/tests/test_runtime_select.c -- the selection rules of gpucc/runtime.h
 * as a table: a device target and the targets (and payload kinds) of an
 * image's entries give the chosen entry and payload, or an error whose
 * message must say what the image has for the device's vendor, and nothing
 * of the other vendor's code.  No driver and no image file: the
 * entries are built in memory.
 */
#include "check.h"

#include <gpucc.h>

#include <limits.h>
#include <stdio.h>

/* "TARGET/parts[/kernels][!PTXAS|%CODE-OBJECT]": parts joined by '+' (ptx,
 * cubin, hsaco, bitcode), kernels by ','; default kernel "k"; PTXAS the
 * version of the ptxas that made the cubin (the entry's "ptxas" option),
 * CODE-OBJECT an AMD entry's "code-object" option; none by default. */
#define MAX_ENTRIES 6

typedef struct select_case {
	const char *name;
	const char *device;  /* AMD target ID ["#HIP-VERSION"], or "sm_XY@DRIVER" */
	const char *entries[MAX_ENTRIES];
	const char *kernel;  /* NULL: "k" */
	const char *want;    /* "TARGET/part", or NULL for GPUCC_ENOTFOUND */
	const char *message; /* substring of the error (or NULL) */
} select_case;

static const select_case cases[] = {
	/* AMD */
	{"amd exact target ID wins over any", "gfx90a:sramecc+:xnack-",
	 {"gfx90a/hsaco", "gfx90a:sramecc+:xnack-/hsaco", "gfx90a:xnack+/hsaco"}, NULL,
	 "gfx90a:sramecc+:xnack-/hsaco", NULL},
	{"amd any runs on on and off", "gfx90a:sramecc+:xnack-", {"gfx908/hsaco", "gfx90a/hsaco"}, NULL,
	 "gfx90a/hsaco", NULL},
	{"amd any runs on xnack on", "gfx90a:sramecc-:xnack+", {"gfx90a/hsaco"}, NULL, "gfx90a/hsaco",
	 NULL},
	{"amd more specific compatible wins", "gfx90a:sramecc+:xnack-",
	 {"gfx90a/hsaco", "gfx90a:xnack-/hsaco"}, NULL, "gfx90a:xnack-/hsaco", NULL},
	{"amd on/off must match", "gfx90a:sramecc+:xnack-", {"gfx90a:xnack+/hsaco"}, NULL, NULL,
	 "gfx90a:xnack+ (hsaco)"},
	{"amd other processor", "gfx942:sramecc+:xnack-", {"gfx90a/hsaco", "gfx940/hsaco"}, NULL, NULL,
	 "runs on gfx942:sramecc+:xnack-: the image has AMD code for gfx90a (hsaco), gfx940 (hsaco)"},
	{"amd entry without code object", "gfx90a:sramecc+:xnack-", {"gfx90a/bitcode"}, NULL, NULL,
	 "gfx90a (no code)"},
	{"amd processor without features", "gfx1030", {"gfx1030/hsaco", "gfx1031/hsaco"}, NULL,
	 "gfx1030/hsaco", NULL},
	/* A device given with a feature left out ("any": it may run either
	 * way) fits only entries that leave it out too. */
	{"amd device any: a specific entry does not fit", "gfx90a:xnack-",
	 {"gfx90a:sramecc+:xnack-/hsaco", "gfx90a:sramecc-:xnack-/hsaco"}, NULL, NULL,
	 "runs on gfx90a:xnack-: the image has AMD code for gfx90a:sramecc+:xnack- (hsaco), "
	 "gfx90a:sramecc-:xnack- (hsaco)"},
	{"amd device any: the entry that says the same", "gfx90a:xnack-",
	 {"gfx90a/hsaco", "gfx90a:xnack-/hsaco", "gfx90a:sramecc+:xnack-/hsaco"}, NULL,
	 "gfx90a:xnack-/hsaco", NULL},
	{"amd sramecc must match", "gfx90a:sramecc-:xnack-", {"gfx90a:sramecc+:xnack-/hsaco"}, NULL,
	 NULL, "gfx90a:sramecc+:xnack- (hsaco)"},
	/* A HIP 5 runtime loads code objects up to v4; HIP 6 v5 too. */
	{"amd code object v5 on HIP 5.2", "gfx90a#50221151", {"gfx90a/hsaco%5"}, NULL, NULL,
	 "runs on gfx90a (HIP loads code objects up to v4): the image has AMD code for gfx90a "
	 "(code object v5, which a HIP runtime loads from HIP 6 on)"},
	{"amd code object v4 on HIP 5.2", "gfx90a#50221151", {"gfx90a/hsaco%5", "gfx90a/hsaco%4"},
	 NULL, "gfx90a/hsaco", NULL},
	{"amd code object v5 on HIP 6.2", "gfx90a#60241000", {"gfx90a/hsaco%5"}, NULL, "gfx90a/hsaco",
	 NULL},
	{"amd code object v5, HIP unknown", "gfx90a", {"gfx90a/hsaco%5"}, NULL, "gfx90a/hsaco", NULL},
	{"amd no code object recorded on HIP 5.2", "gfx90a#50221151", {"gfx90a/hsaco"}, NULL,
	 "gfx90a/hsaco", NULL},
	/* The other vendor's entries never fit, listed first or alone. */
	{"amd device skips nvidia entries", "gfx90a:sramecc+:xnack-",
	 {"sm_90:ptx78/cubin+ptx", "gfx90a/hsaco"}, NULL, "gfx90a/hsaco", NULL},
	{"amd device, nvidia entries only", "gfx90a:sramecc+:xnack-", {"sm_90:ptx78/cubin+ptx"}, NULL,
	 NULL, NULL},
	{"nvidia device skips amd entries", "sm_90@12040", {"gfx90a/hsaco", "sm_80:ptx78/ptx"}, NULL,
	 "sm_80:ptx78/ptx", NULL},
	{"nvidia device, amd entries only", "sm_90@12040", {"gfx90a/hsaco", "gfx942/hsaco"}, NULL, NULL,
	 NULL},
	/* NVIDIA */
	{"nvidia cubin for the exact sm", "sm_90@12040", {"sm_80:ptx84/ptx", "sm_90:ptx78/cubin+ptx"},
	 NULL, "sm_90:ptx78/cubin", NULL},
	{"nvidia highest PTX ISA the driver JITs", "sm_90@12040",
	 {"sm_80:ptx70/ptx", "sm_90:ptx80/ptx", "sm_86:ptx84/ptx", "sm_89:ptx85/ptx"}, NULL,
	 "sm_86:ptx84/ptx", NULL},
	{"nvidia PTX ISA too new for the driver", "sm_90@12000", {"sm_90:ptx85/ptx"}, NULL, NULL,
	 "sm_90 (driver JITs PTX ISA up to 8.0): the image has NVIDIA code for sm_90:ptx85 (ptx)"},
	{"nvidia older PTX still JITs", "sm_90@12000", {"sm_90:ptx85/ptx", "sm_80:ptx70/ptx"}, NULL,
	 "sm_80:ptx70/ptx", NULL},
	{"nvidia PTX for a newer sm", "sm_80@12040", {"sm_90:ptx78/cubin+ptx"}, NULL, NULL,
	 "sm_90:ptx78 (cubin)"},
	/* A cubin runs on later minor revisions of its major (not across
	 * majors, not to or from Tegra, not arch-specific); PTX the driver
	 * can JIT still comes first, the issue's order. */
	{"nvidia cubin runs on a later minor", "sm_86@12040", {"sm_80:ptx70/cubin"}, NULL,
	 "sm_80:ptx70/cubin", NULL},
	{"nvidia cubin of a later minor never loads", "sm_80@12040", {"sm_86:ptx71/cubin"}, NULL,
	 NULL, "runs on sm_80"},
	{"nvidia cubin of another major never loads", "sm_90@12040", {"sm_80:ptx70/cubin"}, NULL,
	 NULL,
	 "runs on sm_90 (driver JITs PTX ISA up to 8.4): the image has NVIDIA code for sm_80:ptx70 "
	 "(cubin)"},
	{"nvidia other sm falls back to its PTX", "sm_86@12040", {"sm_80:ptx70/cubin+ptx"}, NULL,
	 "sm_80:ptx70/ptx", NULL},
	{"nvidia PTX before a compatible cubin", "sm_89@12040",
	 {"sm_86:ptx71/cubin", "sm_80:ptx78/ptx"}, NULL, "sm_80:ptx78/ptx", NULL},
	{"nvidia compatible cubin when the PTX is too new", "sm_89@12000", {"sm_86:ptx85/cubin+ptx"},
	 NULL, "sm_86:ptx85/cubin", NULL},
	{"nvidia closest compatible cubin", "sm_89@12040",
	 {"sm_80:ptx78/cubin", "sm_86:ptx71/cubin", "sm_87:ptx74/cubin"}, NULL, "sm_86:ptx71/cubin",
	 NULL},
	{"nvidia no cubin to Tegra", "sm_87@12040", {"sm_80:ptx70/cubin"}, NULL, NULL, "runs on sm_87"},
	{"nvidia no cubin from Tegra", "sm_75@12040", {"sm_72:ptx61/cubin"}, NULL, NULL,
	 "runs on sm_75"},
	{"nvidia sm_90a cubin only on sm_90", "sm_91@12040", {"sm_90a:ptx80/cubin"}, NULL, NULL,
	 "sm_90a:ptx80 (cubin)"},
	/* Cubins of one earlier minor: the highest PTX ISA, in either order. */
	{"nvidia earlier-minor cubins: highest PTX ISA", "sm_89@12040",
	 {"sm_86:ptx78/cubin", "sm_86:ptx71/cubin"}, NULL, "sm_86:ptx78/cubin", NULL},
	/* (these keys put the lower PTX ISA first) */
	{"nvidia earlier-minor cubins: highest PTX ISA, keys reversed", "sm_89@12040",
	 {"sm_86:ptx71/cubin/k", "sm_86:ptx78/cubin/k"}, NULL, "sm_86:ptx78/cubin", NULL},
	{"nvidia exact cubin before PTX", "sm_86@12040", {"sm_86:ptx71/cubin", "sm_86:ptx84/ptx"},
	 NULL, "sm_86:ptx71/cubin", NULL},
	{"nvidia driver without PTX JIT", "sm_90@7050", {"sm_90:ptx78/ptx"}, NULL, NULL,
	 "runs on sm_90 (driver JITs no PTX)"},
	{"nvidia sm_90a PTX only on sm_90", "sm_100@13000", {"sm_90a:ptx80/ptx"}, NULL, NULL,
	 "sm_90a:ptx80"},
	{"nvidia sm_90a on sm_90", "sm_90@12040", {"sm_90a:ptx80/ptx"}, NULL, "sm_90a:ptx80/ptx", NULL},
	{"nvidia sm_90a cubin is exact on sm_90", "sm_90@12040", {"sm_89:ptx84/ptx", "sm_90a:ptx80/cubin"},
	 NULL, "sm_90a:ptx80/cubin", NULL},
	{"nvidia exact cubins: sm_90a before sm_90", "sm_90@12040",
	 {"sm_90:ptx80/cubin", "sm_90a:ptx80/cubin"}, NULL, "sm_90a:ptx80/cubin", NULL},
	{"nvidia PTX ISA one past the driver's", "sm_90@12040", {"sm_90:ptx85/ptx", "sm_90:ptx84/ptx"},
	 NULL, "sm_90:ptx84/ptx", NULL},
	{"nvidia newer device JITs older PTX", "sm_100@13000", {"sm_90:ptx80/ptx"}, NULL,
	 "sm_90:ptx80/ptx", NULL},
	{"nvidia same ISA: highest sm", "sm_89@12040", {"sm_80:ptx78/ptx", "sm_86:ptx78/ptx"}, NULL,
	 "sm_86:ptx78/ptx", NULL},
	/* A cubin of a newer CUDA major's ptxas does not load on an older
	 * driver: its PTX serves (minor versions are compatible). */
	{"nvidia cubin of a newer CUDA major: the PTX", "sm_90@12040", {"sm_90:ptx78/cubin+ptx!13.0.88"},
	 NULL, "sm_90:ptx78/ptx", NULL},
	{"nvidia cubin of a newer CUDA minor loads", "sm_90@12000", {"sm_90:ptx78/cubin+ptx!12.8.93"},
	 NULL, "sm_90:ptx78/cubin", NULL},
	{"nvidia cubin of an older CUDA loads", "sm_90@13000", {"sm_90:ptx78/cubin+ptx!12.4.131"},
	 NULL, "sm_90:ptx78/cubin", NULL},
	{"nvidia cubin of a newer CUDA major, no PTX", "sm_90@12040", {"sm_90:ptx78/cubin!13.0.88"},
	 NULL, NULL, "the image has NVIDIA code for sm_90:ptx78 (cubin for a CUDA 13 driver)"},
	{"nvidia minor-compatible cubin of a newer CUDA major", "sm_86@12040",
	 {"sm_80:ptx70/cubin!13.0.88"}, NULL, NULL, "sm_80:ptx70 (cubin for a CUDA 13 driver)"},
	/* Blackwell and later: compute capability 10.0 is sm_100; an 'a'
	 * entry runs on that processor alone, an 'f' one on its family (the
	 * later minors of its major), plain PTX on every later device. */
	{"nvidia sm_100 cubin on compute capability 10.0", "sm_100@13000",
	 {"sm_90:ptx78/cubin+ptx", "sm_100:ptx86/cubin+ptx"}, NULL, "sm_100:ptx86/cubin", NULL},
	{"nvidia sm_100a cubin before sm_100f's and sm_100's", "sm_100@13000",
	 {"sm_100:ptx88/cubin", "sm_100a:ptx88/cubin", "sm_100f:ptx88/cubin"}, NULL,
	 "sm_100a:ptx88/cubin", NULL},
	{"nvidia sm_100f cubin before sm_100's", "sm_100@13000",
	 {"sm_100:ptx88/cubin", "sm_100f:ptx88/cubin"}, NULL, "sm_100f:ptx88/cubin", NULL},
	{"nvidia sm_100a cubin only on sm_100", "sm_103@13000", {"sm_100a:ptx86/cubin"}, NULL, NULL,
	 "sm_100a:ptx86 (cubin)"},
	{"nvidia sm_100a PTX only on sm_100", "sm_103@13000", {"sm_100a:ptx86/ptx"}, NULL, NULL,
	 "sm_100a:ptx86 (ptx)"},
	{"nvidia sm_100f cubin on its family's sm_103", "sm_103@13000",
	 {"sm_90:ptx78/cubin", "sm_100f:ptx88/cubin"}, NULL, "sm_100f:ptx88/cubin", NULL},
	{"nvidia sm_100f PTX on its family's sm_103", "sm_103@13000", {"sm_100f:ptx88/ptx"}, NULL,
	 "sm_100f:ptx88/ptx", NULL},
	{"nvidia sm_100f PTX not on sm_120", "sm_120@13000", {"sm_100f:ptx88/ptx"}, NULL, NULL,
	 "sm_100f:ptx88 (ptx)"},
	{"nvidia sm_100 PTX JITs on sm_120", "sm_120@13000", {"sm_100f:ptx88/ptx", "sm_100:ptx86/ptx"},
	 NULL, "sm_100:ptx86/ptx", NULL},
	{"nvidia sm_120 cubin not on sm_100", "sm_100@13000", {"sm_120:ptx87/cubin"}, NULL, NULL,
	 "sm_120:ptx87 (cubin)"},
	{"nvidia sm_120f cubin on sm_121", "sm_121@13000", {"sm_120f:ptx88/cubin", "sm_120:ptx87/ptx"},
	 NULL, "sm_120:ptx87/ptx", NULL},
	{"nvidia PTX ISA 9.0 on a CUDA 13 driver", "sm_110@13000", {"sm_110:ptx90/ptx"}, NULL,
	 "sm_110:ptx90/ptx", NULL},
	{"nvidia PTX ISA 8.8 not on a CUDA 12.8 driver", "sm_120@12080", {"sm_120f:ptx88/ptx"}, NULL,
	 NULL, "sm_120f:ptx88 (ptx)"},
	/* AMD: the processors LLVM 20 and later know. */
	{"amd gfx950", "gfx950:sramecc+:xnack-", {"gfx942/hsaco", "gfx950/hsaco"}, NULL,
	 "gfx950/hsaco", NULL},
	{"amd gfx942 code not on gfx950", "gfx950:sramecc+:xnack-", {"gfx942/hsaco"}, NULL, NULL,
	 "gfx942 (hsaco)"},
	{"amd gfx1250", "gfx1250", {"gfx1201/hsaco", "gfx1250/hsaco"}, NULL, "gfx1250/hsaco", NULL},
	/* Across vendors and kernels */
	/* The error lists the code of the device's vendor only, and says so
	 * when the image has none. */
	{"vendor mismatch: none of the device's", "sm_90@12040", {"gfx90a/hsaco", "gfx1030/hsaco"},
	 NULL, NULL, "runs on sm_90 (driver JITs PTX ISA up to 8.4): the image has no NVIDIA code"},
	{"amd device: only AMD code listed", "gfx942", {"sm_90:ptx78/cubin", "gfx90a/hsaco"}, NULL,
	 NULL, "runs on gfx942: the image has AMD code for gfx90a (hsaco)"},
	{"nvidia device: only NVIDIA code listed", "sm_75@12040",
	 {"gfx90a/hsaco", "sm_90:ptx78/cubin", "gfx1030/hsaco"}, NULL, NULL,
	 "the image has NVIDIA code for sm_90:ptx78 (cubin)"},
	{"kernel not in the image", "sm_90@12040", {"sm_90:ptx78/ptx/saxpy,axpy"}, "nope", NULL,
	 "kernel 'nope' is not in 'table' (its kernels: saxpy, axpy)"},
	{"only entries with the kernel count", "sm_90@12040",
	 {"sm_90:ptx80/ptx/other", "sm_80:ptx70/ptx/saxpy"}, "saxpy", "sm_80:ptx70/ptx", NULL},
	{"kernel there but nothing fits", "gfx90a:sramecc+:xnack-",
	 {"sm_90:ptx78/ptx/saxpy", "gfx90a/hsaco/other"}, "saxpy", NULL,
	 "no entry of 'table' with kernel 'saxpy' runs on gfx90a:sramecc+:xnack-: the image has no "
	 "AMD code for that kernel"},
	{"empty image", "gfx90a", {NULL}, NULL, NULL, "kernel 'k' is not in 'table'"},
};

/* Built entries and what they point to. */
typedef struct built {
	gpucc_entry entries[MAX_ENTRIES];
	const gpucc_entry *pointers[MAX_ENTRIES];
	gpucc_payload payloads[MAX_ENTRIES][GPUCC_PART_COUNT];
	gpucc_kernel kernels[MAX_ENTRIES][4];
	gpucc_option options[MAX_ENTRIES];
	char text[MAX_ENTRIES][128];
	size_t count;
} built;

static void build_entry(built *b, const char *spec)
{
	size_t i = b->count++;
	gpucc_entry *e = &b->entries[i];
	memset(e, 0, sizeof *e);
	snprintf(b->text[i], sizeof b->text[i], "%s", spec);
	char *target = b->text[i];
	char *ptxas = strchr(target, '!'), *code_object = strchr(target, '%');
	if (ptxas) {
		*ptxas++ = '\0';
		b->options[i] = (gpucc_option){"ptxas", ptxas};
	} else if (code_object) {
		*code_object++ = '\0';
		b->options[i] = (gpucc_option){"code-object", code_object};
	}
	if (ptxas || code_object) {
		e->options = &b->options[i];
		e->option_count = 1;
	}
	char *parts = strchr(target, '/');
	*parts++ = '\0';
	char *kernels = strchr(parts, '/');
	if (kernels)
		*kernels++ = '\0';
	e->target = target;
	gpucc_digest_buffer(&e->key, spec, strlen(spec));
	/* Payloads in part order, as entries keep them. */
	for (int part = 0; part < GPUCC_PART_COUNT; part++) {
		const char *name = gpucc_part_name((gpucc_part)part);
		const char *at = strstr(parts, name);
		if (at && (at == parts || at[-1] == '+') &&
		    (at[strlen(name)] == '\0' || at[strlen(name)] == '+'))
			b->payloads[i][e->payload_count++] = (gpucc_payload){.part = (gpucc_part)part, .size = 1};
	}
	e->payloads = b->payloads[i];
	if (!kernels) {
		b->kernels[i][0] = (gpucc_kernel){.name = "k"};
		e->kernel_count = 1;
	} else {
		for (char *k = strtok(kernels, ","); k && e->kernel_count < 4; k = strtok(NULL, ","))
			b->kernels[i][e->kernel_count++] = (gpucc_kernel){.name = k};
	}
	e->kernels = b->kernels[i];
	b->pointers[i] = e;
}

static void parse_device(gpucc_target *d, const char *spelling)
{
	const char *at = strchr(spelling, '@');
	if (at) {
		unsigned sm = (unsigned)atoi(spelling + 3);
		CHECK_INT(gpucc_target_from_cuda(d, (int)(sm / 10), (int)(sm % 10), atoi(at + 1)), 0);
	} else {
		char arch[64];
		size_t n = strcspn(spelling, "#");
		n = n < sizeof arch ? n : sizeof arch - 1; /* the table's spellings are short */
		memcpy(arch, spelling, n);
		arch[n] = '\0';
		CHECK_INT(gpucc_target_from_hip_arch(d, arch), 0);
		const char *hip = strchr(spelling, '#');
		d->code_object_max = hip ? gpucc_hip_max_code_object(atoi(hip + 1)) : 0;
	}
}

static void test_table(void)
{
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		const select_case *t = &cases[c];
		built b = {0};
		for (size_t i = 0; i < MAX_ENTRIES && t->entries[i]; i++)
			build_entry(&b, t->entries[i]);
		gpucc_target device;
		parse_device(&device, t->device);
		gpucc_selection s;
		int rc = gpucc_select(&s, b.pointers, b.count, t->kernel ? t->kernel : "k", &device,
		                      "table");
		if (t->want) {
			char got[96] = "(error)";
			if (rc == 0)
				snprintf(got, sizeof got, "%s/%s", s.entry->target, gpucc_part_name(s.part));
			if (rc != 0 || strcmp(got, t->want) != 0)
				fprintf(stderr, "case '%s': got %s (%s), want %s\n", t->name, got,
				        gpucc_error_last()->message, t->want);
			CHECK_INT(rc, 0);
			if (rc == 0) {
				CHECK_STR(got, t->want);
				CHECK(s.payload && s.payload->part == s.part);
			}
		} else {
			if (rc != GPUCC_ENOTFOUND)
				fprintf(stderr, "case '%s': expected GPUCC_ENOTFOUND, got %d\n", t->name, rc);
			CHECK_INT(rc, GPUCC_ENOTFOUND);
			if (t->message && !strstr(gpucc_error_last()->message, t->message)) {
				fprintf(stderr, "case '%s': message '%s' lacks '%s'\n", t->name,
				        gpucc_error_last()->message, t->message);
				check_failures++;
			}
			/* Only the device's vendor's code is listed. */
			bool amd = strncmp(t->device, "gfx", 3) == 0;
			if (strstr(gpucc_error_last()->message, amd ? "sm_" : "gfx")) {
				fprintf(stderr, "case '%s': message '%s' names the other vendor's code\n",
				        t->name, gpucc_error_last()->message);
				check_failures++;
			}
		}
	}
}

/* Equal candidates: the smallest key wins, whatever the order given. */
static void test_ties_are_deterministic(void)
{
	built b = {0};
	build_entry(&b, "gfx90a/hsaco/k");
	build_entry(&b, "gfx90a/hsaco/k,j");
	gpucc_target device;
	parse_device(&device, "gfx90a:sramecc+:xnack-");
	const gpucc_entry *reversed[2] = {b.pointers[1], b.pointers[0]};
	gpucc_selection s1, s2;
	CHECK_INT(gpucc_select(&s1, b.pointers, 2, "k", &device, "t"), 0);
	CHECK_INT(gpucc_select(&s2, reversed, 2, "k", &device, "t"), 0);
	CHECK(s1.entry == s2.entry);
	const gpucc_entry *smaller =
		gpucc_digest_compare(&b.entries[0].key, &b.entries[1].key) < 0 ? &b.entries[0] : &b.entries[1];
	CHECK(s1.entry == smaller);
	/* NULL kernel: any entry. */
	CHECK_INT(gpucc_select(&s1, b.pointers, 2, NULL, &device, "t"), 0);
}

static void test_driver_ptx_isa(void)
{
	CHECK_INT(gpucc_cuda_max_ptx_isa(7050), 0);
	CHECK_INT(gpucc_cuda_max_ptx_isa(8000), 50);
	CHECK_INT(gpucc_cuda_max_ptx_isa(11080), 78);
	CHECK_INT(gpucc_cuda_max_ptx_isa(12000), 80);
	CHECK_INT(gpucc_cuda_max_ptx_isa(12040), 84);
	CHECK_INT(gpucc_cuda_max_ptx_isa(12060), 85);
	CHECK_INT(gpucc_cuda_max_ptx_isa(12070), 86);
	CHECK_INT(gpucc_cuda_max_ptx_isa(12090), 88);
	CHECK_INT(gpucc_cuda_max_ptx_isa(13000), 90); /* what LLVM 22 emits at most */
	CHECK_INT(gpucc_cuda_max_ptx_isa(-1), 0);
	CHECK_INT(gpucc_cuda_max_ptx_isa(INT_MIN), 0);
	CHECK_INT(gpucc_cuda_max_ptx_isa(INT_MAX), 90);
	gpucc_target b;
	CHECK_INT(gpucc_target_from_cuda(&b, 10, 0, 13000), 0);
	CHECK_INT(b.sm, 100);
	CHECK(!b.sm_accelerated && !b.sm_family);
	CHECK_INT(gpucc_target_from_cuda(&b, 12, 1, 13000), 0);
	CHECK_INT(b.sm, 121);
	gpucc_target t;
	CHECK_INT(gpucc_target_from_cuda(&t, 9, 0, 12040), 0);
	CHECK_INT(t.vendor, GPUCC_VENDOR_NVIDIA);
	CHECK_INT(t.sm, 90);
	CHECK_INT(t.ptx_isa, 84);
	CHECK_INT(gpucc_target_from_cuda(&t, 12, 1, 13000), 0);
	CHECK_INT(t.sm, 121);
}

/* A compute capability the driver reports wrongly is refused, not wrapped
 * into an sm on which every PTX "fits", and never overflows. */
static void test_cuda_bad_compute_capability(void)
{
	static const int bad[][2] = {{-1, 0}, {0, 0}, {9, -1}, {9, 10}, {INT_MAX, 0},
	                             {INT_MAX / 10 + 1, 9}, {INT_MIN, 0}, {100, 0}};
	built b = {0};
	build_entry(&b, "sm_90:ptx78/ptx");
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		gpucc_target t;
		CHECK_INT(gpucc_target_from_cuda(&t, bad[i][0], bad[i][1], 12040), GPUCC_EINVALID);
		CHECK_ERROR_HAS("compute capability");
		gpucc_selection s;
		CHECK(gpucc_select(&s, b.pointers, b.count, "k", &t, "t") != 0);
	}
}

/* Devices named by their target (gpucc_device_from_target), both vendors:
 * spelling, CUDA driver, HIP version; then the target selection sees, or
 * the refusal's words. */
static void test_device_from_target(void)
{
	static const struct {
		const char *spelling;
		int cuda, hip;
		int vendor;            /* 0: refused */
		unsigned sm, ptx_isa, cuda_major;
		const char *processor; /* AMD */
		unsigned code_object_max;
		int driver_version;
		const char *message;   /* a refusal's words */
	} rows[] = {
		/* NVIDIA: the newest driver JITs every PTX ISA gpucc makes. */
		{"sm_90", 0, 0, GPUCC_VENDOR_NVIDIA, 90, 90, 0, NULL, 0, 0, NULL},
		{"sm_90", 12040, 0, GPUCC_VENDOR_NVIDIA, 90, 84, 12, NULL, 0, 12040, NULL},
		{"sm_75", 11080, 50200000, GPUCC_VENDOR_NVIDIA, 75, 78, 11, NULL, 0, 11080, NULL},
		{"sm_100", 13000, 0, GPUCC_VENDOR_NVIDIA, 100, 90, 13, NULL, 0, 13000, NULL},
		/* Any compute capability, also one no LLVM compiles for. */
		{"sm_999", 0, 0, GPUCC_VENDOR_NVIDIA, 999, 90, 0, NULL, 0, 0, NULL},
		{"sm_42", 12040, 0, GPUCC_VENDOR_NVIDIA, 42, 84, 12, NULL, 0, 12040, NULL},
		/* Code, not devices. */
		{"sm_90a", 0, 0, 0, 0, 0, 0, NULL, 0, 0, "names code that runs only on sm_90"},
		{"sm_100f", 0, 0, 0, 0, 0, 0, NULL, 0, 0, "names code for the family of sm_100"},
		{"sm_90:ptx78", 0, 0, 0, 0, 0, 0, NULL, 0, 0, "names a PTX ISA"},
		{"sm_9", 0, 0, 0, 0, 0, 0, NULL, 0, 0, "is not an NVIDIA device"},
		{"sm_090", 0, 0, 0, 0, 0, 0, NULL, 0, 0, "is not an NVIDIA device"},
		{"sm_1000", 0, 0, 0, 0, 0, 0, NULL, 0, 0, "is not an NVIDIA device"},
		/* AMD: a feature left out stays "any"; HIP bounds the code object. */
		{"gfx90a:xnack-", 0, 0, GPUCC_VENDOR_AMD, 0, 0, 0, "gfx90a", 0, 0, NULL},
		{"gfx90a", 12040, 50200000, GPUCC_VENDOR_AMD, 0, 0, 0, "gfx90a", 4, 50200000, NULL},
		{"gfx942:sramecc+", 0, 60200000, GPUCC_VENDOR_AMD, 0, 0, 0, "gfx942", 5, 60200000, NULL},
		{"gfx9999", 0, 0, 0, 0, 0, 0, NULL, 0, 0, "gfx9999"},
		{"", 0, 0, 0, 0, 0, 0, NULL, 0, 0, NULL},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		gpucc_device_target_options opts;
		gpucc_device_target_options_init(&opts);
		opts.cuda_driver_version = rows[i].cuda;
		opts.hip_version = rows[i].hip;
		gpucc_device d;
		int rc = gpucc_device_from_target(&d, rows[i].spelling, &opts);
		if ((rc == 0) != (rows[i].vendor != 0))
			fprintf(stderr, "  row %zu '%s': %s\n", i, rows[i].spelling,
			        gpucc_error_last()->message);
		if (!rows[i].vendor) {
			CHECK_INT(rc, GPUCC_EINVALID);
			CHECK(!d.target_known);
			if (rows[i].message)
				CHECK_ERROR_HAS(rows[i].message);
			continue;
		}
		CHECK_INT(rc, 0);
		CHECK(d.target_known);
		CHECK_INT(d.runtime, GPUCC_RUNTIME_NONE);
		CHECK_STR(d.arch, rows[i].spelling);
		CHECK_INT(d.driver_version, rows[i].driver_version);
		CHECK_INT(d.target.vendor, rows[i].vendor);
		CHECK_INT(d.target.sm, rows[i].sm);
		CHECK_INT(d.target.ptx_isa, rows[i].ptx_isa);
		CHECK_INT(d.target.cuda_major, rows[i].cuda_major);
		CHECK_INT(d.target.code_object_max, rows[i].code_object_max);
		if (rows[i].processor)
			CHECK_STR(d.target.processor, rows[i].processor);
	}
	/* The defaults, and options of a version this libgpucc does not know. */
	gpucc_device d;
	CHECK_INT(gpucc_device_from_target(&d, "sm_80", NULL), 0);
	CHECK_INT(d.target.ptx_isa, 90);
	gpucc_device_target_options future = {GPUCC_DEVICE_TARGET_OPTIONS_VERSION + 1, 0, 0};
	CHECK_INT(gpucc_device_from_target(&d, "sm_80", &future), GPUCC_EINVALID);
	CHECK_ERROR_HAS("device target options");
}

/* Where an sm_XYa and an sm_XYf cubin run, on devices named by their
 * targets: the 'a' on its processor alone, the 'f' on its family. */
static void test_device_targets_select(void)
{
	static const struct {
		const char *entry, *device;
		bool fits;
	} rows[] = {
		{"sm_100a:ptx86/cubin", "sm_100", true},  {"sm_100a:ptx86/cubin", "sm_103", false},
		{"sm_100f:ptx88/cubin", "sm_100", true},  {"sm_100f:ptx88/cubin", "sm_103", true},
		{"sm_100f:ptx88/cubin", "sm_120", false}, {"sm_90a:ptx80/cubin", "sm_90", true},
		{"sm_90a:ptx80/cubin", "sm_100", false},  {"sm_80:ptx70/cubin", "sm_86", true},
		{"gfx90a:xnack-/hsaco", "gfx90a:xnack-", true},
		{"gfx90a:xnack-/hsaco", "gfx90a", false}, /* "any" device: only "any" code */
		{"gfx90a/hsaco", "gfx90a:xnack+", true},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		built b = {0};
		build_entry(&b, rows[i].entry);
		gpucc_device d;
		CHECK_INT(gpucc_device_from_target(&d, rows[i].device, NULL), 0);
		gpucc_selection s;
		int rc = gpucc_select(&s, b.pointers, b.count, "k", &d.target, "t");
		if ((rc == 0) != rows[i].fits)
			fprintf(stderr, "  row %zu: %s on %s\n", i, rows[i].entry, rows[i].device);
		CHECK_INT(rc, rows[i].fits ? 0 : GPUCC_ENOTFOUND);
	}
}

/* What --target native compiles for each device: NVIDIA the processor
 * alone, AMD the target ID with the modes the device runs in; a device
 * gpucc does not know is said so. */
static void test_device_compile_target(void)
{
	static const struct {
		const char *arch; /* as the runtime reports it */
		bool cuda;
		const char *want;
	} rows[] = {
		{"sm_90", true, "sm_90"},
		{"sm_121", true, "sm_121"},
		{"gfx90a:sramecc+:xnack-", false, "gfx90a:sramecc+:xnack-"},
		{"gfx1030", false, "gfx1030"},
		{"gfx942:xnack+", false, "gfx942:xnack+"},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		gpucc_device d = {0};
		d.target_known = true;
		if (rows[i].cuda)
			CHECK_INT(gpucc_target_from_cuda(&d.target, atoi(rows[i].arch + 3) / 10,
			                                 atoi(rows[i].arch + 3) % 10, 12040),
			          0);
		else
			CHECK_INT(gpucc_target_from_hip_arch(&d.target, rows[i].arch), 0);
		char name[GPUCC_TARGET_NAME_SIZE];
		CHECK_INT(gpucc_device_compile_target(name, &d), 0);
		CHECK_STR(name, rows[i].want);
	}
	gpucc_device unknown = {.target_known = false, .arch = "gfx9999"};
	char name[GPUCC_TARGET_NAME_SIZE] = "x";
	CHECK_INT(gpucc_device_compile_target(name, &unknown), GPUCC_ENOTFOUND);
	CHECK_ERROR_HAS("'gfx9999'");
	CHECK_STR(name, "");
}

static void test_version_parse(void)
{
	static const struct {
		const char *text;
		int cuda, hip; /* -1: refused */
	} rows[] = {
		{"12.4", 12040, 120400000}, {"12", 12000, 120000000}, {"5.2", 5020, 50200000},
		{"6.2", 6020, 60200000},    {"13.0", 13000, 130000000}, {"0", -1, -1},
		{"12.40", -1, -1},          {"123", -1, -1},            {"", -1, -1},
		{"12.", -1, -1},            {".4", -1, -1},             {"+12", -1, -1},
		{"12.4 ", -1, -1},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		int v = -7;
		int rc = gpucc_cuda_version_parse(&v, rows[i].text);
		CHECK_INT(rc, rows[i].cuda < 0 ? GPUCC_EINVALID : 0);
		CHECK_INT(v, rows[i].cuda < 0 ? -7 : rows[i].cuda);
		if (rc)
			CHECK_ERROR_HAS("is not a CUDA version");
		v = -7;
		rc = gpucc_hip_version_parse(&v, rows[i].text);
		CHECK_INT(rc, rows[i].hip < 0 ? GPUCC_EINVALID : 0);
		CHECK_INT(v, rows[i].hip < 0 ? -7 : rows[i].hip);
	}
	int v;
	CHECK_INT(gpucc_hip_version_parse(&v, "5.2"), 0);
	CHECK_INT(gpucc_hip_max_code_object(v), 4);
	CHECK_INT(gpucc_hip_version_parse(&v, "6.0"), 0);
	CHECK_INT(gpucc_hip_max_code_object(v), 5);
}

/* gpucc_entry_fits itself: the other vendor's entry never fits. */
static void test_fits_vendor(void)
{
	built b = {0};
	build_entry(&b, "gfx90a/hsaco");
	build_entry(&b, "sm_80:ptx78/ptx");
	gpucc_target nvidia, amd;
	parse_device(&nvidia, "sm_90@12040");
	parse_device(&amd, "gfx90a:sramecc+:xnack-");
	gpucc_selection s;
	CHECK(!gpucc_entry_fits(&s, &b.entries[0], &nvidia));
	CHECK(!gpucc_entry_fits(&s, &b.entries[1], &amd));
	CHECK(gpucc_entry_fits(&s, &b.entries[0], &amd));
	CHECK(gpucc_entry_fits(&s, &b.entries[1], &nvidia));
}

static void test_hip_arch_names(void)
{
	gpucc_target t;
	CHECK_INT(gpucc_target_from_hip_arch(&t, "gfx90a:sramecc+:xnack-"), 0);
	CHECK_STR(t.processor, "gfx90a");
	CHECK_INT(t.sramecc, GPUCC_FEATURE_ON);
	CHECK_INT(t.xnack, GPUCC_FEATURE_OFF);
	CHECK_INT(gpucc_target_from_hip_arch(&t, "gfx9999"), GPUCC_EINVALID);
	CHECK_ERROR_HAS("gfx9999");
	CHECK_INT(gpucc_target_from_hip_arch(&t, ""), GPUCC_EINVALID);
	CHECK_INT(gpucc_target_from_hip_arch(&t, "sm_90"), GPUCC_EINVALID);
	/* hipDriverGetVersion's numbers: HIP 5.2.3 (Debian's), 6.2. */
	CHECK_INT(gpucc_hip_max_code_object(50221151), 4);
	CHECK_INT(gpucc_hip_max_code_object(60241134), 5);
	CHECK_INT(gpucc_hip_max_code_object(0), 0);
	CHECK_INT(gpucc_hip_max_code_object(-1), 0);
}

int main(void)
{
	RUN(test_table);
	RUN(test_ties_are_deterministic);
	RUN(test_driver_ptx_isa);
	RUN(test_cuda_bad_compute_capability);
	RUN(test_hip_arch_names);
	RUN(test_fits_vendor);
	RUN(test_device_from_target);
	RUN(test_device_targets_select);
	RUN(test_version_parse);
	RUN(test_device_compile_target);
	return CHECK_DONE();
}
