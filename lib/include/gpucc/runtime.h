/*
 * gpucc/runtime.h -- using an image when a package starts: open it (embedded
 * in the program, or a file mapped into memory), choose the entry that fits
 * the GPU present, and load it through the vendor's runtime.
 *
 * Nothing here compiles, and nothing loads a GPU runtime until a function
 * that needs one is called (gpucc_devices_list, gpucc_module_load): the HIP
 * runtime (libamdhip64.so.5) and the CUDA driver (libcuda.so.1) are opened
 * with dlopen() then, never linked (docs/design.md invariant 8).  Overrides,
 * for tests and unusual installs: the config's hip_library and cuda_library
 * (gpucc/config.h; GPUCC_HIP_LIBRARY and GPUCC_CUDA_LIBRARY, for a program
 * that takes its config from the environment) name the library to open
 * ("none" disables that runtime; a named HIP is opened even where /dev/kfd,
 * without which gpucc does not load HIP, is absent).
 *
 * Nothing here needs process-wide state: an image in memory
 * (gpucc_image_open_memory_for_lookup) or mapped (gpucc_image_open_mapped)
 * is read without the SIGBUS guard of gpucc_image_set_sigbus_guard.
 *
 * Selection (lib/tests/test_runtime_select.c checks each rule, a table row
 * per case):
 *  - AMD: the entry whose target equals the device's target ID; else one of
 *    the same processor whose sramecc and xnack are each "any" or equal to
 *    the device's setting, the most specific first.  The entry must carry a
 *    code object (hsaco).
 *  - NVIDIA: a cubin built for the device's exact sm; else PTX the driver can
 *    JIT for the device: PTX for sm_X runs on sm >= X (sm_Xa only on sm_X),
 *    of a PTX ISA no newer than the driver's (gpucc_cuda_max_ptx_isa); the
 *    highest ISA wins, then the highest sm.  Else a cubin of an earlier
 *    minor revision of the device's major (binary compatibility: a cubin
 *    for sm_80 runs on sm_86 and sm_89, not on sm_90; never an sm_Xa
 *    cubin, nor to or from a Tegra sm), the closest sm first.  PTX comes
 *    before such a cubin because the JIT compiles for the device's own sm
 *    (and the driver caches the result); the cubin is there for a driver
 *    too old for the image's PTX, or an image shipped without PTX.  A
 *    cubin is never chosen for a driver of an older CUDA major than the
 *    ptxas that made it (the entry's "ptxas" option: a CUDA 13 cubin does
 *    not load on a CUDA 12 driver); the PTX then serves.
 *  - Ties go to the smallest key, so the choice is deterministic; a kernel
 *    that several entries (modules) hold is loaded from the one chosen.
 */
#ifndef GPUCC_RUNTIME_H
#define GPUCC_RUNTIME_H

#include "common.h"
#include "image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- opening images ------------------------------------------------------ */

/* Open the image file at path by mapping it read-only into memory; the image
 * owns the mapping and unmaps it when freed.  A file that cannot be mapped
 * (a FIFO, an empty file) is read as gpucc_image_open reads it, from the
 * one descriptor opened.  It is opened for lookups, as
 * gpucc_image_open_memory_for_lookup opens one (gpucc/image.h): an
 * uncompressed image with an index is not parsed whole until something
 * needs the whole manifest, so a defect of an entry's record is reported
 * when that entry is looked up; other errors as gpucc_image_open.  As with
 * any mapping,
 * the file must not be cut short in place while the image is open (the
 * process would get SIGBUS); gpucc replaces its outputs by renaming a new
 * file over them, which leaves an open image reading the old one.  (Every
 * other way of opening an image reports a file cut short as a truncated
 * image: gpucc/image.h.)  The image is read from many threads at once as
 * an image in memory is.  A lookup checks what it reads, not the index
 * as a whole: for an image this program did not make or verify, call
 * gpucc_image_verify_structure once after opening, so that selection
 * picks from every entry the manifest lists. */
GPUCC_API int gpucc_image_open_mapped(gpucc_image **out, const char *path);

