/*
 * lib/backend_llvm/embed.c -- `gpucc embed`'s half in the LLVM backend
 * module: a host object file holding an image as a read-only symbol, emitted
 * in process by LLVM's X86 or AArch64 backend (no assembler, no linker), as
 * ELF for Linux.  Exports GPUCC_EMBED_ENTRY (lib/embed_backend.h).
 *
 * The module built here holds two globals:
 *   @NAME      = constant [N x i8] zeroinitializer, align A, section S
 *   @NAME_size = constant i64 N, align 8
 * both external and default-visible, so that a program or shared library
 * that links the object sees the image with no file at run time.  The
 * image's bytes never pass through LLVM: the object is returned without
 * NAME's N zeros, and the caller writes the image in their place, so that a
 * large image is not copied into a constant, a fragment and a buffer.
 */
#include "embed_backend.h"
#include "gpucc/common.h"

#include <llvm-c/Core.h>
#include <llvm-c/Object.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* Host backends: all four parts each, or emission fails (TOOLCHAIN.md). */
static void init_host_targets(void)
{
	LLVMInitializeX86TargetInfo();
	LLVMInitializeX86Target();
	LLVMInitializeX86TargetMC();
	LLVMInitializeX86AsmPrinter();
	LLVMInitializeAArch64TargetInfo();
	LLVMInitializeAArch64Target();
	LLVMInitializeAArch64TargetMC();
	LLVMInitializeAArch64AsmPrinter();
}

static int fail(char *error, size_t size, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Write the reason to error; returns code. */
static int fail(char *error, size_t size, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(error, size, fmt, ap);
	va_end(ap);
	return code;
}

/* ELF for Linux on x86_64 or aarch64 only: the hosts gpucc is built and
 * tested on.  Another object format is refused before LLVM sees it: for
 * Mach-O, the section name .rodata.gpucc is a fatal error that aborts the
 * process.  normal is LLVM's normalised triple, ARCH-VENDOR-OS[-ENV]; an
 * ENV may name an object format of its own (x86_64-unknown-linux-coff). */
static bool host_triple_supported(const char *normal)
{
	if (strncmp(normal, "x86_64-", 7) != 0 && strncmp(normal, "aarch64-", 8) != 0)
		return false;
	const char *vendor = strchr(normal, '-') + 1;
	const char *os = strchr(vendor, '-');
	if (!os || strncmp(os + 1, "linux", 5) != 0)
		return false;
	const char *env = strchr(os + 1, '-');
	static const char *const formats[] = {"coff", "macho", "wasm", "xcoff", "goff", "spirv",
	                                      "dxcontainer"};
	for (size_t i = 0; env && i < sizeof formats / sizeof formats[0]; i++)
		if (strstr(env, formats[i]))
			return false;
	return true;
}


/* Whether all n bytes at p are zero. */
static bool all_zero(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0)
			return false;
	return true;
}

/* Where the size bytes of symbol (emitted as zeros) lie in the object in
 * buffer: *offset.  Reads the object back with LLVM's object reader rather
 * than assuming a layout.  Returns 0, or GPUCC_ERROR with the reason in
 * error. */
static int locate_image_bytes(LLVMMemoryBufferRef buffer, const char *symbol, size_t size,
                              size_t *offset, char *error, size_t error_size)
{
	char *message = NULL;
	LLVMBinaryRef binary = LLVMCreateBinary(buffer, NULL, &message);
	if (!binary) {
		int rc = fail(error, error_size, GPUCC_ERROR, "LLVM cannot read back its object: %s",
		              message ? message : "unknown error");
		LLVMDisposeMessage(message);
		return rc;
	}
	const char *start = LLVMGetBufferStart(buffer);
	size_t total = LLVMGetBufferSize(buffer);
	LLVMSymbolIteratorRef sym = LLVMObjectFileCopySymbolIterator(binary);
	LLVMSectionIteratorRef section = LLVMObjectFileCopySectionIterator(binary);
	int rc = fail(error, error_size, GPUCC_ERROR,
	              "the object LLVM wrote has no %zu bytes of file data for '%s'", size, symbol);
	for (; !LLVMObjectFileIsSymbolIteratorAtEnd(binary, sym); LLVMMoveToNextSymbol(sym)) {
		if (strcmp(LLVMGetSymbolName(sym), symbol) != 0 || LLVMGetSymbolSize(sym) != size)
			continue;
		LLVMMoveToContainingSection(section, sym);
		if (LLVMObjectFileIsSectionIteratorAtEnd(binary, section))
			break;
		const char *contents = LLVMGetSectionContents(section);
		uint64_t value = LLVMGetSymbolAddress(sym);
		uint64_t section_size = LLVMGetSectionSize(section);
		if (contents < start || value > section_size || size > section_size - value ||
		    (size_t)(contents - start) > total - section_size)
			break;
		size_t at = (size_t)(contents - start) + (size_t)value;
		if (!all_zero(start + at, size)) /* not file data: a NOBITS section */
			break;
		*offset = at;
		rc = 0;
		break;
	}
	LLVMDisposeSectionIterator(section);
	LLVMDisposeSymbolIterator(sym);
	LLVMDisposeBinary(binary);
	return rc;
}

