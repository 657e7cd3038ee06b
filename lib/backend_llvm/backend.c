/*
 * lib/backend_llvm/backend.c -- the LLVM backend module (libgpucc-llvm.so):
 * compiles one LLVM IR module for one GPU target in process through LLVM-C.
 *
 * Pipeline:
 *   parse (.ll or .bc) -> verify -> check and set triple, data layout from the
 *   target machine -> refuse functions that name another processor ->
 *   strip debug info unless asked -> find the kernels (a linkonce one
 *   becomes weak, so that the optimiser keeps it) -> module flags (NVVM
 *   reflect FTZ, AMDGPU code object version) and fast-math/FTZ attributes on
 *   the module's functions -> link the device libraries libgpucc chose (a
 *   function the module defines keeps its definition) -> internalise every
 *   library symbol the module did not define (AMDGPU: and the module's own
 *   functions but kernels, a code object being a whole program) -> at -O0,
 *   delete the library code the module does not reach (the optimiser does
 *   at -O1 and above)
 *   -> LLVMRunPasses("default<On>")
 *   -> refuse calls nothing defines (but the CUDA driver's vprintf, malloc,
 *   free, __assertfail; dynamic shared memory is no external) -> refuse
 *   what LLVM would abort the process on (NVPTX names PTX cannot spell and
 *   global constructors, allocas outside the target's stack address
 *   space) -> emit:
 *     NVPTX:  PTX text; with ptxas, `ptxas -arch=sm_XY -v` (whole program)
 *             gives an executable cubin and per-kernel resources;
 *     AMDGPU: a relocatable object, linked by `ld.lld -shared` (by the
 *             LLD linked into the worker where it is that ld.lld:
 *             lld_link.h) into a code
 *             object whose metadata note gives kernels and resources, and
 *             whose target ID must be the job's.
 *
 * Here: the per-thread state, the module's own preparation (triple, data
 * layout, kernels, flags and attributes), the target machine, optimising,
 * emitting and the pipeline itself.  Its stages elsewhere
 * (lib/backend_llvm/compile_state.h): the refusals in checks.c, the device
 * libraries in devlibs.c, the outputs in nvidia.c and amd.c.
 *
 * Threads: one gpucc_backend_thread per compiling thread, holding its own
 * LLVMContext, the device libraries it has parsed (cloned per job; parsing
 * libdevice costs ~100 ms) and a private temporary directory for the tools.
 * Diagnostics reach a per-context handler that keeps errors, warnings and
 * notes (remarks are dropped) as "MODULE: TARGET: SEVERITY: text" lines.
 */
#include "compile_state.h"
#include "lld_link.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Comdat.h>
#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* Run the optimisation pipeline once on an empty module of each triple, on
 * one thread: LLVM creates some process-wide objects (the pass timers'
 * TimerGroup among them) lazily on first use, and ThreadSanitizer saw two
 * workers racing to create them. */
static void warm_up_pipelines(void)
{
	static const char *const triples[] = {"nvptx64-nvidia-cuda", "amdgcn-amd-amdhsa"};
	static const char *const cpus[] = {"sm_90", "gfx90a"};
	for (int i = 0; i < 2; i++) {
		LLVMTargetRef target;
		char *message = NULL;
		if (LLVMGetTargetFromTriple(triples[i], &target, &message) != 0) {
			LLVMDisposeMessage(message);
			continue;
		}
		LLVMTargetMachineRef machine = LLVMCreateTargetMachine(
			target, triples[i], cpus[i], "", LLVMCodeGenLevelDefault, LLVMRelocPIC,
			LLVMCodeModelDefault);
		LLVMContextRef context = LLVMContextCreate();
		LLVMModuleRef module = LLVMModuleCreateWithNameInContext("warm-up", context);
		LLVMSetTarget(module, triples[i]);
		LLVMPassBuilderOptionsRef options = LLVMCreatePassBuilderOptions();
		LLVMErrorRef error = LLVMRunPasses(module, "default<O2>", machine, options);
		if (error)
			LLVMConsumeError(error);
		LLVMDisposePassBuilderOptions(options);
		LLVMDisposeModule(module);
		LLVMContextDispose(context);
		LLVMDisposeTargetMachine(machine);
	}
}

