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
 * Threads: one gpucc_backend_thread per compiling thread, holding its own
 * LLVMContext, the device libraries it has parsed (cloned per job; parsing
 * libdevice costs ~100 ms) and a private temporary directory for the tools.
 * Diagnostics reach a per-context handler that keeps errors, warnings and
 * notes (remarks are dropped) as "MODULE: TARGET: SEVERITY: text" lines.
 */
#include "backend_llvm.h"
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

/* LLVM calling conventions (llvm/IR/CallingConv.h). */
enum { CC_PTX_KERNEL = 71, CC_AMDGPU_KERNEL = 91 };

/* Shared memory (NVPTX) and LDS (AMDGPU) are address space 3 on both.  A
 * variable there that the module only declares (`@shmem = external
 * addrspace(3) global [0 x i8]`) is the kernel's dynamic shared memory,
 * sized at launch: PTX keeps it `.extern .shared`, AMDGPU places it after
 * the static LDS.  No loader resolves it, so it is no external. */
enum { ADDRSPACE_SHARED = 3 };

/* A device library's bytes, read once per thread; every job parses its own
 * module of them lazily (lib_module). */
typedef struct cached_lib {
	char *path;
	LLVMMemoryBufferRef bytes;
} cached_lib;

struct gpucc_backend_thread {
	LLVMContextRef context;
	char tempdir[PATH_MAX];
	unsigned long serial;
	cached_lib *libs;
	size_t lib_count;
	/* The job being compiled, for the diagnostic handler. */
	const gpucc_backend_job *job;
	backend_text diagnostics;
	bool saw_error;
	char first_error[2048]; /* the first line of the first error since saw_error was cleared */
};

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
		         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", strerror(errno));
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

/* State of one compile: the result being filled and what must be released. */
typedef struct compile {
	gpucc_backend_thread *thread;
	const gpucc_backend_job *job;
	gpucc_backend_result *out;
	LLVMModuleRef module;
	LLVMTargetMachineRef machine;
	char *module_layout; /* the module's own data layout, before the target's */
	char **defined; /* names the module itself defines, sorted */
	size_t defined_count;
	LLVMValueRef *annotated; /* NVPTX: kernels by !nvvm.annotations, not by convention */
	size_t annotated_count;
	bool annotated_lost; /* out of memory while listing them: internalise nothing */
	char path_base[PATH_MAX + 64];
} compile;

static int fail(compile *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fault_asked(const gpucc_backend_job *job, const char *where);

/* Record the failure: "MODULE: TARGET: <message>", C++ symbol names in the
 * message demangled (LLVM's and the tools' words quote them mangled). */
static int fail(compile *c, int code, const char *fmt, ...)
{
	backend_text said = {0};
	va_list ap;
	va_start(ap, fmt);
	backend_text_appendv(&said, fmt, ap);
	va_end(ap);
	char *raw = backend_text_take(&said);
	char *plain = raw ? backend_demangle_names(raw) : NULL;
	backend_text text = {0};
	backend_text_append(&text, "%s: %s: %s", c->job->module_name, c->job->target_name,
	                    plain ? plain : raw ? raw : "out of memory");
	free(plain);
	free(raw);
	free(c->out->message);
	/* One line all the same: libgpucc spells control characters (job_fail,
	 * lib/compile/compile.c). */
	c->out->message = backend_text_take(&text);
	c->out->code = code;
	return code;
}

static int oom(compile *c)
{
	return fail(c, GPUCC_ERROR, "out of memory");
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_defined_by_module(const compile *c, const char *name)
{
	return bsearch(&name, c->defined, c->defined_count, sizeof *c->defined, compare_names) != NULL;
}

static bool has_prefix(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);
	return strlen(s) >= n && memcmp(s, prefix, n) == 0;
}

static const char *value_name(LLVMValueRef v)
{
	size_t len;
	const char *name = LLVMGetValueName2(v, &len);
	return name ? name : "";
}

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

/* The value of a function attribute such as "target-cpu", or NULL. */
static const char *function_attribute(LLVMValueRef f, const char *key, unsigned *len)
{
	*len = 0;
	LLVMAttributeRef a =
		LLVMGetStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, key, (unsigned)strlen(key));
	return a ? LLVMGetStringAttributeValue(a, len) : NULL;
}

/* NVPTX: the job's PTX ISA ("+ptx78" -> 78), which the PTX's .version
 * line comes from; 0 when the features name none. */
static unsigned job_ptx_isa(const gpucc_backend_job *job)
{
	unsigned isa = 0;
	return sscanf(job->features, "+ptx%u", &isa) == 1 ? isa : 0;
}

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
static int check_function_targets(compile *c)
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
static int check_calling_conventions(compile *c)
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
static int check_other_vendor(compile *c)
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
static int check_alloca_address_space(compile *c)
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