/* ---- one payload by its digest ------------------------------------------- */

/* Read the payload of kind part whose SHA-256 is sha256 from the image file
 * at path, without reading the manifest: for a loader that recorded at
 * build time which payload it needs (`gpucc list --json` and `gpucc show`
 * print the digests).  In an uncompressed image the member is found by
 * bisection over the sorted payload members, in O(log entries) header reads
 * (lib/image/image_fetch.c); other images go through gpucc_image_open.  The bytes
 * are returned only when they hash to sha256.  *out (release with
 * gpucc_free) holds *out_size bytes.  GPUCC_ENOTFOUND when the image has no
 * such payload, GPUCC_ECORRUPT when its bytes do not match or the file is
 * cut short while it is read (it is read with pread, never mapped), other
 * errors as gpucc_image_open's; errors name the file and the member.  Each
 * call is independent: any number may run at once, on any threads. */
GPUCC_API int gpucc_image_fetch_payload(void **out, size_t *out_size, const char *path,
                                        const gpucc_digest *sha256, gpucc_part part);
/* The same for an image in memory (an embedded one); name is used in
 * messages (NULL: "image in memory"). */
GPUCC_API int gpucc_image_fetch_payload_memory(void **out, size_t *out_size, const void *data,
                                               size_t size, const char *name,
                                               const gpucc_digest *sha256, gpucc_part part);

/* ---- selection (pure: no driver, no I/O) ---------------------------------- */

/* What a device can run.  target.vendor says which rules apply.  NVIDIA:
 * target.sm is the device's compute capability (90 for 9.0), target.ptx_isa
 * the newest PTX ISA its driver can JIT (0: no PTX).  AMD: target.processor
 * and the sramecc/xnack modes the device runs in (ON/OFF, or UNSUPPORTED). */
typedef struct gpucc_selection {
	const gpucc_entry *entry; /* borrowed from the image or array searched */
	gpucc_part part;          /* the payload to load: CUBIN, PTX or HSACO */
	const gpucc_payload *payload;
	bool exact;               /* the exact target (or cubin), not a fallback */
} gpucc_selection;

/* Whether entry e (of any kernel) can run on device; on true, *out tells what
 * would load.  An entry whose target does not parse never fits. */
GPUCC_API bool gpucc_entry_fits(gpucc_selection *out, const gpucc_entry *e,
                                const gpucc_target *device);

/* Choose, among entries[0..count), the one that holds kernel (NULL: any
 * entry) and fits device best.  GPUCC_ENOTFOUND when no entry has the
 * kernel (the message lists the kernels there are) or when none that has it
 * fits (the message lists their targets of the device's vendor, or says
 * there are none); GPUCC_EINVALID for bad arguments.
 * name is used in messages (an image name). */
GPUCC_API int gpucc_select(gpucc_selection *out, const gpucc_entry *const *entries, size_t count,
                           const char *kernel, const gpucc_target *device, const char *name);
/* The same over the entries of an image (safe alongside any other call
 * on img, as every read of an image is: gpucc/image.h). */
GPUCC_API int gpucc_image_select(gpucc_selection *out, const gpucc_image *img, const char *kernel,
                                 const gpucc_target *device);

/* Newest AMDGPU code object version the HIP runtime of this version
 * (hipDriverGetVersion: 50221151 for 5.2, major x 10^7 + minor x 10^5 +
 * patch) loads: 4 for HIP 4 and 5 (whose runtimes gpucc takes to load v4
 * only: HIP 5.2 refuses v5), 5 from HIP 6 on; 0 for an unknown version. */
GPUCC_API unsigned gpucc_hip_max_code_object(int hip_version);

/* Newest PTX ISA (e.g. 85 for 8.5) that a CUDA driver of this version
 * (cuDriverGetVersion: 12040 for 12.4) can JIT: 50 for CUDA 8.0, the
 * oldest release gpucc knows, and 0 for drivers older than that.  Capped at
 * the newest ISA gpucc knows. */
GPUCC_API unsigned gpucc_cuda_max_ptx_isa(int driver_version);

