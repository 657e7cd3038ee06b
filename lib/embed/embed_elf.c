/*
 * lib/embed/embed_elf.c -- the relocatable ELF object `gpucc embed` writes,
 * laid out here without LLVM: the hosts it is written for (x86_64 and
 * aarch64 Linux, 64-bit pointers) and its bytes less the image's
 * (gpucc_embed_elf_frame, lib/embed/embed_elf.h).
 *
 * The object is the one LLVM's ELF writer emits for the module
 *   source_filename = "gpucc-embed"
 *   @NAME      = constant [N x i8] zeroinitializer, section S, align A
 *   @NAME_size = constant i64 N, align 8
 * with llc -O0 -relocation-model=pic, byte for byte (cmd/tests/embed_outputs.sh
 * compares the two where llc-19 is installed), so that what links it meets
 * what it met when LLVM wrote it:
 *
 *   ELF header        ELF64, little-endian, ET_REL, OS ABI none, flags 0
 *   .text             empty, AX, align 4             at 64
 *   S                 NAME's N bytes, A, align A     at 64 rounded up to A
 *   .rodata           NAME_size, 8 bytes, A, align 8
 *   .note.GNU-stack   empty, no flags: the stack is not executable
 *   .symtab           null; FILE gpucc-embed; on aarch64 a $d mapping
 *                     symbol at the start of each data section; NAME and
 *                     NAME_size, GLOBAL OBJECT default-visible (sh_info:
 *                     the first global)
 *   .strtab           every section and symbol name, one table, in LLVM's
 *                     order (sorted by reversed spelling, a name that ends
 *                     another sharing its bytes)
 *   section headers   at the end, aligned to 8: null, .strtab (e_shstrndx),
 *                     .text, S, .rodata, .note.GNU-stack, .symtab
 *
 * No relocations: nothing in it points anywhere.  Both machines are
 * little-endian; fields are written byte by byte whatever this host's order.
 */
#include "embed_elf.h"
#include "errors.h"
#include "escape.h"
#include "input_file.h"

#include <elf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The sizes of the ELF64 structures, as written here field by field. */
enum {
	EHDR_SIZE = sizeof(Elf64_Ehdr),
	SHDR_SIZE = sizeof(Elf64_Shdr),
	SYM_SIZE = sizeof(Elf64_Sym),
};

/* The sections, by index in the header table. */
enum { SEC_NULL, SEC_STRTAB, SEC_TEXT, SEC_IMAGE, SEC_RODATA, SEC_NOTE, SEC_SYMTAB, SEC_COUNT };

#define FILE_SYMBOL "gpucc-embed" /* the module's name, as LLVM's FILE symbol gives it */
#define SECTION_MAX 200

/* ---- the host and the section ------------------------------------------------- */

/* Whether s begins with prefix. */
static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* One component of a triple: length bytes at text. */
typedef struct component {
	const char *text;
	size_t length;
} component;

static bool component_is(component c, const char *word)
{
	return c.length == strlen(word) && strncmp(c.text, word, c.length) == 0;
}

static bool component_starts(component c, const char *prefix)
{
	return c.length >= strlen(prefix) && strncmp(c.text, prefix, strlen(prefix)) == 0;
}

/* The ELF machine of triple into *machine.  The triple is read as LLVM
 * normalises it, for the triples it can give here: ARCH-VENDOR-OS[-ENV...]
 * with a vendor that may be missing or empty, an OS that may come after
 * more components (x86_64-unknown-unknown-linux), and the ARCH after an OS
 * written first (linux-x86_64).  Only Linux on x86_64 or aarch64 is ELF
 * written here; an ENV may name an object format of its own
 * (x86_64-unknown-linux-coff), or a 32-bit ABI of those CPUs (x32,
 * ILP32), whose objects are ELF32.  0 or GPUCC_EINVALID. */