static void initialize_targets(void)
{
	LLVMInitializeNVPTXTargetInfo();
	LLVMInitializeNVPTXTarget();
	LLVMInitializeNVPTXTargetMC();
	LLVMInitializeNVPTXAsmPrinter();
	LLVMInitializeAMDGPUTargetInfo();
	LLVMInitializeAMDGPUTarget();
	LLVMInitializeAMDGPUTargetMC();
	LLVMInitializeAMDGPUAsmPrinter();
	/* The object streamer assembles inline asm (the ROCm device
	 * libraries' printf hostcalls, a HIP kernel's asm statements) with the
	 * target's asm parser; without one, LLVM aborts the process. */
	LLVMInitializeAMDGPUAsmParser();
	warm_up_pipelines();
}

/* Every error LLVM diagnoses also goes to stderr as one line,
 * "gpucc-compile-worker: error: TEXT": LLVM may crash right after one (the
 * AMDGPU instruction selector does on a graphics shader under HSA), and the
 * worker's caller then reads it there (lib/compile/compile_worker.c).  One write,
 * so that lines of several threads do not interleave. */
static void error_to_stderr(const char *text, size_t len)
{
	static const char prefix[] = "gpucc-compile-worker: error: ";
	char *raw = strndup(text, len);
	char *plain = raw ? backend_demangle_names(raw) : NULL;
	const char *said = plain ? plain : raw ? raw : "";
	len = strlen(said);
	char *line = malloc(sizeof prefix + len + 1);
	if (line) {
		memcpy(line, prefix, sizeof prefix - 1);
		size_t n = sizeof prefix - 1;
		for (size_t i = 0; i < len; i++)
			line[n++] = said[i] == '\n' || said[i] == '\r' ? ' ' : said[i];
		line[n++] = '\n';
		ssize_t ignored = write(STDERR_FILENO, line, n);
		(void)ignored;
	}
	free(line);
	free(plain);
	free(raw);
}

static void diagnostic_handler(LLVMDiagnosticInfoRef info, void *opaque)
{
	gpucc_backend_thread *t = opaque;
	LLVMDiagnosticSeverity severity = LLVMGetDiagInfoSeverity(info);
	if (severity == LLVMDSRemark)
		return;
	char *text = LLVMGetDiagInfoDescription(info);
	const char *what = severity == LLVMDSError ? "error" : severity == LLVMDSWarning ? "warning"
	                                                                                  : "note";
	/* LLVM places a diagnostic without a source location at
	 * "<unknown>:0:0: ", which says nothing. */
	static const char nowhere[] = "<unknown>:0:0: ";
	const char *said = text ? text : "";
	if (strncmp(said, nowhere, sizeof nowhere - 1) == 0)
		said += sizeof nowhere - 1;
	if (severity == LLVMDSError && !t->saw_error)
		snprintf(t->first_error, sizeof t->first_error, "%.*s", (int)strcspn(said, "\n"), said);
	if (severity == LLVMDSError)
		t->saw_error = true;
	size_t len = strlen(said);
	while (len && (said[len - 1] == '\n' || said[len - 1] == ' '))
		len--;
	if (severity == LLVMDSError)
		error_to_stderr(said, len);
	if (t->job)
		backend_text_append(&t->diagnostics, "%s: %s: %s: %.*s\n", t->job->module_name,
		                    t->job->target_name, what, (int)len, said);
	LLVMDisposeMessage(text);
}

static gpucc_backend_thread *thread_new(char *error, size_t error_size)
{
	pthread_once(&init_once, initialize_targets);
	gpucc_backend_thread *t = calloc(1, sizeof *t);
	if (!t) {
		snprintf(error, error_size, "out of memory");
		return NULL;
	}
	if (backend_tempdir_create(t->tempdir, sizeof t->tempdir) != 0) {
		snprintf(error, error_size, "cannot create a temporary directory in '%s': %s",
		         backend_temp_parent(), strerror(errno));
		free(t);
		return NULL;
	}
	t->context = LLVMContextCreate();
	LLVMContextSetDiagnosticHandler(t->context, diagnostic_handler, t);
	return t;
}

static void thread_free(gpucc_backend_thread *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->lib_count; i++) {
		LLVMDisposeMemoryBuffer(t->libs[i].bytes);
		free(t->libs[i].path);
	}
	free(t->libs);
	LLVMContextDispose(t->context);
	backend_tempdir_remove(t->tempdir);
	backend_text_release(&t->diagnostics);
	free(t);
}

/* ---- one compile ----------------------------------------------------------- */

