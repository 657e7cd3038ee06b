/*
 * gpucc/common.h -- errors, digests, payload kinds, targets and entries: the
 * nouns every other part of the API speaks in.
 */
#ifndef GPUCC_COMMON_H
#define GPUCC_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GPUCC_API __attribute__((visibility("default")))
#else
#define GPUCC_API
#endif

/* GPUCC_VERSION and its numeric macros, generated from the build's version. */
#include <gpucc/version.h>

/* Versions of the parts, for --version and toolchain identity: libgpucc's
 * own, the newest LLVM a backend was built against (known without loading
 * it; "none" without any) and the libarchive in use. */
GPUCC_API const char *gpucc_version(void);
GPUCC_API const char *gpucc_llvm_version(void);
GPUCC_API const char *gpucc_libarchive_version(void);
/* The index-th LLVM backend gpucc was built with, oldest first (one per
 * LLVM major: 19, 22): its LLVM version ("22.1.8"), its major and whether
 * its module and worker are installed where libgpucc finds them (nothing
 * is loaded).  NULL past the last.  A compile job gets the newest present
 * one that knows its target and can read its module, unless pinned
 * (gpucc_compile_options.llvm_major). */
GPUCC_API const char *gpucc_llvm_backend(size_t index, unsigned *major, bool *present);

/* ---- errors ------------------------------------------------------------ */

/* Return codes.  0 is success; GPUCC_ERROR is a generic failure (I/O, memory);
 * the others are stable codes for failures a caller may expect and handle. */
enum {
	GPUCC_OK = 0,
	GPUCC_ERROR = -1,
	GPUCC_ENOTFOUND = -3,    /* no such key, kernel, entry or file */
	GPUCC_EAMBIGUOUS = -4,   /* a key prefix matches more than one entry */
	GPUCC_EINVALID = -5,     /* a malformed argument: target, option, key */
	GPUCC_ECORRUPT = -6,     /* an input failed validation (image, snapshot) */
	GPUCC_EVERSION = -7,     /* an input has a format version we do not read */
	GPUCC_ECONFLICT = -8,    /* one key, different contents */
	GPUCC_ECOMPILE = -9,     /* LLVM or a device tool rejected a module */
	GPUCC_EUNAVAILABLE = -10 /* a tool, library, driver or device is absent */
};

/* A NULL for a pointer the contract requires is GPUCC_EINVALID, with a
 * message naming the function and the argument ("gpucc_image_open: 'path'
 * is NULL"), and a `**out` given is NULL; accessors return NULL, 0 or
 * false (digest comparison puts NULL first), and void functions return,
 * both setting that last error; _free functions accept NULL.  Pointers the
 * contract calls optional ("NULL: the default", "may be NULL") take NULL,
 * and so does a buffer or array of size 0.  The parsers of text take NULL
 * as malformed text, GPUCC_EINVALID as for "". */

typedef struct gpucc_error {
	int code;            /* one of the codes above */
	const char *message; /* one line, no trailing newline: control characters,
	                        whatever they came from (a path, an image), are
	                        spelt \n, \t or \xHH; other bytes are as given */
} gpucc_error;

/* The last error set on this thread by a failing libgpucc call.  Never NULL:
 * when nothing failed, code is 0 and message is "no error".  The pointer stays
 * valid until the next libgpucc call on this thread. */
GPUCC_API const gpucc_error *gpucc_error_last(void);
/* Reset this thread's last error to code 0, "no error". */
GPUCC_API void gpucc_error_clear(void);
/* The symbolic name of a code, e.g. "GPUCC_ECORRUPT". */
GPUCC_API const char *gpucc_error_name(int code);

/* Release memory that libgpucc allocated for the caller (payload buffers). */
GPUCC_API void gpucc_free(void *ptr);

/* ---- digests ----------------------------------------------------------- */

#define GPUCC_DIGEST_SIZE 32
#define GPUCC_DIGEST_HEX_SIZE 65 /* 64 hex digits and a NUL */

