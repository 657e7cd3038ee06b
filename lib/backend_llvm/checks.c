/*
 * lib/backend_llvm/checks.c -- what the LLVM backend refuses, each with a
 * message, before LLVM would miscompile it or abort the process: functions
 * that name another processor or features the job's PTX ISA lacks, calling
 * conventions HSA does not run, a module written for the other vendor,
 * allocas outside the target's stack address space, calls nothing defines
 * (but what the CUDA driver provides), NVPTX names PTX cannot spell, and
 * NVPTX global constructors and destructors.
 */
#include "compile_state.h"

#include <llvm-c/Core.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NVPTX: an entry of a function's "target-features" that asks for more than
 * the job's target gives: "+sm_XY[a]" naming another processor, or "+ptxNN"
 * above the job's PTX ISA (the PTX's .version line comes from the target
 * machine, the instructions from the function's features). */
static bool nvptx_feature_conflicts(const gpucc_backend_job *job, const char *feature, size_t len)
{
	char token[64], sm[16];
	if (len >= sizeof token)
		return false;
	memcpy(token, feature, len);
	token[len] = '\0';
	snprintf(sm, sizeof sm, "+%s", job->cpu); /* "+sm_90a", "+sm_100f" */
	if (strncmp(token, "+sm_", 4) == 0)
		return strcmp(token, sm) != 0;
	unsigned want = job_ptx_isa(job), asked = 0;
	return want && sscanf(token, "+ptx%u", &asked) == 1 && asked > want;
}

/* Every function the module defines must be compiled for the job's target.
 * LLVM compiles a function for the "target-cpu" it names, whatever the
 * target machine's CPU: a function marked gfx1030 in a gfx90a job would be
 * wave32 gfx10 code in a code object labelled gfx90a.  So a defined
 * function naming another processor is an error, for both vendors, as is
 * an NVPTX feature that names one or a newer PTX ISA.  AMD's xnack and
 * sramecc features are left to LLVM, which refuses a function that
 * contradicts the target's setting ("xnack setting of 'f' function does
 * not match module xnack setting"), and to check_code_object_target, which
 * refuses one that narrows a setting the target leaves as "any".  Other
 * features (e.g. wavefront size) are the module's own choice: its bytes,
 * and so its key, hold them. */
int check_function_targets(compile *c)
{
	const gpucc_backend_job *job = c->job;
	for (LLVMValueRef f = LLVMGetFirstFunction(c->module); f; f = LLVMGetNextFunction(f)) {
		if (LLVMIsDeclaration(f))
			continue;
		unsigned len;
		const char *cpu = function_attribute(f, "target-cpu", &len);
		if (cpu && len && (len != strlen(job->cpu) || memcmp(cpu, job->cpu, len) != 0))
			return fail(c, GPUCC_ECOMPILE,
			            "function '%s' has \"target-cpu\"=\"%.*s\", but the target is %s",
			            value_name(f), (int)len, cpu, job->target_name);
		if (job->vendor != GPUCC_VENDOR_NVIDIA)
			continue;
		const char *features = function_attribute(f, "target-features", &len);
		for (size_t i = 0; features && i < len;) {
			size_t n = 0;
			while (i + n < len && features[i + n] != ',')
				n++;
			if (nvptx_feature_conflicts(job, features + i, n))
				return fail(c, GPUCC_ECOMPILE,
				            "function '%s' has \"target-features\" '%.*s', which the target %s "
				            "does not give",
				            value_name(f), (int)n, features + i, job->target_name);
			i += n + 1;
		}
	}
	return 0;
}

/* AMDGPU: the graphics calling conventions (llvm/IR/CallingConv.h) and
 * their names in LLVM IR. */
static const char *amdgpu_graphics_convention(unsigned cc)
{
	switch (cc) {
	case 87: return "amdgpu_vs";
	case 88: return "amdgpu_gs";
	case 89: return "amdgpu_ps";
	case 90: return "amdgpu_cs";
	case 93: return "amdgpu_hs";
	case 95: return "amdgpu_ls";
	case 96: return "amdgpu_es";
	case 100: return "amdgpu_gfx";
	case 104: return "amdgpu_cs_chain";
	case 105: return "amdgpu_cs_chain_preserve";
	default: return NULL;
	}
}

