/*
 * lib/compile/compile_target.c -- the target a job compiles for, as the module makes
 * it, and the one device library gpucc writes itself.
 *
 * A target spelling may leave things open that a module decides: "sm_90"
 * names no PTX ISA, and no --code-object names no AMDGPU code object
 * version.  clang writes its choice into the module ("+ptx85" in every
 * function's "target-features", the module flag amdhsa_code_object_version),
 * so an open target takes the module's choice, read without LLVM from the
 * module's bytes (gpucc_module_facts), and a job's key names the target it
 * was compiled for.  What the spelling fixes and the module contradicts is
 * refused before LLVM runs, with a message naming the spelling that would
 * compile it.
 *
 * The ROCm device libraries ask __oclc_ISA_version, one constant per
 * processor, of a control library (oclc_isa_version_NNN.bc).  Debian's
 * rocm-device-libs has none for gfx11, gfx12 or gfx942, so gpucc writes
 * that library itself, as IR text, for every processor: its bytes (and so
 * its digest, in the key) depend only on the processor.
 */
#include "compile_impl.h"
#include "errors.h"
#include "gpucc/compile.h"
#include "hex.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The highest PTX ISA gpucc's LLVMs write (LLVM 22's +ptx90); which LLVM
 * writes a job's is chosen with its backend (lib/compile/compile_backend.c). */
#define LLVM_MAX_PTX_ISA 90

unsigned gpucc_amdgpu_isa_version(const char *processor)
{
	/* "gfx" major minor stepping: the last two characters are the minor
	 * version and the stepping, hexadecimal digits ("gfx90a": 9, 0, 10). */
	size_t len = strlen(processor);
	if (len < 6 || strncmp(processor, "gfx", 3) != 0)
		return 0;
	unsigned major = 0;
	for (size_t i = 3; i + 2 < len; i++) {
		if (processor[i] < '0' || processor[i] > '9')
			return 0;
		major = major * 10 + (unsigned)(processor[i] - '0');
	}
	int minor = gpucc_hex_digit_lower((unsigned char)processor[len - 2]);
	int stepping = gpucc_hex_digit_lower((unsigned char)processor[len - 1]);
	if (minor < 0 || stepping < 0)
		return 0;
	return major * 1000 + (unsigned)minor * 100 + (unsigned)stepping;
}

int gpucc_isa_version_lib(gpucc_generated_lib *out, const char *processor)
{
	memset(out, 0, sizeof *out);
	unsigned version = gpucc_amdgpu_isa_version(processor);
	if (!version)
		return gpucc_error_set(GPUCC_EINVALID, "no ISA version for processor '%s'", processor);
	snprintf(out->name, sizeof out->name, "oclc_isa_version_%s.ll", processor + 3);
	int n = snprintf(out->text, sizeof out->text,
	                 "; the ROCm device libraries' ISA version of %s, written by gpucc\n"
	                 "target triple = \"amdgcn-amd-amdhsa\"\n"
	                 "@__oclc_ISA_version = linkonce_odr protected local_unnamed_addr "
	                 "addrspace(4) constant i32 %u, align 4\n",
	                 processor, version);
	out->size = (size_t)n;
	gpucc_digest_buffer(&out->sha256, out->text, out->size);
	return 0;
}

bool gpucc_module_fits_cpu(const gpucc_module_facts *f, const char *cpu)
{
	for (size_t i = 0; i < f->cpu_count; i++)
		if (strcmp(f->cpus[i], cpu) != 0)
			return false;
	return true;
}

/* "gfx90a:xnack+" with the module's xnack and sramecc settings where it has
 * them, else the target's. */
static void amd_spelling_for_module(char out[GPUCC_TARGET_NAME_SIZE], const gpucc_target *t,
                                    const gpucc_module_facts *f)
{
	gpucc_target fitted = *t;
	if (f->sramecc != GPUCC_FEATURE_ANY && t->sramecc != GPUCC_FEATURE_UNSUPPORTED)
		fitted.sramecc = f->sramecc;
	if (f->xnack != GPUCC_FEATURE_ANY && t->xnack != GPUCC_FEATURE_UNSUPPORTED)
		fitted.xnack = f->xnack;
	gpucc_target_format(out, &fitted);
}