static void add_string_attribute(compile *c, LLVMValueRef f, const char *key, const char *value)
{
	LLVMAttributeRef a = LLVMCreateStringAttribute(c->thread->context, key, (unsigned)strlen(key),
	                                               value, (unsigned)strlen(value));
	LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, a);
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

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* Parse a library written by libgpucc (IR text), or NULL. */
static LLVMModuleRef parse_generated_lib(compile *c, const char *name, const void *data,
                                         size_t size)
{
	LLVMMemoryBufferRef buffer = LLVMCreateMemoryBufferWithMemoryRangeCopy(data, size, name);
	LLVMModuleRef module = NULL;
	char *message = NULL;
	/* LLVMParseIRInContext takes the buffer. */
	if (LLVMParseIRInContext(c->thread->context, buffer, &module, &message)) {
		fail(c, GPUCC_ERROR, "cannot parse the generated library '%s': %s", name,
		     message ? message : "parse error");
		LLVMDisposeMessage(message);
		return NULL;
	}
	return module;
}

/* The bytes of device library path, read on the thread's first use. */
static LLVMMemoryBufferRef lib_bytes(compile *c, const char *path)
{
	gpucc_backend_thread *t = c->thread;
	for (size_t i = 0; i < t->lib_count; i++)
		if (strcmp(t->libs[i].path, path) == 0)
			return t->libs[i].bytes;
	LLVMMemoryBufferRef bytes = NULL;
	char *message = NULL;
	if (LLVMCreateMemoryBufferWithContentsOfFile(path, &bytes, &message)) {
		fail(c, GPUCC_EUNAVAILABLE, "cannot read device library '%s': %s", path,
		     message ? message : "unknown error");
		LLVMDisposeMessage(message);
		return NULL;
	}
	cached_lib *grown = realloc(t->libs, sizeof *grown * (t->lib_count + 1));
	char *copy = strdup(path);
	if (!grown || !copy) {
		free(copy);
		if (grown)
			t->libs = grown;
		LLVMDisposeMemoryBuffer(bytes);
		oom(c);
		return NULL;
	}
	t->libs = grown;
	t->libs[t->lib_count].path = copy;
	t->libs[t->lib_count].bytes = bytes;
	t->lib_count++;
	return bytes;
}

/* A module of device library index for this job, or NULL.  A library file
 * is loaded lazily: its functions' bodies are read only when linking needs
 * them, so that linking libclc (11,000 functions, of which a kernel needs a
 * few) costs what those few cost, not a parse and a copy of the whole.  A
 * generated library (IR text, a few lines) is parsed whole. */
static LLVMModuleRef lib_module(compile *c, size_t index)
{
	const char *path = c->job->device_lib_paths[index];
	if (c->job->device_lib_data && c->job->device_lib_data[index])
		return parse_generated_lib(c, path, c->job->device_lib_data[index],
		                           c->job->device_lib_sizes[index]);
	LLVMMemoryBufferRef bytes = lib_bytes(c, path);
	if (!bytes)
		return NULL;
	/* A view of the thread's bytes, which the module takes (not the bytes). */
	LLVMMemoryBufferRef view = LLVMCreateMemoryBufferWithMemoryRange(
		LLVMGetBufferStart(bytes), LLVMGetBufferSize(bytes), path, 0);
	LLVMModuleRef module = NULL;
	if (LLVMGetBitcodeModuleInContext2(c->thread->context, view, &module)) {
		fail(c, GPUCC_EUNAVAILABLE, "cannot parse device library '%s'", path);
		return NULL;
	}
	return module;
}

/* The "target-features" the module's own functions are compiled with: the
 * first defined function's that has them, else the target's. */
static char *module_features(compile *c)
{
	for (LLVMValueRef f = LLVMGetFirstFunction(c->module); f; f = LLVMGetNextFunction(f)) {
		unsigned len;
		const char *features = LLVMIsDeclaration(f) ? NULL
		                                            : function_attribute(f, "target-features", &len);
		if (features && len)
			return strndup(features, len);
	}
	return strdup(c->job->features);
}

/* The library functions linked in are compiled as the module's are, as
 * clang's -mlink-builtin-bitcode links them: for the target's processor,
 * with the module's target features (wave size among them).  Without that,
 * the library's code keeps the backend's defaults: wave32 code behind a
 * wave64 kernel on gfx10+, and calls the optimiser may not inline (a callee
 * with other features than its caller). */
static void give_target_attributes(compile *c, const char *features)
{
	for (LLVMValueRef f = LLVMGetFirstFunction(c->module); f; f = LLVMGetNextFunction(f)) {
		if (LLVMIsDeclaration(f) || is_defined_by_module(c, value_name(f)))
			continue;
		add_string_attribute(c, f, "target-cpu", c->job->cpu);
		if (*features)
			add_string_attribute(c, f, "target-features", features);
	}
}

static int link_each(compile *c, const char *triple, const char *layout)
{
	for (size_t i = 0; i < c->job->device_lib_count; i++) {
		const char *path = c->job->device_lib_paths[i];
		LLVMModuleRef copy = lib_module(c, i);
		if (!copy)
			return c->out->code;
		/* The libraries carry their own triples ("nvptx64-nvidia-gpulibs")
		 * and older layouts; linking would warn about each. */
		LLVMSetTarget(copy, triple);
		LLVMSetDataLayout(copy, layout);
		/* The module's own definitions win: one that already holds a
		 * library function (libdevice linked in by llvm-link, say) would
		 * otherwise fail the link as "symbol multiply defined".  A
		 * linkonce definition gives way to any other. */
		for (LLVMValueRef f = LLVMGetFirstFunction(copy); f; f = LLVMGetNextFunction(f))
			if (!LLVMIsDeclaration(f) && is_defined_by_module(c, value_name(f)))
				LLVMSetLinkage(f, LLVMLinkOnceAnyLinkage);
		c->thread->saw_error = false;
		if (LLVMLinkModules2(c->module, copy) || c->thread->saw_error)
			return fail(c, GPUCC_ECOMPILE, "cannot link device library '%s'%s%s",
			            base_name(path), c->thread->saw_error ? ": " : "",
			            c->thread->saw_error ? c->thread->first_error : "");
	}
	return 0;
}