/* Remember the names of every function and variable the module defines. */
static int collect_defined(compile *c)
{
	size_t capacity = 0;
	for (int pass = 0; pass < 2; pass++) {
		LLVMValueRef v = pass == 0 ? LLVMGetFirstFunction(c->module) : LLVMGetFirstGlobal(c->module);
		for (; v; v = pass == 0 ? LLVMGetNextFunction(v) : LLVMGetNextGlobal(v)) {
			if (LLVMIsDeclaration(v))
				continue;
			if (c->defined_count == capacity) {
				capacity = capacity ? capacity * 2 : 64;
				char **grown = realloc(c->defined, sizeof *grown * capacity);
				if (!grown)
					return oom(c);
				c->defined = grown;
			}
			c->defined[c->defined_count] = strdup(value_name(v));
			if (!c->defined[c->defined_count])
				return oom(c);
			c->defined_count++;
		}
	}
	qsort(c->defined, c->defined_count, sizeof *c->defined, compare_names);
	return 0;
}

/* A kernel is an entry point: the loader looks it up by name, so nothing
 * in the module may discard it.  A linkonce kernel (linkonce_odr is what a
 * C++ inline function or template instance gets unless the producer
 * promotes it, as clang does for kernels) would be dropped by the
 * optimiser as unreferenced, silently leaving the entry without it: it
 * becomes weak, which keeps its one-definition semantics. */
static void keep_kernel(LLVMValueRef f)
{
	LLVMLinkage linkage = LLVMGetLinkage(f);
	if (linkage == LLVMLinkOnceAnyLinkage)
		LLVMSetLinkage(f, LLVMWeakAnyLinkage);
	else if (linkage == LLVMLinkOnceODRLinkage)
		LLVMSetLinkage(f, LLVMWeakODRLinkage);
}

/* Whether the module defines a kernel: by calling convention, or (NVPTX)
 * listed in !nvvm.annotations as {fn, !"kernel", i32 1}; every kernel is
 * kept (keep_kernel). */
static bool find_kernels(compile *c)
{
	bool found = false;
	for (LLVMValueRef f = LLVMGetFirstFunction(c->module); f; f = LLVMGetNextFunction(f)) {
		unsigned cc = LLVMGetFunctionCallConv(f);
		if (!LLVMIsDeclaration(f) && (cc == CC_PTX_KERNEL || cc == CC_AMDGPU_KERNEL)) {
			keep_kernel(f);
			found = true;
		}
	}
	if (c->job->vendor != GPUCC_VENDOR_NVIDIA)
		return found;
	unsigned n = LLVMGetNamedMetadataNumOperands(c->module, "nvvm.annotations");
	if (n == 0)
		return found;
	LLVMValueRef *nodes = calloc(n, sizeof *nodes);
	if (!nodes)
		return found;
	LLVMGetNamedMetadataOperands(c->module, "nvvm.annotations", nodes);
	for (unsigned i = 0; i < n; i++) {
		unsigned ops = LLVMGetMDNodeNumOperands(nodes[i]);
		if (ops < 3)
			continue;
		LLVMValueRef operands[3];
		LLVMValueRef *all = calloc(ops, sizeof *all);
		if (!all)
			break;
		LLVMGetMDNodeOperands(nodes[i], all);
		memcpy(operands, all, sizeof operands);
		free(all);
		unsigned len = 0;
		const char *s = operands[1] ? LLVMGetMDString(operands[1], &len) : NULL;
		if (operands[0] && LLVMIsAFunction(operands[0]) && !LLVMIsDeclaration(operands[0]) && s &&
		    len == 6 && memcmp(s, "kernel", 6) == 0) {
			keep_kernel(operands[0]);
			found = true;
			LLVMValueRef *grown =
				realloc(c->annotated, sizeof *grown * (c->annotated_count + 1));
			if (grown) {
				c->annotated = grown;
				c->annotated[c->annotated_count++] = operands[0];
			} else {
				c->annotated_lost = true;
			}
		}
	}
	free(nodes);
	return found;
}

static bool triple_fits(const char *triple, gpucc_vendor vendor)
{
	if (!*triple)
		return true;
	if (vendor == GPUCC_VENDOR_NVIDIA)
		return strncmp(triple, "nvptx64-", 8) == 0;
	return strncmp(triple, "amdgcn-", 7) == 0;
}

