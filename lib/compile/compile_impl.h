/*
 * lib/compile/compile_impl.h -- what the files of `compile` share: the toolchain
 * found on this machine (device libraries, ptxas, ld.lld) with its remembered
 * digests, and reading a module's triple and library needs without LLVM.
 */
#ifndef GPUCC_LIB_COMPILE_IMPL_H
#define GPUCC_LIB_COMPILE_IMPL_H

#include "gpucc/common.h"
#include "process.h"

#include <sys/types.h>
#include <time.h>

/* What stat() says about a file that changes whenever its bytes may have:
 * size and mtime, and also ctime, inode and device, which a copy that
 * restores the mtime (cp -p, rsync -t, tar x) cannot set back. */
typedef struct gpucc_file_identity {
	uint64_t size;
	int64_t mtime_ns, ctime_ns;
	uint64_t inode, device;
} gpucc_file_identity;

/* A remembered fact about a file, valid while its identity holds. */
typedef struct gpucc_file_memo {
	char *kind;  /* "sha256", "ptxas-version" or "ld.lld-version" */
	char *path;
	gpucc_file_identity identity;
	char *value;
} gpucc_file_memo;

typedef struct gpucc_toolchain {
	char *libdevice;     /* libdevice.10.bc, or NULL when no CUDA toolkit */
	char *rocm_dir;      /* directory of ocml.bc and friends, or NULL */
	char *libclc_dir;    /* directory of libclc's nvptx64--nvidiacl.bc and
	                        amdgcn--amdhsa.bc, or NULL */
	char *ptxas;         /* or NULL: no cubins */
	char *nvjitlink;     /* libnvJitLink, or NULL: cubins by ptxas only */
	/* The ld.lld of each LLVM major asked for (gpucc_toolchain_ld_lld),
	 * in the order asked. */
	struct gpucc_ld_lld {
		unsigned major;
		char *path;
	} ld_llds[8];
	size_t ld_lld_count;
	char *memo_path;     /* where memos are kept (NULL: not kept) */
	gpucc_file_memo *memos;
	size_t memo_count;
	size_t *memo_slots;  /* hash of (kind, path) -> memo index + 1; 0 empty */
	size_t memo_slot_count; /* a power of two, at least twice memo_count */
	bool memo_dirty;
	/* `TOOL --version` runs started ahead (gpucc_toolchain_prefetch_version),
	 * read by the tool_version that asks for them. */
	struct gpucc_version_probe {
		char *kind, *tool;
		gpucc_process process; /* its stdout: process.pipes[1] */
		struct timespec start;
	} probes[4];
	size_t probe_count;
} gpucc_toolchain;

/* ($NAME, here and below: the config's setting read from that variable,
 * gpucc/config.h.)
 * Find the tools: libdevice in $CUDA_PATH/nvvm/libdevice, then
 * /usr/local/cuda/...; the ROCm device libraries in $GPUCC_ROCM_DEVICE_LIBS,
 * then the Debian and /opt/rocm directories; libclc in $GPUCC_LIBCLC_DIR,
 * then /usr/lib/clc; ptxas in $CUDA_PATH/bin, then
 * /usr/local/cuda/bin, then $PATH.  ld.lld is looked for only when asked
 * (gpucc_toolchain_ld_lld, per LLVM major).  Memos are loaded from
 * memo_dir/compile-toolchain when memo_dir is given, and kept in memory
 * either way. */
int gpucc_toolchain_init(gpucc_toolchain *tc, const char *memo_dir);
/* Save changed memos (atomically; best effort). */
void gpucc_toolchain_save(gpucc_toolchain *tc);
/* Start `tool --version` now, unless a fresh memo of kind knows the answer,
 * so that it runs beside other work (another tool's probe) until the
 * version of kind is asked for; what fails is reported then. */