static int link_device_libs(compile *c)
{
	if (c->job->device_lib_count == 0)
		return 0;
	/* Copies: linking may replace the module's strings under our feet. */
	char *triple = strdup(LLVMGetTarget(c->module));
	char *layout = strdup(LLVMGetDataLayoutStr(c->module));
	char *features = module_features(c);
	int rc = triple && layout && features ? link_each(c, triple, layout) : oom(c);
	if (rc == 0)
		give_target_attributes(c, features);
	free(triple);
	free(layout);
	free(features);
	if (rc != 0)
		return rc;
	/* What the libraries brought in becomes internal, so that the optimiser
	 * keeps only what the module uses (else PTX grows to ~700 KB). */
	for (int pass = 0; pass < 2; pass++) {
		LLVMValueRef v = pass == 0 ? LLVMGetFirstFunction(c->module) : LLVMGetFirstGlobal(c->module);
		for (; v; v = pass == 0 ? LLVMGetNextFunction(v) : LLVMGetNextGlobal(v)) {
			if (LLVMIsDeclaration(v))
				continue;
			LLVMLinkage linkage = LLVMGetLinkage(v);
			const char *name = value_name(v);
			if (linkage == LLVMInternalLinkage || linkage == LLVMPrivateLinkage ||
			    linkage == LLVMAppendingLinkage || strncmp(name, "llvm.", 5) == 0 ||
			    is_defined_by_module(c, name))
				continue;
			LLVMSetLinkage(v, LLVMInternalLinkage);
			LLVMSetVisibility(v, LLVMDefaultVisibility);
		}
	}
	return 0;
}

/* ---- -O0: keep only the library code the module reaches --------------------- */

/* A set of LLVM values (open addressing on the pointer; never shrinks),
 * and a stack of the values still to scan. */
typedef struct reach {
	LLVMValueRef *slots;
	size_t capacity, count;
	LLVMValueRef *stack;
	size_t depth, stack_capacity;
	bool failed;
} reach;

static size_t reach_slot(const reach *r, LLVMValueRef v)
{
	size_t h = (size_t)(uintptr_t)v;
	h ^= h >> 17;
	h *= (size_t)0x9e3779b97f4a7c15ull;
	size_t i = (h ^ (h >> 29)) & (r->capacity - 1);
	while (r->slots[i] && r->slots[i] != v)
		i = (i + 1) & (r->capacity - 1);
	return i;
}

/* Mark v and queue it for scanning, unless it was marked before; only
 * global values and constants that have operands (expressions,
 * aggregates) are worth marking. */
static void reach_add(reach *r, LLVMValueRef v)
{
	if (!v || r->failed)
		return;
	if (!LLVMIsAGlobalValue(v) && !(LLVMIsAConstant(v) && LLVMGetNumOperands(v) > 0))
		return;
	if (2 * (r->count + 1) > r->capacity) {
		size_t capacity = r->capacity ? 2 * r->capacity : 1024;
		LLVMValueRef *old = r->slots;
		size_t old_capacity = r->capacity;
		r->slots = calloc(capacity, sizeof *r->slots);
		if (!r->slots) {
			r->slots = old;
			r->failed = true;
			return;
		}
		r->capacity = capacity;
		for (size_t i = 0; i < old_capacity; i++)
			if (old[i])
				r->slots[reach_slot(r, old[i])] = old[i];
		free(old);
	}
	size_t slot = reach_slot(r, v);
	if (r->slots[slot])
		return;
	if (r->depth == r->stack_capacity) {
		size_t capacity = r->stack_capacity ? 2 * r->stack_capacity : 256;
		LLVMValueRef *grown = realloc(r->stack, sizeof *grown * capacity);
		if (!grown) {
			r->failed = true;
			return;
		}
		r->stack = grown;
		r->stack_capacity = capacity;
	}
	r->slots[slot] = v;
	r->count++;
	r->stack[r->depth++] = v;
}

static bool reach_has(const reach *r, LLVMValueRef v)
{
	return r->capacity && r->slots[reach_slot(r, v)] == v;
}

/* Mark what v refers to: a function's instructions' operands (and its
 * personality), a variable's initialiser, an alias's aliasee, an ifunc's
 * resolver, a constant's operands.  Metadata is not followed. */
