/*
 * lib/tests/test_embed_elf.c -- the object gpucc embed lays out itself
 * (lib/embed/embed_elf.c), read back through <elf.h>: the host triples it
 * takes (as LLVM normalised them) and refuses, the sections it may put the
 * image in, and each object's headers, sections and symbols, down to an
 * image of 8 GiB, whose frame is laid out without its bytes.  Byte for byte
 * against llc-19, and linked into programs: cmd/tests/embed_outputs.sh.
 */
#include "check.h"
#include "embed_elf.h"

#include <elf.h>
#include <gpucc.h>

static int frame_for(gpucc_embed_frame *f, const char *triple, const char *section,
                     unsigned alignment, uint64_t size)
{
	return gpucc_embed_elf_frame(f, triple, "pkg_image", section, alignment, size);
}

static void test_triples(void)
{
	static const struct {
		const char *triple;
		unsigned machine; /* 0: refused */
		const char *why;
	} cases[] = {
		{"x86_64-pc-linux-gnu", EM_X86_64, NULL},
		{"x86_64-linux-gnu", EM_X86_64, NULL},
		{"x86_64--linux-gnu", EM_X86_64, NULL},
		{"x86_64-unknown-linux-musl", EM_X86_64, NULL},
		{"x86_64-unknown-unknown-linux", EM_X86_64, NULL},
		{"linux-x86_64", EM_X86_64, NULL},
		{"x86_64-linux-gnu_ilp32", EM_X86_64, NULL}, /* ILP32 is AArch64's */
		{"aarch64-linux-gnu", EM_AARCH64, NULL},
		{"aarch64-linux-android", EM_AARCH64, NULL},
		{"x86_64-pc-linux-gnux32", 0, "32-bit ABI"},
		{"x86_64-linux-muslx32", 0, "32-bit ABI"},
		{"aarch64-linux-gnu_ilp32", 0, "32-bit ABI"},
		{"x86_64-unknown-linux-coff", 0, "writes ELF objects for Linux"},
		{"x86_64-apple-darwin", 0, "writes ELF objects for Linux"},
		{"x86_64-pc-windows-msvc", 0, "writes ELF objects for Linux"},
		{"x86_64h-linux-gnu", 0, "writes ELF objects for Linux"},
		{"amd64-linux-gnu", 0, "writes ELF objects for Linux"},
		{"arm64-linux-gnu", 0, "writes ELF objects for Linux"},
		{"aarch64_be-linux-gnu", 0, "writes ELF objects for Linux"},
		{"riscv64-linux-gnu", 0, "writes ELF objects for Linux"},
		{"unknown-linux-gnu", 0, "writes ELF objects for Linux"},
		{"x86_64", 0, "writes ELF objects for Linux"},
		{"", 0, "writes ELF objects for Linux"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		gpucc_embed_frame f;
		int rc = frame_for(&f, cases[i].triple, ".rodata.gpucc", 64, 100);
		if (cases[i].machine) {
			CHECK_INT(rc, 0);
			if (rc == 0) {
				Elf64_Ehdr h;
				memcpy(&h, f.bytes, sizeof h);
				CHECK_INT(h.e_machine, cases[i].machine);
			}
			free(f.bytes);
		} else {
			CHECK_INT(rc, GPUCC_EINVALID);
			CHECK_ERROR_HAS(cases[i].why);
			CHECK(f.bytes == NULL);
		}
	}
}

static void test_sections(void)
{
	static const char *const taken[] = {".rodata.gpucc", ".rodata.x", ".rodata.a.b-c",
	                                    "gpucc_images", "_images", "text"};
	static const char *const refused[] = {".rodata", ".text", ".data", ".bss", ".bss.x",
	                                      ".note.x", ".init_array", ".rodata.cst8",
	                                      ".rodata.str1.1", ".rodata.", "__llvm_covmap",
	                                      "", "a b", "9x", ".symtab", ".strtab", "x\n"};
	gpucc_embed_frame f;
	for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++) {
		CHECK_INT(frame_for(&f, "x86_64-linux-gnu", taken[i], 64, 100), 0);
		free(f.bytes);
	}
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		CHECK_INT(frame_for(&f, "x86_64-linux-gnu", refused[i], 64, 100), GPUCC_EINVALID);
		CHECK_ERROR_HAS("is not supported: the image goes to a read-only section");
	}
	char long_name[300];
	memset(long_name, 'x', sizeof long_name - 1);
	long_name[sizeof long_name - 1] = '\0';
	CHECK_INT(frame_for(&f, "x86_64-linux-gnu", long_name, 64, 100), GPUCC_EINVALID);
}