/* A device's target from what its runtime reports: a HIP gcnArchName
 * ("gfx90a:sramecc+:xnack-") or a CUDA compute capability and driver
 * version.  A processor gpucc does not know is GPUCC_EINVALID. */
GPUCC_API int gpucc_target_from_hip_arch(gpucc_target *out, const char *gcn_arch_name);
/* A compute capability outside 1.0..99.9 (a minor above 9, a negative
 * value) is GPUCC_EINVALID, and *out is then no vendor's target. */
GPUCC_API int gpucc_target_from_cuda(gpucc_target *out, int cc_major, int cc_minor,
                                     int driver_version);

/* A CUDA version as people write it ("12.4", "12": a major of one or two
 * digits, a minor of one) in the form cuDriverGetVersion reports it
 * (12040), and a HIP version ("5.2") in hipDriverGetVersion's (50200000).
 * GPUCC_EINVALID, naming text, for anything else. */
GPUCC_API int gpucc_cuda_version_parse(int *out, const char *text);
GPUCC_API int gpucc_hip_version_parse(int *out, const char *text);

/* ---- devices ------------------------------------------------------------- */

typedef enum gpucc_runtime_kind {
	GPUCC_RUNTIME_NONE = 0, /* a device named by its target (gpucc_device_from_target) */
	GPUCC_RUNTIME_HIP = 1,  /* libamdhip64.so.5 */
	GPUCC_RUNTIME_CUDA = 2  /* libcuda.so.1, the driver API */
} gpucc_runtime_kind;

typedef struct gpucc_device {
	gpucc_runtime_kind runtime;
	int ordinal;              /* the device's index in its runtime */
	char name[128];           /* as the runtime reports it */
	char arch[64];            /* gcnArchName, or "sm_90" */
	bool target_known;        /* arch parsed into target */
	gpucc_target target;      /* see gpucc_selection's rules */
	int driver_version;       /* hipDriverGetVersion / cuDriverGetVersion */
} gpucc_device;

/* The GPUs the runtimes present on this machine see, HIP's first.
 * *out (release with gpucc_free) holds *count >= 1 devices.  With none:
 * GPUCC_EUNAVAILABLE and a message that says, per runtime, why (library not
 * found, or the runtime's error such as hipErrorNoDevice (100)).  Never
 * blocks on a missing device.  Without /dev/kfd (no amdgpu driver, so no
 * AMD GPU) the HIP runtime is not loaded, unless the config's hip_library
 * (GPUCC_HIP_LIBRARY) names it. */
GPUCC_API int gpucc_devices_list(gpucc_device **out, size_t *count);

/* What a device named by its target runs besides its processor: the
 * versions of its driver and runtime, which bound the code it loads. */
typedef struct gpucc_device_target_options {
	unsigned version; /* GPUCC_DEVICE_TARGET_OPTIONS_VERSION */
	/* NVIDIA: the driver's CUDA version as cuDriverGetVersion reports it
	 * (12040 for 12.4), which bounds the PTX ISA it JITs and the cubins it
	 * loads (those of a ptxas of its major or older); 0: a driver that
	 * JITs every PTX ISA gpucc makes and loads every cubin. */
	int cuda_driver_version;
	/* AMD: the HIP runtime's version as hipDriverGetVersion reports it
	 * (50200000 for 5.2), which bounds the code object versions it loads
	 * (gpucc_hip_max_code_object); 0: any. */
	int hip_version;
} gpucc_device_target_options;

/* The version of gpucc_device_target_options this header declares, which
 * callers set (as GPUCC_IMAGE_LIMITS_VERSION); GPUCC_DEVICE_TARGET_OPTIONS_INIT
 * and gpucc_device_target_options_init give the defaults: the newest
 * driver, any HIP runtime. */
#define GPUCC_DEVICE_TARGET_OPTIONS_VERSION 1
#define GPUCC_DEVICE_TARGET_OPTIONS_INIT {GPUCC_DEVICE_TARGET_OPTIONS_VERSION, 0, 0}
GPUCC_API void gpucc_device_target_options_init(gpucc_device_target_options *opts);