typedef struct gpucc_digest {
	unsigned char bytes[GPUCC_DIGEST_SIZE];
} gpucc_digest;

/* SHA-256 of a buffer. */
GPUCC_API void gpucc_digest_buffer(gpucc_digest *out, const void *data, size_t size);
/* SHA-256 of a whole regular file, and its size when out_size is not NULL;
 * GPUCC_ENOTFOUND when it does not exist, GPUCC_EINVALID when it is not a
 * regular file (a FIFO is refused at once, never waited on). */
GPUCC_API int gpucc_digest_file(gpucc_digest *out, uint64_t *out_size, const char *path);
/* Write d as 64 lowercase hex digits and a NUL. */
GPUCC_API void gpucc_digest_to_hex(char out[GPUCC_DIGEST_HEX_SIZE], const gpucc_digest *d);
/* Parse exactly 64 lowercase or uppercase hex digits; GPUCC_EINVALID otherwise. */
GPUCC_API int gpucc_digest_from_hex(gpucc_digest *out, const char *hex);
/* Order digests by their bytes, as memcmp: <0, 0 or >0 (the order of keys
 * in images and snapshots). */
GPUCC_API int gpucc_digest_compare(const gpucc_digest *a, const gpucc_digest *b);

/* ---- files ------------------------------------------------------------- */

/* Whether an output published at output (written beside it, then renamed
 * over it) would replace the input file named input: both exist and are
 * one file, by the same path, another path or a link (the same device and
 * inode).  False when either names nothing, or on a NULL argument. */
GPUCC_API bool gpucc_output_is_input(const char *output, const char *input);
/* The same for an input open at input_fd (standard input among them). */
GPUCC_API bool gpucc_output_is_input_fd(const char *output, int input_fd);
/* Each file of paths[0..count) once, in order: out (room for count
 * pointers, borrowed from paths) gets *out_count of them, a path that
 * names a file named before (by the same path, another or a link) left
 * out, so that one file given twice is one input.  A path that names
 * nothing is kept, for its open to say why.  GPUCC_EINVALID for a NULL
 * path; out of memory is GPUCC_ERROR. */
GPUCC_API int gpucc_paths_distinct(const char **out, size_t *out_count, const char *const *paths,
                                   size_t count);

/* ---- payload kinds ----------------------------------------------------- */

typedef enum gpucc_part {
	GPUCC_PART_PTX = 0,     /* PTX assembly text */
	GPUCC_PART_CUBIN = 1,   /* NVIDIA ELF from ptxas */
	GPUCC_PART_HSACO = 2,   /* AMDGPU code object linked by ld.lld */
	GPUCC_PART_BITCODE = 3, /* the input module as LLVM bitcode */
	GPUCC_PART_COUNT = 4
} gpucc_part;

/* "ptx", "cubin", "hsaco", "bitcode". */
GPUCC_API const char *gpucc_part_name(gpucc_part part);
/* ".ptx", ".cubin", ".hsaco", ".bc". */
GPUCC_API const char *gpucc_part_extension(gpucc_part part);
/* The part named name ("ptx", "cubin", "hsaco", "bitcode"); GPUCC_EINVALID
 * for any other. */
GPUCC_API int gpucc_part_from_name(gpucc_part *out, const char *name);

/* ---- targets ------------------------------------------------------------ */

typedef enum gpucc_vendor {
	GPUCC_VENDOR_NVIDIA = 1, /* nvptx64-nvidia-cuda */
	GPUCC_VENDOR_AMD = 2     /* amdgcn-amd-amdhsa */
} gpucc_vendor;

typedef enum gpucc_feature {
	GPUCC_FEATURE_ANY = 0, /* left out of the target ID: runs with either */
	GPUCC_FEATURE_ON = 1,
	GPUCC_FEATURE_OFF = 2,
	GPUCC_FEATURE_UNSUPPORTED = 3 /* the processor has no such feature */
} gpucc_feature;

