/*
 * gpucc/image.h -- reading and writing precompile images (formats/image.md).
 *
 * An image is an immutable POSIX pax tar, optionally zstd-compressed, holding
 * a format member, a manifest and one member per distinct payload.  Opening an
 * image reads and checks the format member and the manifest only; payloads
 * are read, and verified against their SHA-256, when asked for.  Writing is
 * streaming: a writer keeps entries' metadata in memory and copies payload
 * bytes from their sources when it commits, so its memory does not grow with
 * payload size.
 *
 * Threads.  Once open, an image handle may be used from any number of threads
 * at once: every function that takes one, const or not -- the queries, the
 * payload reads, verify, and the functions of runtime.h, cache.h and
 * snapshot.h that read an image -- is safe to call concurrently on the same
 * handle, and each thread gets its own results and its own last error.  The
 * exceptions, said again at each function: gpucc_image_free ends the handle
 * (no call on it may be running or follow); the reads of a compressed image,
 * or of one read through its archive headers (a pipe, an image not laid out
 * as formats/image.md says), take turns, one call at a time, while those of
 * an uncompressed image in a file or in memory run in parallel; and an image
 * writer is used by one thread at a time (its source images may be read by
 * others meanwhile).  Different handles, even of one file, are independent.
 *
 * A file that is cut short in place while an image of it is opened or read
 * (cp rewrites its target so) makes those calls fail with GPUCC_ECORRUPT
 * ("truncated image"), never the process die of SIGBUS: payloads are read
 * with pread, and so is the manifest, unless the program has asked
 * (gpucc_image_set_sigbus_guard) for it to be parsed in place from a
 * mapping guarded by a SIGBUS handler.  gpucc_image_open_mapped (runtime.h)
 * is the exception.
 *
 * Process-wide state.  libgpucc installs no signal handler and sets no
 * default unless the program calls the function that says so:
 * gpucc_image_set_sigbus_guard, gpucc_image_set_default_limits and
 * gpucc_set_config (gpucc/config.h).  The gpucc command calls all three.
 */
#ifndef GPUCC_IMAGE_H
#define GPUCC_IMAGE_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpucc_image gpucc_image;

/* Bounds on what reading an untrusted image may cost (formats/image.md,
 * "Limits").  An image past one is refused as GPUCC_ECORRUPT, with a message
 * that names the limit and how to raise it (the setting the program named
 * in gpucc_image_set_default_limits, unless the caller gave the limits).
 * In every field 0 means "the default". */
typedef struct gpucc_image_limits {
	unsigned version; /* GPUCC_IMAGE_LIMITS_VERSION */
	/* Compressed images: the most bytes the archive may expand to
	 * (default 32 GiB). */
	uint64_t expanded_size;
	/* Compressed images: the most expanded bytes per compressed byte
	 * (default 1000), checked once 16 MiB have been expanded. */
	uint64_t expansion_ratio;
	/* The most bytes of manifest JSON, which is held in memory while it is
	 * parsed (default 128 MiB; never more than 2 GiB). */
	uint64_t manifest_size;
} gpucc_image_limits;

/* The version of gpucc_image_limits this header declares.  A caller sets
 * it (GPUCC_IMAGE_LIMITS_INIT: every limit its default, or
 * gpucc_image_default_limits), so that a later libgpucc whose struct has
 * grown knows how much of it the caller gave; a version this libgpucc
 * does not know is GPUCC_EINVALID. */
#define GPUCC_IMAGE_LIMITS_VERSION 1
#define GPUCC_IMAGE_LIMITS_INIT {GPUCC_IMAGE_LIMITS_VERSION, 0, 0, 0}

/* The limits that gpucc_image_open and every other reader of images use
 * when not given their own: the defaults above, or those the program set
 * with gpucc_image_set_default_limits.  libgpucc reads no environment
 * variable for them (the gpucc command reads GPUCC_IMAGE_LIMITS). */
GPUCC_API int gpucc_image_default_limits(gpucc_image_limits *out);
/* Set the limits of every reader not given its own, for the whole process
 * (NULL: the defaults above); call it before other threads read images.
 * setting, when not NULL, names where the program's user changes them (the
 * gpucc command: "GPUCC_IMAGE_LIMITS"), for the refusals' messages: "raise
 * the limit with SETTING=ratio=N".  GPUCC_EINVALID for limits of another
 * version. */
