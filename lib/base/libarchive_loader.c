/*
 * lib/base/libarchive_loader.c -- dlopen of libarchive on first use
 * (lib/base/libarchive_loader.h).  GPUCC_LIBARCHIVE names another file to load
 * (for tests and unusual installs).
 */
#include "libarchive_loader.h"

#include "config_internal.h"
#include "errors.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define LIBARCHIVE_SONAME "libarchive.so.13"

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static gpucc_libarchive api;
static bool loaded;
static char load_error[512];

/* Look name up into *slot; false (with load_error set) when missing. */
static bool resolve(void *handle, const char *name, void *slot)
{
	void *symbol = dlsym(handle, name);
	if (!symbol) {
		snprintf(load_error, sizeof load_error, "libarchive lacks %s", name);
		return false;
	}
	memcpy(slot, &symbol, sizeof symbol);
	return true;
}

static void load(void)
{
	const char *file = gpucc_config_current()->libarchive;
	if (!file || !*file)
		file = LIBARCHIVE_SONAME;
	void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *why = dlerror();
		snprintf(load_error, sizeof load_error, "%s", why ? why : "dlopen failed");
		return;
	}
	bool ok = resolve(h, "archive_version_string", &api.version_string) &&
	          resolve(h, "archive_error_string", &api.error_string) &&
	          resolve(h, "archive_errno", &api.errno_) &&
	          resolve(h, "archive_set_error", &api.set_error) &&
	          resolve(h, "archive_filter_count", &api.filter_count) &&
	          resolve(h, "archive_filter_bytes", &api.filter_bytes) &&
	          resolve(h, "archive_read_new", &api.read_new) &&
	          resolve(h, "archive_read_support_format_tar", &api.read_support_format_tar) &&
	          resolve(h, "archive_read_support_format_raw", &api.read_support_format_raw) &&
	          resolve(h, "archive_read_support_filter_zstd", &api.read_support_filter_zstd) &&
	          resolve(h, "archive_read_set_callback_data", &api.read_set_callback_data) &&
	          resolve(h, "archive_read_set_read_callback", &api.read_set_read_callback) &&
	          resolve(h, "archive_read_set_skip_callback", &api.read_set_skip_callback) &&
	          resolve(h, "archive_read_open1", &api.read_open1) &&
	          resolve(h, "archive_read_open_memory", &api.read_open_memory) &&
	          resolve(h, "archive_read_next_header", &api.read_next_header) &&
	          resolve(h, "archive_read_header_position", &api.read_header_position) &&
	          resolve(h, "archive_read_data", &api.read_data) &&
	          resolve(h, "archive_read_data_block", &api.read_data_block) &&
	          resolve(h, "archive_read_free", &api.read_free) &&
	          resolve(h, "archive_write_new", &api.write_new) &&
	          resolve(h, "archive_write_set_format_pax_restricted",
	                  &api.write_set_format_pax_restricted) &&
	          resolve(h, "archive_write_add_filter_zstd", &api.write_add_filter_zstd) &&
	          resolve(h, "archive_write_set_filter_option", &api.write_set_filter_option) &&
	          resolve(h, "archive_write_set_bytes_per_block",
	                  &api.write_set_bytes_per_block) &&
	          resolve(h, "archive_write_set_bytes_in_last_block",
	                  &api.write_set_bytes_in_last_block) &&
	          resolve(h, "archive_write_open_fd", &api.write_open_fd) &&
	          resolve(h, "archive_write_header", &api.write_header) &&
	          resolve(h, "archive_write_data", &api.write_data) &&
	          resolve(h, "archive_write_close", &api.write_close) &&
	          resolve(h, "archive_write_fail", &api.write_fail) &&
	          resolve(h, "archive_write_free", &api.write_free) &&
	          resolve(h, "archive_entry_new", &api.entry_new) &&
	          resolve(h, "archive_entry_free", &api.entry_free) &&
	          resolve(h, "archive_entry_pathname", &api.entry_pathname) &&
	          resolve(h, "archive_entry_filetype", &api.entry_filetype) &&
	          resolve(h, "archive_entry_hardlink", &api.entry_hardlink) &&
	          resolve(h, "archive_entry_size", &api.entry_size) &&
	          resolve(h, "archive_entry_sparse_count", &api.entry_sparse_count) &&
	          resolve(h, "archive_entry_set_pathname", &api.entry_set_pathname) &&
	          resolve(h, "archive_entry_set_filetype", &api.entry_set_filetype) &&
	          resolve(h, "archive_entry_set_perm", &api.entry_set_perm) &&
	          resolve(h, "archive_entry_set_size", &api.entry_set_size) &&
	          resolve(h, "archive_entry_set_uid", &api.entry_set_uid) &&
	          resolve(h, "archive_entry_set_gid", &api.entry_set_gid) &&
	          resolve(h, "archive_entry_set_uname", &api.entry_set_uname) &&
	          resolve(h, "archive_entry_set_gname", &api.entry_set_gname) &&
	          resolve(h, "archive_entry_set_mtime", &api.entry_set_mtime);
	if (!ok) {
		dlclose(h);
		return;
	}
	loaded = true; /* the handle stays open for the life of the process */
}

const gpucc_libarchive *gpucc_libarchive_load(void)
{
	pthread_once(&load_once, load);
	if (!loaded) {
		gpucc_error_set(GPUCC_EUNAVAILABLE, "cannot load libarchive (%s): %s",
		                LIBARCHIVE_SONAME, load_error);
		return NULL;
	}
	return &api;
}

const gpucc_libarchive *gpucc_libarchive_loaded(void)
{
	return &api;
}
