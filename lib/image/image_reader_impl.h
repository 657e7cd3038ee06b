/*
 * lib/image/image_reader_impl.h -- what the files of the image reader share:
 * the handle of an open image and the helpers one file of the reader calls
 * in another (formats/image.md).  Each file calls only those before it:
 *
 *   image_reader.c   the limits, the libarchive source and the cursor, the
 *                    manifest's bytes
 *   image_open.c     opening and closing: the member checks, the format
 *                    member, index and manifest
 *   image_lookup.c   the manifest of an image opened for lookups, the payload
 *                    list, and the queries
 *   image_payload.c  reading payloads, and parking
 *   image_verify.c   verify, and whether an image is whole
 *
 * Opening reads two members: the format member, checked before anything
 * else, and the manifest.  Payloads are read on demand and always verified
 * against their size and SHA-256 before the caller may trust them.
 *
 * Two ways to reach a payload:
 *  - random access, for uncompressed images in a file or in memory: every
 *    member header of a v1 image is one 512-byte ustar block, so the offset
 *    of each payload follows from the sizes in the manifest; the header found
 *    there is checked (name, size, type) before its data are used, and any
 *    disagreement falls back to ...
 *  - the sequential cursor: a libarchive reader that walks the members in
 *    archive order and checks each against the manifest.  Reads in archive
 *    order cost one pass; reading backwards reopens the archive.
 * verify walks the ustar headers itself, of a compressed image over its
 * decompressed bytes, so that it reads an image once, what follows the
 * end-of-archive marker included (walk_source).
 *
 * A file may be cut short in place while it is read (cp rewrites its
 * target so).  Its headers and payloads are read with pread, which then
 * comes up short; its manifest is parsed in place from a mapping (a copy
 * of a large manifest would cost more than the whole parse), under a
 * SIGBUS guard (lib/image/sigbus_guard.h) that turns the pages the cut took away
 * into zeros and says so.  Either way the image is reported truncated,
 * where an unguarded mapping would have ended the process.
 *
 * Threads (gpucc/image.h): once open, a handle is read from any number of
 * threads at once.  What the manifest gave is never written again.  The
 * payload list is built once, under lock, and published through the
 * atomic payloads_ready.  Random access needs no shared state beyond the
 * read-ahead window, which a read borrows when no other thread holds it
 * (window_busy) and otherwise does without: one thread reading in archive
 * order keeps its read-ahead, several threads each pread what they need.
 * The sequential cursor -- libarchive's reader and its source position,
 * the decompressor of a compressed image -- is one per handle and used
 * under lock, so compressed images are read one payload at a time.
 * Parked images (gpucc_image_park) are read on one thread.
 */
#ifndef GPUCC_LIB_IMAGE_READER_IMPL_H
#define GPUCC_LIB_IMAGE_READER_IMPL_H

#include "image_internal.h"

#include "image_index.h"
#include "libarchive_loader.h"
#include "manifest.h"
#include "read_window.h"
#include "sha256.h"
#include "sigbus_guard.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define BLOCK 512
#define READ_CHUNK ((size_t)1 << 16)
/* Payloads streamed in archive order are read this much at a time
 * (read_window.h). */
#define WINDOW_SIZE ((size_t)256 << 10)

/* An entry found through the index of an image opened for lookups: the
 * manifest of that one entry, parsed from its object, and where the index
 * says its payload members are. */
typedef struct indexed_entry {
	gpucc_manifest manifest;
	uint64_t offsets[GPUCC_PART_COUNT];
	struct indexed_entry *next;
} indexed_entry;

/* Which limit stopped a read (gpucc_image.limit_hit). */
enum { WITHIN_LIMITS, OVER_EXPANDED_SIZE, OVER_EXPANSION_RATIO };

struct gpucc_image {
	char *name;
	int fd;                 /* -1 for memory images */
	bool seekable;          /* fd is a regular file */
	const unsigned char *data; /* memory images */
	size_t size;
	bool compressed;
	gpucc_image_limits limits;
	/* The limits came from the caller (gpucc_image_open_limited), not
	 * from GPUCC_IMAGE_LIMITS: messages do not send the user there. */
	bool limits_given;
	int limit_hit;          /* WITHIN_LIMITS, or the limit that stopped the cursor
	                         * (cursor state: under lock) */