static int fit_nvidia(gpucc_job_target *out, const gpucc_target *t, bool ptx_explicit,
                      const gpucc_module_facts *f)
{
	gpucc_target fitted = *t;
	unsigned asked = f->ptx_isa > LLVM_MAX_PTX_ISA ? LLVM_MAX_PTX_ISA : f->ptx_isa;
	if (ptx_explicit && f->ptx_isa > t->ptx_isa) {
		char want[GPUCC_TARGET_NAME_SIZE], plain[GPUCC_TARGET_NAME_SIZE];
		fitted.ptx_isa = asked;
		gpucc_target_format(want, &fitted);
		snprintf(plain, sizeof plain, "%.*s", (int)strcspn(want, ":"), want);
		return gpucc_error_set(GPUCC_ECOMPILE,
		                       "the module's functions ask for PTX ISA %u.%u (+ptx%u), above "
		                       "the target's: the target %s (or %s, which takes the "
		                       "module's) compiles it",
		                       f->ptx_isa / 10, f->ptx_isa % 10, f->ptx_isa, want, plain);
	}
	if (!ptx_explicit && asked > t->ptx_isa)
		fitted.ptx_isa = asked;
	gpucc_target_format(out->name, &fitted);
	gpucc_target_llvm_features(out->features, &fitted);
	out->code_object_version = 0;
	return 0;
}

static int fit_amd(gpucc_job_target *out, const gpucc_target *t, int code_object_asked,
                   const gpucc_module_facts *f)
{
	gpucc_target_format(out->name, t);
	gpucc_target_llvm_features(out->features, t);
	/* A module that fixes xnack or sramecc where the target leaves it open,
	 * or fixes the other setting, gives a code object whose target ID is
	 * not the target's. */
	bool xnack = f->xnack != GPUCC_FEATURE_ANY && t->xnack != GPUCC_FEATURE_UNSUPPORTED &&
	             f->xnack != t->xnack;
	bool sramecc = f->sramecc != GPUCC_FEATURE_ANY && t->sramecc != GPUCC_FEATURE_UNSUPPORTED &&
	               f->sramecc != t->sramecc;
	if (xnack || sramecc) {
		char want[GPUCC_TARGET_NAME_SIZE];
		amd_spelling_for_module(want, t, f);
		const gpucc_feature v = xnack ? f->xnack : f->sramecc;
		return gpucc_error_set(GPUCC_ECOMPILE,
		                       "the module's functions ask for %s%s, which the target %s does "
		                       "not fix so: the target %s compiles it",
		                       xnack ? "xnack" : "sramecc", v == GPUCC_FEATURE_ON ? "+" : "-",
		                       out->name, want);
	}
	unsigned module_version = f->code_object_version;
	/* clang 20 and later write v6 (AMDGPUUsage: v5's ABI, and generic
	 * processors, which gpucc does not name): made as the module or the
	 * run asks, with v5's device library ABI.  LLVM 19 writes it too. */
	if (module_version && module_version != 4 && module_version != 5 && module_version != 6)
		return gpucc_error_set(GPUCC_ECOMPILE,
		                       "the module sets amdhsa_code_object_version %u00: gpucc makes "
		                       "code objects v4, v5 and v6 only",
		                       module_version);
	if (code_object_asked && module_version && (unsigned)code_object_asked != module_version)
		return gpucc_error_set(GPUCC_ECOMPILE,
		                       "the module sets amdhsa_code_object_version %u00, but code object "
		                       "v%d was asked for: code object v%u (or none asked for, which "
		                       "takes the module's) compiles it",
		                       module_version, code_object_asked, module_version);
	out->code_object_version = code_object_asked       ? code_object_asked
	                           : module_version        ? (int)module_version
	                                                   : GPUCC_DEFAULT_CODE_OBJECT_VERSION;
	return 0;
}

int gpucc_target_for_module(gpucc_job_target *out, const gpucc_target *t, bool ptx_explicit,
                            int code_object_asked, const gpucc_module_facts *f)
{
	memset(out, 0, sizeof *out);
	if (t->vendor == GPUCC_VENDOR_NVIDIA)
		return fit_nvidia(out, t, ptx_explicit, f);
	return fit_amd(out, t, code_object_asked, f);
}
