/*
 * lib/compile_internal.h -- what the files of `compile` share: the toolchain
 * found on this machine (device libraries, ptxas, ld.lld) with its remembered
 * digests, and reading a module's triple and library needs without LLVM.
 */
#ifndef GPUCC_LIB_COMPILE_INTERNAL_H
#define GPUCC_LIB_COMPILE_INTERNAL_H

#include "gpucc/common.h"

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
	char *ptxas;         /* or NULL: no cubins */
	char *ld_lld;        /* set by gpucc_toolchain_ld_lld; NULL until then */
	char *memo_path;     /* where memos are kept (NULL: not kept) */
	gpucc_file_memo *memos;
	size_t memo_count;
	bool memo_dirty;
} gpucc_toolchain;

/* Find the tools: libdevice in $CUDA_PATH/nvvm/libdevice, then
 * /usr/local/cuda/...; the ROCm device libraries in $GPUCC_ROCM_DEVICE_LIBS,
 * then the Debian and /opt/rocm directories; ptxas in $CUDA_PATH/bin, then
 * /usr/local/cuda/bin, then $PATH.  ld.lld is looked for only when asked
 * (gpucc_toolchain_ld_lld).  Memos are loaded from memo_dir/compile-toolchain
 * when memo_dir is given, and kept in memory either way. */
int gpucc_toolchain_init(gpucc_toolchain *tc, const char *memo_dir);
/* Save changed memos (atomically; best effort). */
void gpucc_toolchain_save(gpucc_toolchain *tc);
void gpucc_toolchain_release(gpucc_toolchain *tc);
/* SHA-256 of a device library, remembered by path and identity. */
int gpucc_toolchain_digest(gpucc_toolchain *tc, const char *path, gpucc_digest *out);
/* ptxas's version ("13.0.88"), remembered likewise; "none" without ptxas.
 * The string is owned by tc. */
int gpucc_toolchain_ptxas_version(gpucc_toolchain *tc, const char **out);
/* The linker of AMDGPU code objects: ld.lld-19, else ld.lld, on $PATH,
 * accepted only when `--version` reports LLD 19 (another LLD links other
 * bytes under the same key).  Sets tc->ld_lld and *version ("19.1.7", owned
 * by tc; remembered like ptxas's).  GPUCC_EUNAVAILABLE, naming what was
 * found, when there is no LLD 19. */
int gpucc_toolchain_ld_lld(gpucc_toolchain *tc, const char **version);

/* What can be told about a module from its bytes alone. */
typedef struct gpucc_module_facts {
	bool bitcode;          /* .bc (possibly wrapped) rather than .ll text */
	char triple[128];      /* "" when unknown or absent */
	bool triple_known;     /* false when the reader could not tell */
	bool calls_libdevice;  /* refers to @__nv_* (.ll outside comments; .bc: mentions) */
	bool calls_rocm;       /* refers to @__ocml_* or @__ockl_* likewise */
} gpucc_module_facts;

void gpucc_module_facts_read(gpucc_module_facts *out, const unsigned char *data, size_t size);
/* The triple of a bitcode module (lib/compile_bitcode.c): sets triple and
 * triple_known; leaves triple_known false when the stream is not understood. */
void gpucc_bitcode_triple(gpucc_module_facts *out, const unsigned char *data, size_t size);

#endif
