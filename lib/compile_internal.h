/*
 * lib/compile_internal.h -- what the files of `compile` share: the toolchain
 * found on this machine (device libraries, ptxas, ld.lld) with its remembered
 * digests, and reading a module's triple and library needs without LLVM.
 */
#ifndef GPUCC_LIB_COMPILE_INTERNAL_H
#define GPUCC_LIB_COMPILE_INTERNAL_H

#include "gpucc/common.h"

/* A remembered fact about a file, valid while its size and mtime hold. */
typedef struct gpucc_file_memo {
	char *kind;  /* "sha256" or "ptxas-version" */
	char *path;
	uint64_t size;
	int64_t mtime_ns;
	char *value;
} gpucc_file_memo;

typedef struct gpucc_toolchain {
	char *libdevice;     /* libdevice.10.bc, or NULL when no CUDA toolkit */
	char *rocm_dir;      /* directory of ocml.bc and friends, or NULL */
	char *ptxas;         /* or NULL: no cubins */
	char *ld_lld;        /* or NULL: AMD misses fail */
	char *memo_path;     /* where memos are kept (NULL: not kept) */
	gpucc_file_memo *memos;
	size_t memo_count;
	bool memo_dirty;
} gpucc_toolchain;

/* Find the tools: libdevice in $CUDA_PATH/nvvm/libdevice, then
 * /usr/local/cuda/...; the ROCm device libraries in $GPUCC_ROCM_DEVICE_LIBS,
 * then the Debian and /opt/rocm directories; ptxas in $CUDA_PATH/bin, then
 * /usr/local/cuda/bin, then $PATH; ld.lld-19 (then ld.lld) in $PATH.
 * Memos are loaded from memo_dir/compile-toolchain when memo_dir is given. */
int gpucc_toolchain_init(gpucc_toolchain *tc, const char *memo_dir);
/* Save changed memos (atomically; best effort). */
void gpucc_toolchain_save(gpucc_toolchain *tc);
void gpucc_toolchain_release(gpucc_toolchain *tc);
/* SHA-256 of a device library, remembered by (path, size, mtime). */
int gpucc_toolchain_digest(gpucc_toolchain *tc, const char *path, gpucc_digest *out);
/* ptxas's version ("13.0.88"), remembered likewise; "none" without ptxas.
 * The string is owned by tc. */
int gpucc_toolchain_ptxas_version(gpucc_toolchain *tc, const char **out);

/* What can be told about a module from its bytes alone. */
typedef struct gpucc_module_facts {
	bool bitcode;          /* .bc (possibly wrapped) rather than .ll text */
	char triple[128];      /* "" when unknown or absent */
	bool triple_known;     /* false when the reader could not tell */
	bool calls_libdevice;  /* mentions __nv_ */
	bool calls_rocm;       /* mentions __ocml_ or __ockl_ */
} gpucc_module_facts;

void gpucc_module_facts_read(gpucc_module_facts *out, const unsigned char *data, size_t size);
/* The triple of a bitcode module (lib/compile_bitcode.c): sets triple and
 * triple_known; leaves triple_known false when the stream is not understood. */
void gpucc_bitcode_triple(gpucc_module_facts *out, const unsigned char *data, size_t size);

#endif
