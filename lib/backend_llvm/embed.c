/*
 * lib/backend_llvm/embed.c -- `gpucc embed`'s half in the LLVM backend
 * module: a host object file holding an image as a read-only symbol, emitted
 * in process by LLVM's X86 or AArch64 backend (no assembler, no linker), as
 * ELF for Linux.  Exports GPUCC_EMBED_ENTRY (lib/embed/embed_backend.h).
 *
 * The module built here holds two globals:
 *   @NAME      = constant [N x i8] zeroinitializer, align A, section S
 *   @NAME_size = constant i64 N, align 8
 * both external and default-visible, so that a program or shared library
 * that links the object sees the image with no file at run time.  The
 * image's bytes never pass through LLVM: the object is returned without
 * NAME's N zeros, and the caller writes the image in their place, so that a
 * large image is not copied into a constant, a fragment and a buffer.
 *
 * Nor are N zeros emitted for a large image: LLVM-C emits only to a memory
 * buffer (twice N: its output and a copy of it) or to a file it opens
 * itself, and a failed write there ends the process ("LLVM ERROR: IO
 * failure on output stream").  So the object is emitted for a few KiB
 * whose residue modulo the largest alignment is N's, which gives every
 * padding of N's object, and then grown to N in the ELF headers
 * (grow_frame).  That this growth is exact is checked on each run: grown
 * by one period, the small object must be, byte for byte, the one LLVM
 * emits for that size; otherwise N zeros are emitted after all.
 */
#include "embed_backend.h"
#include "gpucc/common.h"

#include <llvm-c/Core.h>
#include <llvm-c/Object.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include <elf.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* Host backends: all four parts each (target info, target, MC, asm printer), or
 * emission fails. */
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

/* ---- growing an object's symbol ------------------------------------------- */

/* Little-endian fields of width bytes (the ELF64 objects for x86_64 and
 * aarch64 Linux), whatever this host's byte order. */