typedef struct gpucc_target {
	gpucc_vendor vendor;
	/* NVIDIA */
	unsigned sm;           /* 90 for sm_90 */
	bool sm_accelerated;   /* the 'a' of sm_90a: that processor alone */
	bool sm_family;        /* the 'f' of sm_100f: the processors of its family
	                          (in what was padding: the struct's layout is
	                          unchanged) */
	unsigned ptx_isa;      /* 80 for PTX ISA 8.0; never 0 after parsing */
	/* AMD */
	char processor[16];    /* "gfx942" */
	gpucc_feature sramecc;
	gpucc_feature xnack;
	/* A device's CUDA driver major (12 for 12.4; gpucc_target_from_cuda):
	 * cubins made by a newer ptxas do not load on it.  0 when unknown, as
	 * after parsing a spelling. */
	unsigned cuda_major;
	/* An AMD device's newest AMDGPU code object version its HIP runtime
	 * loads (gpucc_hip_max_code_object: 4 for HIP 5, 5 for HIP 6).  0
	 * when unknown, as after parsing a spelling. */
	unsigned code_object_max;
} gpucc_target;

#define GPUCC_TARGET_NAME_SIZE 48

/* Parse a target spelling: "sm_XY[a|f][:ptxNN]" or
 * "gfxNNN[:sramecc+|-][:xnack+|-]".  A processor, PTX ISA or feature that
 * no LLVM from 19 to 22 knows is GPUCC_EINVALID; a PTX ISA too old for the
 * SM is too.  The PTX ISA defaults to the oldest one the SM allows.  Which
 * LLVM knows it: gpucc_target_llvm_major (a compile refuses a target no
 * backend it has knows). */
GPUCC_API int gpucc_target_parse(gpucc_target *out, const char *spelling);
/* The one canonical spelling, used in keys and manifests:
 * "sm_90:ptx78", "gfx90a:sramecc+:xnack-", "gfx1030". */
GPUCC_API void gpucc_target_format(char out[GPUCC_TARGET_NAME_SIZE], const gpucc_target *t);
/* "nvptx64-nvidia-cuda" or "amdgcn-amd-amdhsa". */
GPUCC_API const char *gpucc_target_triple(const gpucc_target *t);
/* The LLVM CPU name ("sm_90", "gfx90a") and feature string ("+ptx78",
 * "+sramecc,-xnack") to hand to the backend. */
GPUCC_API const char *gpucc_target_cpu(const gpucc_target *t);
GPUCC_API void gpucc_target_llvm_features(char out[64], const gpucc_target *t);

/* The oldest LLVM major that knows t's processor (and PTX ISA): 19 for
 * sm_90 and gfx942, 20 for sm_100 and gfx950, 22 for sm_110; 0 for a
 * target gpucc_target_parse would refuse.  When last is not NULL, *last is
 * the newest major that still knows it (20 for gfx941), 0 when every newer
 * one does. */
GPUCC_API unsigned gpucc_target_llvm_major(const gpucc_target *t, unsigned *last);
/* The index-th processor gpucc knows of a vendor ("sm_90a", "gfx950"),
 * with the oldest and newest LLVM majors that know it as
 * gpucc_target_llvm_major gives them (each pointer may be NULL); NULL
 * past the last. */
GPUCC_API const char *gpucc_target_processor_name(gpucc_vendor vendor, size_t index,
                                                  unsigned *llvm_major, unsigned *last);

/* ---- entries ------------------------------------------------------------ */

/* One kernel (entry point) of an entry.  Resource counts are -1 when the
 * tools did not report them. */
typedef struct gpucc_kernel {
	const char *name;
	int64_t registers;     /* per thread (ptxas -v, .vgpr_count) */
	int64_t shared_bytes;  /* static shared memory / group segment (LDS) */
	int64_t scratch_bytes; /* per-thread local / private segment */
} gpucc_kernel;

typedef struct gpucc_option {
	const char *name;  /* "opt-level", "fast-math", ... */
	const char *value; /* "2", "on", ... */
} gpucc_option;

typedef struct gpucc_device_lib {
	const char *name; /* file name, e.g. "libdevice.10.bc", "ocml.bc" */
	gpucc_digest sha256;
} gpucc_device_lib;