GPUCC_API int gpucc_image_set_default_limits(const gpucc_image_limits *limits, const char *setting);
/* Apply text, a comma-separated list of NAME=VALUE with NAME one of
 * expanded, ratio and manifest and VALUE a size as gpucc_size_parse reads
 * it ("expanded=64G,ratio=5000"; 0 turns a check off, the manifest keeping
 * its 2 GiB bound), to *out, whose other fields stay.  GPUCC_EINVALID,
 * naming the item, when text is malformed (*out unchanged). */
GPUCC_API int gpucc_image_limits_parse(gpucc_image_limits *out, const char *text);

/* Parse the manifest of an image file in place, from a read-only mapping
 * of it, instead of reading it into memory first (enable true), for the
 * whole process: a manifest of 10,000 entries is 5 MiB, whose copy costs
 * several times the rest of opening it.  While a manifest is parsed so,
 * libgpucc installs a SIGBUS handler that turns the pages a file cut short
 * in place took away into zeros (the open then fails as a truncated
 * image), hands any other SIGBUS to the handler that was there before, and
 * puts that handler back when no manifest is being parsed.  Off by
 * default, so that a program that does not ask never has its SIGBUS
 * disposition changed; images in memory and gpucc_image_open_mapped never
 * use it.  Call it before other threads read images. */
GPUCC_API void gpucc_image_set_sigbus_guard(bool enable);

/* Open the image at path.  GPUCC_ENOTFOUND when it does not exist,
 * GPUCC_EVERSION for another format version, GPUCC_ECORRUPT when it is not a
 * valid image or is past a limit, GPUCC_EINVALID when path is too long to
 * open.  Error messages name the path (an absurd one cut). */
GPUCC_API int gpucc_image_open(gpucc_image **out, const char *path);
/* Open the image at path under limits (NULL: gpucc_image_default_limits;
 * a 0 field: that field's default). */
GPUCC_API int gpucc_image_open_limited(gpucc_image **out, const char *path,
                                       const gpucc_image_limits *limits);
/* Open an image from a readable, seekable or not, file descriptor.  The image
 * uses a duplicate; the caller keeps fd.  name is used in messages. */
GPUCC_API int gpucc_image_open_fd(gpucc_image **out, int fd, const char *name);
/* Open an image held in memory, without copying: data must outlive the
 * image, unchanged.  name is used in messages. */
GPUCC_API int gpucc_image_open_memory(gpucc_image **out, const void *data, size_t size,
                                      const char *name);
/* Open an image for looking up a few entries: like gpucc_image_open and
 * gpucc_image_open_memory, but an uncompressed image with an index
 * (formats/image.md, "The index") opens without parsing its manifest.
 * gpucc_image_lookup, gpucc_image_find, gpucc_image_select given a kernel,
 * and the payload reads of the entries they return then read the index
 * and parse only the entries they find, each checked (its key recomputed
 * from its fields, its payloads against their digests), so that a lying
 * index makes a lookup fail, never return another entry.  What needs the
 * whole manifest -- gpucc_image_entry_count, gpucc_image_entry, the
 * payload list, verify -- parses it on first use: they return 0 or NULL
 * when that fails, so call gpucc_image_load_manifest first to get the
 * error.  An index that leaves a record out is not seen by a lookup
 * (it finds less); gpucc_image_verify_structure checks the whole
 * binding once.  Other images open as gpucc_image_open opens them.
 * Threads as for any handle. */
GPUCC_API int gpucc_image_open_for_lookup(gpucc_image **out, const char *path);
GPUCC_API int gpucc_image_open_memory_for_lookup(gpucc_image **out, const void *data,
                                                 size_t size, const char *name);
/* Parse the whole manifest of an image opened for lookup now, if it is not
 * yet: 0, or the error (GPUCC_ECORRUPT, ...), the same on every call.
 * 0 at once for any other image. */
GPUCC_API int gpucc_image_load_manifest(const gpucc_image *img);
/* Release the image; accepts NULL.  Entries and payload descriptions
 * borrowed from it go with it.  Not concurrently with any other call on
 * img: every thread must be done with it. */