static void add_flag_i32(compile *c, const char *name, unsigned value)
{
	LLVMValueRef v = LLVMConstInt(LLVMInt32TypeInContext(c->thread->context), value, 0);
	LLVMAddModuleFlag(c->module, LLVMModuleFlagBehaviorOverride, name, strlen(name),
	                  LLVMValueAsMetadata(v));
}

/* The integer value of module flag `name`: 1 when the module sets it to an
 * integer (*value filled), 0 when it does not set it, -1 when it sets it to
 * something else, -2 when memory runs out.  LLVMGetModuleFlag's metadata
 * cannot be read as a constant through LLVM-C (LLVMMetadataAsValue wraps
 * it, so LLVMIsAConstantInt fails even for `i32 400`, and every module
 * clang -x hip wrote was refused); the operands of the !llvm.module.flags
 * nodes, {behaviour, !"name", value}, can. */
static int module_flag_int(compile *c, const char *name, unsigned long long *value)
{
	unsigned n = LLVMGetNamedMetadataNumOperands(c->module, "llvm.module.flags");
	LLVMValueRef *flags = n ? calloc(n, sizeof *flags) : NULL;
	if (n && !flags)
		return -2;
	if (n)
		LLVMGetNamedMetadataOperands(c->module, "llvm.module.flags", flags);
	int found = 0;
	for (unsigned i = 0; i < n && !found; i++) {
		if (LLVMGetMDNodeNumOperands(flags[i]) != 3)
			continue;
		LLVMValueRef operands[3];
		LLVMGetMDNodeOperands(flags[i], operands);
		unsigned len = 0;
		const char *key = operands[1] ? LLVMGetMDString(operands[1], &len) : NULL;
		if (!key || len != strlen(name) || memcmp(key, name, len) != 0)
			continue;
		found = -1;
		if (operands[2] && LLVMIsAConstantInt(operands[2])) {
			*value = LLVMConstIntGetZExtValue(operands[2]);
			found = 1;
		}
	}
	free(flags);
	return found;
}

static int set_module_flags(compile *c)
{
	if (c->job->vendor == GPUCC_VENDOR_NVIDIA) {
		/* libdevice asks __nvvm_reflect("__CUDA_FTZ"); NVVMReflect answers
		 * from this flag.  A module that sets it itself keeps its choice. */
		if (!LLVMGetModuleFlag(c->module, "nvvm-reflect-ftz", strlen("nvvm-reflect-ftz")))
			add_flag_i32(c, "nvvm-reflect-ftz", c->job->ftz ? 1 : 0);
		return 0;
	}
	const char *name = "amdhsa_code_object_version";
	unsigned want = (unsigned)c->job->code_object_version * 100;
	unsigned long long have = 0;
	int set = module_flag_int(c, name, &have);
	if (set == -2)
		return oom(c);
	if (set == -1)
		return fail(c, GPUCC_ECOMPILE, "module flag amdhsa_code_object_version is not an integer");
	if (set == 1 && have != want)
		return fail(c, GPUCC_ECOMPILE,
		            "module sets amdhsa_code_object_version to %llu, but the target asks for "
		            "code object v%d (compiling for code object v%llu gives what the module asks)",
		            have, c->job->code_object_version, have / 100);
	if (set == 1)
		return 0;
	LLVMValueRef v = LLVMConstInt(LLVMInt32TypeInContext(c->thread->context), want, 0);
	LLVMAddModuleFlag(c->module, LLVMModuleFlagBehaviorError, name, strlen(name),
	                  LLVMValueAsMetadata(v));
	return 0;
}

/* Fast-math and FTZ on the module's own functions: the attributes the
 * backends read, and fast-math flags on every floating-point instruction. */
static void set_math_attributes(compile *c)
{
	if (!c->job->fast_math && !c->job->ftz)
		return;
	for (LLVMValueRef f = LLVMGetFirstFunction(c->module); f; f = LLVMGetNextFunction(f)) {
		if (LLVMIsDeclaration(f))
			continue;
		if (c->job->ftz)
			add_string_attribute(c, f, "denormal-fp-math-f32", "preserve-sign,preserve-sign");
		if (!c->job->fast_math)
			continue;
		add_string_attribute(c, f, "unsafe-fp-math", "true");
		add_string_attribute(c, f, "no-infs-fp-math", "true");
		add_string_attribute(c, f, "no-nans-fp-math", "true");
		add_string_attribute(c, f, "no-signed-zeros-fp-math", "true");
		add_string_attribute(c, f, "approx-func-fp-math", "true");
		for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b))
			for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i))
				if (LLVMCanValueUseFastMathFlags(i))
					LLVMSetFastMathFlags(i, LLVMFastMathAll);
	}
}