static void reach_scan(reach *r, LLVMValueRef v)
{
	if (LLVMIsAFunction(v)) {
		if (LLVMHasPersonalityFn(v))
			reach_add(r, LLVMGetPersonalityFn(v));
		for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(v); b; b = LLVMGetNextBasicBlock(b))
			for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i)) {
				int n = LLVMGetNumOperands(i);
				for (int k = 0; k < n; k++)
					reach_add(r, LLVMGetOperand(i, (unsigned)k));
			}
	} else if (LLVMIsAGlobalVariable(v)) {
		if (!LLVMIsDeclaration(v))
			reach_add(r, LLVMGetInitializer(v));
	} else if (LLVMIsAGlobalAlias(v)) {
		reach_add(r, LLVMAliasGetAliasee(v));
	} else if (LLVMIsAGlobalIFunc(v)) {
		reach_add(r, LLVMGetGlobalIFuncResolver(v));
	} else if (LLVMIsAConstant(v)) {
		int n = LLVMGetNumOperands(v);
		for (int k = 0; k < n; k++)
			reach_add(r, LLVMGetOperand(v, (unsigned)k));
	}
}

/* A definition the device libraries brought in: link_device_libs made
 * every one internal, and the module defines none of that name. */
static bool is_local_definition(LLVMValueRef v)
{
	LLVMLinkage linkage = LLVMGetLinkage(v);
	return !LLVMIsDeclaration(v) &&
	       (linkage == LLVMInternalLinkage || linkage == LLVMPrivateLinkage);
}

static bool from_library(const compile *c, LLVMValueRef v)
{
	return is_local_definition(v) && !is_defined_by_module(c, value_name(v));
}

/* Mark everything reachable from the roots: every function and variable
 * but the library's (from_library), and the module's own local functions
 * too unless !own_local_functions; every alias and ifunc.  False when out
 * of memory (r freed). */
static bool reach_from_roots(compile *c, reach *r, bool own_local_functions)
{
	for (int pass = 0; pass < 4; pass++) {
		LLVMValueRef v = pass == 0   ? LLVMGetFirstFunction(c->module)
		                 : pass == 1 ? LLVMGetFirstGlobal(c->module)
		                 : pass == 2 ? LLVMGetFirstGlobalAlias(c->module)
		                             : LLVMGetFirstGlobalIFunc(c->module);
		for (; v; v = pass == 0   ? LLVMGetNextFunction(v)
		              : pass == 1 ? LLVMGetNextGlobal(v)
		              : pass == 2 ? LLVMGetNextGlobalAlias(v)
		                          : LLVMGetNextGlobalIFunc(v))
			if (pass >= 2 || (!from_library(c, v) &&
			                  (own_local_functions || pass != 0 || !is_local_definition(v))))
				reach_add(r, v);
	}
	while (r->depth && !r->failed)
		reach_scan(r, r->stack[--r->depth]);
	if (r->failed) {
		free(r->slots);
		free(r->stack);
	}
	return !r->failed;
}

/* At -O1 and above the optimiser drops the library functions and
 * variables the module does not use; at -O0 nothing does, and every one
 * the link pulled in would be compiled: 36 KB of PTX for a call to
 * __nv_sinf, and on AMDGPU a crash of the whole process (LLVM 19's
 * register usage analysis dereferences NULL for an internal function
 * nothing calls, which codegen skips at -O0: llvm-project issue 64863,
 * fixed in LLVM 20).  So, as clang's -mlink-builtin-bitcode does at every
 * level, delete the library definitions that nothing of the module
 * reaches, directly or through other library code.  Everything the module
 * itself defines stays as written, used or not: -O0 is for debugging. */
static int drop_unreached_library_code(compile *c)
{
	if (c->job->opt_level != 0 || c->job->device_lib_count == 0)
		return 0;
	reach r = {0};
	if (!reach_from_roots(c, &r, true))
		return oom(c);
	/* Unreached code may still refer to unreached code: cut every such use
	 * before deleting anything. */
	size_t dead = 0;
	for (int pass = 0; pass < 2; pass++) {
		LLVMValueRef v = pass == 0 ? LLVMGetFirstFunction(c->module) : LLVMGetFirstGlobal(c->module);
		for (; v; v = pass == 0 ? LLVMGetNextFunction(v) : LLVMGetNextGlobal(v))
			if (from_library(c, v) && !reach_has(&r, v)) {
				LLVMReplaceAllUsesWith(v, LLVMGetPoison(LLVMTypeOf(v)));
				dead++;
			}
	}
	for (int pass = 0; pass < 2 && dead; pass++) {
		LLVMValueRef v = pass == 0 ? LLVMGetFirstFunction(c->module) : LLVMGetFirstGlobal(c->module);
		while (v) {
			LLVMValueRef next = pass == 0 ? LLVMGetNextFunction(v) : LLVMGetNextGlobal(v);
			if (from_library(c, v) && !reach_has(&r, v)) {
				if (pass == 0)
					LLVMDeleteFunction(v);
				else
					LLVMDeleteGlobal(v);
			}
			v = next;
		}
	}
	free(r.slots);
	free(r.stack);
	return 0;
}

/* Name fns in @llvm.compiler.used (after what it names already), making
 * it when the module has none. */