void gpucc_toolchain_prefetch_version(gpucc_toolchain *tc, const char *kind, const char *tool);
/* Whether any memo of kind is kept (of any tool, fresh or not). */
bool gpucc_toolchain_has_kind(const gpucc_toolchain *tc, const char *kind);
void gpucc_toolchain_release(gpucc_toolchain *tc);
/* SHA-256 of a device library, remembered by path and identity. */
int gpucc_toolchain_digest(gpucc_toolchain *tc, const char *path, gpucc_digest *out);
/* The same for a caller that has just stat()ed path: st is what it saw. */
struct stat;
int gpucc_toolchain_digest_stat(gpucc_toolchain *tc, const char *path, const struct stat *st,
                                gpucc_digest *out);
/* ptxas's version ("13.0.88"), remembered likewise; "none" without ptxas.
 * The string is owned by tc. */
int gpucc_toolchain_ptxas_version(gpucc_toolchain *tc, const char **out);
/* libnvJitLink's version ("13.0.88"), remembered likewise (kind
 * "nvjitlink-version"); "none" without the library.  Never loads it. */
int gpucc_toolchain_nvjitlink_version(gpucc_toolchain *tc, const char **out);

/* lib/compile_nvjitlink.c.  The libnvJitLink a compile uses: override_path
 * when given ($GPUCC_NVJITLINK; empty or not a file: none), else
 * $CUDA_PATH/lib64/libnvJitLink.so, then /usr/local/cuda's (or the highest
 * libnvJitLink.so.N there).  A malloc()ed path, or NULL. */
char *gpucc_nvjitlink_find(const char *override_path);
/* The version in the toolkit banner the library carries ("Cuda compilation
 * tools, release 13.0, V13.0.88" gives "13.0.88"), read without loading it.
 * GPUCC_EUNAVAILABLE when it carries none. */
int gpucc_nvjitlink_scan_version(const char *path, char *out, size_t size);
/* The linker of the AMDGPU code objects LLVM major's backend makes:
 * ld.lld-MAJOR, else ld.lld, on $PATH, accepted only when `--version`
 * reports LLD MAJOR (another LLD links other bytes under the same key).
 * Sets *path and *version ("19.1.7"; remembered like ptxas's), owned by
 * tc (the path until tc is released, or asked again for major and finds
 * another).  GPUCC_EUNAVAILABLE, naming what
 * was found, when there is no LLD MAJOR. */
int gpucc_toolchain_ld_lld(gpucc_toolchain *tc, unsigned major, const char **path,
                           const char **version);
/* Whether the compile worker of LLVM major has LLD linked in
 * (lib/backend_llvm/lld_link.h) that is the ld.lld at path, of version:
 * the ld.lld-MAJOR the build found (one file, however reached), of the
 * LLVM version the worker's LLD was built from.  Then the worker links in
 * process what that ld.lld would, byte for byte; another ld.lld (one put
 * first on PATH) runs as a process, as asked. */
bool gpucc_toolchain_ld_lld_built_in(unsigned major, const char *path, const char *version);
/* The version after marker in what `tool --version` prints ("19.1.7" after
 * "clang version "), remembered as a memo of kind like ptxas's; owned by
 * tc.  GPUCC_EUNAVAILABLE when the tool prints none. */
int gpucc_toolchain_tool_version(gpucc_toolchain *tc, const char *kind, const char *tool,
                                 const char *marker, const char **out);

/* What can be told about a module from its bytes alone, without LLVM: a
 * compile's keys depend on it (the PTX ISA and code object version a target
 * takes by default, the device libraries linked), and a compile whose every
 * key hits must not load LLVM. */