static int host_machine(const char *triple, unsigned *machine)
{
	enum { MAX = 16 };
	component parts[MAX];
	size_t count = 0;
	for (const char *p = triple; count < MAX; count++) {
		const char *dash = strchr(p, '-');
		parts[count] = (component){p, dash ? (size_t)(dash - p) : strlen(p)};
		if (!dash)
			break;
		p = dash + 1;
	}
	count = count < MAX ? count + 1 : MAX;
	size_t arch = count, os = count;
	for (size_t i = 0; i < count && arch == count; i++)
		if ((i == 0 || component_starts(parts[0], "linux")) &&
		    (component_is(parts[i], "x86_64") || component_is(parts[i], "aarch64")))
			arch = i;
	if (arch == 0) {
		for (size_t i = 1; i < count && os == count; i++)
			if (component_starts(parts[i], "linux"))
				os = i;
	} else if (arch < count) {
		os = 0;
	}
	/* The components after the OS (but the ARCH): the environment. */
	static const char *const formats[] = {"coff", "macho", "wasm", "xcoff", "goff", "spirv",
	                                      "dxcontainer"};
	bool other_format = false;
	size_t env = count;
	for (size_t i = os + 1; i < count; i++) {
		if (i == arch)
			continue;
		env = env == count ? i : env;
		for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++)
			for (size_t at = 0; at + strlen(formats[f]) <= parts[i].length; at++)
				other_format |= strncmp(parts[i].text + at, formats[f], strlen(formats[f])) == 0;
	}
	if (os == count || other_format)
		return gpucc_error_set(GPUCC_EINVALID,
		                       "host triple '%s' is not supported: gpucc embed writes ELF objects "
		                       "for Linux on x86_64 or aarch64",
		                       triple);
	bool x86_64 = component_is(parts[arch], "x86_64");
	if (env < count && ((x86_64 && (component_starts(parts[env], "gnux32") ||
	                                component_starts(parts[env], "muslx32"))) ||
	                    (!x86_64 && component_starts(parts[env], "gnu_ilp32"))))
		return gpucc_error_set(GPUCC_EINVALID,
		                       "host triple '%s' is not supported: it is a 32-bit ABI (4-byte "
		                       "pointers), and gpucc embed writes 64-bit ELF objects",
		                       triple);
	*machine = x86_64 ? EM_X86_64 : EM_AARCH64;
	return 0;
}

/* Whether c may be in a section name past its first character. */
static bool section_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/* The image's section: a read-only one of its own, which LLVM gave the
 * flags A and type PROGBITS: .rodata.SUFFIX (but not the mergeable
 * .rodata.cst* and .rodata.str*), or a C identifier, whose bounds a
 * linker then defines as __start_NAME and __stop_NAME (but not LLVM's
 * __llvm_*).  Other names LLVM made a section of another kind (.bss*,
 * .note*, .init_array...), or the same as another of the object's. */
static int check_section(const char *section)
{
	const char *rest = NULL;
	if (starts_with(section, ".rodata.") && !starts_with(section, ".rodata.cst") &&
	    !starts_with(section, ".rodata.str"))
		rest = section + strlen(".rodata.");
	else if ((section[0] == '_' || (section[0] >= 'a' && section[0] <= 'z') ||
	          (section[0] >= 'A' && section[0] <= 'Z')) &&
	         !starts_with(section, "__llvm"))
		rest = section + 1;
	bool ok = rest && strlen(section) <= SECTION_MAX && (*rest || section[0] != '.');
	for (const char *p = rest; ok && *p; p++)
		ok = section_char(*p) || (section[0] == '.' && (*p == '.' || *p == '-'));
	if (ok)
		return 0;
	char shown[GPUCC_SHOWN_PATH_SIZE];
	gpucc_escape_controls(shown, sizeof shown, section);
	return gpucc_error_set(GPUCC_EINVALID,
	                       "section '%s' is not supported: the image goes to a read-only section "
	                       "named .rodata.SUFFIX or a C identifier",
	                       shown);
}

/* ---- the string table ------------------------------------------------------------ */

enum { STRINGS_MAX = 12 };

/* The object's one string table, as LLVM's StringTableBuilder (kind ELF)
 * builds it: the strings sorted by their spelling read backwards, greater
 * first and a string after those it ends; each one that ends the last one
 * placed shares its bytes; a NUL first and after each. */
typedef struct strtab {
	const char *text[STRINGS_MAX];
	size_t length[STRINGS_MAX];
	uint64_t offset[STRINGS_MAX];
	size_t count;
	uint64_t size;
} strtab;

/* Add s (once: a string added again is the same entry); its index. */
static size_t strtab_add(strtab *t, const char *s)
{
	for (size_t i = 0; i < t->count; i++)
		if (strcmp(t->text[i], s) == 0)
			return i;
	t->text[t->count] = s;
	t->length[t->count] = strlen(s);
	return t->count++;
}

/* The character pos places from the end of string i, or -1 past its
 * start. */
static int tail_char(const strtab *t, size_t i, size_t pos)
{
	return pos < t->length[i] ? (unsigned char)t->text[i][t->length[i] - 1 - pos] : -1;
}

/* Whether string a is placed before string b. */
static bool strtab_before(const strtab *t, size_t a, size_t b)
{
	for (size_t pos = 0;; pos++) {
		int ca = tail_char(t, a, pos), cb = tail_char(t, b, pos);
		if (ca != cb)
			return ca > cb;
		if (ca < 0)
			return false;
	}
}