static uint64_t get_le(const unsigned char *p, size_t width)
{
	uint64_t v = 0;
	for (size_t i = width; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

static void put_le(unsigned char *p, size_t width, uint64_t v)
{
	for (size_t i = 0; i < width; i++, v >>= 8)
		p[i] = (unsigned char)v;
}

#define FIELD_GET(p, type, member) get_le((p) + offsetof(type, member), sizeof(((type *)0)->member))
#define FIELD_PUT(p, type, member, v) \
	put_le((p) + offsetof(type, member), sizeof(((type *)0)->member), (v))

/* An object less the n bytes of its symbol at offset at (as
 * gpucc_backend_embed_object returns it). */
typedef struct frame {
	unsigned char *bytes;
	size_t size, at;
} frame;

/* Where the len bytes at offset off of the whole object lie in f: *out.
 * False when they are not all in f, or overlap the n bytes left out. */
static bool frame_index(size_t *out, const frame *f, uint64_t n, uint64_t off, uint64_t len)
{
	if (off + len <= f->at)
		*out = (size_t)off;
	else if (off >= f->at + n)
		*out = (size_t)(off - n);
	else
		return false;
	return *out <= f->size && len <= f->size - *out;
}

/* The index in f's symbol table (section symtab) of the symbol named
 * name, whose entry is at *entry: 0 when none or more than one is. */
static size_t find_symbol(size_t *entry, const frame *f, uint64_t n, const unsigned char *symtab,
                          const unsigned char *strtab, const char *name)
{
	size_t found = 0, count = 0;
	uint64_t table = FIELD_GET(symtab, Elf64_Shdr, sh_offset);
	uint64_t symbols = FIELD_GET(symtab, Elf64_Shdr, sh_size) / sizeof(Elf64_Sym);
	uint64_t names = FIELD_GET(strtab, Elf64_Shdr, sh_offset);
	uint64_t names_size = FIELD_GET(strtab, Elf64_Shdr, sh_size);
	size_t at, names_at, len = strlen(name);
	if (!frame_index(&at, f, n, table, symbols * sizeof(Elf64_Sym)) ||
	    !frame_index(&names_at, f, n, names, names_size))
		return 0;
	for (uint64_t i = 1; i < symbols; i++) {
		const unsigned char *sym = f->bytes + at + i * sizeof(Elf64_Sym);
		uint64_t name_at = FIELD_GET(sym, Elf64_Sym, st_name);
		if (name_at < names_size && len < names_size - name_at &&
		    memcmp(f->bytes + names_at + name_at, name, len + 1) == 0) {
			found = (size_t)i;
			*entry = at + (size_t)i * sizeof(Elf64_Sym);
			count++;
		}
	}
	return count == 1 ? found : 0;
}

/* Make f, the object for symbol of n bytes, the object for n + delta
 * bytes: move what follows those bytes (sections, the section header
 * table) by delta, and add delta to their section's size, to symbol's size
 * and to the value of size_symbol, a 64-bit n.  The object must be an
 * ELF64 little-endian relocatable file where symbol alone lies in the part
 * of its section that the n bytes are.  False, leaving f as it was, when it
 * is not. */
static bool grow_frame(frame *f, uint64_t n, uint64_t delta, const char *symbol,
                       const char *size_symbol)
{
	unsigned char *b = f->bytes;
	if (f->size < sizeof(Elf64_Ehdr) || f->at < sizeof(Elf64_Ehdr) ||
	    memcmp(b, ELFMAG, SELFMAG) != 0 || b[EI_CLASS] != ELFCLASS64 ||
	    b[EI_DATA] != ELFDATA2LSB || FIELD_GET(b, Elf64_Ehdr, e_type) != ET_REL ||
	    FIELD_GET(b, Elf64_Ehdr, e_shentsize) != sizeof(Elf64_Shdr))
		return false;
	uint64_t shoff = FIELD_GET(b, Elf64_Ehdr, e_shoff);
	uint64_t shnum = FIELD_GET(b, Elf64_Ehdr, e_shnum);
	size_t table;
	if (shnum == 0 || !frame_index(&table, f, n, shoff, shnum * sizeof(Elf64_Shdr)))
		return false;
	/* Each section lies before the n bytes, after them (moved), or holds
	 * them (grown: exactly one); one symbol table. */
	uint64_t grown = 0, symtab_index = 0;
	for (uint64_t i = 1; i < shnum; i++) {
		const unsigned char *sh = b + table + i * sizeof(Elf64_Shdr);
		uint64_t type = FIELD_GET(sh, Elf64_Shdr, sh_type);
		uint64_t off = FIELD_GET(sh, Elf64_Shdr, sh_offset);
		uint64_t size = type == SHT_NOBITS ? 0 : FIELD_GET(sh, Elf64_Shdr, sh_size);
		if (off > UINT64_MAX - size)
			return false;
		if (type != SHT_NOBITS && off <= f->at && f->at + n <= off + size) {
			if (grown)
				return false;
			grown = i;
		} else if (off + size > f->at && off < f->at + n) {
			return false;
		}
		if (type == SHT_SYMTAB) {
			if (symtab_index)
				return false;
			symtab_index = i;
		}
	}
	if (!grown || !symtab_index)
		return false;
	const unsigned char *symtab = b + table + symtab_index * sizeof(Elf64_Shdr);
	uint64_t strtab_index = FIELD_GET(symtab, Elf64_Shdr, sh_link);
	if (strtab_index == 0 || strtab_index >= shnum)
		return false;
	const unsigned char *strtab = b + table + strtab_index * sizeof(Elf64_Shdr);
	size_t image_entry, size_entry, size_value;
	size_t image_sym = find_symbol(&image_entry, f, n, symtab, strtab, symbol);
	size_t size_sym = find_symbol(&size_entry, f, n, symtab, strtab, size_symbol);
	if (!image_sym || !size_sym ||
	    FIELD_GET(b + image_entry, Elf64_Sym, st_shndx) != grown ||
	    FIELD_GET(b + image_entry, Elf64_Sym, st_size) != n)
		return false;
	uint64_t size_shndx = FIELD_GET(b + size_entry, Elf64_Sym, st_shndx);
	if (size_shndx == 0 || size_shndx == grown || size_shndx >= shnum)
		return false;
	const unsigned char *size_section = b + table + size_shndx * sizeof(Elf64_Shdr);
	uint64_t value_off = FIELD_GET(size_section, Elf64_Shdr, sh_offset) +
	                     FIELD_GET(b + size_entry, Elf64_Sym, st_value);
	if (!frame_index(&size_value, f, n, value_off, 8) || get_le(b + size_value, 8) != n)
		return false;

	/* Checked: now the changes. */
	put_le(b + size_value, 8, n + delta);
	FIELD_PUT(b + image_entry, Elf64_Sym, st_size, n + delta);
	for (uint64_t i = 1; i < shnum; i++) {
		unsigned char *sh = b + table + i * sizeof(Elf64_Shdr);
		uint64_t off = FIELD_GET(sh, Elf64_Shdr, sh_offset);
		if (i == grown)
			FIELD_PUT(sh, Elf64_Shdr, sh_size, FIELD_GET(sh, Elf64_Shdr, sh_size) + delta);
		else if (off >= f->at + n)
			FIELD_PUT(sh, Elf64_Shdr, sh_offset, off + delta);
	}
	if (shoff >= f->at + n)
		FIELD_PUT(b, Elf64_Ehdr, e_shoff, shoff + delta);
	return true;
}

/* ---- emitting ------------------------------------------------------------------ */

/* Emit the object for symbol of n zero bytes with tm (for triple normal),
 * and return it less those bytes in *out (malloc()ed). */
static int emit_frame(frame *out, LLVMTargetMachineRef tm, const char *normal, const char *symbol,
                      const char *size_symbol, const char *section, unsigned alignment, size_t n,
                      char *error, size_t error_size)
{
	*out = (frame){0};
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("gpucc-embed", ctx);
	LLVMSetTarget(mod, normal);
	LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
	LLVMSetModuleDataLayout(mod, layout);

	/* NAME is emitted as n zero bytes, which LLVM writes without holding
	 * them as a constant; the caller writes the image there. */
	LLVMTypeRef bytes = LLVMArrayType2(LLVMInt8TypeInContext(ctx), n);
	LLVMValueRef image = LLVMAddGlobal(mod, bytes, symbol);
	LLVMSetInitializer(image, LLVMConstNull(bytes));
	LLVMSetGlobalConstant(image, 1);
	LLVMSetLinkage(image, LLVMExternalLinkage);
	LLVMSetAlignment(image, alignment);
	LLVMSetSection(image, section);

	LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
	LLVMValueRef count = LLVMAddGlobal(mod, i64, size_symbol);
	LLVMSetInitializer(count, LLVMConstInt(i64, (unsigned long long)n, 0));
	LLVMSetGlobalConstant(count, 1);
	LLVMSetLinkage(count, LLVMExternalLinkage);
	LLVMSetAlignment(count, 8);

	int rc = 0;
	char *message = NULL;
	LLVMMemoryBufferRef buffer = NULL;
	size_t at = 0;
	if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &message, &buffer) != 0) {
		rc = fail(error, error_size, GPUCC_ERROR, "LLVM could not emit an object for '%s': %s",
		          normal, message ? message : "unknown error");
		LLVMDisposeMessage(message);
	} else if ((rc = locate_image_bytes(buffer, symbol, n, &at, error, error_size)) == 0) {
		/* The object less NAME's bytes: what precedes them, then what
		 * follows. */
		const char *start = LLVMGetBufferStart(buffer);
		size_t size = LLVMGetBufferSize(buffer) - n;
		out->bytes = malloc(size ? size : 1);
		if (!out->bytes) {
			rc = fail(error, error_size, GPUCC_ERROR, "out of memory");
		} else {
			memcpy(out->bytes, start, at);
			memcpy(out->bytes + at, start + at + n, size - at);
			out->size = size;
			out->at = at;
		}
	}
	LLVMDisposeMemoryBuffer(buffer);
	LLVMDisposeModule(mod);
	LLVMDisposeTargetData(layout);
	LLVMContextDispose(ctx);
	return rc;
}