GPUCC_API void gpucc_image_free(gpucc_image *img);

/* The name given at open (the path for gpucc_image_open). */
GPUCC_API const char *gpucc_image_name(const gpucc_image *img);
/* True when the image is zstd-compressed. */
GPUCC_API bool gpucc_image_is_compressed(const gpucc_image *img);

/* Entries, sorted by key.  Borrowed from the image. */
GPUCC_API size_t gpucc_image_entry_count(const gpucc_image *img);
GPUCC_API const gpucc_entry *gpucc_image_entry(const gpucc_image *img, size_t index);

/* Find the entry whose key has this hex prefix (1 to 64 digits); *out is
 * borrowed from the image.  GPUCC_ENOTFOUND when none has;
 * GPUCC_EAMBIGUOUS, with the candidates in the message, when several
 * have; GPUCC_EINVALID when the prefix is not hex. */
GPUCC_API int gpucc_image_lookup(const gpucc_entry **out, const gpucc_image *img,
                                 const char *key_prefix);
/* Find an entry by exact key: NULL when absent. */
GPUCC_API const gpucc_entry *gpucc_image_find(const gpucc_image *img, const gpucc_digest *key);

/* The distinct payloads of the image in archive order (formats/image.md).
 * Reading payloads in this order reads the image once, front to back.
 *
 * The list is built from the manifest on first use, and that can fail
 * after a successful open: GPUCC_ECORRUPT when the manifest lists one
 * payload with two sizes, GPUCC_ERROR when memory runs out (and the same
 * failure on every later call).  gpucc_image_count_payloads sets *out (0
 * for an image without payloads) and returns 0, or returns the error and
 * leaves *out alone.  Once it has returned 0, gpucc_image_payload returns
 * the payload for every index below the count (NULL past it, or when the
 * list cannot be built). */
GPUCC_API int gpucc_image_count_payloads(size_t *out, const gpucc_image *img);
GPUCC_API const gpucc_payload *gpucc_image_payload(const gpucc_image *img, size_t index);

/* Read one payload into a new buffer (release with gpucc_free), after
 * checking its size and SHA-256: GPUCC_ECORRUPT when they do not match.
 * Threads: calls on one handle run in parallel for an uncompressed image
 * in a file or in memory (each reads its member at its own offset); for a
 * compressed image they take turns (one decompressor per handle, which
 * reads payloads asked for in archive order in one pass: several threads
 * asking out of order make it start again). */
GPUCC_API int gpucc_image_read_payload(void **out, size_t *out_size, gpucc_image *img,
                                       const gpucc_payload *payload);
/* Stream one payload to fd in bounded memory.  The digest is checked at the
 * end, so on GPUCC_ECORRUPT fd has received unverified bytes: write to a
 * temporary file and publish it only on success.  Threads as for
 * gpucc_image_read_payload (a compressed image's turn lasts until the
 * payload is written to fd). */
GPUCC_API int gpucc_image_copy_payload(gpucc_image *img, const gpucc_payload *payload, int fd);

/* Check everything: format version, manifest, that every listed member is
 * present once, regular, safely named, of the listed size and digest, that
 * no other member exists, and that only zero bytes follow the end-of-archive
 * marker (formats/image.md, "Reading"; not checked for an image read from a
 * pipe).  0, or the first defect in the last error.  Threads: an
 * uncompressed image in a file or in memory is verified alongside other
 * calls; a compressed one takes its turn with the payload reads. */
GPUCC_API int gpucc_image_verify(gpucc_image *img);
/* Check what gpucc_image_verify checks but the payloads' bytes: the
 * manifest whole, every key against its fields, the index byte for byte
 * against the one the manifest gives, every member's header in order
 * (named and sized as listed), and only zero bytes after the
 * end-of-archive marker.  This is what binds lookups to the manifest
 * (formats/image.md, "What binds a lookup to the manifest"): on an image
 * it accepts, gpucc_image_select and the runtime pick from every entry
 * the manifest lists, and nothing else.  A lookup cannot tell by itself
 * (an index that leaves out a kernel's record hides that entry from the
 * selection); call this once after opening an image you did not write or
 * verify.  It reads the manifest and one block per member (payload data
 * too for a compressed image, which is decompressed to reach the
 * headers, and for one libarchive must read: pax headers, a pipe).
 * 0, or the first defect in the last error; threads as for verify. */