static int add_compiler_used(compile *c, LLVMValueRef *fns, size_t n)
{
	LLVMValueRef old = LLVMGetNamedGlobal(c->module, "llvm.compiler.used");
	LLVMValueRef init = old ? LLVMGetInitializer(old) : NULL;
	size_t have = init ? (size_t)LLVMGetNumOperands(init) : 0;
	LLVMTypeRef element = LLVMPointerTypeInContext(LLVMGetModuleContext(c->module), 0);
	if (old)
		element = LLVMGetElementType(LLVMGlobalGetValueType(old));
	LLVMValueRef *all = malloc(sizeof *all * (have + n));
	if (!all)
		return oom(c);
	for (size_t i = 0; i < have; i++)
		all[i] = LLVMGetOperand(init, (unsigned)i);
	for (size_t i = 0; i < n; i++)
		all[have + i] = LLVMConstPointerCast(fns[i], element);
	LLVMValueRef array = LLVMConstArray2(element, all, have + n);
	free(all);
	if (old)
		LLVMDeleteGlobal(old);
	LLVMValueRef used = LLVMAddGlobal(c->module, LLVMTypeOf(array), "llvm.compiler.used");
	LLVMSetInitializer(used, array);
	LLVMSetLinkage(used, LLVMAppendingLinkage);
	LLVMSetSection(used, "llvm.metadata");
	return 0;
}

/* Whether @llvm.used or @llvm.compiler.used names v (through a cast). */
static bool named_used(LLVMModuleRef m, LLVMValueRef v)
{
	static const char *const lists[] = {"llvm.used", "llvm.compiler.used"};
	for (int l = 0; l < 2; l++) {
		LLVMValueRef list = LLVMGetNamedGlobal(m, lists[l]);
		LLVMValueRef init = list ? LLVMGetInitializer(list) : NULL;
		int n = init ? LLVMGetNumOperands(init) : 0;
		for (int i = 0; i < n; i++) {
			LLVMValueRef e = LLVMGetOperand(init, (unsigned)i);
			while (e && LLVMIsAConstantExpr(e))
				e = LLVMGetOperand(e, 0);
			if (e == v)
				return true;
		}
	}
	return false;
}

/* AMDGPU: a code object is a whole program (ld.lld links it alone, and the
 * loader finds only kernels and variables by name), so the module's own
 * functions that are not entry points become internal, as clang's HIP
 * driver asks with -amdgpu-internalize-symbols: the optimiser then drops
 * what no kernel reaches instead of compiling it (half the backend's time
 * for a rocPRIM-sized unit).  Variables stay as they are (a host program
 * reads them by name), and so does what @llvm.used or @llvm.compiler.used
 * names.  Not at -O0, where nothing unreached would be dropped (and LLVM
 * 19 crashes on a local function nothing reaches: below).
 * NVPTX: the PTX is a whole program too (ptxas and nvJitLink make an
 * executable cubin of it, the driver's JIT loads it alone), and there an
 * exported function is worse than useless: a template instance clang emits
 * linkonce_odr becomes a `.weak .func`, which ptxas inside nvJitLink
 * compiles once for every caller, so that a kernel whose launch bounds cap
 * its registers cannot call it ("Entry function ... with max regcount of
 * 64 calls function ... with regcount of 100"), where a local function is
 * compiled for its callers.  At every level: nothing of LLVM's NVPTX
 * stumbles on an unreached local function. */
static void internalize_own_functions(compile *c)
{
	if ((c->job->vendor == GPUCC_VENDOR_AMD && c->job->opt_level == 0) || c->annotated_lost)
		return;
	for (LLVMValueRef f = LLVMGetFirstFunction(c->module); f; f = LLVMGetNextFunction(f)) {
		LLVMLinkage linkage = LLVMGetLinkage(f);
		unsigned cc = LLVMGetFunctionCallConv(f);
		bool annotated = false;
		for (size_t i = 0; i < c->annotated_count && !annotated; i++)
			annotated = c->annotated[i] == f;
		if (annotated || LLVMIsDeclaration(f) || linkage == LLVMInternalLinkage ||
		    linkage == LLVMPrivateLinkage || linkage == LLVMAvailableExternallyLinkage ||
		    (cc != LLVMCCallConv && cc != LLVMFastCallConv) || named_used(c->module, f))
			continue;
		LLVMSetLinkage(f, LLVMInternalLinkage);
		LLVMSetVisibility(f, LLVMDefaultVisibility);
		LLVMSetComdat(f, NULL); /* one object: nothing to deduplicate */
	}
}

/* At -O0, LLVM 19's AMDGPU register usage analysis crashes the process on
 * a local function that nothing outside such functions reaches (the same
 * llvm-project issue 64863): codegen skips it, the analysis does not.  The
 * module's own such functions stay as written: named in
 * @llvm.compiler.used, they are compiled, as they are at -O0 for NVIDIA
 * (what the library brought in and nothing reaches is deleted below). */