EXPORT int gpucc_backend_embed_object(const char *triple, const char *symbol, const char *section,
                                      unsigned alignment, size_t size, void **out,
                                      size_t *out_size, size_t *image_offset, char *error,
                                      size_t error_size);

EXPORT int gpucc_backend_embed_object(const char *triple, const char *symbol, const char *section,
                                      unsigned alignment, size_t size, void **out,
                                      size_t *out_size, size_t *image_offset, char *error,
                                      size_t error_size)
{
	*out = NULL;
	*out_size = 0;
	*image_offset = 0;
	pthread_once(&init_once, init_host_targets);

	char *normal = LLVMNormalizeTargetTriple(triple);
	if (!host_triple_supported(normal)) {
		int rc = fail(error, error_size, GPUCC_EINVALID,
		              "host triple '%s' is not supported: gpucc embed writes ELF objects for Linux "
		              "on x86_64 or aarch64",
		              triple);
		LLVMDisposeMessage(normal);
		return rc;
	}
	LLVMTargetRef target = NULL;
	char *message = NULL;
	if (LLVMGetTargetFromTriple(normal, &target, &message) != 0) {
		int rc = fail(error, error_size, GPUCC_EINVALID, "LLVM cannot target '%s': %s", triple,
		              message ? message : "unknown triple");
		LLVMDisposeMessage(message);
		LLVMDisposeMessage(normal);
		return rc;
	}
	LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, normal, "", "", LLVMCodeGenLevelNone,
	                                                  LLVMRelocPIC, LLVMCodeModelDefault);
	if (!tm) {
		LLVMDisposeMessage(normal);
		return fail(error, error_size, GPUCC_ERROR, "LLVM cannot make a target machine for '%s'",
		            triple);
	}

	LLVMContextRef ctx = LLVMContextCreate();
	LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("gpucc-embed", ctx);
	LLVMSetTarget(mod, normal);
	LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
	LLVMSetModuleDataLayout(mod, layout);

	/* NAME is emitted as size zero bytes, which LLVM writes without
	 * holding them as a constant; the caller writes the image there. */
	LLVMTypeRef bytes = LLVMArrayType2(LLVMInt8TypeInContext(ctx), size);
	LLVMValueRef image = LLVMAddGlobal(mod, bytes, symbol);
	LLVMSetInitializer(image, LLVMConstNull(bytes));
	LLVMSetGlobalConstant(image, 1);
	LLVMSetLinkage(image, LLVMExternalLinkage);
	LLVMSetAlignment(image, alignment);
	LLVMSetSection(image, section);

	char size_name[512];
	snprintf(size_name, sizeof size_name, "%s_size", symbol);
	LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
	LLVMValueRef count = LLVMAddGlobal(mod, i64, size_name);
	LLVMSetInitializer(count, LLVMConstInt(i64, (unsigned long long)size, 0));
	LLVMSetGlobalConstant(count, 1);
	LLVMSetLinkage(count, LLVMExternalLinkage);
	LLVMSetAlignment(count, 8);

	int rc = 0;
	LLVMMemoryBufferRef buffer = NULL;
	size_t at = 0;
	if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &message, &buffer) != 0) {
		rc = fail(error, error_size, GPUCC_ERROR, "LLVM could not emit an object for '%s': %s",
		          normal, message ? message : "unknown error");
		LLVMDisposeMessage(message);
	} else if ((rc = locate_image_bytes(buffer, symbol, size, &at, error, error_size)) == 0) {
		/* The object less NAME's bytes: what precedes them, then what
		 * follows. */
		const char *start = LLVMGetBufferStart(buffer);
		size_t n = LLVMGetBufferSize(buffer) - size;
		*out = malloc(n ? n : 1);
		if (!*out) {
			rc = fail(error, error_size, GPUCC_ERROR, "out of memory");
		} else {
			memcpy(*out, start, at);
			memcpy((char *)*out + at, start + at + size, n - at);
			*out_size = n;
			*image_offset = at;
		}
	}
	LLVMDisposeMemoryBuffer(buffer);
	LLVMDisposeModule(mod);
	LLVMDisposeTargetData(layout);
	LLVMContextDispose(ctx);
	LLVMDisposeTargetMachine(tm);
	LLVMDisposeMessage(normal);
	return rc;
}
