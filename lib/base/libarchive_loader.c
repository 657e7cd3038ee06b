/*
 * lib/base/libarchive_loader.c -- libarchive loaded on first use
 * (lib/base/libarchive_loader.h), through lib/base/library_loader.h.
 * GPUCC_LIBARCHIVE names another file to load (for tests and unusual
 * installs).
 */
#include "libarchive_loader.h"

#include "config_internal.h"
#include "errors.h"
#include "library_loader.h"

#include <stdlib.h>

#define LIBARCHIVE_SONAME "libarchive.so.13"

static gpucc_libarchive api;
static gpucc_library library = GPUCC_LIBRARY_INIT;

/* Every function of api, by name. */
static const gpucc_library_symbol symbols[] = {
	{"archive_version_string", &api.version_string, NULL, false},
	{"archive_error_string", &api.error_string, NULL, false},
	{"archive_errno", &api.errno_, NULL, false},
	{"archive_set_error", &api.set_error, NULL, false},
	{"archive_filter_count", &api.filter_count, NULL, false},
	{"archive_filter_bytes", &api.filter_bytes, NULL, false},
	{"archive_read_new", &api.read_new, NULL, false},
	{"archive_read_support_format_tar", &api.read_support_format_tar, NULL, false},
	{"archive_read_support_format_raw", &api.read_support_format_raw, NULL, false},
	{"archive_read_support_filter_zstd", &api.read_support_filter_zstd, NULL, false},
	{"archive_read_set_callback_data", &api.read_set_callback_data, NULL, false},
	{"archive_read_set_read_callback", &api.read_set_read_callback, NULL, false},
	{"archive_read_set_skip_callback", &api.read_set_skip_callback, NULL, false},
	{"archive_read_open1", &api.read_open1, NULL, false},
	{"archive_read_open_memory", &api.read_open_memory, NULL, false},
	{"archive_read_next_header", &api.read_next_header, NULL, false},
	{"archive_read_header_position", &api.read_header_position, NULL, false},
	{"archive_read_data", &api.read_data, NULL, false},
	{"archive_read_data_block", &api.read_data_block, NULL, false},
	{"archive_read_free", &api.read_free, NULL, false},
	{"archive_write_new", &api.write_new, NULL, false},
	{"archive_write_set_format_pax_restricted", &api.write_set_format_pax_restricted, NULL, false},
	{"archive_write_add_filter_zstd", &api.write_add_filter_zstd, NULL, false},
	{"archive_write_set_filter_option", &api.write_set_filter_option, NULL, false},
	{"archive_write_set_bytes_per_block", &api.write_set_bytes_per_block, NULL, false},
	{"archive_write_set_bytes_in_last_block", &api.write_set_bytes_in_last_block, NULL, false},
	{"archive_write_open_fd", &api.write_open_fd, NULL, false},
	{"archive_write_header", &api.write_header, NULL, false},
	{"archive_write_data", &api.write_data, NULL, false},
	{"archive_write_close", &api.write_close, NULL, false},
	{"archive_write_fail", &api.write_fail, NULL, false},
	{"archive_write_free", &api.write_free, NULL, false},
	{"archive_entry_new", &api.entry_new, NULL, false},
	{"archive_entry_free", &api.entry_free, NULL, false},
	{"archive_entry_pathname", &api.entry_pathname, NULL, false},
	{"archive_entry_filetype", &api.entry_filetype, NULL, false},
	{"archive_entry_hardlink", &api.entry_hardlink, NULL, false},
	{"archive_entry_size", &api.entry_size, NULL, false},
	{"archive_entry_sparse_count", &api.entry_sparse_count, NULL, false},
	{"archive_entry_set_pathname", &api.entry_set_pathname, NULL, false},
	{"archive_entry_set_filetype", &api.entry_set_filetype, NULL, false},
	{"archive_entry_set_perm", &api.entry_set_perm, NULL, false},
	{"archive_entry_set_size", &api.entry_set_size, NULL, false},
	{"archive_entry_set_uid", &api.entry_set_uid, NULL, false},
	{"archive_entry_set_gid", &api.entry_set_gid, NULL, false},
	{"archive_entry_set_uname", &api.entry_set_uname, NULL, false},
	{"archive_entry_set_gname", &api.entry_set_gname, NULL, false},
	{"archive_entry_set_mtime", &api.entry_set_mtime, NULL, false},
	{NULL, NULL, NULL, false},
};

static int load(gpucc_library *lib, void *unused)
{
	(void)unused;
	const char *file = gpucc_config_current()->libarchive;
	if (!file || !*file)
		file = LIBARCHIVE_SONAME;
	const char *const names[] = {file, NULL};
	const char *why, *missing;
	if (gpucc_library_open(lib, names, 0, &why) != 0)
		return gpucc_library_fail(lib, GPUCC_EUNAVAILABLE, "%s", why ? why : "dlopen failed");
	if (gpucc_library_resolve(lib, symbols, &missing) != 0)
		return gpucc_library_fail(lib, GPUCC_EUNAVAILABLE, "libarchive lacks %s", missing);
	return 0; /* the handle stays open for the life of the process */
}

const gpucc_libarchive *gpucc_libarchive_load(void)
{
	if (gpucc_library_load(&library, load, NULL) != 0) {
		gpucc_error_set(GPUCC_EUNAVAILABLE, "cannot load libarchive (%s): %s",
		                LIBARCHIVE_SONAME, gpucc_library_error(&library));
		return NULL;
	}
	return &api;
}

const gpucc_libarchive *gpucc_libarchive_loaded(void)
{
	return &api;
}