static int create_machine(compile *c)
{
	char *message = NULL;
	LLVMTargetRef target;
	if (LLVMGetTargetFromTriple(c->job->triple, &target, &message)) {
		int rc = fail(c, GPUCC_EUNAVAILABLE, "LLVM has no backend for '%s': %s", c->job->triple,
		              message ? message : "");
		LLVMDisposeMessage(message);
		return rc;
	}
	static const LLVMCodeGenOptLevel levels[] = {LLVMCodeGenLevelNone, LLVMCodeGenLevelLess,
	                                             LLVMCodeGenLevelDefault,
	                                             LLVMCodeGenLevelAggressive};
	c->machine = LLVMCreateTargetMachine(target, c->job->triple, c->job->cpu, c->job->features,
	                                     levels[c->job->opt_level], LLVMRelocDefault,
	                                     LLVMCodeModelDefault);
	if (!c->machine)
		return fail(c, GPUCC_ECOMPILE, "LLVM cannot make a target machine for %s",
		            c->job->target_name);
	return 0;
}

static int optimise(compile *c)
{
	char passes[32];
	snprintf(passes, sizeof passes, "default<O%d>", c->job->opt_level);
	LLVMPassBuilderOptionsRef options = LLVMCreatePassBuilderOptions();
	LLVMErrorRef error = LLVMRunPasses(c->module, passes, c->machine, options);
	LLVMDisposePassBuilderOptions(options);
	if (error) {
		char *message = LLVMGetErrorMessage(error);
		int rc = fail(c, GPUCC_ECOMPILE, "optimisation failed: %s", message);
		LLVMDisposeErrorMessage(message);
		return rc;
	}
	/* A pass that diagnoses an error goes on (AMDGPU's printf lowering
	 * drops a call whose format is no constant string and says so): the
	 * module it leaves is not what was asked for. */
	if (c->thread->saw_error)
		return fail(c, GPUCC_ECOMPILE, "optimisation failed: %s", c->thread->first_error);
	return 0;
}

static int emit(compile *c, LLVMCodeGenFileType type, LLVMMemoryBufferRef *out)
{
	char *message = NULL;
	c->thread->saw_error = false;
	if (LLVMTargetMachineEmitToMemoryBuffer(c->machine, c->module, type, &message, out) ||
	    c->thread->saw_error) {
		int rc = fail(c, GPUCC_ECOMPILE, "code generation failed: %.*s",
		              (int)strcspn(message && *message ? message : c->thread->first_error, "\n"),
		              message && *message ? message : c->thread->first_error);
		LLVMDisposeMessage(message);
		if (*out)
			LLVMDisposeMemoryBuffer(*out);
		*out = NULL;
		return rc;
	}
	LLVMDisposeMessage(message);
	return 0;
}

/* Fail with "WHAT: " and the first line of LLVM's text; the whole text
 * becomes diagnostics, a line each. */
static int fail_first_line(compile *c, const char *what, const char *text)
{
	char prefix[512];
	snprintf(prefix, sizeof prefix, "%s: %s: ", c->job->module_name, c->job->target_name);
	backend_text_append_lines(&c->thread->diagnostics, prefix, text, strlen(text));
	return fail(c, GPUCC_ECOMPILE, "%s: %.*s", what, (int)strcspn(text, "\n"), text);
}

/* Parse the job's other modules and link each into the first, in order
 * (relocatable device code). */
