/*
 * lib/image/image_pack.c -- an entry from files another tool wrote and
 * metadata its user gives (gpucc_image_writer_add_files, what `gpucc pack`
 * builds its images with): each input opened once as a regular file that
 * the image will not replace, the module and device libraries hashed, each
 * cubin and code object checked (lib/image/code_object.c), then the entry
 * put in canonical form and keyed (gpucc_entry_prepare) and handed to the
 * writer.
 */
#include "errors.h"
#include "escape.h"
#include "file_identity.h"
#include "image_writer_impl.h"
#include "input_file.h"

#include "gpucc/image.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The entry being built and the writable arrays gpucc_entry_prepare sorts. */
typedef struct pack_entry {
	gpucc_entry e;
	char target[GPUCC_TARGET_NAME_SIZE];
	char *module_name; /* from the module file's name (gpucc_free) */
	gpucc_option *options;
	gpucc_device_lib *libs;
	const char **externals;
	gpucc_payload_source sources[GPUCC_PART_COUNT];
	size_t source_count;
} pack_entry;

void gpucc_entry_files_init(gpucc_entry_files *files)
{
	GPUCC_REQUIRE_VOID(files);
	*files = (gpucc_entry_files)GPUCC_ENTRY_FILES_INIT;
}

/* Open the input at path, which must be a regular file and not the file w
 * will replace; *fd (closed by the caller) is left open for reading. */
static int open_input(int *fd, const gpucc_image_writer *w, const char *path)
{
	struct stat st;
	int rc = gpucc_open_input_file(fd, &st, path, NULL, "a regular file", GPUCC_EINVALID);
	if (rc)
		return rc;
	if (gpucc_path_names_file(gpucc_image_writer_path(w), &st)) {
		close(*fd);
		char shown[GPUCC_SHOWN_PATH_SIZE];
		gpucc_escape_controls(shown, sizeof shown, path);
		return gpucc_error_set(GPUCC_EINVALID,
		                       "'%s' is the image being written, which would replace it", shown);
	}
	return 0;
}