GPUCC_API int gpucc_image_verify_structure(gpucc_image *img);

/* ---- extracting ---------------------------------------------------------- */

/* One file gpucc_image_extract writes: its name in the directory and the
 * payload it holds (borrowed from the image). */
typedef struct gpucc_extract_file {
	const char *name;
	const gpucc_payload *payload;
} gpucc_extract_file;

/* Told every file once all are in place, before the files they replaced are
 * dropped: a non-zero return (a GPUCC_E* code, or any other: GPUCC_ERROR)
 * undoes the extraction, as when the caller cannot report what was written;
 * the caller sets the last error. */
typedef int (*gpucc_extract_fn)(void *ctx, const gpucc_extract_file *files, size_t count);

typedef struct gpucc_extract_options {
	unsigned version;             /* GPUCC_EXTRACT_OPTIONS_VERSION */
	bool force;                   /* replace files that exist (regular files and links) */
	gpucc_extract_fn before_commit; /* may be NULL */
	void *ctx;
	/* Version 2: only the entries these keys name (key_count of them; each
	 * a key or a unique hex prefix, as gpucc_image_lookup takes it; an
	 * entry named twice is written once), found as gpucc_image_lookup
	 * finds them: through the index of an image opened for lookup, whose
	 * manifest and other entries' payloads are then never read.  NULL (or
	 * key_count 0): every entry.  Borrowed for the call. */
	const char *const *keys;
	size_t key_count;
} gpucc_extract_options;

/* Version 1 ends at ctx; gpucc_image_extract takes both. */
#define GPUCC_EXTRACT_OPTIONS_VERSION 2
#define GPUCC_EXTRACT_OPTIONS_INIT {GPUCC_EXTRACT_OPTIONS_VERSION, false, NULL, NULL, NULL, 0}
GPUCC_API void gpucc_extract_options_init(gpucc_extract_options *opts);

/* Write every payload of every entry of img (or of those opts->keys
 * names) into dir (created, with its parents, when missing), each as a file named
 * <module stem>.<target, ':' as '_'>.<first 12 key digits>.<extension>,
 * sanitised to [A-Za-z0-9._+-] so that nothing lands outside dir, with the
 * mode 0666 less the umask.  All or nothing: every payload is verified and
 * flushed before any name appears, and a failure leaves dir as it was
 * (files force replaced put back, directories made removed).  A file that
 * exists, without opts->force, and a directory, a non-file or the image's
 * own file named like an output even with it, are refused before anything
 * is written (GPUCC_ERROR naming the file); a payload's defect is the
 * reader's error, and so is a key no entry has (GPUCC_ENOTFOUND), or
 * several (GPUCC_EAMBIGUOUS), before anything is written.  opts NULL: the
 * defaults. */
GPUCC_API int gpucc_image_extract(gpucc_image *img, const char *dir,
                                  const gpucc_extract_options *opts);

/* ---- writing ------------------------------------------------------------ */

typedef struct gpucc_image_writer gpucc_image_writer;

typedef struct gpucc_write_options {
	unsigned version; /* GPUCC_WRITE_OPTIONS_VERSION */
	int zstd_level;  /* 0: uncompressed; 1..22: zstd at that level */
	bool use_mtime;  /* false: the config's source_date_epoch (gpucc/config.h), else 0 */
	int64_t mtime;   /* member mtime when use_mtime */
	/* Skip the fsyncs of the output and its directory.  A killed process
	 * still leaves the old file or the new one, never a torn one; a power
	 * loss or system crash soon after may lose the new one.  For outputs
	 * that are cheap to make again, such as a CI job's artifacts. */
	bool no_sync;
} gpucc_write_options;

/* The version of gpucc_write_options this header declares, which callers
 * set (as GPUCC_IMAGE_LIMITS_VERSION); GPUCC_WRITE_OPTIONS_INIT and
 * gpucc_write_options_init give the defaults: uncompressed, mtime from
 * the config's source_date_epoch (SOURCE_DATE_EPOCH when the program took
 * it from the environment), synced. */