static int link_members(compile *c)
{
	const gpucc_backend_job *job = c->job;
	for (size_t i = 0; i < job->link_count; i++) {
		LLVMMemoryBufferRef buffer = LLVMCreateMemoryBufferWithMemoryRangeCopy(
			job->link_data[i], job->link_sizes[i], job->link_names[i]);
		LLVMModuleRef member = NULL;
		char *message = NULL;
		c->thread->saw_error = false;
		if (LLVMParseIRInContext(c->thread->context, buffer, &member, &message)) {
			int rc = fail(c, GPUCC_ECOMPILE, "%s: not valid LLVM IR: %.*s", job->link_names[i],
			              (int)strcspn(message ? message : "", "\n"), message ? message : "");
			LLVMDisposeMessage(message);
			return rc;
		}
		/* The first module's triple and layout, as clang's -fgpu-rdc link
		 * gives every unit the same. */
		LLVMSetTarget(member, LLVMGetTarget(c->module));
		LLVMSetDataLayout(member, LLVMGetDataLayoutStr(c->module));
		if (LLVMLinkModules2(c->module, member) || c->thread->saw_error)
			return fail(c, GPUCC_ECOMPILE, "cannot link '%s' into the module%s%s",
			            job->link_names[i], c->thread->saw_error ? ": " : "",
			            c->thread->saw_error ? c->thread->first_error : "");
	}
	if (job->link_count == 0)
		return 0;
	char *message = NULL;
	if (LLVMVerifyModule(c->module, LLVMReturnStatusAction, &message)) {
		int rc = fail_first_line(c, "invalid module after linking", message ? message : "");
		LLVMDisposeMessage(message);
		return rc;
	}
	LLVMDisposeMessage(message);
	return 0;
}

static int run_pipeline(compile *c)
{
	const gpucc_backend_job *job = c->job;
	gpucc_backend_thread *t = c->thread;
	if (job->module_size == 0)
		return fail(c, GPUCC_ECOMPILE, "empty file: not an LLVM IR module");

	LLVMMemoryBufferRef buffer = LLVMCreateMemoryBufferWithMemoryRangeCopy(
		job->module_data, job->module_size, job->module_name);
	char *message = NULL;
	t->saw_error = false;
	if (LLVMParseIRInContext(t->context, buffer, &c->module, &message)) {
		/* "<file>:line:col: error: ...", then the line and a caret: the
		 * first line is the message, the whole text a diagnostic. */
		int rc = fail_first_line(c, "not valid LLVM IR", message ? message : "parse error");
		LLVMDisposeMessage(message);
		c->module = NULL;
		return rc;
	}
	if (LLVMVerifyModule(c->module, LLVMReturnStatusAction, &message)) {
		/* "Instruction does not dominate all uses!", then the
		 * instructions, a line each. */
		int rc = fail_first_line(c, "invalid module", message ? message : "");
		LLVMDisposeMessage(message);
		return rc;
	}
	LLVMDisposeMessage(message);
	int rc;
	if ((rc = link_members(c)) != 0)
		return rc;

	const char *triple = LLVMGetTarget(c->module);
	if (!triple_fits(triple, job->vendor))
		return fail(c, GPUCC_ECOMPILE, "module triple '%s' does not fit target %s (%s)%s", triple,
		            job->target_name, job->triple,
		            strncmp(triple, "nvptx", 5) == 0    ? ": the module is written for NVIDIA "
		                                                  "targets (sm_XY)"
		            : strncmp(triple, "amdgcn", 6) == 0 ? ": the module is written for AMD "
		                                                  "targets (gfxNNN)"
		                                                : "");
	if ((rc = check_other_vendor(c)) != 0)
		return rc;
	LLVMSetTarget(c->module, job->triple);
	if ((rc = create_machine(c)) != 0)
		return rc;
	c->module_layout = strdup(LLVMGetDataLayoutStr(c->module));
	if (!c->module_layout)
		return oom(c);
	LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(c->machine);
	char *layout_text = LLVMCopyStringRepOfTargetData(layout);
	LLVMSetDataLayout(c->module, layout_text);
	LLVMDisposeMessage(layout_text);
	LLVMDisposeTargetData(layout);

	if ((rc = check_function_targets(c)) != 0 || (rc = check_calling_conventions(c)) != 0)
		return rc;
	if (!job->debug_info)
		LLVMStripModuleDebugInfo(c->module);
	if (!find_kernels(c)) {
		c->out->no_kernels = true;
		return fail(c, GPUCC_ECOMPILE, "no kernels: the module defines no %s function",
		            job->vendor == GPUCC_VENDOR_NVIDIA ? "ptx_kernel" : "amdgpu_kernel");
	}
	if ((rc = collect_defined(c)) != 0 || (rc = set_module_flags(c)) != 0)
		return rc;
	set_math_attributes(c);
	if ((rc = link_device_libs(c)) != 0)
		return rc;
	internalize_own_functions(c);
	if ((rc = keep_own_unreached_functions(c)) != 0 || (rc = drop_unreached_library_code(c)) != 0)
		return rc;
	fault_injection(job, "abort");
	fault_injection(job, "exit");
	if ((rc = optimise(c)) != 0 || (rc = check_externals(c)) != 0 ||
	    (rc = check_ptx_names(c)) != 0 || (rc = check_ptx_structors(c)) != 0 ||
	    (rc = check_alloca_address_space(c)) != 0)
		return rc;

	LLVMMemoryBufferRef emitted = NULL;
	bool nvidia = job->vendor == GPUCC_VENDOR_NVIDIA;
	if ((rc = emit(c, nvidia ? LLVMAssemblyFile : LLVMObjectFile, &emitted)) != 0)
		return rc;
	rc = nvidia ? finish_nvptx(c, emitted) : finish_amdgpu(c, emitted);
	LLVMDisposeMemoryBuffer(emitted);
	return rc;
}

