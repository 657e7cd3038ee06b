/*
 * lib/embed.c -- gpucc_embed_image and its header (gpucc/runtime.h): checks
 * the arguments and the whole image (manifest and every payload's digest),
 * loads the LLVM backend module through gpucc_backend_load
 * (lib/compile_backend.c) and calls its embed entry point
 * (lib/embed_backend.h), which returns the object less the image's bytes;
 * writes the object with the image in their place, and the header, and
 * publishes both atomically.  The image is read twice through bounded
 * buffers, checked and then copied, so that memory does not grow with it:
 * embedding an image of 200 MB peaks at about what a small one does.
 * libgpucc itself never links LLVM (DESIGN.md invariant 8).
 */
#include "atomic_file.h"
#include "backend.h"
#include "embed_backend.h"
#include "errors.h"
#include "gpucc/runtime.h"
#include "input_file.h"
#include "read_window.h"

#include <ctype.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Keywords of C (C23) and C++ (C++20), which the header could not
 * declare.  Keywords spelt with a leading underscore are refused as
 * reserved. */
static const char *const keywords[] = {
	"alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
	"case", "catch", "char", "char16_t", "char32_t", "char8_t", "class", "co_await",
	"co_return", "co_yield", "compl", "concept", "const", "const_cast", "consteval",
	"constexpr", "constinit", "continue", "decltype", "default", "delete", "do", "double",
	"dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
	"friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept",
	"not", "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected", "public",
	"register", "reinterpret_cast", "requires", "restrict", "return", "short", "signed",
	"sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template", "this",
	"thread_local", "throw", "true", "try", "typedef", "typeid", "typename", "typeof",
	"typeof_unqual", "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t",
	"while", "xor", "xor_eq",
};

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t len = strlen(s), n = strlen(suffix);
	return len >= n && strcmp(s + len - n, suffix) == 0;
}

/* Whether <stdint.h>, which the header includes, declares symbol or
 * reserves it for later (C17 7.31.10, C23 7.33.20): typedef names
 * int*_t and uint*_t, macros INT* and UINT* ending in _MAX, _MIN, _WIDTH
 * or _C, and its other limits.  The header could not declare such a
 * name beside it (uint64_t is a type, SIZE_MAX a number). */
static bool stdint_name(const char *symbol)
{
	static const char *const limits[] = {
		"PTRDIFF_MIN", "PTRDIFF_MAX", "PTRDIFF_WIDTH", "SIG_ATOMIC_MIN", "SIG_ATOMIC_MAX",
		"SIG_ATOMIC_WIDTH", "SIZE_MAX", "SIZE_WIDTH", "WCHAR_MIN", "WCHAR_MAX",
		"WCHAR_WIDTH", "WINT_MIN", "WINT_MAX", "WINT_WIDTH",
	};
	if ((has_prefix(symbol, "int") || has_prefix(symbol, "uint")) && has_suffix(symbol, "_t"))
		return true;
	if ((has_prefix(symbol, "INT") || has_prefix(symbol, "UINT")) &&
	    (has_suffix(symbol, "_MAX") || has_suffix(symbol, "_MIN") ||
	     has_suffix(symbol, "_WIDTH") || has_suffix(symbol, "_C")))
		return true;
	for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++)
		if (strcmp(symbol, limits[i]) == 0)
			return true;
	return false;
}

/* A C identifier of at most SYMBOL_MAX characters that the header can
 * declare in C and C++, not ending in "_size": no keyword, no name
 * <stdint.h> declares or reserves, and neither NAME nor NAME_size (nor the include guard built
 * from NAME) reserved: C reserves file-scope names starting with '_', C++
 * every name holding "__" (so no trailing '_'). */
static int check_symbol(const char *symbol)
{
	size_t len = symbol ? strlen(symbol) : 0;
	bool ok = len > 0 && len <= SYMBOL_MAX && !isdigit((unsigned char)symbol[0]);
	for (size_t i = 0; ok && i < len; i++)
		ok = isalnum((unsigned char)symbol[i]) || symbol[i] == '_';
	if (!ok)
		return gpucc_error_set(GPUCC_EINVALID,
		                       "symbol '%.64s%s' is not a C identifier of at most %d characters",
		                       symbol ? symbol : "", len > 64 ? "..." : "", SYMBOL_MAX);
	if (symbol[0] == '_' || symbol[len - 1] == '_' || strstr(symbol, "__"))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "symbol '%s' is reserved in C or C++: it must not begin or end "
		                       "with '_' nor hold '__'",
		                       symbol);
	for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
		if (strcmp(symbol, keywords[i]) == 0)
			return gpucc_error_set(GPUCC_EINVALID, "symbol '%s' is a C or C++ keyword", symbol);
	/* NAME_size belongs to image NAME: were NAME itself OTHER_size, the
	 * objects of embeds NAME and OTHER would both define it. */
	if (has_suffix(symbol, "_size"))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "symbol '%s' ends in '_size', which names the size of another "
		                       "image ('%.*s'): two embedded images could not then be linked together",
		                       symbol, (int)(len - 5), symbol);
	if (stdint_name(symbol))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "symbol '%s' is declared or reserved by <stdint.h>, which the "
		                       "header includes",
		                       symbol);
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