/* The SHA-256 of the input file at path, checked as open_input checks it. */
static int digest_input(gpucc_digest *out, const gpucc_image_writer *w, const char *path)
{
	int fd;
	int rc = open_input(&fd, w, path);
	if (rc)
		return rc;
	close(fd);
	return gpucc_digest_file(out, NULL, path);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static int set_module(pack_entry *p, const gpucc_image_writer *w, const gpucc_entry_files *f)
{
	if (!f->module_file == !f->module_sha256)
		return gpucc_error_set(GPUCC_EINVALID, f->module_file
		                                           ? "give a module file or its SHA-256, not both"
		                                           : "no module: give a module file or its SHA-256");
	p->e.module = f->module;
	if (f->module_sha256) {
		if (gpucc_digest_from_hex(&p->e.module_sha256, f->module_sha256) != 0)
			return gpucc_error_set(GPUCC_EINVALID, "module SHA-256 '%s' is not 64 hex digits",
			                       f->module_sha256);
		return 0;
	}
	int rc = digest_input(&p->e.module_sha256, w, f->module_file);
	if (rc)
		return rc;
	/* A name taken from a file name is spelt as manifests record one; one
	 * given is the user's, and refused if no manifest can carry it. */
	if (!p->e.module) {
		if (gpucc_module_name_from_path(&p->module_name, f->module_file) != 0)
			return gpucc_error_oom();
		p->e.module = p->module_name;
	}
	return 0;
}

static int set_target(pack_entry *p, const char *spelling)
{
	gpucc_target t;
	if (!spelling)
		return gpucc_error_set(GPUCC_EINVALID, "no target");
	int rc = gpucc_target_parse(&t, spelling);
	if (rc)
		return rc;
	gpucc_target_format(p->target, &t);
	p->e.target = p->target;
	p->e.triple = gpucc_target_triple(&t);
	return 0;
}

static int set_lists(pack_entry *p, const gpucc_entry_files *f)
{
	for (size_t i = 0; i < f->kernel_count; i++)
		if (!f->kernels[i].name || !*f->kernels[i].name)
			return gpucc_error_set(GPUCC_EINVALID, "a kernel name is empty");
	p->e.kernels = f->kernels;
	p->e.kernel_count = f->kernel_count;
	p->options = malloc((f->option_count ? f->option_count : 1) * sizeof *p->options);
	p->externals = malloc((f->external_count ? f->external_count : 1) * sizeof *p->externals);
	if (!p->options || !p->externals)
		return gpucc_error_oom();
	for (size_t i = 0; i < f->option_count; i++) {
		if (!f->options[i].name || !*f->options[i].name || !f->options[i].value)
			return gpucc_error_set(GPUCC_EINVALID, "an option name is empty");
		p->options[i] = f->options[i];
	}
	p->e.options = p->options;
	p->e.option_count = f->option_count;
	return 0;
}

static int set_device_libs(pack_entry *p, const gpucc_image_writer *w, const gpucc_entry_files *f)
{
	p->libs = malloc((f->device_lib_count ? f->device_lib_count : 1) * sizeof *p->libs);
	if (!p->libs)
		return gpucc_error_oom();
	for (size_t i = 0; i < f->device_lib_count; i++) {
		const gpucc_device_lib_file *lib = &f->device_libs[i];
		gpucc_device_lib *out = &p->libs[i];
		if (!lib->file == !lib->sha256)
			return gpucc_error_set(GPUCC_EINVALID,
			                       "a device library needs exactly one of a file and a SHA-256");
		out->name = lib->name ? lib->name : lib->file ? base_name(lib->file) : NULL;
		if (lib->file) {
			int rc = digest_input(&out->sha256, w, lib->file);
			if (rc)
				return rc;
		}
		if (!out->name || !*out->name)
			return gpucc_error_set(GPUCC_EINVALID, "a device library name is empty");
		if (lib->sha256 && gpucc_digest_from_hex(&out->sha256, lib->sha256) != 0)
			return gpucc_error_set(GPUCC_EINVALID,
			                       "device library '%s': SHA-256 '%s' is not 64 hex digits",
			                       out->name, lib->sha256);
	}
	p->e.device_libs = p->libs;
	p->e.device_lib_count = f->device_lib_count;
	return 0;
}

static int set_externals(pack_entry *p, const gpucc_entry_files *f)
{
	for (size_t i = 0; i < f->external_count; i++) {
		if (!f->externals[i] || !*f->externals[i])
			return gpucc_error_set(GPUCC_EINVALID, "an external symbol name is empty");
		p->externals[i] = f->externals[i];
	}
	p->e.externals = p->externals;
	p->e.external_count = f->external_count;
	return 0;
}

/* Each payload file, checked as an input; a cubin or code object also as
 * one its runtime loads. */
static int set_payloads(pack_entry *p, const gpucc_image_writer *w, const gpucc_entry_files *f)
{
	for (int part = 0; part < GPUCC_PART_COUNT; part++) {
		const char *path = f->payloads[part];
		if (!path)
			continue;
		int fd;
		int rc = open_input(&fd, w, path);
		if (rc)
			return rc;
		rc = gpucc_code_object_check((gpucc_part)part, fd, path);
		close(fd);
		if (rc)
			return rc;
		p->sources[p->source_count++] = (gpucc_payload_source){.part = (gpucc_part)part,
		                                                       .path = path};
	}
	return 0;
}

int gpucc_image_writer_add_files(gpucc_image_writer *w, const gpucc_entry_files *files,
                                 gpucc_digest *key)
{
	GPUCC_REQUIRE(w);
	GPUCC_REQUIRE(files);
	int rc = gpucc_options_version_check("entry files", files->version, GPUCC_ENTRY_FILES_VERSION);
	if (rc)
		return rc;
	if (files->kernel_count)
		GPUCC_REQUIRE(files->kernels);
	if (files->option_count)
		GPUCC_REQUIRE(files->options);
	if (files->device_lib_count)
		GPUCC_REQUIRE(files->device_libs);
	GPUCC_REQUIRE_EACH(files->externals, files->external_count);
	pack_entry p = {0};
	p.e.gpucc_version = files->gpucc_version;
	p.e.llvm_version = files->llvm_version;
	/* In the order a description is read, so that its first defect is the
	 * one reported. */
	if (!(rc = set_module(&p, w, files)) && !(rc = set_target(&p, files->target)) &&
	    !(rc = set_lists(&p, files)) && !(rc = set_device_libs(&p, w, files)) &&
	    !(rc = set_externals(&p, files)) && !(rc = set_payloads(&p, w, files)) &&
	    !(rc = gpucc_entry_prepare(&p.e, p.sources, p.source_count))) {
		if (key)
			*key = p.e.key;
		rc = gpucc_image_writer_add(w, &p.e, p.sources, p.source_count);
	}
	gpucc_free(p.module_name);
	free(p.options);
	free(p.libs);
	free(p.externals);
	return rc;
}
