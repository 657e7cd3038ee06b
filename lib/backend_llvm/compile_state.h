/*
 * lib/backend_llvm/compile_state.h -- what the files of the LLVM backend's
 * pipeline share: the per-thread state (lib/backend_llvm/backend.c), one
 * compile's state and the helpers every stage uses
 * (lib/backend_llvm/compile_state.c), and the stages backend.c's
 * run_pipeline calls: the checks and refusals (checks.c), the device
 * libraries linked, internalised and, at -O0, pruned (devlibs.c), and the
 * NVIDIA (nvidia.c) and AMD (amd.c) outputs.
 */
#ifndef GPUCC_LIB_BACKEND_LLVM_COMPILE_STATE_H
#define GPUCC_LIB_BACKEND_LLVM_COMPILE_STATE_H

#include "backend_llvm.h"

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

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

/* ---- lib/backend_llvm/compile_state.c ---------------------------------------- */

/* Record the failure: "MODULE: TARGET: <message>"; returns code. */
int fail(compile *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int oom(compile *c);
int compare_names(const void *a, const void *b);
bool is_defined_by_module(const compile *c, const char *name);
bool has_prefix(const char *s, const char *prefix);
const char *value_name(LLVMValueRef v);
/* The value of a function attribute such as "target-cpu", or NULL. */
const char *function_attribute(LLVMValueRef f, const char *key, unsigned *len);
/* NVPTX: the job's PTX ISA ("+ptx78" -> 78). */
unsigned job_ptx_isa(const gpucc_backend_job *job);
void add_string_attribute(compile *c, LLVMValueRef f, const char *key, const char *value);
/* Whether the test hook asks for fault `where` in this job. */
bool fault_asked(const gpucc_backend_job *job, const char *where);
void fault_injection(const gpucc_backend_job *job, const char *where);
/* A line on stderr, whole (GPUCC_BACKEND_IN_NVJITLINK). */
void mark(const char *line);
/* The first line of a tool's output that mentions "error", else its first. */
void first_error_line(const char *output, char *line, size_t size);

/* ---- lib/backend_llvm/checks.c: what the backend refuses --------------------- */

int check_function_targets(compile *c);
int check_calling_conventions(compile *c);
int check_other_vendor(compile *c);
int check_alloca_address_space(compile *c);
int check_externals(compile *c);
int check_ptx_names(compile *c);
int check_ptx_structors(compile *c);

/* ---- lib/backend_llvm/devlibs.c: the device libraries ------------------------ */

int link_device_libs(compile *c);
int drop_unreached_library_code(compile *c);
void internalize_own_functions(compile *c);
int keep_own_unreached_functions(compile *c);

/* ---- lib/backend_llvm/nvidia.c and amd.c: the outputs ------------------------ */

int finish_nvptx(compile *c, LLVMMemoryBufferRef buffer);
int finish_amdgpu(compile *c, LLVMMemoryBufferRef buffer);

#endif