typedef struct gpucc_payload {
	gpucc_part part;
	gpucc_digest sha256;
	uint64_t size;
} gpucc_payload;

/*
 * An entry: one module compiled for one target with one set of options.
 * Returned by images and caches as a read-only view that lives as long as its
 * parent; given to writers as a description the writer copies.  Arrays are
 * in canonical order: options sorted by name, payloads by part, device
 * libraries and externals by name; kernels in the order the module gave them.
 */
typedef struct gpucc_entry {
	gpucc_digest key;            /* see formats/key.md */
	unsigned key_schema;         /* version of the key schema that made key */
	const char *module;          /* name of the source module (informational) */
	gpucc_digest module_sha256;  /* digest of the input module's bytes */
	const char *target;          /* canonical target spelling */
	const char *triple;
	const char *gpucc_version;   /* toolchain identity ... */
	const char *llvm_version;
	size_t device_lib_count;
	const gpucc_device_lib *device_libs;
	size_t option_count;
	const gpucc_option *options;
	size_t kernel_count;
	const gpucc_kernel *kernels;
	size_t external_count;       /* symbols the loader must resolve */
	const char *const *externals;
	size_t payload_count;
	const gpucc_payload *payloads;
} gpucc_entry;

/* The entry's payload of one kind, or NULL. */
GPUCC_API const gpucc_payload *gpucc_entry_payload(const gpucc_entry *e, gpucc_part part);
/* The value of an option, or NULL. */
GPUCC_API const char *gpucc_entry_option(const gpucc_entry *e, const char *name);
/* Compute an entry's key from the fields the key schema covers
 * (formats/key.md): key_schema, gpucc_version, llvm_version, device_libs,
 * target, options and module_sha256.  Arrays must be sorted by name and
 * the target canonical; GPUCC_EINVALID otherwise. */
GPUCC_API int gpucc_entry_compute_key(gpucc_digest *out, const gpucc_entry *e);
/* The module name an entry records for the module file at path: the part
 * after its last '/' (path itself when that is empty), with each control
 * character spelt \n, \t or \xHH and each byte that is not part of valid
 * UTF-8 spelt \xHH (formats/manifest.md, "Names"), so that any file name
 * gives a name an image can hold.  The name is informational (in neither
 * key nor content digest), so nothing is lost.  *out is a new string
 * (release with gpucc_free); NULL on failure (out of memory). */
GPUCC_API int gpucc_module_name_from_path(char **out, const char *path);
/* Digest of the entry's canonical manifest record (formats/manifest.md):
 * two entries with one key are identical exactly when these are equal.
 * Snapshots record it as the entry's content digest. */
GPUCC_API int gpucc_entry_content_digest(gpucc_digest *out, const gpucc_entry *e);

/* ---- what an interrupted process leaves -------------------------------- */

/* What gpucc_leftovers_remove removes besides output's temporary files. */
enum {
	GPUCC_LEFTOVERS_LOCK = 1u << 0,     /* output's lock (gpucc_merge_lock_acquire) */
	GPUCC_LEFTOVERS_TEMP_DIRS = 1u << 1 /* the compile's temporary directories */
};
/* Remove what this process leaves behind when a signal ends it midway:
 * the temporary files beside output (NULL: none) that libgpucc writes
 * output through, with GPUCC_LEFTOVERS_LOCK output's lock, which the caller
 * says this process holds, and with GPUCC_LEFTOVERS_TEMP_DIRS the
 * temporary directories its compiles keep in $TMPDIR (or /tmp), whole.
 * Other processes' files are never touched: theirs carry their pids.  For
 * a program that takes SIGINT or SIGTERM and then dies of it: not
 * async-signal-safe (it opens directories, which allocates), so call it
 * from ordinary code, such as a thread that waits for the signals with
 * sigwait, not from a signal handler.  Best effort: sets no error. */
GPUCC_API void gpucc_leftovers_remove(const char *output, unsigned flags);

#ifdef __cplusplus
}
#endif
#endif