/* The device a target spelling names, as gpucc_select sees it, with no
 * runtime loaded and no GPU present: a package's CI asking whether an
 * image serves every kernel on sm_75 or gfx90a:xnack-.  *out is a device
 * of runtime GPUCC_RUNTIME_NONE, arch the spelling (cut to fit), name
 * empty, driver_version the options' CUDA driver (NVIDIA) or HIP runtime
 * (AMD) version, target_known true.  opts NULL: the defaults.
 *
 * NVIDIA: "sm_XY" (two or three digits, no leading 0) is the device of
 * compute capability X.Y as gpucc_target_from_cuda gives it -- any, also
 * one no LLVM of gpucc's compiles for, since a newer GPU still JITs older
 * PTX -- with, for driver version 0, the newest PTX ISA gpucc knows.  A
 * spelling that names code rather than a device is GPUCC_EINVALID, saying
 * which device to name instead: sm_90a (code that runs on sm_90 alone),
 * sm_100f (code for the family of sm_100: sm_100 and sm_103) and
 * sm_90:ptx78 (a PTX ISA, which belongs to code; a device's is bounded by
 * its driver).  AMD: a target ID; a feature left out stays "any", which
 * only entries that leave it out fit (an answer that holds for the device
 * in either mode).  A spelling gpucc_target_parse refuses is its error;
 * options of an unknown version are GPUCC_EINVALID. */
GPUCC_API int gpucc_device_from_target(gpucc_device *out, const char *spelling,
                                       const gpucc_device_target_options *opts);

/* The target to compile for device d, as clang's --offload-arch=native
 * takes it: NVIDIA its processor ("sm_90": the device's PTX ISA is the
 * newest its driver JITs, while a module's says what the module needs),
 * AMD its target ID with the sramecc and xnack modes it runs in
 * ("gfx90a:sramecc+:xnack-").  GPUCC_ENOTFOUND when gpucc does not know
 * d's processor (target_known false), naming its architecture. */
GPUCC_API int gpucc_device_compile_target(char out[GPUCC_TARGET_NAME_SIZE], const gpucc_device *d);

/* ---- loading ------------------------------------------------------------- */

/* A module loaded on one device, owned by the caller. */
typedef struct gpucc_module gpucc_module;

/* Select the entry holding kernel for device (NULL: the first device of
 * gpucc_devices_list on which some entry holding kernel fits), read and
 * verify its payload, and load it with hipModuleLoadData or
 * cuModuleLoadDataEx (in the device's primary context).
 * GPUCC_EUNAVAILABLE when no runtime or device is present, or (device
 * NULL) gpucc knows none of the devices' architectures; GPUCC_ENOTFOUND as
 * for gpucc_select (device NULL and nothing fits: for the first device
 * whose architecture gpucc knows); GPUCC_ECORRUPT for a bad payload, or
 * one that lacks the kernel; GPUCC_ERROR when the runtime refuses the code
 * (its error named).  The kernel is resolved before this returns, so a
 * refusal that the CUDA driver's lazy loading (CUDA_MODULE_LOADING=LAZY,
 * its default since CUDA 12.2) would report only at cuModuleGetFunction is
 * reported here.
 *
 * These calls (and gpucc_module_function and gpucc_module_free) leave the
 * calling thread's current HIP device and CUDA context as they found them:
 * HIP's device is set to the module's for each call and set back after,
 * CUDA's primary context is pushed and popped.  To launch a kernel, make
 * the module's device current (hipSetDevice(gpucc_module_device(m)->ordinal),
 * or its primary context), as for any module loaded on another device.
 * img is read as gpucc_image_read_payload reads it: other threads may use
 * it meanwhile (gpucc/image.h). */
GPUCC_API int gpucc_module_load(gpucc_module **out, gpucc_image *img, const char *kernel,
                                const gpucc_device *device);
/* The kernel's function handle (hipFunction_t or CUfunction), borrowed from
 * the module.  GPUCC_ENOTFOUND when the module has no such kernel. */