	gpucc_manifest manifest;
	/* The data sizes of the format member and the manifest, for the
	 * length an uncompressed image must have (gpucc_image_check_whole). */
	uint64_t format_size, manifest_size;
	/* The format's minor version: 1 and up, the image has an index
	 * member (formats/image.md, "The index") of index_size bytes: at
	 * index_offset in an image read at offsets (0: not known), and in
	 * index_data when it was read through libarchive (for verify). */
	unsigned format_minor;
	uint64_t index_offset, index_size;
	unsigned char *index_data;
	/* Where the manifest's data are in an image read at offsets (0: not
	 * known). */
	uint64_t manifest_offset;

	/* Opened for lookups (gpucc_image_open_for_lookup) and read at
	 * offsets with an index: by_index, and the manifest is parsed on the
	 * first use of all of it (ensure_manifest: once, under lock,
	 * published through manifest_ready).  Until then lookups read the
	 * index and parse only the entries they find, kept in the list
	 * indexed (added to under lock, never changed once added). */
	bool want_index; /* asked for at open */
	bool by_index;
	gpucc_index_reader index;
	atomic_bool manifest_ready;
	int manifest_rc;
	char *manifest_error;
	indexed_entry *indexed;
	gpucc_payload *payloads; /* distinct, in archive order */
	size_t payload_count;

	/* The payload list is built on first use (list and show never need
	 * it), under lock; payloads_rc remembers a failure to build it.  Once
	 * payloads_ready is true, the list and the fields from here to the
	 * window never change again. */
	atomic_bool payloads_ready;
	int payloads_rc;
	char *payloads_error; /* its message */

	/* Random access (uncompressed only): where the first payload header
	 * must be (0: unknown), and the header offset of each payload. */
	uint64_t payload_base;
	bool offsets_known;
	uint64_t *header_offsets;

	/* Read-ahead for payloads streamed in archive order from a file
	 * (stream_at_offset), used by one read at a time: the one that set
	 * window_busy. */
	gpucc_read_window window;
	atomic_flag window_busy;

	/* Held while the payload list is built, and while the cursor is used:
	 * the fields from here to park_path, and limit_hit. */
	pthread_mutex_t lock;

	/* The sequential cursor. */
	struct archive *cursor;
	size_t cursor_next;   /* index of the payload the next member should be */
	/* The cursor stands just after the manifest's data, no header read
	 * since: verify continues from there (a pipe cannot be reopened). */
	bool cursor_after_head;
	uint64_t fd_position; /* read position of the cursor in fd (or in data) */
	unsigned char *fd_buffer;

	/* A parked image (gpucc_image_park) holds no descriptor between
	 * reads: each reopens this path and checks it is still the file,
	 * unchanged (device, inode, size and modification time). */
	char *park_path;
	dev_t park_dev;
	ino_t park_ino;
	off_t park_size;
	struct timespec park_mtime;

	/* Called last by gpucc_image_free (gpucc_image_on_free). */
	void (*on_free)(void *ctx);
	void *on_free_ctx;
};

/* Tests read images through libarchive only, to compare the two readers
 * (a test hook: meson option test_hooks; gpucc_image_force_libarchive sets
 * it, in lib/image/image_open.c). */
#ifdef GPUCC_TEST_HOOKS
extern bool gpucc_image_libarchive_only;
#else
enum { gpucc_image_libarchive_only = 0 };
#endif

/* ---- lib/image/image_reader.c: limits, the libarchive source, the cursor -------- */

/* Whether the cursor (or another reader a) of a compressed image has
 * expanded past a limit; remembers which in img->limit_hit. */
bool gpucc_image_over_limits(gpucc_image *img, struct archive *a);
/* The error for the limit that stopped the cursor. */
int gpucc_image_limit_error(const gpucc_image *img);
/* Parse the manifest's size bytes at json into img->manifest, under the
 * manifest limit. */
int gpucc_image_parse_manifest(gpucc_image *img, const char *json, size_t size);
/* libarchive calls on the cursor that check the limits after reading: a
 * header, or data. */
int gpucc_image_cursor_next_header(gpucc_image *img, struct archive_entry **e);
la_ssize_t gpucc_image_cursor_read_data(gpucc_image *img, void *buf, size_t size);

enum { READ_AS_TAR, READ_AS_RAW };
/* A new libarchive reader of the image from its beginning, under the
 * limits, reading it as READ_AS_TAR or READ_AS_RAW, not yet opened. */
int gpucc_image_source_open(gpucc_image *img, struct archive **out, int format);
/* Start a fresh cursor at the beginning of the image. */
int gpucc_image_cursor_open(gpucc_image *img);
/* The error for a failed read of the cursor while doing something. */
int gpucc_image_archive_failure(gpucc_image *img, const char *doing);
/* Read len bytes at offset of the image, without the cursor: the byte
 * count read (short at the end of the image) or -1. */
