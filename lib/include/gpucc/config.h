/*
 * gpucc/config.h -- the settings libgpucc takes from its caller: where
 * temporary files, the cache and the tools are, which libraries to load,
 * the time written into images.
 *
 * libgpucc reads no environment variable of its own accord.  A process
 * starts with every setting at its default (each field's comment says
 * what "unset" does); a program that wants them from the environment, as
 * the gpucc command does, asks for that once at start:
 *
 *     gpucc_config *cfg;
 *     if (gpucc_config_from_env(&cfg) == 0) {
 *             gpucc_set_config(cfg);
 *             gpucc_config_free(cfg);
 *     }
 *
 * Each field names the variable gpucc_config_from_env fills it from.
 * What clang and the other tools gpucc starts do with their own
 * environment is theirs: they inherit the process's, and a source compile's
 * key records the variables clang acts on (docs/compile.md).
 */
#ifndef GPUCC_CONFIG_H
#define GPUCC_CONFIG_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every string is a path or a value as the variable holds it; NULL is
 * "unset", and an empty string is unset too except where a field says
 * otherwise. */
typedef struct gpucc_config {
	unsigned version; /* GPUCC_CONFIG_VERSION */
	/* TMPDIR: where temporary directories go (compile jobs, the compile
	 * worker's). Unset: /tmp. */
	const char *tmpdir;
	/* PATH: the directories searched for the tools gpucc runs by name
	 * (clang-19, clang, clang-22, ptxas). Unset: none searched; the
	 * LLVM and CUDA installations gpucc knows are still tried. */
	const char *path;
	/* CUDA_PATH: the CUDA toolkit (ptxas, libdevice, headers,
	 * libnvJitLink), tried before /usr/local/cuda. */
	const char *cuda_path;
	/* SOURCE_DATE_EPOCH: the time (seconds since 1970) of every member of
	 * the images written without their own (gpucc_write_options.use_mtime).
	 * Unset: 0. */
	bool source_date_epoch_set;
	int64_t source_date_epoch;
	/* GPUCC_CACHE_DIR, else XDG_CACHE_HOME/gpucc, else HOME/.cache/gpucc
	 * (each of the last two only when absolute): the default cache
	 * (gpucc_cache_default_dir).  All unset: there is none. */
	const char *cache_dir;
	const char *xdg_cache_home;
	const char *home;
	/* GPUCC_CACHE_MAX_SIZE: a cache's size bound when its own config file
	 * sets none ("10G"; a malformed or 0 value is ignored with a warning
	 * at open). */
	const char *cache_max_size;
	/* GPUCC_BACKEND: the LLVM backend module to compile with
	 * (libgpucc-llvmN.so), instead of those found beside libgpucc. */
	const char *backend;
	/* GPUCC_LIBARCHIVE: the libarchive to load instead of its usual name. */
	const char *libarchive;
	/* GPUCC_HIP_LIBRARY, GPUCC_CUDA_LIBRARY: the HIP runtime and the CUDA
	 * driver library to load instead of their usual names; "none": do not
	 * load one (GPUCC_EUNAVAILABLE).  A HIP library named is loaded even
	 * without /dev/kfd. */
	const char *hip_library;
	const char *cuda_library;
	/* GPUCC_ROCM_DEVICE_LIBS: the directory of ROCm's device libraries
	 * (ocml.bc...), tried first.  GPUCC_LIBCLC_DIR: that of libclc's
	 * (amdgcn--amdhsa.bc...), tried first. */
	const char *rocm_device_libs;
	const char *libclc_dir;
	/* GPUCC_NVJITLINK: the libnvJitLink to link cubins with; empty: none
	 * (ptxas is used); unset: found in the CUDA toolkit. */
	const char *nvjitlink;
	/* CURL_CA_BUNDLE, else SSL_CERT_FILE: the CA certificates TLS remotes
	 * are verified against when the remote names none (cacert=). */
	const char *ca_bundle;
} gpucc_config;

/* The version of gpucc_config this header declares, which callers set
 * (as GPUCC_IMAGE_LIMITS_VERSION); GPUCC_CONFIG_INIT and gpucc_config_init
 * give every setting unset. */
#define GPUCC_CONFIG_VERSION 1
#define GPUCC_CONFIG_INIT                                                                    \
	{GPUCC_CONFIG_VERSION, NULL, NULL, NULL, false, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, \
	 NULL, NULL, NULL, NULL, NULL}
GPUCC_API void gpucc_config_init(gpucc_config *cfg);

/* A new config (gpucc_config_free) filled from the variables the fields
 * name, their values copied.  GPUCC_EINVALID, naming the variable, when
 * SOURCE_DATE_EPOCH is set and is not decimal digits of at most
 * 253402300799 (the end of year 9999, what tar readers accept). */
GPUCC_API int gpucc_config_from_env(gpucc_config **out);
/* Release a config from gpucc_config_from_env; accepts NULL. */
GPUCC_API void gpucc_config_free(gpucc_config *cfg);

/* Make cfg (copied, strings and all) the settings of every later call,
 * for the whole process; NULL: every setting unset again.  Call it before
 * other threads use libgpucc (as gpucc_image_set_default_limits).  The
 * settings that choose a library (libarchive, backend, hip_library,
 * cuda_library) act when it is first loaded, once per process: set them
 * before any call that loads it.  GPUCC_EINVALID for a config of another
 * version or a source_date_epoch out of range. */
GPUCC_API int gpucc_set_config(const gpucc_config *cfg);

#ifdef __cplusplus
}
#endif

#endif