/* The whole object's byte at offset: in the frame, or the image's
 * (never read here). */
static const unsigned char *object_at(const gpucc_embed_frame *f, uint64_t size, uint64_t offset)
{
	if (offset < f->image_offset)
		return f->bytes + offset;
	CHECK(offset >= f->image_offset + size);
	return f->bytes + (offset - size);
}

static const char *name_at(const gpucc_embed_frame *f, uint64_t size, const Elf64_Shdr *strtab,
                           uint32_t name)
{
	CHECK(name < strtab->sh_size);
	return (const char *)object_at(f, size, strtab->sh_offset + name);
}

/* One object read back: every field a linker or readelf looks at. */
static void check_object(const char *triple, unsigned machine, const char *symbol,
                         unsigned alignment, uint64_t size)
{
	gpucc_embed_frame f;
	CHECK_INT(gpucc_embed_elf_frame(&f, triple, symbol, ".rodata.gpucc", alignment, size), 0);
	if (!f.bytes)
		return;
	Elf64_Ehdr h;
	memcpy(&h, f.bytes, sizeof h);
	CHECK(memcmp(h.e_ident, ELFMAG, SELFMAG) == 0);
	CHECK_INT(h.e_ident[EI_CLASS], ELFCLASS64);
	CHECK_INT(h.e_ident[EI_DATA], ELFDATA2LSB);
	CHECK_INT(h.e_ident[EI_OSABI], ELFOSABI_NONE);
	CHECK_INT(h.e_type, ET_REL);
	CHECK_INT(h.e_machine, machine);
	CHECK_INT(h.e_flags, 0);
	CHECK_INT(h.e_phnum, 0);
	CHECK_INT(h.e_shnum, 7);
	CHECK_INT(h.e_shoff % 8, 0);
	CHECK_INT(h.e_shoff + 7 * sizeof(Elf64_Shdr), f.size + size);
	Elf64_Shdr sh[7];
	memcpy(sh, object_at(&f, size, h.e_shoff), sizeof sh);
	const Elf64_Shdr *strtab = &sh[h.e_shstrndx];
	CHECK_INT(strtab->sh_type, SHT_STRTAB);

	static const struct {
		const char *name;
		uint32_t type;
		uint64_t flags, alignment;
	} want[7] = {{"", SHT_NULL, 0, 0},
	             {".strtab", SHT_STRTAB, 0, 1},
	             {".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 4},
	             {".rodata.gpucc", SHT_PROGBITS, SHF_ALLOC, 0 /* alignment */},
	             {".rodata", SHT_PROGBITS, SHF_ALLOC, 8},
	             {".note.GNU-stack", SHT_PROGBITS, 0, 1},
	             {".symtab", SHT_SYMTAB, 0, 8}};
	for (size_t i = 1; i < 7; i++) {
		CHECK_STR(name_at(&f, size, strtab, sh[i].sh_name), want[i].name);
		CHECK_INT(sh[i].sh_type, want[i].type);
		CHECK_INT(sh[i].sh_flags, want[i].flags);
		CHECK_INT(sh[i].sh_addralign, want[i].alignment ? want[i].alignment : alignment);
		CHECK_INT(sh[i].sh_addralign ? sh[i].sh_offset % sh[i].sh_addralign : 0, 0);
	}
	CHECK_INT(sh[2].sh_size, 0);
	CHECK_INT(sh[3].sh_offset, f.image_offset);
	CHECK_INT(sh[3].sh_size, size);
	CHECK_INT(sh[4].sh_size, 8);
	CHECK_INT(sh[5].sh_size, 0);
	uint64_t stored;
	memcpy(&stored, object_at(&f, size, sh[4].sh_offset), 8);
	CHECK_INT(stored, size);

	/* null, FILE, ($d, $d on AArch64), NAME, NAME_size */
	const Elf64_Shdr *symtab = &sh[6];
	size_t locals = machine == EM_AARCH64 ? 4 : 2;
	CHECK_INT(symtab->sh_entsize, sizeof(Elf64_Sym));
	CHECK_INT(symtab->sh_size, (locals + 2) * sizeof(Elf64_Sym));
	CHECK_INT(symtab->sh_link, 1);
	CHECK_INT(symtab->sh_info, locals);
	Elf64_Sym syms[6];
	memcpy(syms, object_at(&f, size, symtab->sh_offset), (locals + 2) * sizeof(Elf64_Sym));
	CHECK_STR(name_at(&f, size, strtab, syms[1].st_name), "gpucc-embed");
	CHECK_INT(syms[1].st_info, ELF64_ST_INFO(STB_LOCAL, STT_FILE));
	CHECK_INT(syms[1].st_shndx, SHN_ABS);
	for (size_t i = 2; i < locals; i++) {
		CHECK_STR(name_at(&f, size, strtab, syms[i].st_name), "$d");
		CHECK_INT(syms[i].st_info, ELF64_ST_INFO(STB_LOCAL, STT_NOTYPE));
		CHECK_INT(syms[i].st_shndx, i + 1);
	}
	char size_symbol[256];
	snprintf(size_symbol, sizeof size_symbol, "%s_size", symbol);
	const Elf64_Sym *image = &syms[locals], *count = &syms[locals + 1];
	CHECK_STR(name_at(&f, size, strtab, image->st_name), symbol);
	CHECK_STR(name_at(&f, size, strtab, count->st_name), size_symbol);
	for (const Elf64_Sym *s = image; s <= count; s++) {
		CHECK_INT(s->st_info, ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT));
		CHECK_INT(ELF64_ST_VISIBILITY(s->st_other), STV_DEFAULT);
		CHECK_INT(s->st_value, 0);
	}
	CHECK_INT(image->st_shndx, 3);
	CHECK_INT(image->st_size, size);
	CHECK_INT(count->st_shndx, 4);
	CHECK_INT(count->st_size, 8);
	free(f.bytes);
}

static void test_objects(void)
{
	static const unsigned alignments[] = {1, 2, 8, 64, 4096};
	/* "data" ends ".rodata", "gpucc" ".rodata.gpucc": the names share bytes */
	static const char *const symbols[] = {"pkg_image", "data", "gpucc", "stack", "Z"};
	static const uint64_t sizes[] = {1, 100, 4097, 300000, (uint64_t)8 << 30};
	for (size_t a = 0; a < sizeof alignments / sizeof alignments[0]; a++)
		for (size_t s = 0; s < sizeof symbols / sizeof symbols[0]; s++)
			for (size_t n = 0; n < sizeof sizes / sizeof sizes[0]; n++) {
				check_object("x86_64-pc-linux-gnu", EM_X86_64, symbols[s], alignments[a],
				             sizes[n]);
				check_object("aarch64-linux-gnu", EM_AARCH64, symbols[s], alignments[a],
				             sizes[n]);
			}
}

int main(void)
{
	RUN(test_triples);
	RUN(test_sections);
	RUN(test_objects);
	return CHECK_DONE();
}