static int keep_own_unreached_functions(compile *c)
{
	if (c->job->opt_level != 0 || c->job->vendor == GPUCC_VENDOR_NVIDIA)
		return 0;
	reach r = {0};
	if (!reach_from_roots(c, &r, false))
		return oom(c);
	LLVMValueRef *kept = NULL;
	size_t count = 0, capacity = 0;
	int rc = 0;
	for (LLVMValueRef f = LLVMGetFirstFunction(c->module); f && rc == 0; f = LLVMGetNextFunction(f)) {
		if (!is_local_definition(f) || from_library(c, f) || reach_has(&r, f))
			continue;
		if (count == capacity) {
			capacity = capacity ? 2 * capacity : 16;
			LLVMValueRef *grown = realloc(kept, sizeof *grown * capacity);
			if (!grown) {
				rc = oom(c);
				break;
			}
			kept = grown;
		}
		kept[count++] = f;
	}
	if (rc == 0 && count)
		rc = add_compiler_used(c, kept, count);
	free(kept);
	free(r.slots);
	free(r.stack);
	return rc;
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
static int check_externals(compile *c)
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
static int check_ptx_names(compile *c)
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
static int check_ptx_structors(compile *c)
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

/* Whether the test hook asks for fault `where` in this job
 * (GPUCC_BACKEND_FAULT_ENV); never in a build without the hooks. */
static bool fault_asked(const gpucc_backend_job *job, const char *where)
{
#ifdef GPUCC_TEST_HOOKS
	const char *fault = getenv(GPUCC_BACKEND_FAULT_ENV);
	size_t n = strlen(where);
	return fault && strncmp(fault, where, n) == 0 && fault[n] == ':' && fault[n + 1] &&
	       strstr(job->module_name, fault + n + 1);
#else
	(void)job;
	(void)where;
	return false;
#endif
}

static void fault_injection(const gpucc_backend_job *job, const char *where)
{
#ifdef GPUCC_TEST_HOOKS
	if (!fault_asked(job, where))
		return;
	if (strcmp(where, "exit") == 0)
		_exit(3);
	abort();
#else
	(void)job;
	(void)where;
#endif
}

/* A line on stderr, whole (GPUCC_BACKEND_IN_NVJITLINK). */
static void mark(const char *line)
{
	char text[128];
	int n = snprintf(text, sizeof text, "%s\n", line);
	ssize_t ignored = write(STDERR_FILENO, text, (size_t)n);
	(void)ignored;
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

/* The first line of a tool's output that mentions "error", else its first
 * line. */
static void first_error_line(const char *output, char *line, size_t size)
{
	const char *pick = output;
	for (const char *p = output; *p;) {
		size_t len = strcspn(p, "\n");
		const char *hit = strstr(p, "error");
		if (hit && hit < p + len) {
			pick = p;
			break;
		}
		p += len + (p[len] ? 1 : 0);
	}
	snprintf(line, size, "%.*s", (int)strcspn(pick, "\n"), pick);
}

/* Whether ptxas's first error says it does not know the processor (CUDA 13
 * has no sm_50..sm_72: "Value 'sm_70' is not defined for option
 * 'gpu-name'") or the PTX ISA ("Unsupported .version 8.5; current version
 * is '8.4'"): what another CUDA's ptxas compiles, not a defect of the PTX. */
static bool ptxas_lacks_target(const char *line)
{
	return (strstr(line, "is not defined for option 'gpu-name'") != NULL) ||
	       (strstr(line, "Unsupported .version") != NULL);
}

/* ptxas: record what it says (less the -v "info" lines) as diagnostics,
 * resources per kernel, and the cubin. */
static int run_ptxas(compile *c, const char *ptx, size_t ptx_size)
{
	char in[PATH_MAX + 80], out_path[PATH_MAX + 80], log[PATH_MAX + 80], arch[32];
	snprintf(in, sizeof in, "%s.ptx", c->path_base);
	snprintf(out_path, sizeof out_path, "%s.cubin", c->path_base);
	snprintf(log, sizeof log, "%s.ptxas.log", c->path_base);
	snprintf(arch, sizeof arch, "-arch=%s", c->job->cpu); /* "sm_90a", "sm_100f" */
	if (backend_file_write(in, ptx, ptx_size) != 0)
		return fail(c, GPUCC_ERROR, "cannot write '%s': %s", in, strerror(errno));
	char *argv[12];
	int n = 0;
	argv[n++] = (char *)c->job->ptxas;
	argv[n++] = arch;
	argv[n++] = (char *)"-v";
	/* Whole-program mode, whatever the externals: the cubin is what the PTX
	 * JIT would make of the same PTX, an executable image the driver loads
	 * (binding its system calls) with cuModuleLoadData.  ptxas -c would give
	 * a relocatable one, which only cuLink* loads. */
	if (c->job->debug_info)
		argv[n++] = (char *)"-lineinfo";
	argv[n++] = (char *)"-o";
	argv[n++] = out_path;
	argv[n++] = in;
	argv[n] = NULL;
	int status = backend_run_tool(argv, log);
	if (status < 0)
		return fail(c, GPUCC_EUNAVAILABLE, "cannot run '%s': %s", c->job->ptxas, strerror(errno));
	void *output = NULL;
	size_t output_size = 0;
	if (backend_file_read(log, &output, &output_size) != 0)
		output = NULL;
	char prefix[512];
	snprintf(prefix, sizeof prefix, "%s: %s: ", c->job->module_name, c->job->target_name);
	const char *text = output ? output : "";
	/* Keep warnings and errors; the info lines become resources. */
	for (const char *p = text; *p;) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len && strncmp(p, "ptxas info", 10) != 0 && (p[0] != ' ' || status != 0))
			backend_text_append(&c->thread->diagnostics, "%s%.*s\n", prefix, (int)len, p);
		p += len + (end ? 1 : 0);
	}
	if (status != 0) {
		char line[400];
		first_error_line(text, line, sizeof line);
		free(output);
		if (ptxas_lacks_target(line)) {
			/* Another CUDA's ptxas: the PTX is what the target needs, and
			 * the driver compiles it at load.  Said once, as a warning. */
			c->out->ptxas_refused = strdup(line);
			if (!c->out->ptxas_refused)
				return oom(c);
			backend_text_release(&c->thread->diagnostics);
			return 0;
		}
		return fail(c, GPUCC_ECOMPILE, "ptxas failed (exit %d): %s", status, line);
	}
	backend_ptxas_resources(text, c->out->kernels, c->out->kernel_count);
	free(output);
	void *cubin;
	size_t cubin_size;
	if (backend_file_read(out_path, &cubin, &cubin_size) != 0)
		return fail(c, GPUCC_ERROR, "ptxas left no cubin: %s", strerror(errno));
	c->out->payloads[GPUCC_PART_CUBIN] = cubin;
	c->out->payload_sizes[GPUCC_PART_CUBIN] = cubin_size;
	return 0;
}