/* The object for symbol of size bytes, less them, grown from a small one
 * (see the top): 0 with *out, 1 when growing is not exact here (the
 * caller emits size zeros instead), or an error. */
static int grow_small_frame(frame *out, LLVMTargetMachineRef tm, const char *normal,
                            const char *symbol, const char *size_symbol, const char *section,
                            unsigned alignment, size_t size, char *error, size_t error_size)
{
	/* Every alignment in the object divides period (embed caps NAME's at
	 * 4096), so objects whose sizes share a residue modulo it have the
	 * same paddings. */
	size_t period = alignment > 4096 ? alignment : 4096;
	size_t small = period + size % period;
	if (size <= small + period)
		return 1;
	frame f, check;
	int rc = emit_frame(&f, tm, normal, symbol, size_symbol, section, alignment, small, error,
	                    error_size);
	if (rc)
		return rc;
	rc = emit_frame(&check, tm, normal, symbol, size_symbol, section, alignment, small + period,
	                error, error_size);
	if (rc == 0) {
		bool exact = check.at == f.at && check.size == f.size &&
		             grow_frame(&f, small, period, symbol, size_symbol) &&
		             memcmp(f.bytes, check.bytes, f.size) == 0 &&
		             grow_frame(&f, small + period, size - small - period, symbol, size_symbol);
		rc = exact ? 0 : 1;
	}
	free(check.bytes);
	if (rc == 0)
		*out = f;
	else
		free(f.bytes);
	return rc;
}

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

	/* The 32-bit ABIs of these CPUs (x32, ILP32) give ELF32 objects,
	 * which grow_frame cannot grow: emitting the whole image instead would
	 * hold it in memory twice over. */
	LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
	unsigned pointer_size = LLVMPointerSize(layout);
	LLVMDisposeTargetData(layout);
	if (pointer_size != 8) {
		LLVMDisposeTargetMachine(tm);
		LLVMDisposeMessage(normal);
		return fail(error, error_size, GPUCC_EINVALID,
		            "host triple '%s' is not supported: it is a 32-bit ABI (%u-byte pointers), "
		            "and gpucc embed writes 64-bit ELF objects",
		            triple, pointer_size);
	}

	char size_symbol[512];
	snprintf(size_symbol, sizeof size_symbol, "%s_size", symbol);
	frame f;
	int rc = grow_small_frame(&f, tm, normal, symbol, size_symbol, section, alignment, size, error,
	                          error_size);
	if (rc == 1)
		rc = emit_frame(&f, tm, normal, symbol, size_symbol, section, alignment, size, error,
		                error_size);
	if (rc == 0) {
		*out = f.bytes;
		*out_size = f.size;
		*image_offset = f.at;
	}
	LLVMDisposeTargetMachine(tm);
	LLVMDisposeMessage(normal);
	return rc;
}