/* Give each string its offset, and the table its size. */
static void strtab_finish(strtab *t)
{
	size_t order[STRINGS_MAX];
	for (size_t i = 0; i < t->count; i++) {
		size_t j = i;
		for (; j > 0 && strtab_before(t, i, order[j - 1]); j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	t->size = 1;
	size_t previous = SIZE_MAX;
	for (size_t k = 0; k < t->count; k++) {
		size_t i = order[k];
		if (previous != SIZE_MAX && t->length[i] <= t->length[previous] &&
		    strcmp(t->text[previous] + t->length[previous] - t->length[i], t->text[i]) == 0) {
			t->offset[i] = t->size - 1 - t->length[i];
			continue;
		}
		t->offset[i] = t->size;
		t->size += t->length[i] + 1;
		previous = i;
	}
}

/* ---- writing ---------------------------------------------------------------------- */

/* The object being written into a frame: offsets are the object's, the
 * image's bytes (at image_offset, image_size of them) left out. */
typedef struct writer {
	unsigned char *bytes;
	uint64_t image_offset, image_size;
} writer;

/* Where the object's offset at lies in the frame (never within the image). */
static unsigned char *at(const writer *w, uint64_t offset)
{
	return w->bytes + (offset < w->image_offset ? offset : offset - w->image_size);
}

/* Write the little-endian value v of width bytes at the object's offset. */
static void put(const writer *w, uint64_t offset, size_t width, uint64_t v)
{
	unsigned char *p = at(w, offset);
	for (size_t i = 0; i < width; i++, v >>= 8)
		p[i] = (unsigned char)v;
}

static uint64_t align_up(uint64_t v, uint64_t alignment)
{
	return (v + alignment - 1) & ~(alignment - 1);
}

typedef struct section_header {
	size_t name; /* strtab index */
	uint32_t type;
	uint64_t flags, offset, size;
	uint32_t link, info;
	uint64_t alignment, entry_size;
} section_header;

typedef struct symbol_entry {
	size_t name; /* strtab index */
	unsigned char info;
	uint16_t section;
	uint64_t size;
} symbol_entry;

static void put_section_header(const writer *w, uint64_t offset, const section_header *h,
                               const strtab *t)
{
	put(w, offset + 0, 4, t->offset[h->name]);
	put(w, offset + 4, 4, h->type);
	put(w, offset + 8, 8, h->flags);
	put(w, offset + 16, 8, 0); /* sh_addr */
	put(w, offset + 24, 8, h->offset);
	put(w, offset + 32, 8, h->size);
	put(w, offset + 40, 4, h->link);
	put(w, offset + 44, 4, h->info);
	put(w, offset + 48, 8, h->alignment);
	put(w, offset + 56, 8, h->entry_size);
}

static void put_symbol(const writer *w, uint64_t offset, const symbol_entry *s, const strtab *t)
{
	put(w, offset + 0, 4, t->offset[s->name]);
	put(w, offset + 4, 1, s->info);
	put(w, offset + 5, 1, 0); /* st_other: default visibility */
	put(w, offset + 6, 2, s->section);
	put(w, offset + 8, 8, 0); /* st_value: each symbol opens its section */
	put(w, offset + 16, 8, s->size);
}

int gpucc_embed_elf_frame(gpucc_embed_frame *out, const char *triple, const char *symbol,
                          const char *section, unsigned alignment, uint64_t size)
{
	*out = (gpucc_embed_frame){0};
	unsigned machine = 0;
	int rc = host_machine(triple, &machine);
	if (rc == 0)
		rc = check_section(section);
	if (rc)
		return rc;
	if (size > UINT64_MAX / 4)
		return gpucc_error_set(GPUCC_EINVALID, "an image of %llu bytes is too large to embed",
		                       (unsigned long long)size);

	size_t symbol_length = strlen(symbol);
	char *size_symbol = malloc(symbol_length + sizeof "_size");
	if (!size_symbol)
		return gpucc_error_oom();
	memcpy(size_symbol, symbol, symbol_length);
	memcpy(size_symbol + symbol_length, "_size", sizeof "_size");

	/* The names, as LLVM adds them (their order does not change the
	 * table: it is sorted).  Only AArch64 marks data with $d. */
	bool mapping_symbols = machine == EM_AARCH64;
	strtab t = {.count = 0};
	size_t name_text = strtab_add(&t, ".text");
	size_t name_image_section = strtab_add(&t, section);
	size_t name_rodata = strtab_add(&t, ".rodata");
	size_t name_note = strtab_add(&t, ".note.GNU-stack");
	size_t name_symtab = strtab_add(&t, ".symtab");
	size_t name_strtab = strtab_add(&t, ".strtab");
	size_t name_file = strtab_add(&t, FILE_SYMBOL);
	size_t name_mapping = mapping_symbols ? strtab_add(&t, "$d") : 0;
	size_t name_symbol = strtab_add(&t, symbol);
	size_t name_size_symbol = strtab_add(&t, size_symbol);
	strtab_finish(&t);

	const unsigned char local = ELF64_ST_INFO(STB_LOCAL, STT_NOTYPE);
	const unsigned char file = ELF64_ST_INFO(STB_LOCAL, STT_FILE);
	const unsigned char global = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
	symbol_entry symbols[6];
	size_t symbol_count = 0;
	symbols[symbol_count++] = (symbol_entry){.name = SIZE_MAX};
	symbols[symbol_count++] = (symbol_entry){.name = name_file, .info = file, .section = SHN_ABS};
	if (mapping_symbols) {
		symbols[symbol_count++] =
			(symbol_entry){.name = name_mapping, .info = local, .section = SEC_IMAGE};
		symbols[symbol_count++] =
			(symbol_entry){.name = name_mapping, .info = local, .section = SEC_RODATA};
	}
	size_t first_global = symbol_count;
	symbols[symbol_count++] =
		(symbol_entry){.name = name_symbol, .info = global, .section = SEC_IMAGE, .size = size};
	symbols[symbol_count++] = (symbol_entry){
		.name = name_size_symbol, .info = global, .section = SEC_RODATA, .size = 8};

	/* The layout: each section after the last at its alignment. */
	uint64_t text_offset = EHDR_SIZE;
	uint64_t image_offset = align_up(text_offset, alignment);
	uint64_t rodata_offset = align_up(image_offset + size, 8);
	uint64_t note_offset = rodata_offset + 8;
	uint64_t symtab_offset = align_up(note_offset, 8);
	uint64_t strtab_offset = symtab_offset + symbol_count * SYM_SIZE;
	uint64_t headers_offset = align_up(strtab_offset + t.size, 8);
	uint64_t total = headers_offset + SEC_COUNT * SHDR_SIZE;

	section_header headers[SEC_COUNT] = {
		[SEC_NULL] = {.name = SIZE_MAX},
		[SEC_STRTAB] = {.name = name_strtab, .type = SHT_STRTAB, .offset = strtab_offset,
		                .size = t.size, .alignment = 1},
		[SEC_TEXT] = {.name = name_text, .type = SHT_PROGBITS,
		              .flags = SHF_ALLOC | SHF_EXECINSTR, .offset = text_offset,
		              .alignment = 4},
		[SEC_IMAGE] = {.name = name_image_section, .type = SHT_PROGBITS, .flags = SHF_ALLOC,
		               .offset = image_offset, .size = size, .alignment = alignment},
		[SEC_RODATA] = {.name = name_rodata, .type = SHT_PROGBITS, .flags = SHF_ALLOC,
		                .offset = rodata_offset, .size = 8, .alignment = 8},
		[SEC_NOTE] = {.name = name_note, .type = SHT_PROGBITS, .offset = note_offset,
		              .alignment = 1},
		[SEC_SYMTAB] = {.name = name_symtab, .type = SHT_SYMTAB, .offset = symtab_offset,
		                .size = symbol_count * SYM_SIZE, .link = SEC_STRTAB,
		                .info = (uint32_t)first_global, .alignment = 8, .entry_size = SYM_SIZE},
	};

	size_t frame_size = (size_t)(total - size);
	writer w = {.bytes = calloc(1, frame_size), .image_offset = image_offset, .image_size = size};
	if (!w.bytes) {
		free(size_symbol);
		return gpucc_error_oom();
	}
	static const unsigned char ident[EI_NIDENT] = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64,
	                                               ELFDATA2LSB, EV_CURRENT, ELFOSABI_NONE};
	memcpy(w.bytes, ident, sizeof ident);
	put(&w, 16, 2, ET_REL);
	put(&w, 18, 2, machine);
	put(&w, 20, 4, EV_CURRENT);
	put(&w, 40, 8, headers_offset);
	put(&w, 52, 2, EHDR_SIZE);
	put(&w, 58, 2, SHDR_SIZE);
	put(&w, 60, 2, SEC_COUNT);
	put(&w, 62, 2, SEC_STRTAB);
	put(&w, rodata_offset, 8, size);
	for (size_t i = 1; i < symbol_count; i++)
		put_symbol(&w, symtab_offset + i * SYM_SIZE, &symbols[i], &t);
	for (size_t i = 0; i < t.count; i++)
		memcpy(at(&w, strtab_offset + t.offset[i]), t.text[i], t.length[i]);
	for (size_t i = 1; i < SEC_COUNT; i++)
		put_section_header(&w, headers_offset + i * SHDR_SIZE, &headers[i], &t);
	free(size_symbol);

	out->bytes = w.bytes;
	out->size = frame_size;
	out->image_offset = (size_t)image_offset;
	return 0;
}