/* libnvJitLink, in this process: its error log and the warnings of its
 * info log as diagnostics, resources from its "ptxas info" lines, and the
 * cubin.
 * PTX that refers to what it does not define (a variable the loader is to
 * bind) goes to ptxas, whose whole-program cubin leaves that to the
 * loader, when there is one; a target it does not know gives PTX only, as
 * with ptxas. */
static int run_nvjitlink(compile *c, const char *ptx, size_t ptx_size)
{
	backend_nvjitlink_result r;
	mark(GPUCC_BACKEND_IN_NVJITLINK);
	fault_injection(c->job, "nvjitlink");
	backend_nvjitlink_status status = backend_nvjitlink_cubin(c->job, ptx, ptx_size, &r);
	mark(GPUCC_BACKEND_OUT_OF_NVJITLINK);
	char prefix[512];
	snprintf(prefix, sizeof prefix, "%s: %s: ", c->job->module_name, c->job->target_name);
	bool to_ptxas = status == BACKEND_NVJITLINK_UNDEFINED && c->job->ptxas;
	for (int info = to_ptxas ? 1 : 0; info < 2; info++) {
		for (const char *p = info ? (r.info ? r.info : "") : (r.log ? r.log : ""); *p;) {
			size_t len = strcspn(p, "\n");
			if (len && (!info || memmem(p, len, "warning", 7)))
				backend_text_append(&c->thread->diagnostics, "%snvJitLink: %.*s\n", prefix,
				                    (int)len, p);
			p += len + (p[len] ? 1 : 0);
		}
	}
	int rc = 0;
	switch (status) {
	case BACKEND_NVJITLINK_OK:
		backend_ptxas_resources(r.info ? r.info : "", c->out->kernels, c->out->kernel_count);
		c->out->payloads[GPUCC_PART_CUBIN] = r.cubin;
		c->out->payload_sizes[GPUCC_PART_CUBIN] = r.cubin_size;
		r.cubin = NULL;
		break;
	case BACKEND_NVJITLINK_REFUSED:
		backend_text_release(&c->thread->diagnostics);
		if (!(c->out->ptxas_refused = strdup(r.line)))
			rc = oom(c);
		break;
	case BACKEND_NVJITLINK_UNDEFINED:
		if (to_ptxas) {
			backend_text_append(&c->thread->diagnostics,
			                    "%snvJitLink: %s: the cubin is ptxas's, which leaves what the "
			                    "PTX does not define to the loader\n", prefix, r.line);
			rc = run_ptxas(c, ptx, ptx_size);
			break;
		}
		rc = fail(c, GPUCC_ECOMPILE, "nvJitLink failed: %s", r.line);
		break;
	case BACKEND_NVJITLINK_FAILED:
		rc = fail(c, GPUCC_ECOMPILE, "nvJitLink failed: %s", r.line);
		break;
	case BACKEND_NVJITLINK_UNAVAILABLE:
		rc = fail(c, GPUCC_EUNAVAILABLE, "nvJitLink: %s", r.line);
		break;
	}
	backend_nvjitlink_result_release(&r);
	return rc;
}

/* With full debug info LLVM 19 writes the DWARF name tables
 * (.debug_pubnames, .debug_pubtypes) as label differences, which ptxas
 * and the driver's JIT accept only from PTX ISA 7.5: refuse here, the same
 * with or without ptxas, rather than store PTX no GPU would load. */
static int check_debug_sections(compile *c, const char *ptx, size_t size)
{
	static const char pub[] = ".section\t.debug_pub";
	unsigned isa = job_ptx_isa(c->job);
	if (!c->job->debug_info || isa >= 75 || !memmem(ptx, size, pub, sizeof pub - 1))
		return 0;
	return fail(c, GPUCC_ECOMPILE,
	            "full debug info (-g) needs PTX ISA 7.5 or later, and the target asks for "
	            "%u.%u: LLVM writes its DWARF name tables as label differences, which ptxas and "
	            "the driver refuse before 7.5 (compile for %s:ptx75 or later, or give the "
	            "module line tables only)",
	            isa / 10, isa % 10, c->job->cpu);
}

