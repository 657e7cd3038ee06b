/*
 * lib/backend_llvm/backend_llvm.h -- what the files of the LLVM backend module
 * share: growable text, running device tools (ptxas, ld.lld) in a private
 * temporary directory, and reading what those tools produce (PTX entry names,
 * ptxas -v resource lines, the AMDGPU metadata note of a code object).
 *
 * Only the pipeline (backend.c and its stages: compile_state.h) and embed.c
 * use LLVM; the other files are plain C so that their parsers can be read
 * (and fuzzed) without it.  Nothing here calls libgpucc.
 */
#ifndef GPUCC_BACKEND_LLVM_H
#define GPUCC_BACKEND_LLVM_H

#include "backend.h"
#include "byte_buffer.h"

#include <stdarg.h>

/* ---- text ---------------------------------------------------------------- */

/* A growable NUL-terminated string (formats/byte_buffer.h); an allocation
 * failure sets failed and makes further appends no-ops, so callers check
 * once at the end. */
typedef gpucc_buffer backend_text;

void backend_text_append(backend_text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void backend_text_appendv(backend_text *t, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Append "PREFIX" before every line of lines (which need not end in '\n'). */
void backend_text_append_lines(backend_text *t, const char *prefix, const char *lines, size_t size);
/* Hand the buffer over (NULL when empty or failed) and reset t. */
char *backend_text_take(backend_text *t);
void backend_text_release(backend_text *t);

/* text with every C++ symbol name in it (a word starting "_Z") demangled as
 * c++filt would, where the C++ runtime's demangler is loaded; a name it
 * cannot demangle stays as it is (demangle.c).  The caller frees it; NULL
 * when out of memory. */
char *backend_demangle_names(const char *text);
/* Whether backend_demangle_names demangles in this process. */
bool backend_can_demangle(void);

/* ---- files and tools (tools.c) --------------------------------------------- */

/* The backend's settings, which it reads from no environment: the worker
 * is given them on its command line (worker_main.c) and sets them before
 * its backend thread starts.  temp_dir: where temporary directories go
 * (the directory its parent made for this worker,
 * lib/compile/compile_worker.c); NULL or empty: /tmp, as in the module
 * until they are set.  fault: the test hook GPUCC_BACKEND_FAULT_ENV's
 * value (lib/compile/backend.h), ignored in a build without the hooks;
 * NULL or empty: none.  The strings are borrowed for the process's life. */
void backend_settings_set(const char *temp_dir, const char *fault);
/* Where temporary directories go: the temp_dir set, or /tmp. */
const char *backend_temp_parent(void);
#ifdef GPUCC_TEST_HOOKS
/* The fault the test hook asks for ("abort:SUBSTRING"...), or NULL. */
const char *backend_fault_hook(void);
#endif
/* Create a private temporary directory under backend_temp_parent(),
 * "gpucc-backend-PID-XXXXXX" (gpucc_leftovers_remove removes this
 * process's, as cmd/interrupt.c asks on SIGINT, SIGTERM and SIGHUP); path
 * receives it.  0 or -1 with errno set. */
int backend_tempdir_create(char *path, size_t size);
/* Remove a directory made by backend_tempdir_create and what is in it. */
void backend_tempdir_remove(const char *path);

int backend_file_write(const char *path, const void *data, size_t size);
/* Read a whole file into a malloc()ed buffer with a NUL after it. */
int backend_file_read(const char *path, void **out, size_t *out_size);

/* Run argv (argv[0] a path) with stdin from /dev/null and stdout and stderr
 * both written to output_path; wait for it.  Returns its exit status (0..255),
 * 128+signal when killed, or -1 with errno set when it could not start. */
int backend_run_tool(char *const argv[], const char *output_path);

/* ---- reading tool outputs (tool_output.c) ------------------------------------ */

/* The .entry names of a PTX text, in order, as kernels with unknown
 * resources.  Returns 0 or -1 (out of memory). */
int backend_ptx_entries(const char *ptx, size_t size, gpucc_backend_kernel **out, size_t *count);
/* Fill registers, shared and scratch bytes of kernels from `ptxas -v`
 * output; kernels ptxas did not mention keep -1. */
void backend_ptxas_resources(const char *output, gpucc_backend_kernel *kernels, size_t count);
/* Kernels from the NT_AMDGPU_METADATA note (msgpack) of a code object:
 * names (.name) and resources (.vgpr_count, .group_segment_fixed_size,
 * .private_segment_fixed_size), and the note's amdhsa.target into target
 * (empty when absent).  Returns 0, or -1 with a reason in error. */
int backend_amdgpu_kernels(const void *elf, size_t size, gpucc_backend_kernel **out, size_t *count,
                           char *target, size_t target_size, char *error, size_t error_size);

/* A copy of PTX with the NVPTX backend's call-site numbers ("callseq N",
 * "prototype_N") renumbered 0, 1, ... in order of first appearance.  LLVM 19
 * draws them from one process-wide counter, so without this the PTX of a
 * module would depend on what the process compiled before, and on thread
 * timing.  NULL when out of memory. */
char *backend_ptx_renumber_calls(const char *ptx, size_t size, size_t *out_size);

void backend_kernels_free(gpucc_backend_kernel *kernels, size_t count);

/* ---- cubins with libnvJitLink (nvjitlink.c) ------------------------------------ */

typedef enum backend_nvjitlink_status {
	BACKEND_NVJITLINK_OK,          /* cubin made */
	BACKEND_NVJITLINK_REFUSED,     /* it does not know the processor or the PTX ISA */
	BACKEND_NVJITLINK_UNDEFINED,   /* the PTX refers to what it does not define */
	BACKEND_NVJITLINK_FAILED,      /* the PTX did not compile */
	BACKEND_NVJITLINK_UNAVAILABLE, /* the library did not load */
} backend_nvjitlink_status;

typedef struct backend_nvjitlink_result {
	void *cubin;      /* malloc()ed, executable (linked) cubin; OK only */
	size_t cubin_size;
	char *log;        /* the error log, or NULL */
	char *info;       /* the info log (-verbose: "ptxas info" lines), or NULL */
	char line[400];   /* not OK: the reason, one line */
} backend_nvjitlink_result;

/* Make the cubin of ptx for job (sm, sm_accelerated, debug_info) with the
 * libnvJitLink at job->nvjitlink, loaded once per process.  Thread-safe.
 * out is always filled; release it with backend_nvjitlink_result_release. */
backend_nvjitlink_status backend_nvjitlink_cubin(const gpucc_backend_job *job, const char *ptx,
                                                 size_t ptx_size, backend_nvjitlink_result *out);
void backend_nvjitlink_result_release(backend_nvjitlink_result *r);
/* Start loading the library at path on a thread of its own, once per
 * process, so that the first job's backend_nvjitlink_cubin finds it loaded
 * (or waits for the load).  Best effort: failures are the first job's. */
void backend_nvjitlink_preload(const char *path);
/* Wait for a preload under way to end.  A process must call it before it
 * exits: exit's destructors (LLVM's, the C library's) running while the
 * preload thread runs libnvJitLink's initialisers end it by SIGSEGV. */
void backend_nvjitlink_settle(void);

#endif