/* Whether path names the file st describes (the image being read), which
 * the rename that publishes an output would replace. */
static bool names_file(const char *path, const struct stat *st)
{
	struct stat named;
	return stat(path, &named) == 0 && named.st_dev == st->st_dev && named.st_ino == st->st_ino;
}

/* Whether paths a and b are one output: the same name in the same
 * directory, or one existing file (links). */
static bool same_output(const char *a, const char *b)
{
	struct stat sa, sb;
	if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	const char *name_a = strrchr(a, '/') ? strrchr(a, '/') + 1 : a;
	const char *name_b = strrchr(b, '/') ? strrchr(b, '/') + 1 : b;
	if (strcmp(name_a, name_b) != 0)
		return false;
	char dir_a[4096], dir_b[4096];
	snprintf(dir_a, sizeof dir_a, "%.*s.", (int)(name_a - a), a);
	snprintf(dir_b, sizeof dir_b, "%.*s.", (int)(name_b - b), b);
	return stat(dir_a, &sa) == 0 && stat(dir_b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* Open image_path for reading, refusing what is not a non-empty regular
 * file (without blocking on a FIFO) as a bad input, GPUCC_ECORRUPT: the
 * command calls GPUCC_EINVALID a bad argument.  Returns the fd or an error
 * code. */
static int open_image_file(const char *image_path, struct stat *st)
{
	int fd;
	int rc = gpucc_open_input_file(&fd, st, image_path, NULL, "a gpucc image", GPUCC_ECORRUPT);
	if (rc)
		return rc;
	if (st->st_size == 0) {
		char shown[GPUCC_SHOWN_PATH_SIZE];
		gpucc_escape_controls(shown, sizeof shown, image_path);
		close(fd);
		return gpucc_error_set(GPUCC_ECORRUPT, "'%s' is empty, not a gpucc image", shown);
	}
	return fd;
}

/* Check all of the image open at fd (manifest and every payload's digest,
 * read through the file reader's bounded buffers): a package carries what
 * is embedded to every user, who would meet a bad payload only when
 * loading it.  Every defect of the file is GPUCC_ECORRUPT (the reader
 * calls a snapshot given as an image a bad argument; here it is a bad
 * input). */
static int check_image(const char *image_path, int fd)
{
	gpucc_image *img = NULL;
	int rc = gpucc_image_open_fd(&img, fd, image_path);
	if (rc == 0)
		rc = gpucc_image_verify(img);
	gpucc_image_free(img);
	if (rc == GPUCC_EINVALID) {
		char message[1024];
		snprintf(message, sizeof message, "%s", gpucc_error_last()->message);
		rc = gpucc_error_set(GPUCC_ECORRUPT, "%s", message);
	}
	return rc;
}

/* The header's text for symbol, into text (size bytes); its length or an
 * error code. */
static int header_text(char *text, size_t size, const char *symbol)
{
	int n = snprintf(text, size,
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
	if (n < 0 || (size_t)n >= size)
		return gpucc_error_set(GPUCC_ERROR, "header for '%s' too long", symbol);
	return n;
}

/* Write size bytes to the atomic file f; errors name f's target. */
static int write_part(gpucc_atomic_file *f, const void *data, size_t size)
{
	if (gpucc_write_all(f->fd, data, size) != 0)
		return gpucc_error_set_errno("cannot write '%s'", f->path);
	return 0;
}

/* Copy the first size bytes of the image at fd (named image_path) to the
 * atomic file f, a chunk at a time. */
static int copy_image(gpucc_atomic_file *f, int fd, const char *image_path, size_t size)
{
	enum { CHUNK = 1 << 20 };
	char *buffer = malloc(CHUNK);
	if (!buffer)
		return gpucc_error_oom();
	int rc = 0;
	for (size_t done = 0; rc == 0 && done < size;) {
		size_t want = size - done < CHUNK ? size - done : CHUNK;
		ssize_t got = gpucc_pread_full(fd, buffer, want, done);
		if (got < 0)
			rc = gpucc_error_set_errno("cannot read '%s'", image_path);
		else if ((size_t)got < want)
			rc = gpucc_error_set(GPUCC_ERROR, "'%s' was cut short while it was embedded",
			                     image_path);
		else
			rc = write_part(f, buffer, want);
		done += want;
	}
	free(buffer);
	return rc;
}

/* Write the object (and the header, when header_path is set) in full under
 * temporary names, then publish them: the object, then the header.  A
 * failure before the renames publishes neither. */
static int write_outputs(const char *obj_path, const char *header_path, const char *symbol,
                         const void *frame, size_t frame_size, size_t image_offset,
                         const char *image_path, int image_fd, size_t image_size)
{
	char text[2048];
	int n = header_path ? header_text(text, sizeof text, symbol) : 0;
	if (n < 0)
		return n;
	gpucc_atomic_file obj = {.fd = -1}, header = {.fd = -1};
	int rc = gpucc_atomic_file_open(&obj, obj_path);
	if (rc == 0 && header_path)
		rc = gpucc_atomic_file_open(&header, header_path);
	if (rc == 0)
		rc = write_part(&obj, frame, image_offset);
	if (rc == 0)
		rc = copy_image(&obj, image_fd, image_path, image_size);
	if (rc == 0)
		rc = write_part(&obj, (const char *)frame + image_offset, frame_size - image_offset);
	if (rc == 0 && header_path)
		rc = write_part(&header, text, (size_t)n);
	if (rc == 0)
		rc = gpucc_atomic_file_commit(&obj);
	if (rc == 0 && header_path)
		return gpucc_atomic_file_commit(&header);
	gpucc_atomic_file_abort(&obj);
	gpucc_atomic_file_abort(&header);
	return rc;
}

int gpucc_embed_image(const char *image_path, const char *obj_path,
                      const gpucc_embed_options *opts)
{
	GPUCC_REQUIRE(image_path);
	GPUCC_REQUIRE(obj_path);
	GPUCC_REQUIRE(opts);
	int rc = check_symbol(opts->symbol);
	if (rc)
		return rc;
	unsigned alignment = opts->alignment ? opts->alignment : DEFAULT_ALIGNMENT;
	if ((alignment & (alignment - 1)) != 0 || alignment > 4096)
		return gpucc_error_set(GPUCC_EINVALID, "alignment %u is not a power of two up to 4096",
		                       alignment);
	const char *triple = opts->triple ? opts->triple : gpucc_embed_default_triple();
	const char *section = opts->section ? opts->section : DEFAULT_SECTION;
	const char *header_path = opts->header;
	if (header_path && same_output(header_path, obj_path))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "the header '%s' and the object '%s' are the same file",
		                       header_path, obj_path);

	struct stat st;
	int fd = open_image_file(image_path, &st);
	if (fd < 0)
		return fd;
	const char *clash = names_file(obj_path, &st)                     ? obj_path
	                    : header_path && names_file(header_path, &st) ? header_path
	                                                                  : NULL;
	if (clash) {
		close(fd);
		return gpucc_error_set(GPUCC_EINVALID,
		                       "'%s' is the image being embedded: write the %s elsewhere", clash,
		                       clash == obj_path ? "object" : "header");
	}
	size_t size = (size_t)st.st_size;

	/* The object's frame needs only the size: emitting it first judges the
	 * triple before a large image is read through. */
	gpucc_embed_entry_fn emit = NULL;
	void *frame = NULL;
	size_t frame_size = 0, image_offset = 0;
	rc = embed_entry(&emit);
	if (rc == 0) {
		char error[512] = "";
		int code = emit(triple, opts->symbol, section, alignment, size, &frame, &frame_size,
		                &image_offset, error, sizeof error);
		if (code != 0)
			rc = gpucc_error_set(code == GPUCC_EINVALID ? GPUCC_EINVALID : GPUCC_ERROR,
			                     "cannot embed '%s': %s", image_path, error);
	}
	if (rc == 0)
		rc = check_image(image_path, fd);
	if (rc == 0)
		rc = write_outputs(obj_path, header_path, opts->symbol, frame, frame_size, image_offset,
		                   image_path, fd, size);
	close(fd);
	free(frame);
	return rc;
}

int gpucc_embed_write_header(const char *header_path, const char *symbol)
{
	GPUCC_REQUIRE(header_path);
	GPUCC_REQUIRE(symbol);
	int rc = check_symbol(symbol);
	if (rc)
		return rc;
	char text[2048];
	int n = header_text(text, sizeof text, symbol);
	if (n < 0)
		return n;
	gpucc_atomic_file f;
	rc = gpucc_atomic_file_open(&f, header_path);
	if (rc == 0)
		rc = write_part(&f, text, (size_t)n);
	if (rc == 0)
		return gpucc_atomic_file_commit(&f);
	gpucc_atomic_file_abort(&f);
	return rc;
}