static void result_release(gpucc_backend_result *r)
{
	if (!r)
		return;
	free(r->message);
	free(r->diagnostics);
	for (int i = 0; i < GPUCC_PART_COUNT; i++)
		free(r->payloads[i]);
	backend_kernels_free(r->kernels, r->kernel_count);
	for (size_t i = 0; i < r->external_count; i++)
		free(r->externals[i]);
	free(r->externals);
	free(r->ptxas_refused);
	memset(r, 0, sizeof *r);
}

static int compile_job(gpucc_backend_thread *t, const gpucc_backend_job *job,
                       gpucc_backend_result *out)
{
	memset(out, 0, sizeof *out);
	compile c = {.thread = t, .job = job, .out = out};
	snprintf(c.path_base, sizeof c.path_base, "%s/job-%lu", t->tempdir, ++t->serial);
	t->job = job;
	backend_text_release(&t->diagnostics);
	if (job->vendor == GPUCC_VENDOR_NVIDIA && job->nvjitlink) /* loads while LLVM works */
		backend_nvjitlink_preload(job->nvjitlink);
	t->saw_error = false;
	int rc = run_pipeline(&c);
	/* Whatever stage diagnosed it, an error LLVM reported fails the job. */
	if (rc == 0 && t->saw_error)
		rc = fail(&c, GPUCC_ECOMPILE, "LLVM reported an error: %s", t->first_error);
	if (c.machine)
		LLVMDisposeTargetMachine(c.machine);
	if (c.module)
		LLVMDisposeModule(c.module);
	free(c.module_layout);
	for (size_t i = 0; i < c.defined_count; i++)
		free(c.defined[i]);
	free(c.defined);
	free(c.annotated);
	t->job = NULL;
	out->diagnostics = backend_text_take(&t->diagnostics);
	if (rc != 0) {
		/* A failure keeps only its message and diagnostics. */
		char *message = out->message, *diagnostics = out->diagnostics;
		bool no_kernels = out->no_kernels;
		out->message = out->diagnostics = NULL;
		result_release(out);
		out->code = rc;
		out->no_kernels = no_kernels;
		out->message = message;
		out->diagnostics = diagnostics;
	}
	/* Leave nothing behind in the temporary directory. */
	static const char *const suffixes[] = {".ptx", ".cubin", ".ptxas.log", ".o", ".hsaco",
	                                       ".lld.log"};
	for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
		char path[PATH_MAX + 80];
		snprintf(path, sizeof path, "%s%s", c.path_base, suffixes[i]);
		unlink(path);
	}
	return rc;
}

static gpucc_backend table = {
	.abi_version = GPUCC_BACKEND_ABI,
	.struct_size = sizeof(gpucc_backend),
	.llvm_version = NULL, /* filled on first use */
	.thread_new = thread_new,
	.thread_free = thread_free,
	.compile = compile_job,
	.result_release = result_release,
};

static char llvm_version[32];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void fill_table(void)
{
	unsigned major, minor, patch;
	LLVMGetVersion(&major, &minor, &patch);
	snprintf(llvm_version, sizeof llvm_version, "%u.%u.%u", major, minor, patch);
	table.llvm_version = llvm_version;
}

/* The one exported symbol (GPUCC_BACKEND_ENTRY): the table for abi_version,
 * or NULL when this module does not speak it. */
EXPORT const gpucc_backend *gpucc_backend_get(unsigned abi_version);

EXPORT const gpucc_backend *gpucc_backend_get(unsigned abi_version)
{
	if (abi_version != GPUCC_BACKEND_ABI)
		return NULL;
	pthread_once(&table_once, fill_table);
	return &table;
}