#define GPUCC_WRITE_OPTIONS_VERSION 1
/* The zstd level a program uses when its user asks for zstd without
 * saying a level (the gpucc command's bare --zstd, every command alike):
 * zstd's own default, 3, which compresses at hundreds of MB/s with small
 * tables; reading is as fast whatever the level.  Images to ship ask for
 * more (19: smaller, but about 100 MiB of tables and seconds per 10 MB). */
#define GPUCC_ZSTD_DEFAULT_LEVEL 3
#define GPUCC_WRITE_OPTIONS_INIT {GPUCC_WRITE_OPTIONS_VERSION, 0, false, 0, false}
GPUCC_API void gpucc_write_options_init(gpucc_write_options *opts);

/* Where one payload's bytes come from when the writer commits. */
typedef struct gpucc_payload_source {
	gpucc_part part;
	const char *path;  /* a file to copy; or NULL and ... */
	const void *data;  /* ... bytes in memory, borrowed until commit */
	size_t size;
} gpucc_payload_source;

/* Start an image that will replace path when committed.  Writes go to a
 * temporary file beside path; nothing at path changes before commit.
 * GPUCC_EINVALID for an empty path or a zstd level out of range.
 * A writer is not thread-safe: one thread at a time uses it, from
 * gpucc_image_writer_new to gpucc_image_writer_free. */
GPUCC_API int gpucc_image_writer_new(gpucc_image_writer **out, const char *path,
                                     const gpucc_write_options *opts);
/* Add an entry described by e, with payloads from sources (e->payloads is
 * ignored: parts, digests and sizes come from the sources, which are hashed
 * now and checked again at commit).  An entry whose key is already present
 * with identical content is skipped; with different content it is
 * GPUCC_ECONFLICT and the writer is unchanged. */
GPUCC_API int gpucc_image_writer_add(gpucc_image_writer *w, const gpucc_entry *e,
                                     const gpucc_payload_source *sources, size_t source_count);
/* Put an entry described by hand (from files another tool wrote, as
 * gpucc_image_writer_add_files does) in the canonical form writers and
 * keys need, and key it.  The
 * arrays e points to (options, device_libs, externals) and sources must be
 * the caller's own writable arrays: they are sorted in place (options,
 * device libraries and externals by name, sources by part).  key_schema,
 * gpucc_version and llvm_version are filled where 0 or NULL (this
 * libgpucc's key schema and versions), then key is computed.
 * GPUCC_EINVALID, naming the defect, for a description no image holds: no
 * module name, no target or one gpucc does not know, no payload, two
 * payloads of one part, a payload of the other vendor's, or an option,
 * device library, external or kernel named twice. */
GPUCC_API int gpucc_entry_prepare(gpucc_entry *e, gpucc_payload_source *sources, size_t source_count);
/* Check that the cubin or AMD code object (part) open at fd, named name in
 * messages, is one a GPU runtime loads, when it is an ELF at all: a 64-bit
 * little-endian executable for EM_CUDA, or a shared object for EM_AMDGPU.
 * GPUCC_ECORRUPT, naming the file and the slip (a relocatable cubin, an
 * unlinked AMDGPU object, the two swapped), otherwise; GPUCC_ERROR when fd
 * cannot be read.  Bytes that are not an ELF (a fatbin, test data), and
 * other parts, are accepted as given.  Reads with pread: fd's offset is
 * left alone. */
GPUCC_API int gpucc_code_object_check(gpucc_part part, int fd, const char *name);
/* A device library of a gpucc_entry_files: a file, hashed, or its digest. */
typedef struct gpucc_device_lib_file {
	const char *name;   /* NULL: the base name of file */
	const char *file;   /* the library, or NULL and ... */
	const char *sha256; /* ... its SHA-256, 64 hex digits (name required) */
} gpucc_device_lib_file;

/* An entry described by hand, from files another tool wrote (llc, ptxas,
 * ld.lld) and the metadata its user gives, as `gpucc pack` takes it.
 * Arrays and strings are borrowed for the call. */