GPUCC_API int gpucc_module_function(void **out, gpucc_module *m, const char *kernel);
/* The runtime's module handle (hipModule_t or CUmodule), borrowed. */
GPUCC_API void *gpucc_module_handle(const gpucc_module *m);
/* The entry and part that were loaded; borrowed from the image, which must
 * outlive these calls. */
GPUCC_API const gpucc_selection *gpucc_module_selection(const gpucc_module *m);
/* The device the module was loaded on, borrowed from the module. */
GPUCC_API const gpucc_device *gpucc_module_device(const gpucc_module *m);
/* Unload (hipModuleUnload / cuModuleUnload) and release; accepts NULL. */
GPUCC_API void gpucc_module_free(gpucc_module *m);

/* ---- embedding ------------------------------------------------------------- */

typedef struct gpucc_embed_options {
	unsigned version;         /* GPUCC_EMBED_OPTIONS_VERSION */
	const char *symbol;       /* NAME: the bytes; NAME_size: their count */
	const char *triple;       /* host triple; NULL: the build machine's */
	unsigned alignment;       /* of NAME in bytes, a power of two; 0: 64 */
	const char *section;      /* NULL: ".rodata.gpucc" */
	const char *header;       /* also write this C header; NULL: none */
} gpucc_embed_options;

/* The version of gpucc_embed_options this header declares, which callers
 * set (as GPUCC_IMAGE_LIMITS_VERSION, gpucc/image.h);
 * GPUCC_EMBED_OPTIONS_INIT and gpucc_embed_options_init give the defaults
 * (no symbol: the caller names one). */
#define GPUCC_EMBED_OPTIONS_VERSION 1
#define GPUCC_EMBED_OPTIONS_INIT {GPUCC_EMBED_OPTIONS_VERSION, NULL, NULL, 0, NULL, NULL}
GPUCC_API void gpucc_embed_options_init(gpucc_embed_options *opts);

/* Whether symbol may be the NAME of gpucc_embed_image and
 * gpucc_embed_write_header: a C identifier of at most 200 characters that
 * the header can declare in C and C++ beside any standard header, and that
 * the object can define: no keyword, no name beginning or ending in '_' or
 * holding "__" (reserved), none <stdint.h> declares or reserves (uint64_t,
 * SIZE_MAX, INT8_C), none ending in "_size" (another image's size), no
 * name of the C standard library (NULL, errno, size_t, FILE, malloc,
 * printf...) and not main.  0, or GPUCC_EINVALID naming the defect. */
GPUCC_API int gpucc_embed_check_symbol(const char *symbol);
/* Write to obj_path a relocatable host object defining NAME, the bytes of
 * the image file image_path, and NAME_size, a uint64_t (laid out by
 * libgpucc itself: no LLVM is loaded), and with opts->header the header
 * gpucc_embed_write_header writes.  Both are written in full under
 * temporary names before either is published (renamed into place: the
 * object, then the header), so a failure leaves both as they were.  The
 * image is checked first as gpucc_image_verify does, payload digests
 * included: GPUCC_ECORRUPT, naming the file and the defect, for any file
 * that is not a valid image (a directory, a FIFO, an empty file, a
 * snapshot).  It is read through bounded buffers, checked and then copied
 * into the object, never held whole: memory does not grow with it.  The object
 * is ELF: GPUCC_EINVALID for a bad argument: a symbol that
 * gpucc_embed_check_symbol refuses, an alignment that is not
 * a power of two up to 4096, a triple that is not x86_64 or aarch64 Linux
 * with 64-bit pointers (not x32 nor ILP32), a section other than
 * .rodata.SUFFIX or a C identifier (read-only sections of the image's
 * own), an output naming the image, or the header naming the object. */
GPUCC_API int gpucc_embed_image(const char *image_path, const char *obj_path,
                                const gpucc_embed_options *opts);
/* Write a C header declaring what gpucc_embed_image defines (atomically). */
GPUCC_API int gpucc_embed_write_header(const char *header_path, const char *symbol);
/* The triple gpucc_embed_image uses when none is given. */
GPUCC_API const char *gpucc_embed_default_triple(void);

#ifdef __cplusplus
}
#endif
#endif
