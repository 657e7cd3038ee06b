/*
 * lib/embed.c -- gpucc_embed_image and its header (gpucc/runtime.h): checks
 * the arguments and the whole image (manifest and every payload's digest),
 * loads the LLVM backend module through gpucc_backend_load
 * (lib/compile_backend.c) and calls its embed entry point
 * (lib/embed_backend.h), then publishes the object atomically.  libgpucc
 * itself never links LLVM (DESIGN.md invariant 8).
 */
#include "atomic_file.h"
#include "backend.h"
#include "embed_backend.h"
#include "errors.h"
#include "gpucc/runtime.h"

#include <ctype.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_ALIGNMENT 64
#define DEFAULT_SECTION ".rodata.gpucc"
#define SYMBOL_MAX 200

const char *gpucc_embed_default_triple(void)
{
#if defined(__x86_64__)
	return "x86_64-pc-linux-gnu";
#elif defined(__aarch64__)
	return "aarch64-unknown-linux-gnu";
#else
	return "unknown";
#endif
}

/* A C identifier of at most SYMBOL_MAX characters. */
static int check_symbol(const char *symbol)
{
	size_t len = symbol ? strlen(symbol) : 0;
	bool ok = len > 0 && len <= SYMBOL_MAX && !isdigit((unsigned char)symbol[0]);
	for (size_t i = 0; ok && i < len; i++)
		ok = isalnum((unsigned char)symbol[i]) || symbol[i] == '_';
	if (!ok)
		return gpucc_error_set(GPUCC_EINVALID,
		                       "symbol '%s' is not a C identifier of at most %d characters",
		                       symbol ? symbol : "", SYMBOL_MAX);
	return 0;
}

/* The backend module's embed entry point, found in the module that
 * gpucc_backend_load loaded. */
static int embed_entry(gpucc_embed_entry_fn *out)
{
	const gpucc_backend *backend = NULL;
	int rc = gpucc_backend_load(&backend);
	if (rc)
		return rc;
	Dl_info info;
	void *module = NULL;
	if (dladdr(backend, &info) && info.dli_fname)
		module = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
	void *symbol = module ? dlsym(module, GPUCC_EMBED_ENTRY) : NULL;
	if (!symbol)
		return gpucc_error_set(GPUCC_EUNAVAILABLE,
		                       "the LLVM backend module '%s' has no embed entry point (%s)",
		                       module ? info.dli_fname : "?", GPUCC_EMBED_ENTRY);
	memcpy(out, &symbol, sizeof *out); /* data to function pointer, as POSIX allows */
	return 0; /* module stays referenced: the backend is never unloaded */
}

static int write_file_atomically(const char *path, const void *data, size_t size)
{
	gpucc_atomic_file f;
	int rc = gpucc_atomic_file_open(&f, path);
	if (rc)
		return rc;
	if (gpucc_write_all(f.fd, data, size) != 0) {
		rc = gpucc_error_set_errno("cannot write '%s'", path);
		gpucc_atomic_file_abort(&f);
		return rc;
	}
	return gpucc_atomic_file_commit(&f);
}

int gpucc_embed_image(const char *image_path, const char *obj_path,
                      const gpucc_embed_options *opts)
{
	if (!image_path || !obj_path || !opts)
		return gpucc_error_set(GPUCC_EINVALID, "gpucc_embed_image: missing argument");
	int rc = check_symbol(opts->symbol);
	if (rc)
		return rc;
	unsigned alignment = opts->alignment ? opts->alignment : DEFAULT_ALIGNMENT;
	if ((alignment & (alignment - 1)) != 0 || alignment > 4096)
		return gpucc_error_set(GPUCC_EINVALID, "alignment %u is not a power of two up to 4096",
		                       alignment);
	const char *triple = opts->triple ? opts->triple : gpucc_embed_default_triple();
	const char *section = opts->section ? opts->section : DEFAULT_SECTION;

	/* Map the image, and check all of it before shipping it: a package
	 * carries what is embedded to every user, who would meet a bad payload
	 * only when loading it. */
	int fd = open(image_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gpucc_error_set_errno("cannot open '%s'", image_path);
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
		close(fd);
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s': not a gpucc image (not a non-empty file)",
		                       image_path);
	}
	size_t size = (size_t)st.st_size;
	void *data = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (data == MAP_FAILED)
		return gpucc_error_set_errno("cannot map '%s'", image_path);
	gpucc_image *img = NULL;
	rc = gpucc_image_open_memory(&img, data, size, image_path);
	if (rc == 0)
		rc = gpucc_image_verify(img);
	gpucc_image_free(img);

	gpucc_embed_entry_fn emit = NULL;
	if (rc == 0)
		rc = embed_entry(&emit);
	void *object = NULL;
	size_t object_size = 0;
	if (rc == 0) {
		char error[512] = "";
		int code = emit(triple, opts->symbol, section, alignment, data, size, &object,
		                &object_size, error, sizeof error);
		if (code != 0)
			rc = gpucc_error_set(code == GPUCC_EINVALID ? GPUCC_EINVALID : GPUCC_ERROR,
			                     "cannot embed '%s': %s", image_path, error);
	}
	munmap(data, size);
	if (rc == 0)
		rc = write_file_atomically(obj_path, object, object_size);
	free(object);
	return rc;
}

int gpucc_embed_write_header(const char *header_path, const char *symbol)
{
	int rc = check_symbol(symbol);
	if (rc)
		return rc;
	char text[2048];
	int n = snprintf(text, sizeof text,
	                 "/* Generated by gpucc embed: the precompile image embedded as %s.\n"
	                 " * Open it with gpucc_image_open_memory(&img, %s, %s_size, \"%s\"). */\n"
	                 "#ifndef GPUCC_EMBEDDED_%s_H\n"
	                 "#define GPUCC_EMBEDDED_%s_H\n\n"
	                 "#include <stdint.h>\n\n"
	                 "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
	                 "extern const unsigned char %s[];\n"
	                 "extern const uint64_t %s_size;\n\n"
	                 "#ifdef __cplusplus\n}\n#endif\n#endif\n",
	                 symbol, symbol, symbol, symbol, symbol, symbol, symbol, symbol);
	if (n < 0 || (size_t)n >= sizeof text)
		return gpucc_error_set(GPUCC_ERROR, "header for '%s' too long", symbol);
	return write_file_atomically(header_path, text, (size_t)n);
}