/* AMDGPU under HSA runs compute kernels and what they call: LLVM 19's
 * instruction selector diagnoses a function of a graphics calling
 * convention ("unsupported non-compute shaders with HSA") and then
 * dereferences NULL, crashing the process.  Refused before that, naming
 * the function. */
int check_calling_conventions(compile *c)
{
	/* The test hook "unchecked:" leaves them to LLVM (compile_crash.sh). */
	if (c->job->vendor != GPUCC_VENDOR_AMD || fault_asked(c->job, "unchecked"))
		return 0;
	for (LLVMValueRef f = LLVMGetFirstFunction(c->module); f; f = LLVMGetNextFunction(f)) {
		const char *name = amdgpu_graphics_convention(LLVMGetFunctionCallConv(f));
		if (name && !LLVMIsDeclaration(f))
			return fail(c, GPUCC_ECOMPILE,
			            "function '%s' has the graphics calling convention %s, which %s (HSA) "
			            "does not run: only compute kernels (amdgpu_kernel) and the functions "
			            "they call compile for it",
			            value_name(f), name, c->job->triple);
	}
	return 0;
}

/* A module without a triple (or with the target's) that is written for
 * the other vendor all the same: for an AMD target, kernels of NVIDIA's
 * calling convention and none of AMD's (LLVM: "Unsupported calling
 * convention", an abort; a module with kernels for both vendors, in
 * testdata, compiles for each), or for either, a call to the other
 * vendor's intrinsics (LLVM: "Cannot select: intrinsic %llvm.amdgcn...",
 * an abort).  Said so, naming what gives it away. */
int check_other_vendor(compile *c)
{
	bool nvidia = c->job->vendor == GPUCC_VENDOR_NVIDIA;
	const char *theirs = nvidia ? "AMD" : "NVIDIA";
	const char *spelling = nvidia ? "gfxNNN" : "sm_XY";
	LLVMValueRef nvidia_kernel = NULL;
	bool amd_kernel = false;
	for (LLVMValueRef f = LLVMGetFirstFunction(c->module); f; f = LLVMGetNextFunction(f)) {
		unsigned cc = LLVMGetFunctionCallConv(f);
		if (!nvidia_kernel && cc == CC_PTX_KERNEL && !LLVMIsDeclaration(f))
			nvidia_kernel = f;
		amd_kernel |= cc == CC_AMDGPU_KERNEL && !LLVMIsDeclaration(f);
	}
	if (!nvidia && nvidia_kernel && !amd_kernel)
		return fail(c, GPUCC_ECOMPILE,
		            "function '%s' has the calling convention ptx_kernel, NVIDIA's: the "
		            "module is written for NVIDIA targets (sm_XY), not for %s",
		            value_name(nvidia_kernel), c->job->target_name);
	for (LLVMValueRef f = LLVMGetFirstFunction(c->module); f; f = LLVMGetNextFunction(f)) {
		const char *name = value_name(f);
		bool foreign = nvidia ? has_prefix(name, "llvm.amdgcn.") || has_prefix(name, "llvm.r600.")
		                      : has_prefix(name, "llvm.nvvm.");
		if (foreign && LLVMGetFirstUse(f))
			return fail(c, GPUCC_ECOMPILE,
			            "the module calls '%s', an intrinsic of %s's: it is written for %s "
			            "targets (%s), not for %s",
			            name, theirs, theirs, spelling, c->job->target_name);
	}
	return 0;
}

/* The stack's address space in a data layout string: its "A<n>" entry,
 * else 0. */
static unsigned alloca_address_space(const char *layout)
{
	for (const char *p = layout; p && *p;) {
		if (p[0] == 'A' && p[1] >= '0' && p[1] <= '9')
			return (unsigned)strtoul(p + 1, NULL, 10);
		p = strchr(p, '-');
		p = p ? p + 1 : NULL;
	}
	return 0;
}

/* The module's allocas must be in the target's stack address space (5 on
 * AMDGPU).  The parser puts an alloca without an explicit addrspace in the
 * module's own layout's stack space: a module with no `target datalayout`,
 * or another one, has its allocas in address space 0, which the verifier
 * passed under that layout, and which the AMDGPU instruction selector
 * cannot select once the target's layout replaces it ("Cannot select:
 * FrameIndex"), aborting the process.  Clang, hipcc and GPUCompiler write
 * the target's layout; a module without it must say where its stack is.
 * Checked after optimisation: an alloca that SROA promoted is harmless. */