ssize_t gpucc_image_read_at(gpucc_image *img, uint64_t offset, void *buf, size_t len);

/* Where the bytes of the manifest are while it is parsed
 * (gpucc_image_manifest_open): in an image in memory, in place; from a
 * regular file, in a read-only mapping of it under a SIGBUS guard
 * (lib/image/sigbus_guard.h: the file may be cut short meanwhile), or, where no
 * guard can be had, read into memory. */
typedef struct manifest_view {
	const char *json;
	void *map;  /* the mapping (map_size bytes), guarded, or NULL */
	size_t map_size;
	gpucc_sigbus_guard guard;
	char *copy; /* the bytes read, or NULL */
} manifest_view;
/* The manifest's size bytes, whose header is at offset, in *v: 0, or 1
 * when they cannot all be had. */
int gpucc_image_manifest_open(gpucc_image *img, uint64_t offset, uint64_t size, manifest_view *v);
/* Let go of them: true when the file was cut short while they were read. */
bool gpucc_image_manifest_close(manifest_view *v);
/* The manifest member's and the index member's sizes against the limits. */
int check_manifest_size(const gpucc_image *img, uint64_t size);
int gpucc_image_check_index_size(const gpucc_image *img, uint64_t size);
/* Whether libarchive's error says the input ended early. */
bool says_truncated(const char *why);

/* ---- lib/image/image_open.c: member checks, the head, opening and closing ------- */

/* Room for a member name as messages show it. */
#define SHOWN_NAME_SIZE 256
/* name as messages show it: on one line, unable to drive a terminal. */
const char *gpucc_image_shown_name(char out[SHOWN_NAME_SIZE], const char *name);
/* A member's name must be there and stay inside the directory it is
 * extracted to. */
int gpucc_image_check_path(const gpucc_image *img, const char *path);
/* Header e must be a regular file with a safe relative path. */
int gpucc_image_check_member_kind(const gpucc_image *img, struct archive_entry *e);
/* The format member and the index member, read through the cursor. */
int gpucc_image_read_format_member(gpucc_image *img);
int gpucc_image_read_index_member(gpucc_image *img);
/* Skip the format member, the index and the manifest of a freshly opened
 * cursor. */
int gpucc_image_cursor_skip_head(gpucc_image *img);

/* ---- lib/image/image_lookup.c: the manifest and the payload list ---------------- */

/* Whether img's whole manifest is parsed (at open, or since). */
bool gpucc_image_manifest_loaded(const gpucc_image *img);
/* The header offset the index gives for payload p of an entry found
 * through it: 0 and *offset, or 1 when no such entry holds p. */
int gpucc_image_indexed_payload_offset(gpucc_image *img, const gpucc_payload *p,
                                       uint64_t *offset);
/* The whole manifest and the payload list (with the payloads' offsets
 * where they can be computed), built once for all threads: 0 or an error. */
int gpucc_image_ensure_payloads(gpucc_image *img);

/* ---- lib/image/image_payload.c: reading payloads, parking ----------------------- */

/* Where the bytes of the payload being streamed are hashed: here, into
 * md, or on a checker's thread (gpucc_image_stream_payload_checked). */
typedef struct payload_hash {
	gpucc_sha256 md;
	gpucc_payload_checker *checker;
	unsigned char *local; /* READ_CHUNK bytes to read into without a checker */
} payload_hash;

/* The defect what of member of img (gpucc_image_member_error). */
int gpucc_image_digest_mismatch(const gpucc_image *img, const char *member, const char *what);
/* Why a member named path stands where expected (NULL: nothing) should. */
int gpucc_image_unexpected_name(const gpucc_image *img, const char *path, const char *expected);
/* Move the cursor to the header of payload index. */
int gpucc_image_cursor_seek(gpucc_image *img, size_t index);
/* Stream payload index through the cursor into sink, hashed into h. */
int gpucc_image_stream_with_cursor(gpucc_image *img, size_t index, gpucc_payload_sink sink,
                                   void *ctx, payload_hash *h);
/* Finish md and compare it with payload i's digest. */
int gpucc_image_check_digest(gpucc_image *img, size_t i, gpucc_sha256 *md);
/* Reopen a parked image for a read (a no-op for any other image), and
 * close it again after a read that returned rc (returns rc). */
int gpucc_image_unpark(gpucc_image *img);
int gpucc_image_repark(gpucc_image *img, int rc);

#endif
