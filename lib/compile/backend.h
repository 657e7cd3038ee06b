/*
 * lib/compile/backend.h -- the internal interface between libgpucc and its LLVM
 * backend module, libgpucc-llvm.so (lib/backend_llvm/).
 *
 * libgpucc never links libLLVM (docs/design.md invariant 8): it computes keys and
 * looks them up without LLVM; a job that misses is compiled in a worker
 * process (lib/compile/compile_worker.c), which links the backend's code.
 * The module exports one symbol, GPUCC_BACKEND_ENTRY, which returns a
 * table of function pointers.  The table is versioned: libgpucc asks for the
 * ABI version it was built with; a module returns NULL for a version it does
 * not speak.  New operations are appended at the end of the table and
 * announced by a larger struct_size, so an older caller keeps working with a
 * newer module.
 *
 * The module is self-contained: it calls nothing in libgpucc (a static
 * libgpucc hides its symbols), so every string it needs (triple, CPU, feature
 * string, tool paths) is handed over in the job, and every result is plain
 * malloc()ed memory released through the table.
 *
 * Threads: gpucc_backend_thread_new creates one per-thread state (its own
 * LLVMContext, parsed device libraries and private temporary directory).  A
 * state is used by one thread at a time; different states may compile at once.
 */
#ifndef GPUCC_LIB_BACKEND_H
#define GPUCC_LIB_BACKEND_H

#include "gpucc/common.h"

#define GPUCC_BACKEND_ABI 4
#define GPUCC_BACKEND_ENTRY "gpucc_backend_get"

/* Fault injection for crash tests, in builds with the test hooks (meson
 * option test_hooks): when this environment variable is "abort:SUBSTRING",
 * the backend calls abort() while compiling any module whose name contains
 * SUBSTRING (after parsing, before emitting). */
#define GPUCC_BACKEND_FAULT_ENV "GPUCC_BACKEND_FAULT"
/* ... or "nvjitlink:SUBSTRING": the same, inside the stretch marked as
 * libnvJitLink's (below); or "exit:SUBSTRING": the worker exits 3, a
 * status the worker protocol does not define, where "abort" aborts; or
 * "unchecked:SUBSTRING": the backend does not refuse AMD graphics calling
 * conventions itself, leaving them to LLVM (which diagnoses, then
 * crashes). */

/* The backend runs in a gpucc-compile-worker, whose stderr only the
 * compile reads: these lines mark the stretch spent in libnvJitLink, so
 * that a crash there is named for it, not for LLVM (lib/compile/compile_worker.c). */
#define GPUCC_BACKEND_IN_NVJITLINK "gpucc-compile-worker: in libnvJitLink"
#define GPUCC_BACKEND_OUT_OF_NVJITLINK "gpucc-compile-worker: out of libnvJitLink"

/* One compile: a module for one target with one set of options.  Everything
 * is borrowed for the duration of the call. */
typedef struct gpucc_backend_job {
	const char *module_name;   /* for messages */
	const void *module_data;   /* .ll text or .bc bitcode, as read */
	size_t module_size;
	/* Modules linked into it before anything else (relocatable device
	 * code), in order; their names for messages. */
	size_t link_count;
	const void *const *link_data;
	const size_t *link_sizes;
	const char *const *link_names;
	const char *target_name;   /* canonical spelling, for messages */
	gpucc_vendor vendor;
	const char *triple;        /* "nvptx64-nvidia-cuda" / "amdgcn-amd-amdhsa" */
	const char *cpu;           /* "sm_90" / "gfx90a": never a target ID */
	const char *features;      /* "+ptx78" / "+sramecc,-xnack" / "" */
	unsigned sm;               /* NVIDIA: 90; for ptxas -arch */
	bool sm_accelerated;       /* NVIDIA: sm_90a */
	int opt_level;             /* 0..3 */
	bool fast_math;
	bool ftz;                  /* flush f32 denormals to zero (AMD: daz) */
	bool debug_info;           /* keep the module's debug info */
	int code_object_version;   /* AMD: 4, 5 or 6 */
	/* Device libraries to link, already chosen and ordered by libgpucc;
	 * every function the module did not define is internalised after. */
	size_t device_lib_count;
	const char *const *device_lib_paths; /* a file's path, or a generated library's name */
	const void *const *device_lib_data;  /* per library: its bytes when generated (IR text),
	                                        else NULL: read the path */
	const size_t *device_lib_sizes;
	const char *ptxas;         /* NVIDIA: path, or NULL for no cubin */
	const char *ld_lld;        /* AMD: path of ld.lld; required */
	bool ld_lld_in_process;    /* AMD: link with the LLD linked into the worker
	                              (lld_link.h), which is that ld.lld's code;
	                              the process when it cannot */
	const char *nvjitlink;     /* NVIDIA: path of libnvJitLink, which makes the
	                              cubin in process (ptxas then only for PTX it
	                              cannot link alone), or NULL: ptxas's */
} gpucc_backend_job;