#define GPUCC_MODULE_MAX_CPUS 8
typedef struct gpucc_module_facts {
	bool bitcode;          /* .bc (possibly wrapped) rather than .ll text */
	char triple[128];      /* "" when unknown or absent */
	bool triple_known;     /* false when the reader could not tell */
	bool calls_libdevice;  /* refers to @__nv_* (.ll outside comments; .bc: a function's name) */
	bool calls_rocm;       /* refers to @__ocml_* or @__ockl_* likewise */
	bool calls_hip;        /* refers to @__atomic_work_item_fence (defined only by hip.bc) */
	bool opencl;           /* has the named metadata !opencl.ocl.version (OpenCL C's front end) */
	bool calls_mangled;    /* refers to a function whose name starts "_Z" that it does not
	                          define (an OpenCL builtin when opencl: libclc's) */
	/* Function attributes, over every attribute group of the module (.ll:
	 * `attributes #N = { ... }`, also attributes written on a define line;
	 * .bc: the PARAMATTR_GROUP block), whichever functions use them. */
	bool attributes_known; /* false when the reader could not tell (then the fields below are 0) */
	char cpus[GPUCC_MODULE_MAX_CPUS][32]; /* distinct "target-cpu" values, first seen first */
	size_t cpu_count;      /* at most GPUCC_MODULE_MAX_CPUS; further values are dropped */
	unsigned ptx_isa;      /* highest "+ptxNN" of any "target-features"; 0: none */
	bool wavefront64;      /* some "target-features" has "+wavefrontsize64" */
	gpucc_feature xnack;   /* "+xnack" ON, "-xnack" OFF, else ANY (first one seen) */
	gpucc_feature sramecc; /* likewise for "+sramecc" / "-sramecc" */
	bool optnone;          /* some attribute group has optnone */
	/* The writer (.bc: the IDENTIFICATION block's string). */
	char producer[64];     /* "LLVM22.1.8"; "" when absent (.ll text) or unreadable */
	unsigned producer_major; /* 22 of "LLVM22.1.8": the oldest LLVM that reads it; 0: unknown */
	/* Module flags (!llvm.module.flags). */
	bool flags_known;      /* false when the reader could not tell */
	unsigned code_object_version; /* "amdhsa_code_object_version" / 100 (4, 5, 6); 0: absent */
} gpucc_module_facts;

void gpucc_module_facts_read(gpucc_module_facts *out, const unsigned char *data, size_t size);
/* The facts of a bitcode module (lib/compile/compile_bitcode.c): sets every field
 * but bitcode; leaves triple_known, attributes_known and flags_known false
 * for what the stream does not let it tell. */
void gpucc_bitcode_facts(gpucc_module_facts *out, const unsigned char *data, size_t size);

/* ---- the target a job compiles for (lib/compile/compile_target.c) ---------------- */

/* A target as one module makes it. */
typedef struct gpucc_job_target {
	char name[GPUCC_TARGET_NAME_SIZE]; /* canonical: "sm_90:ptx85", "gfx90a" */
	char features[64];                 /* for LLVM: "+ptx85", "+sramecc,-xnack" */
	int code_object_version;           /* AMD: 4, 5 or 6; NVIDIA: 0 */
} gpucc_job_target;

/* Fit target t to the module f describes: an NVIDIA target whose spelling
 * named no PTX ISA (!ptx_explicit) takes the highest the module's functions
 * ask for (up to LLVM 19's, 8.5) when that is above the target's own; an
 * AMD target takes code_object_asked (4, 5 or 6), else the module's
 * amdhsa_code_object_version, else GPUCC_DEFAULT_CODE_OBJECT_VERSION.
 * GPUCC_ECOMPILE, with a message naming the spelling or option that would
 * compile the module, when the target or code_object_asked contradicts the
 * module (a PTX ISA below the module's, another code object version, an
 * xnack or sramecc setting the module fixes otherwise). */
int gpucc_target_for_module(gpucc_job_target *out, const gpucc_target *t, bool ptx_explicit,
                            int code_object_asked, const gpucc_module_facts *f);
/* Whether every "target-cpu" of the module is cpu (true when it names none). */
bool gpucc_module_fits_cpu(const gpucc_module_facts *f, const char *cpu);

/* A device library gpucc writes itself, as IR text. */
typedef struct gpucc_generated_lib {
	char name[40];   /* as the key names it: "oclc_isa_version_1100.ll" */
	char text[320];
	size_t size;
	gpucc_digest sha256;
} gpucc_generated_lib;

/* __oclc_ISA_version of an AMDGPU processor: "gfx90a" -> 9010, "gfx1201" ->
 * 12001; 0 for a name not of that shape. */
unsigned gpucc_amdgpu_isa_version(const char *processor);
/* The ROCm control library that defines __oclc_ISA_version for processor.
 * GPUCC_EINVALID for a name gpucc_amdgpu_isa_version does not take. */
int gpucc_isa_version_lib(gpucc_generated_lib *out, const char *processor);

#endif
