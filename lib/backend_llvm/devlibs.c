/*
 * lib/backend_llvm/devlibs.c -- the device libraries libgpucc chose, linked
 * into a job's module: read once per thread and parsed per job, given the
 * module's target attributes, linked so that a function the module defines
 * keeps its definition; every library symbol the module did not define
 * internalised (AMDGPU: the module's own functions too, but kernels); and
 * at -O0, where no optimiser prunes, the library code the module does not
 * reach deleted.
 */
#include "compile_state.h"

#include <llvm-c/BitReader.h>
#include <llvm-c/Comdat.h>
#include <llvm-c/Core.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Linker.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int link_device_libs(compile *c)
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
int drop_unreached_library_code(compile *c)
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
void internalize_own_functions(compile *c)
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
int keep_own_unreached_functions(compile *c)
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