int check_alloca_address_space(compile *c)
{
	const char *module_layout = c->module_layout;
	unsigned want = alloca_address_space(LLVMGetDataLayoutStr(c->module));
	for (LLVMValueRef f = LLVMGetFirstFunction(c->module); f; f = LLVMGetNextFunction(f))
		for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b))
			for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i)) {
				if (LLVMGetInstructionOpcode(i) != LLVMAlloca)
					continue;
				unsigned have = LLVMGetPointerAddressSpace(LLVMTypeOf(i));
				if (have != want)
					return fail(c, GPUCC_ECOMPILE,
					            "function '%s' allocates in address space %u, but the stack of %s "
					            "is address space %u: the module's data layout (%s%s%s) is not "
					            "the target's; write the target's `target datalayout`",
					            value_name(f), have, c->job->target_name, want,
					            *module_layout ? "'" : "none", module_layout,
					            *module_layout ? "'" : "");
			}
	return 0;
}

static bool push_name(char ***names, size_t *count, const char *name)
{
	for (size_t i = 0; i < *count; i++)
		if (strcmp((*names)[i], name) == 0)
			return true;
	char **grown = realloc(*names, sizeof *grown * (*count + 1));
	if (!grown)
		return false;
	*names = grown;
	if (!(grown[*count] = strdup(name)))
		return false;
	(*count)++;
	return true;
}

/* The functions the CUDA driver provides to every module it loads, as
 * system calls of the PTX ABI: printf, device-side malloc/free and assert
 * (what CUDA C's printf and assert, and CUDA.jl's @cuprintf and @cuassert,
 * call).  ptxas and the PTX JIT compile calls to them in whole-program mode
 * and the driver binds them at load. */
static bool driver_provides(const compile *c, const char *name)
{
	static const char *const cuda_syscalls[] = {"vprintf", "malloc", "free", "__assertfail"};
	if (c->job->vendor != GPUCC_VENDOR_NVIDIA)
		return false;
	for (size_t i = 0; i < sizeof cuda_syscalls / sizeof *cuda_syscalls; i++)
		if (strcmp(name, cuda_syscalls[i]) == 0)
			return true;
	return false;
}

/* Calls to functions nothing defines are errors (neither the PTX JIT nor
 * the HIP loader resolves them), except the CUDA driver's system calls;
 * those and variables nothing defines are externals the loader resolves
 * (a variable becomes the module's own: ptxas and the JIT drop its extern),
 * recorded in the entry.  Dynamic shared memory is none of these. */
int check_externals(compile *c)
{
	backend_text missing = {0};
	size_t missing_count = 0;
	bool wants_libdevice = false, wants_rocm = false;
	for (LLVMValueRef f = LLVMGetFirstFunction(c->module); f; f = LLVMGetNextFunction(f)) {
		if (!LLVMIsDeclaration(f) || LLVMGetIntrinsicID(f) != 0 || !LLVMGetFirstUse(f))
			continue;
		const char *name = value_name(f);
		if (has_prefix(name, "llvm.")) {
			/* LLVM's own namespace, but no intrinsic this LLVM knows
			 * (LLVMGetIntrinsicID is 0): a newer LLVM's, or a typo;
			 * nothing but LLVM could define it. */
			backend_text_release(&missing);
			unsigned major, minor, patch;
			LLVMGetVersion(&major, &minor, &patch);
			return fail(c, GPUCC_ECOMPILE,
			            "call to '%s', an intrinsic LLVM %u.%u.%u does not know (a newer "
			            "LLVM's, or a misspelt name): no device library can define it",
			            name, major, minor, patch);
		}
		if (driver_provides(c, name)) {
			if (!push_name(&c->out->externals, &c->out->external_count, name)) {
				backend_text_release(&missing);
				return oom(c);
			}
			continue;
		}
		backend_text_append(&missing, "%s'%s'", missing_count ? ", " : "", name);
		missing_count++;
		wants_libdevice |= has_prefix(name, "__nv_");
		wants_rocm |= has_prefix(name, "__ocml_") || has_prefix(name, "__ockl_");
	}
	if (missing_count) {
		const char *hint = "";
		if (wants_libdevice && c->job->device_lib_count == 0)
			hint = " (libdevice was not found: set CUDA_PATH to a CUDA toolkit)";
		else if (wants_rocm && c->job->device_lib_count == 0)
			hint = " (the ROCm device libraries were not found for this target)";
		int rc = fail(c, GPUCC_ECOMPILE, "unresolvable external call%s to %s%s",
		              missing_count > 1 ? "s" : "", missing.data ? missing.data : "?", hint);
		backend_text_release(&missing);
		return rc;
	}
	backend_text_release(&missing);
	for (LLVMValueRef g = LLVMGetFirstGlobal(c->module); g; g = LLVMGetNextGlobal(g)) {
		if (!LLVMIsDeclaration(g) || !LLVMGetFirstUse(g) ||
		    LLVMGetPointerAddressSpace(LLVMTypeOf(g)) == ADDRSPACE_SHARED)
			continue;
		if (!push_name(&c->out->externals, &c->out->external_count, value_name(g)))
			return oom(c);
	}
	if (c->out->external_count > 1)
		qsort(c->out->externals, c->out->external_count, sizeof *c->out->externals, compare_names);
	return 0;
}