static int finish_nvptx(compile *c, LLVMMemoryBufferRef buffer)
{
	size_t size = 0;
	char *copy = backend_ptx_renumber_calls(LLVMGetBufferStart(buffer), LLVMGetBufferSize(buffer),
	                                        &size);
	if (!copy)
		return oom(c);
	c->out->payloads[GPUCC_PART_PTX] = copy;
	c->out->payload_sizes[GPUCC_PART_PTX] = size;
	if (backend_ptx_entries(copy, size, &c->out->kernels, &c->out->kernel_count) != 0)
		return oom(c);
	if (c->out->kernel_count == 0)
		return fail(c, GPUCC_ECOMPILE, "no kernels: the PTX has no .entry");
	int rc = check_debug_sections(c, copy, size);
	if (rc != 0)
		return rc;
	if (c->job->nvjitlink)
		return run_nvjitlink(c, copy, size);
	if (c->job->ptxas)
		return run_ptxas(c, copy, size);
	return 0;
}

/* A backstop behind check_function_targets: the code object's own target
 * ID (its metadata note's amdhsa.target) must be the job's, processor and
 * sramecc/xnack as the job asks ("any" stays unwritten).  LLVM narrows an
 * "any" to the setting of the first function that has one, which would
 * put code built for xnack+ under a label that also loads it on xnack-. */
static int check_code_object_target(compile *c, const char *target)
{
	char want[160];
	snprintf(want, sizeof want, "%s--%s", c->job->triple, c->job->target_name);
	if (strcmp(target, want) == 0)
		return 0;
	if (!*target)
		return fail(c, GPUCC_ECOMPILE, "the code object records no target ID (expected %s)",
		            c->job->target_name);
	const char *id = strstr(target, "--");
	return fail(c, GPUCC_ECOMPILE,
	            "the code object's target ID is '%s', not %s: a function's \"target-features\" "
	            "set xnack or sramecc where the target leaves them open (compile for that target "
	            "ID, or drop the setting)",
	            id ? id + 2 : target, c->job->target_name);
}

static int finish_amdgpu(compile *c, LLVMMemoryBufferRef buffer)
{
	char object[PATH_MAX + 80], hsaco[PATH_MAX + 80], log[PATH_MAX + 80];
	snprintf(object, sizeof object, "%s.o", c->path_base);
	snprintf(hsaco, sizeof hsaco, "%s.hsaco", c->path_base);
	snprintf(log, sizeof log, "%s.lld.log", c->path_base);
	if (!c->job->ld_lld)
		return fail(c, GPUCC_EUNAVAILABLE, "ld.lld-19 was not found: it links AMDGPU code objects");
	if (backend_file_write(object, LLVMGetBufferStart(buffer), LLVMGetBufferSize(buffer)) != 0)
		return fail(c, GPUCC_ERROR, "cannot write '%s': %s", object, strerror(errno));
	/* One thread: a tiny link, and no thread pool left in the worker. */
	char *argv[] = {(char *)c->job->ld_lld, (char *)"-shared", (char *)"-o", hsaco, object,
	                (char *)"--threads=1", NULL};
	void *output = NULL;
	size_t output_size = 0;
	int status = -1;
	if (c->job->ld_lld_in_process) {
		/* The same link in this process; -1: LLD cannot, run ld.lld. */
		char messages[8192];
		status = backend_lld_link((const char *const *)argv, sizeof argv / sizeof *argv - 1,
		                          messages, sizeof messages);
		if (status >= 0 && (output = strdup(messages)) != NULL)
			output_size = strlen(messages);
	}
	if (status < 0) {
		if ((status = backend_run_tool(argv, log)) < 0)
			return fail(c, GPUCC_EUNAVAILABLE, "cannot run '%s': %s", c->job->ld_lld,
			            strerror(errno));
		if (backend_file_read(log, &output, &output_size) != 0) {
			output = NULL;
			output_size = 0;
		}
	}
	if (output_size) {
		char prefix[512];
		snprintf(prefix, sizeof prefix, "%s: %s: ", c->job->module_name, c->job->target_name);
		backend_text_append_lines(&c->thread->diagnostics, prefix, output, output_size);
	}
	if (status != 0) {
		char line[400];
		first_error_line(output ? output : "", line, sizeof line);
		free(output);
		return fail(c, GPUCC_ECOMPILE, "ld.lld failed (exit %d): %s", status, line);
	}
	free(output);
	void *code_object;
	size_t code_object_size;
	if (backend_file_read(hsaco, &code_object, &code_object_size) != 0)
		return fail(c, GPUCC_ERROR, "ld.lld left no code object: %s", strerror(errno));
	c->out->payloads[GPUCC_PART_HSACO] = code_object;
	c->out->payload_sizes[GPUCC_PART_HSACO] = code_object_size;
	char target[128], why[256];
	if (backend_amdgpu_kernels(code_object, code_object_size, &c->out->kernels,
	                           &c->out->kernel_count, target, sizeof target, why, sizeof why) != 0)
		return fail(c, GPUCC_ECOMPILE, "%s", why);
	int rc = check_code_object_target(c, target);
	if (rc != 0)
		return rc;
	if (c->out->kernel_count == 0)
		return fail(c, GPUCC_ECOMPILE, "no kernels: the code object lists none");
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