typedef struct gpucc_entry_files {
	unsigned version;          /* GPUCC_ENTRY_FILES_VERSION */
	const char *module;        /* the name to record; NULL: from module_file
	                              (gpucc_module_name_from_path) */
	const char *module_file;   /* the input module, whose SHA-256 is the
	                              module digest, or NULL and ... */
	const char *module_sha256; /* ... that digest, 64 hex digits */
	const char *target;        /* any spelling gpucc_target_parse takes */
	const gpucc_kernel *kernels; /* in order */
	size_t kernel_count;
	const gpucc_option *options;
	size_t option_count;
	const gpucc_device_lib_file *device_libs;
	size_t device_lib_count;
	const char *const *externals;
	size_t external_count;
	const char *payloads[GPUCC_PART_COUNT]; /* a file per part; NULL: none */
	const char *gpucc_version; /* NULL: this libgpucc's */
	const char *llvm_version;  /* NULL: this libgpucc's LLVM */
} gpucc_entry_files;

/* The version of gpucc_entry_files this header declares, which callers set
 * (as GPUCC_IMAGE_LIMITS_VERSION); GPUCC_ENTRY_FILES_INIT and
 * gpucc_entry_files_init give an empty description. */
#define GPUCC_ENTRY_FILES_VERSION 1
#define GPUCC_ENTRY_FILES_INIT                                                          \
	{GPUCC_ENTRY_FILES_VERSION, NULL, NULL, NULL, NULL, NULL, 0, NULL, 0, NULL, 0, NULL, 0, \
	 {NULL, NULL, NULL, NULL}, NULL, NULL}
GPUCC_API void gpucc_entry_files_init(gpucc_entry_files *files);

/* Build the entry files describes and add it to w: each file is opened
 * once, in the order module, device libraries, payloads, and must be a
 * regular file (a FIFO or a device is refused, not waited on) and not the
 * file w will replace (inputs are never modified); the module and device
 * libraries are hashed; each cubin and code object is checked with
 * gpucc_code_object_check; then gpucc_entry_prepare puts the entry in
 * canonical form and keys it, and gpucc_image_writer_add adds it.  *key,
 * when key is not NULL, is the entry's key once it has one, also when the
 * writer refuses it as a conflict.  The arrays and strings of files are
 * borrowed for the call only.  Errors: an open's (GPUCC_ENOTFOUND for a
 * file that does not exist), GPUCC_EINVALID naming the defect (no module,
 * both a module file and a digest, a digest that is not 64 hex digits, an
 * empty kernel, option, external or device library name, a file that is
 * not a regular one or is w's output, or what gpucc_target_parse and
 * gpucc_entry_prepare refuse), GPUCC_ECORRUPT for a code object no runtime
 * loads, and the writer's (GPUCC_ECONFLICT). */
GPUCC_API int gpucc_image_writer_add_files(gpucc_image_writer *w, const gpucc_entry_files *files,
                                           gpucc_digest *key);
/* Add an entry of an open image with its payloads, which are streamed from
 * src (and verified) at commit: src must stay open until then.  Duplicates
 * and conflicts as for gpucc_image_writer_add.  Other threads may go on
 * reading src (or adding it to their own writers) meanwhile. */
GPUCC_API int gpucc_image_writer_add_from(gpucc_image_writer *w, gpucc_image *src,
                                          const gpucc_entry *e);
/* Find an entry already added, by key: NULL when absent. */
GPUCC_API const gpucc_entry *gpucc_image_writer_find(const gpucc_image_writer *w,
                                                     const gpucc_digest *key);
/* Remove an entry already added (for "last wins" policies). */
GPUCC_API int gpucc_image_writer_remove(gpucc_image_writer *w, const gpucc_digest *key);
/* The number of entries the image will hold: added, less those removed. */
GPUCC_API size_t gpucc_image_writer_entry_count(const gpucc_image_writer *w);
/* Write the image and atomically replace path: the bytes depend only on the
 * set of entries (and the write options).  On failure path is unchanged and
 * the temporary file is removed. */
GPUCC_API int gpucc_image_writer_commit(gpucc_image_writer *w);
/* Release the writer; an uncommitted image is discarded. */
GPUCC_API void gpucc_image_writer_free(gpucc_image_writer *w);

#ifdef __cplusplus
}
#endif
#endif