/* A PTX identifier: a letter then letters, digits, '_' and '$'; or '_' or
 * '$' then at least one of those ('%' too, but LLVM cannot print it). */
static bool is_ptx_identifier(const char *name)
{
	bool letter = (*name >= 'a' && *name <= 'z') || (*name >= 'A' && *name <= 'Z');
	if (!letter && *name != '_' && *name != '$')
		return false;
	const char *p = name + 1;
	if (!letter && !*p)
		return false;
	for (; *p; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') && !(*p >= '0' && *p <= '9') &&
		    *p != '_' && *p != '$')
			return false;
	return true;
}

/* NVPTX: every symbol the PTX will name must be a PTX identifier.  LLVM
 * renames local symbols itself, but prints others as they are: for '#',
 * '!', '-', '@' or any non-ASCII byte (Julia's "julia_#f#1" or "∇f!") its
 * printer calls report_fatal_error, which aborts the whole process (every
 * other job with it); '.' or a leading digit give PTX that ptxas and the
 * driver's JIT refuse.  Run after optimisation, which drops what is unused. */
int check_ptx_names(compile *c)
{
	if (c->job->vendor != GPUCC_VENDOR_NVIDIA)
		return 0;
	for (int pass = 0; pass < 2; pass++) {
		LLVMValueRef v = pass == 0 ? LLVMGetFirstFunction(c->module) : LLVMGetFirstGlobal(c->module);
		for (; v; v = pass == 0 ? LLVMGetNextFunction(v) : LLVMGetNextGlobal(v)) {
			LLVMLinkage linkage = LLVMGetLinkage(v);
			if (linkage == LLVMInternalLinkage || linkage == LLVMPrivateLinkage ||
			    linkage == LLVMAppendingLinkage ||
			    (pass == 0 && LLVMGetIntrinsicID(v) != 0) ||
			    (LLVMIsDeclaration(v) && !LLVMGetFirstUse(v)))
				continue;
			const char *name = value_name(v);
			if (!is_ptx_identifier(name))
				return fail(c, GPUCC_ECOMPILE,
				            "%s '%s' has a name PTX cannot spell (PTX allows letters, digits, "
				            "'_' and '$', and no leading digit): rename it",
				            pass == 0 ? "function" : "variable", name);
		}
	}
	return 0;
}

/* NVPTX: global constructors and destructors.  PTX has no way to run them
 * at load, and LLVM's NVPTX printer answers a non-empty llvm.global_ctors or
 * llvm.global_dtors with report_fatal_error, aborting the process.  The
 * optimiser folds a constructor that only stores constants into the
 * initialiser and drops the list; what is left is refused. */
int check_ptx_structors(compile *c)
{
	static const char *const lists[] = {"llvm.global_ctors", "llvm.global_dtors"};
	if (c->job->vendor != GPUCC_VENDOR_NVIDIA)
		return 0;
	for (size_t i = 0; i < sizeof lists / sizeof *lists; i++) {
		LLVMValueRef list = LLVMGetNamedGlobal(c->module, lists[i]);
		LLVMValueRef init = list ? LLVMGetInitializer(list) : NULL;
		if (init && LLVMIsAConstantArray(init) && LLVMGetNumOperands(init) > 0)
			return fail(c, GPUCC_ECOMPILE,
			            "the module has %s (%d), which PTX cannot run at load: initialise "
			            "device variables with constants, or from a kernel",
			            i == 0 ? "global constructors" : "global destructors",
			            LLVMGetNumOperands(init));
	}
	return 0;
}