typedef struct gpucc_backend_kernel {
	char *name;
	int64_t registers, shared_bytes, scratch_bytes; /* -1: not reported */
} gpucc_backend_kernel;

/* What one compile produced.  On failure (code != 0) only code, message and
 * diagnostics are meaningful.  All memory is released by result_release. */
typedef struct gpucc_backend_result {
	int code;            /* 0, GPUCC_ECOMPILE, GPUCC_EUNAVAILABLE or GPUCC_ERROR */
	char *message;       /* naming module and target, LLVM's words as they are
	                        (the caller spells control characters); NULL on success */
	char *diagnostics;   /* LLVM and tool messages, lines "MODULE: TARGET: ...";
	                        NULL when there were none */
	void *payloads[GPUCC_PART_COUNT]; /* by gpucc_part; NULL when not produced */
	size_t payload_sizes[GPUCC_PART_COUNT];
	size_t kernel_count;
	gpucc_backend_kernel *kernels;   /* in the module's order */
	size_t external_count;
	char **externals;                /* sorted by name, unique */
	char *ptxas_refused;  /* NVIDIA: ptxas's (or nvJitLink's) words when it does not
	                         compile for the target's processor or PTX ISA (an older
	                         or newer CUDA): the entry is PTX only; else NULL */
	bool no_kernels;      /* failed (GPUCC_ECOMPILE) because the module defines no
	                         kernel: a source of host code only, for the caller */
} gpucc_backend_result;

typedef struct gpucc_backend gpucc_backend;
typedef struct gpucc_backend_thread gpucc_backend_thread;

struct gpucc_backend {
	unsigned abi_version;       /* GPUCC_BACKEND_ABI */
	size_t struct_size;         /* sizeof the table the module was built with */
	const char *llvm_version;   /* the LLVM the module runs with, "19.1.7" */
	/* Per-thread state; on failure returns NULL and writes a message
	 * (at most error_size bytes) to error. */
	gpucc_backend_thread *(*thread_new)(char *error, size_t error_size);
	void (*thread_free)(gpucc_backend_thread *t);
	/* Compile one job; always fills *out (zeroed first).  Returns out->code. */
	int (*compile)(gpucc_backend_thread *t, const gpucc_backend_job *job,
	               gpucc_backend_result *out);
	void (*result_release)(gpucc_backend_result *r);
	/* New operations go here, after a bump of struct_size (not of the ABI). */
};

typedef const gpucc_backend *(*gpucc_backend_entry_fn)(unsigned abi_version);

/* libgpucc side (lib/compile/compile_backend.c): the backends, one per LLVM major
 * gpucc was built with, found once per process without loading LLVM.
 * Search order: $GPUCC_BACKEND (a path: the only backend), the directory
 * of the running libgpucc, the executable's directory, then
 * GPUCC_LIBDIR/gpucc/. */
#define GPUCC_WORKER_NAME "gpucc-compile-worker"

typedef struct gpucc_backend_info {
	unsigned major;          /* 19 */
	const char *version;     /* "19.1.7": the LLVM it was built with, which keys name */
	bool present;            /* its module was found */
	char module[4096];       /* .../libgpucc-llvm19.so (PATH_MAX: limits.h is not
	                            included here, its MAX_INPUT clashes) */
	char worker[4096];       /* .../gpucc-compile-worker-19, beside it: compiles run
	                            in such workers, which load LLVM themselves */
} gpucc_backend_info;

/* The backends a job may get, oldest first: those present, or, when none
 * is, those built (their keys are still known; compiling fails). */
size_t gpucc_backends(const gpucc_backend_info **out);
/* 0 when b is present, else GPUCC_EUNAVAILABLE saying what was not found. */
int gpucc_backend_present(const gpucc_backend_info *b);
/* The backend of a job that needs LLVM `needs` or later, and `last` or
 * earlier when last is not 0 (needer says what needs it, for the message:
 * "'sm_100'"): the one of major `pinned` when nonzero, else the newest
 * that fits.  GPUCC_EINVALID, one line naming the LLVM needed, when none
 * fits. */
int gpucc_backend_choose(const gpucc_backend_info **out, unsigned needs, unsigned last,
                         const char *needer, unsigned pinned);

#endif
