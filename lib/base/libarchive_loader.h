/*
 * lib/base/libarchive_loader.h -- libarchive, loaded when first needed.
 *
 * Debian's libarchive.so.13 pulls libxml2, ICU and libstdc++ into every
 * process that links it: about 1.3 ms of start-up, more than a cache hit's
 * whole lookup.  Most commands never need it (uncompressed images are read
 * through their ustar headers directly, lib/image/image_open.c), so libgpucc
 * does not link it: the functions below are looked up with dlopen/dlsym on
 * first use -- by writers, by readers of compressed or unusual images, and
 * by verify's walk of an archive.  Types and constants come from
 * <archive.h> at build time.
 */
#ifndef GPUCC_LIB_LIBARCHIVE_LOADER_H
#define GPUCC_LIB_LIBARCHIVE_LOADER_H

#include <archive.h>
#include <archive_entry.h>

typedef struct gpucc_libarchive {
	const char *(*version_string)(void);
	/* errors and filters */
	const char *(*error_string)(struct archive *);
	int (*errno_)(struct archive *);
	void (*set_error)(struct archive *, int, const char *, ...);
	int (*filter_count)(struct archive *);
	la_int64_t (*filter_bytes)(struct archive *, int);
	/* reading */
	struct archive *(*read_new)(void);
	int (*read_support_format_tar)(struct archive *);
	int (*read_support_format_raw)(struct archive *);
	int (*read_support_filter_zstd)(struct archive *);
	int (*read_set_callback_data)(struct archive *, void *);
	int (*read_set_read_callback)(struct archive *, archive_read_callback *);
	int (*read_set_skip_callback)(struct archive *, archive_skip_callback *);
	int (*read_open1)(struct archive *);
	int (*read_open_memory)(struct archive *, const void *, size_t);
	int (*read_next_header)(struct archive *, struct archive_entry **);
	la_int64_t (*read_header_position)(struct archive *);
	la_ssize_t (*read_data)(struct archive *, void *, size_t);
	int (*read_data_block)(struct archive *, const void **, size_t *, la_int64_t *);
	int (*read_free)(struct archive *);
	/* writing */
	struct archive *(*write_new)(void);
	int (*write_set_format_pax_restricted)(struct archive *);
	int (*write_add_filter_zstd)(struct archive *);
	int (*write_set_filter_option)(struct archive *, const char *, const char *, const char *);
	int (*write_set_bytes_per_block)(struct archive *, int);
	int (*write_set_bytes_in_last_block)(struct archive *, int);
	int (*write_open_fd)(struct archive *, int);
	int (*write_header)(struct archive *, struct archive_entry *);
	la_ssize_t (*write_data)(struct archive *, const void *, size_t);
	int (*write_close)(struct archive *);
	int (*write_fail)(struct archive *);
	int (*write_free)(struct archive *);
	/* entries */
	struct archive_entry *(*entry_new)(void);
	void (*entry_free)(struct archive_entry *);
	const char *(*entry_pathname)(struct archive_entry *);
	__LA_MODE_T (*entry_filetype)(struct archive_entry *);
	const char *(*entry_hardlink)(struct archive_entry *);
	la_int64_t (*entry_size)(struct archive_entry *);
	int (*entry_sparse_count)(struct archive_entry *);
	void (*entry_set_pathname)(struct archive_entry *, const char *);
	void (*entry_set_filetype)(struct archive_entry *, unsigned int);
	void (*entry_set_perm)(struct archive_entry *, __LA_MODE_T);
	void (*entry_set_size)(struct archive_entry *, la_int64_t);
	void (*entry_set_uid)(struct archive_entry *, la_int64_t);
	void (*entry_set_gid)(struct archive_entry *, la_int64_t);
	void (*entry_set_uname)(struct archive_entry *, const char *);
	void (*entry_set_gname)(struct archive_entry *, const char *);
	void (*entry_set_mtime)(struct archive_entry *, time_t, long);
} gpucc_libarchive;

/* The functions, loading libarchive on the first call (thread-safe).  NULL,
 * with GPUCC_EUNAVAILABLE as the last error, when it cannot be loaded. */
const gpucc_libarchive *gpucc_libarchive_load(void);
/* The functions after gpucc_libarchive_load has succeeded, which every
 * holder of a struct archive has ensured. */
const gpucc_libarchive *gpucc_libarchive_loaded(void);
#define GPUCC_LA (gpucc_libarchive_loaded())

#endif
