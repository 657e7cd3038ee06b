/*
 * lib/tests/test_module_facts.c -- module facts read without LLVM
 * (gpucc_module_facts_read, lib/compile/compile_module_facts.c and
 * lib/compile/compile_bitcode.c).
 *
 *   - .ll text: every field, and the text split as LLVM's lexer splits it
 *     (any whitespace between tokens, comments, strings, escaped names);
 *   - bitcode written here bit by bit: abbreviations from BLOCKINFO, char6
 *     arrays, blobs, skipped blocks, the wrapper, version 1 symbol tables,
 *     and streams that must leave the facts unknown;
 *   - modules clang-19 writes for HIP, CUDA and OpenCL C, and one llvm-as-19
 *     writes with every attribute encoding: the .bc facts equal the facts of
 *     its llvm-dis-19 text, and what that text says;
 *   - truncated and bit-flipped copies of that bitcode, which never crash.
 *
 * The clang cases skip (77) when clang-19, llvm-as-19 or llvm-dis-19 is
 * missing; everything else runs everywhere.
 */
#include "check.h"

#include "compile_impl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static gpucc_module_facts text_facts(const char *text)
{
	gpucc_module_facts f;
	gpucc_module_facts_read(&f, (const unsigned char *)text, strlen(text));
	return f;
}

static void show_case(const char *text)
{
	fprintf(stderr, "  in: %s\n", text);
}

/* ---- .ll text ------------------------------------------------------------------ */

static void test_text_triple(void)
{
	static const struct {
		const char *text, *triple;
	} cases[] = {
		{"target triple = \"nvptx64-nvidia-cuda\"\n", "nvptx64-nvidia-cuda"},
		{"target  triple   =   \"amdgcn-amd-amdhsa\"", "amdgcn-amd-amdhsa"},
		{"target\ttriple\t=\"amdgcn-amd-amdhsa\"\r\n", "amdgcn-amd-amdhsa"},
		{"target\n triple ; a comment\n = \"nvptx64-nvidia-cuda\"", "nvptx64-nvidia-cuda"},
		{"  \ttarget triple = \"a\"\ntarget triple = \"b\"\n", "b"}, /* the last one */
		{"target datalayout = \"e-p:64:64\"\n", ""},
		{"; target triple = \"nvptx64-nvidia-cuda\"\n", ""},
		{"@s = constant [20 x i8] c\"target triple = \\22x\\22\"\n", ""},
		{"target triple = \"amdgcn\\2Damd-amdhsa\"", "amdgcn-amd-amdhsa"},
		{"%t = alloca target(\"spirv.Image\")\n", ""},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		gpucc_module_facts f = text_facts(cases[i].text);
		CHECK(!f.bitcode && f.triple_known && f.attributes_known && f.flags_known);
		if (strcmp(f.triple, cases[i].triple) != 0) {
			show_case(cases[i].text);
			CHECK_STR(f.triple, cases[i].triple);
		}
	}
	char longer[300];
	snprintf(longer, sizeof longer, "target triple = \"%0200d\"", 0);
	gpucc_module_facts f = text_facts(longer);
	CHECK(!f.triple_known && f.triple[0] == '\0');
}

/* References outside comments and strings, by their decoded names. */
static void test_text_references(void)
{
	static const struct {
		const char *text;
		bool libdevice, rocm, hip;
	} cases[] = {
		{"; avoids __ocml_exp_f32\n", false, false, false},
		{"; calls @__ocml_exp_f32 and @__nv_expf? no\n", false, false, false},
		{"define void @k() { ret void } ; @__nv_sinf\n", false, false, false},
		{"%r = call float @__ocml_exp_f32(float %x) ; exp\n", false, true, false},
		{"%r = call float @\"__ockl_get_local_id\"(i32 0)\n", false, true, false},
		{"@s = constant [4 x i8] c\"a;b\\00\" @__nv_sinf\n", true, false, false},
		{"@s = constant [9 x i8] c\"@__nv_sin\\00\"\n", false, false, false},
		{"; \"quoted in a comment\n@p = global ptr @__nv_expf\n", true, false, false},
		{"declare float @__nv_expf(float)", true, false, false},
		{"__nv_expf __ocml_sin_f32 without sigils\n", false, false, false},
		{"call float @\"\\5F_nv_expf\"(float %x)\n", true, false, false},
		{"call float @\"\\5f\\5Focml_sin_f32\"(float %x)\n", false, true, false},
		{"call void @__atomic_work_item_fence(i32 0, i32 1, i32 2)\n", false, false, true},
		{"call void @__atomic_work_item_fence2()\n", false, false, false},
		{"call void @\"__atomic_work_item\\5Ffence\"()\n", false, false, true},
		{"@s = constant [2 x i8] c\"\\22;\" @__nv_cosf\n", true, false, false},
		{"%__nv_x = add i32 0, 0 ; a local, not a global\n", false, false, false},
		{"@\"a;b\" = global ptr @__ockl_x\n", false, true, false},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		gpucc_module_facts f = text_facts(cases[i].text);
		if (f.calls_libdevice != cases[i].libdevice || f.calls_rocm != cases[i].rocm ||
		    f.calls_hip != cases[i].hip) {
			show_case(cases[i].text);
			CHECK(false);
		}
	}
}

static void test_text_declarations(void)
{
	static const struct {
		const char *text;
		bool mangled, opencl;
	} cases[] = {
		{"declare float @_Z3sinf(float)\n", true, false},
		{"declare hidden noundef i64 @_Z13get_global_idj(i32 noundef) #1\n", true, false},
		{"declare\n  float\n  @\"\\5FZ3cosf\"(float)\n", true, false},
		{"define float @_Z3sinf(float %x) { ret float %x }\n", false, false},
		{"; declare float @_Z3sinf(float)\n", false, false},
		{"declare float @sinf(float)\ncall float @_Z3cosf(float 0.0)\n", false, false},
		{"!opencl.ocl.version = !{!0}\n!0 = !{i32 2, i32 0}\n", false, true},
		{"!opencl\\2Eocl.version = !{!0}\n", false, true},
		{"!opencl.ocl.version\n\t=\t!{}\n", false, true},
		{"; !opencl.ocl.version = !{!0}\n", false, false},
		{"!opencl.ocl.versions = !{!0}\n", false, false},
		{"call void @f(), !opencl.ocl.version !0\n", false, false},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		gpucc_module_facts f = text_facts(cases[i].text);
		if (f.calls_mangled != cases[i].mangled || f.opencl != cases[i].opencl) {
			show_case(cases[i].text);
			CHECK(false);
		}
	}
}

static void test_text_attributes(void)
{
	gpucc_module_facts f = text_facts(
		"define void @k() #0 { ret void }\n"
		"attributes #0 = { convergent optnone noinline \"target-cpu\"=\"gfx90a\" "
		"\"target-features\"=\"+xnack,-sramecc,+wavefrontsize64,-xnack\" }\n"
		"attributes #1 = { \"target-cpu\"=\"gfx942\" \"target-features\"=\"+sramecc\" }\n"
		"attributes #2 = { nounwind \"target-cpu\"=\"gfx90a\" }\n");
	CHECK(f.attributes_known);
	CHECK_INT(f.cpu_count, 2);
	CHECK_STR(f.cpus[0], "gfx90a");
	CHECK_STR(f.cpus[1], "gfx942");
	CHECK(f.optnone && f.wavefront64);
	CHECK_INT(f.xnack, GPUCC_FEATURE_ON); /* the first one seen */
	CHECK_INT(f.sramecc, GPUCC_FEATURE_OFF);
	CHECK_INT(f.ptx_isa, 0);

	f = text_facts("attributes #0 = { \"target-cpu\"=\"sm_80\" \"target-features\"=\"+ptx70,+sm_80\" }\n"
	               "attributes #1 = { \"target-features\"=\"+ptx\\38\\35\" }\n"
	               "attributes #2 = { \"target-features\"=\"+ptx78,+ptx,+ptxa1,ptx99\" }\n");
	CHECK_INT(f.ptx_isa, 85);
	CHECK(!f.optnone && !f.wavefront64);
	CHECK_INT(f.xnack, GPUCC_FEATURE_ANY);
	CHECK_INT(f.sramecc, GPUCC_FEATURE_ANY);

	/* On the define line, after the parameters (whose attributes are theirs). */
	f = text_facts("define void @k(ptr \"target-cpu\"=\"sm_50\" %p) optnone \"target-cpu\"=\"gfx1030\" {\n"
	               "  ret void\n}\n");
	CHECK_INT(f.cpu_count, 1);
	CHECK_STR(f.cpus[0], "gfx1030");
	CHECK(f.optnone);
	f = text_facts("define void @k(ptr addrspace(1) %p)\n  local_unnamed_addr\toptnone noinline {\n}\n");
	CHECK(f.optnone);

	/* Not attributes: a string "optnone", a comment, a string constant,
	 * a declaration's parameter. */
	static const char *const none[] = {
		"attributes #0 = { \"optnone\" }\n",
		"; attributes #0 = { optnone \"target-cpu\"=\"gfx90a\" }\n",
		"@s = constant [30 x i8] c\"\\22target-cpu\\22=\\22gfx90a\\22 optnone\"\n",
		"define void @optnone() { ret void }\n",
		"attributes #0 = { \"target-cpu\" }\n",
		"attributes #0 = { \"target-cpu\"=\"\" }\n", /* LLVM writes it as the key alone */
	};
	for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
		f = text_facts(none[i]);
		if (f.optnone || f.cpu_count != 0) {
			show_case(none[i]);
			CHECK(false);
		}
	}

	/* At most GPUCC_MODULE_MAX_CPUS, each cut to its buffer. */
	char text[2048] = "";
	for (int i = 0; i < 10; i++) {
		size_t used = strlen(text);
		snprintf(text + used, sizeof text - used, "attributes #%d = { \"target-cpu\"=\"gfx9%02d\" }\n", i, i);
	}
	f = text_facts(text);
	CHECK_INT(f.cpu_count, GPUCC_MODULE_MAX_CPUS);
	CHECK_STR(f.cpus[7], "gfx907");
	f = text_facts("attributes #0 = { \"target-cpu\"=\"a-processor-name-far-too-long-for-the-buffer\" }");
	CHECK_INT(f.cpu_count, 1);
	CHECK_INT(strlen(f.cpus[0]), sizeof f.cpus[0] - 1);
}

static void test_text_module_flags(void)
{
	static const struct {
		const char *text;
		unsigned version;
	} cases[] = {
		{"!llvm.module.flags = !{!0, !3}\n!0 = !{i32 7, !\"PIC Level\", i32 2}\n"
		 "!3 = !{i32 1, !\"amdhsa_code_object_version\", i32 500}\n", 5},
		{"!3 = !{i32 1, !\"amdhsa_code_object_version\", i32 400}\n!llvm.module.flags = !{!3}\n", 4},
		{"!llvm.module.flags = !{ !1 }\n!1 = distinct !{i32 1, !\"amdhsa_code_object_version\", i32 600}\n", 6},
		{"!llvm.module.flags=!{!0}!0=!{i32 1,!\"amdhsa_code_object_version\",i32 u0x1F4}", 5},
		{"!llvm.module.flags = !{!0}\n!0 = !{i32 1, !\"amdhsa\\5Fcode_object_version\", i32 400}\n", 4},
		{"!llvm.module.flags = !{!0}\n!0 = !{\n  i32 1, ; behaviour\n  !\"amdhsa_code_object_version\",\n  i32 500\n}\n", 5},
		{"!llvm.module.flags = !{!1, !0}\n!0 = !{i32 1, !\"amdhsa_code_object_version\", i32 400}\n"
		 "!1 = !{i32 1, !\"amdhsa_code_object_version\", i32 500}\n", 5},
		/* A node of that form outside the flags is no flag. */
		{"!llvm.module.flags = !{!0}\n!0 = !{i32 1, !\"wchar_size\", i32 4}\n"
		 "!1 = !{i32 1, !\"amdhsa_code_object_version\", i32 500}\n", 0},
		{"!named = !{!1}\n!1 = !{i32 1, !\"amdhsa_code_object_version\", i32 500}\n", 0},
		{"; !llvm.module.flags = !{!1}\n!1 = !{i32 1, !\"amdhsa_code_object_version\", i32 500}\n", 0},
		{"!llvm.module.flags = !{!0}\n!0 = !{i32 1, !\"amdhsa_code_object_version\", i32 -500}\n", 0},
		{"!llvm.module.flags = !{!0}\n!0 = !{!\"amdhsa_code_object_version\"}\n", 0},
		/* Short nodes before the flag's do not hide it. */
		{"!llvm.module.flags = !{!2}\n!0 = !{!\"x\"}\n!1 = !{}\n"
		 "!2 = !{i32 1, !\"amdhsa_code_object_version\", i32 500}\n", 5},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		gpucc_module_facts f = text_facts(cases[i].text);
		CHECK(f.flags_known);
		if (f.code_object_version != cases[i].version) {
			show_case(cases[i].text);
			CHECK_INT(f.code_object_version, cases[i].version);
		}
	}
}

/* Text LLVM would refuse: no crash, no read past the end. */
static void test_text_hostile(void)
{
	static const char *const texts[] = {
		"", "\"", "@\"", "!", "#", "target", "target triple", "target triple =",
		"attributes #0 = {", "attributes #0 = { \"target-cpu\"=", "define void @f(",
		"define void @f((((", "declare", "!llvm.module.flags = !{!", "!0 = !{i32 1, !\"amdhsa_code_object_version\"",
		"@\"\\", "@\"\\5", "\"\\5F", "!\\", "target triple = \"\\",
		"attributes #0 = { \"target-features\"=\"\\2B\\70\\74\\78\\39\\39\" }",
	};
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		/* An exact-size copy: any read past its end is ASan's to see. */
		size_t n = strlen(texts[i]);
		unsigned char *copy = malloc(n ? n : 1);
		memcpy(copy, texts[i], n);
		gpucc_module_facts f;
		gpucc_module_facts_read(&f, copy, n);
		CHECK(f.cpu_count <= GPUCC_MODULE_MAX_CPUS && memchr(f.triple, 0, sizeof f.triple));
		free(copy);
	}
	gpucc_module_facts f = text_facts(texts[sizeof texts / sizeof texts[0] - 1]);
	CHECK_INT(f.ptx_isa, 99);
}

/* ---- bitcode written bit by bit -------------------------------------------------- */

typedef struct bit_writer {
	unsigned char data[4096];
	size_t bits;
	unsigned width; /* of abbreviation ids */
	size_t starts[8];
	unsigned widths[8];
	unsigned depth;
} bit_writer;

static void put(bit_writer *w, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++, w->bits++)
		if (v >> i & 1)
			w->data[w->bits >> 3] |= (unsigned char)(1u << (w->bits & 7));
}

static void put_vbr(bit_writer *w, uint64_t v, unsigned n)
{
	uint64_t high = (uint64_t)1 << (n - 1);
	for (; v >= high; v >>= n - 1)
		put(w, (v & (high - 1)) | high, n);
	put(w, v, n);
}

static void put_align(bit_writer *w)
{
	w->bits = (w->bits + 31) & ~(size_t)31;
}

static void writer_start(bit_writer *w)
{
	memset(w, 0, sizeof *w);
	memcpy(w->data, "BC\xc0\xde", 4);
	w->bits = 32;
	w->width = 2;
}

static void block_open(bit_writer *w, unsigned id, unsigned width)
{
	put(w, 1, w->width);
	put_vbr(w, id, 8);
	put_vbr(w, width, 4);
	put_align(w);
	w->starts[w->depth] = w->bits;
	w->widths[w->depth++] = w->width;
	put(w, 0, 32);
	w->width = width;
}

static void block_close(bit_writer *w)
{
	put(w, 0, w->width);
	put_align(w);
	size_t start = w->starts[--w->depth];
	uint64_t words = (w->bits - start - 32) / 32;
	for (unsigned i = 0; i < 4; i++)
		w->data[start / 8 + i] = (unsigned char)(words >> (8 * i));
	w->width = w->widths[w->depth];
}

static void record(bit_writer *w, unsigned code, const uint64_t *ops, size_t n)
{
	put(w, 3, w->width);
	put_vbr(w, code, 6);
	put_vbr(w, n, 6);
	for (size_t i = 0; i < n; i++)
		put_vbr(w, ops[i], 6);
}

/* A record of characters: code, then the string's bytes. */
static void record_chars(bit_writer *w, unsigned code, const char *s)
{
	uint64_t ops[64];
	size_t n = strlen(s);
	for (size_t i = 0; i < n; i++)
		ops[i] = (unsigned char)s[i];
	record(w, code, ops, n);
}

/* DEFINE_ABBREV from a spelling: "L5" literal 5, "F8" fixed 8, "V6" VBR 6,
 * "A" array, "C" char6, "B" blob, separated by spaces. */
static void define_abbrev(bit_writer *w, const char *spec)
{
	unsigned count = 0;
	for (const char *p = spec; *p; p++)
		count += *p != ' ' && (p == spec || p[-1] == ' ');
	put(w, 2, w->width);
	put_vbr(w, count, 5);
	for (const char *p = spec; *p; p++) {
		if (*p == ' ' || (p > spec && p[-1] != ' '))
			continue;
		unsigned long v = strtoul(p + 1, NULL, 10);
		switch (*p) {
		case 'L': put(w, 1, 1); put_vbr(w, v, 8); break;
		case 'F': put(w, 0, 1); put(w, 1, 3); put_vbr(w, v, 5); break;
		case 'V': put(w, 0, 1); put(w, 2, 3); put_vbr(w, v, 5); break;
		case 'A': put(w, 0, 1); put(w, 3, 3); break;
		case 'C': put(w, 0, 1); put(w, 4, 3); break;
		default: put(w, 0, 1); put(w, 5, 3); break;
		}
	}
}

static unsigned char6(char c)
{
	static const char table[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._";
	return (unsigned)(strchr(table, c) - table);
}

/* The strings blob of METADATA_STRINGS: VBR6 lengths, aligned to 32 bits,
 * then the characters; the offset of the characters goes to *offset. */
static size_t strings_blob(unsigned char *out, const char *const *strings, size_t n, size_t *offset)
{
	bit_writer lengths;
	memset(&lengths, 0, sizeof lengths);
	for (size_t i = 0; i < n; i++)
		put_vbr(&lengths, strlen(strings[i]), 6);
	put_align(&lengths);
	*offset = lengths.bits / 8;
	memcpy(out, lengths.data, *offset);
	size_t used = *offset;
	for (size_t i = 0; i < n; i++) {
		memcpy(out + used, strings[i], strlen(strings[i]));
		used += strlen(strings[i]);
	}
	return used;
}

/* Attribute kind 4 (key and value) at group[n]: the new n. */
static size_t string_attribute(uint64_t *group, size_t n, const char *key, const char *value)
{
	group[n++] = 4;
	for (const char *s = key; *s; s++)
		group[n++] = (unsigned char)*s;
	group[n++] = 0;
	for (const char *s = value; *s; s++)
		group[n++] = (unsigned char)*s;
	group[n++] = 0;
	return n;
}

static void put_blob(bit_writer *w, const unsigned char *blob, size_t size)
{
	put_vbr(w, size, 6);
	put_align(w);
	for (size_t i = 0; i < size; i++)
		put(w, blob[i], 8);
	put_align(w);
}

/* The blocks inside a synthetic module, in the ways LLVM's writer does not
 * always use: BLOCKINFO abbreviations for CONSTANTS and METADATA, a char6
 * triple, a blob of strings, a block nobody reads with a block inside. */
static void synthetic_module_body(bit_writer *w, unsigned version)
{
	uint64_t ops[8] = {version};
	record(w, 1, ops, 1); /* VERSION */
	block_open(w, 0, 2);  /* BLOCKINFO */
	ops[0] = 11;
	record(w, 1, ops, 1); /* SETBID CONSTANTS */
	define_abbrev(w, "L4 V8");
	ops[0] = 15;
	record(w, 1, ops, 1); /* SETBID METADATA */
	define_abbrev(w, "L35 V6 V6 B");
	block_close(w);
	define_abbrev(w, "L2 A C"); /* TRIPLE as char6 */
	put(w, 4, w->width);
	put_vbr(w, 7, 6);
	for (const char *c = "nvptx64"; *c; c++)
		put(w, char6(*c), 6);
	block_open(w, 30, 5); /* nobody reads it */
	record_chars(w, 1, "junk");
	block_open(w, 31, 3);
	block_close(w);
	block_close(w);
	block_open(w, 10, 3); /* PARAMATTR_GROUP: optnone, memory(none), two strings */
	uint64_t group[80] = {1, 0xffffffff, 0, 37, 1, 86, 0};
	size_t n = 7;
	n = string_attribute(group, n, "target-cpu", "sm_90");
	n = string_attribute(group, n, "target-features", "+ptx80,+sm_90");
	record(w, 3, group, n);
	uint64_t parameter[] = {2, 1, 0, 37, 3, 'x', 0, 5, 70, 6, 71, 3};
	record(w, 3, parameter, sizeof parameter / sizeof parameter[0]); /* not the function's */
	block_close(w);
	/* One global before the constants: the flag's value is value id 1. */
	if (version >= 2) {
		uint64_t function[5] = {0, 6, 0, 0, 1}; /* "__nv_x", declared */
		record(w, 8, function, 5);
	} else {
		uint64_t function[3] = {0, 0, 1};
		record(w, 8, function, 3);
	}
	block_open(w, 11, 4); /* CONSTANTS */
	ops[0] = 0;
	record(w, 1, ops, 1); /* SETTYPE takes no id */
	put(w, 4, w->width);  /* INTEGER 400 by BLOCKINFO's abbreviation */
	put_vbr(w, 800, 8);
	block_close(w);
	block_open(w, 15, 4); /* METADATA */
	static const char *const strings[] = {"wchar_size", "amdhsa_code_object_version"};
	unsigned char blob[64];
	size_t offset, size = strings_blob(blob, strings, 2, &offset);
	put(w, 4, w->width); /* STRINGS by BLOCKINFO's abbreviation */
	put_vbr(w, 2, 6);
	put_vbr(w, offset, 6);
	put_blob(w, blob, size);
	uint64_t value[2] = {0, 1};
	record(w, 2, value, 2); /* md 2: VALUE i32 400 */
	uint64_t node[3] = {3, 2, 3};
	record(w, 3, node, 3); /* md 3: !{md 2, "amdhsa_code_object_version", md 2} */
	record_chars(w, 4, "llvm.module.flags");
	uint64_t flags[1] = {3};
	record(w, 10, flags, 1);
	block_close(w);
	if (version < 2) {
		block_open(w, 14, 4); /* VALUE_SYMTAB: ENTRY [value id 0, "__nv_x"] */
		uint64_t entry[7] = {0, '_', '_', 'n', 'v', '_', 'x'};
		record(w, 1, entry, 7);
		block_close(w);
	}
}

static void synthetic_strtab(bit_writer *w)
{
	block_open(w, 23, 3);
	define_abbrev(w, "L1 B");
	put(w, 4, w->width);
	put_blob(w, (const unsigned char *)"__nv_x", 6);
	block_close(w);
}

static size_t synthetic_module(bit_writer *w, unsigned version)
{
	writer_start(w);
	block_open(w, 13, 5); /* IDENTIFICATION: the producer */
	record_chars(w, 1, "LLVM22.1.8");
	block_close(w);
	block_open(w, 8, 3);
	synthetic_module_body(w, version);
	block_close(w);
	if (version >= 2)
		synthetic_strtab(w);
	return w->bits / 8;
}

static void check_synthetic(const gpucc_module_facts *f)
{
	CHECK(f->bitcode && f->triple_known && f->attributes_known && f->flags_known);
	CHECK_STR(f->triple, "nvptx64");
	CHECK_INT(f->cpu_count, 1);
	CHECK_STR(f->cpus[0], "sm_90");
	CHECK_INT(f->ptx_isa, 80);
	CHECK(f->optnone);
	CHECK_INT(f->code_object_version, 4);
	CHECK(f->calls_libdevice && !f->calls_rocm && !f->calls_hip && !f->calls_mangled);
	CHECK_STR(f->producer, "LLVM22.1.8");
	CHECK_INT(f->producer_major, 22);
}

static void put_le32(unsigned char *p, size_t v)
{
	for (unsigned i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void test_bitcode_synthetic(void)
{
	static bit_writer w;
	size_t size = synthetic_module(&w, 2);
	gpucc_module_facts f;
	gpucc_module_facts_read(&f, w.data, size);
	check_synthetic(&f);

	/* Version 1: the name from the module's symbol table. */
	size_t old_size = synthetic_module(&w, 1);
	gpucc_module_facts_read(&f, w.data, old_size);
	check_synthetic(&f);

	/* In a wrapper, with a few bytes after it: the same. */
	size = synthetic_module(&w, 2);
	static unsigned char wrapped[4200];
	memset(wrapped, 0, sizeof wrapped);
	const unsigned char magic[4] = {0xde, 0xc0, 0x17, 0x0b};
	memcpy(wrapped, magic, sizeof magic);
	put_le32(wrapped + 8, 20);
	put_le32(wrapped + 12, size);
	memcpy(wrapped + 20, w.data, size);
	gpucc_module_facts_read(&f, wrapped, 20 + size + 7);
	check_synthetic(&f);
	put_le32(wrapped + 12, size + 8); /* says more than there is */
	gpucc_module_facts_read(&f, wrapped, 20 + size + 7);
	CHECK(f.bitcode && !f.triple_known && !f.attributes_known && !f.flags_known);

	/* Two modules in one file: LLVM reads none, nor does this. */
	synthetic_module(&w, 2);
	block_open(&w, 8, 3);
	synthetic_module_body(&w, 2);
	block_close(&w);
	gpucc_module_facts_read(&f, w.data, w.bits / 8);
	CHECK(!f.triple_known && !f.attributes_known && !f.flags_known && f.cpu_count == 0);
	CHECK(f.calls_libdevice); /* the bytes name __nv_x */

	/* An array of literals is no abbreviation LLVM reads. */
	writer_start(&w);
	block_open(&w, 8, 3);
	define_abbrev(&w, "L2 A L7");
	block_close(&w);
	gpucc_module_facts_read(&f, w.data, w.bits / 8);
	CHECK(!f.triple_known && !f.attributes_known && !f.flags_known);

	/* A module without a triple, flags or attributes: all known, empty. */
	writer_start(&w);
	block_open(&w, 8, 3);
	uint64_t version = 2;
	record(&w, 1, &version, 1);
	block_close(&w);
	synthetic_strtab(&w);
	gpucc_module_facts_read(&f, w.data, w.bits / 8);
	CHECK(f.triple_known && f.attributes_known && f.flags_known);
	CHECK(f.triple[0] == '\0' && f.cpu_count == 0 && f.code_object_version == 0);
}

/* ---- modules from clang-19 ------------------------------------------------------- */

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static bool same_facts(const gpucc_module_facts *a, const gpucc_module_facts *b)
{
	bool same = strcmp(a->triple, b->triple) == 0 && a->triple_known == b->triple_known &&
	            a->calls_libdevice == b->calls_libdevice && a->calls_rocm == b->calls_rocm &&
	            a->calls_hip == b->calls_hip && a->opencl == b->opencl &&
	            a->calls_mangled == b->calls_mangled && a->attributes_known == b->attributes_known &&
	            a->cpu_count == b->cpu_count && a->ptx_isa == b->ptx_isa &&
	            a->wavefront64 == b->wavefront64 && a->xnack == b->xnack &&
	            a->sramecc == b->sramecc && a->optnone == b->optnone &&
	            a->flags_known == b->flags_known &&
	            a->code_object_version == b->code_object_version;
	for (size_t i = 0; same && i < a->cpu_count; i++)
		same = strcmp(a->cpus[i], b->cpus[i]) == 0;
	return same;
}

static void print_facts(const char *label, const gpucc_module_facts *f)
{
	fprintf(stderr, "  %s: triple %d '%s' libdevice %d rocm %d hip %d opencl %d mangled %d "
	        "attributes %d cpus", label, f->triple_known, f->triple, f->calls_libdevice,
	        f->calls_rocm, f->calls_hip, f->opencl, f->calls_mangled, f->attributes_known);
	for (size_t i = 0; i < f->cpu_count; i++)
		fprintf(stderr, " %s", f->cpus[i]);
	fprintf(stderr, " ptx %u wave64 %d xnack %d sramecc %d optnone %d flags %d cov %u\n",
	        f->ptx_isa, f->wavefront64, f->xnack, f->sramecc, f->optnone, f->flags_known,
	        f->code_object_version);
}

/* The "target-cpu" values of one line, in order, joined to cpus[]. */
static void line_cpus(const char *line, size_t n, char cpus[][64], size_t *count)
{
	static const char key[] = "\"target-cpu\"=\"";
	for (const char *p = line; (p = strstr(p, key)) && p < line + n; p++) {
		p += strlen(key);
		size_t size = strcspn(p, "\"");
		bool seen = false;
		for (size_t i = 0; i < *count; i++)
			seen |= strlen(cpus[i]) == size && strncmp(cpus[i], p, size) == 0;
		if (!seen && *count < 16 && size < 64)
			snprintf(cpus[(*count)++], 64, "%.*s", (int)size, p);
	}
}

/* What the disassembly says, found with plain string searches on the
 * lines of llvm-dis-19's layout: the "target-cpu" values of its attribute
 * groups in order, the highest +ptxNN, the code object version flag,
 * optnone in a group, declarations of _Z names, and the other names. */
static void check_against_disassembly(const char *ll, const gpucc_module_facts *f)
{
	char cpus[16][64];
	size_t cpu_count = 0;
	unsigned ptx = 0, version = 0;
	bool optnone = false, mangled = false;
	for (const char *line = ll; *line;) {
		size_t n = strcspn(line, "\n");
		if (strncmp(line, "attributes #", 12) == 0) {
			line_cpus(line, n, cpus, &cpu_count);
			const char *word = strstr(line, " optnone ");
			optnone |= word && word < line + n;
			for (const char *p = line; (p = strstr(p, "+ptx")) && p < line + n; p++)
				if (strtoul(p + 4, NULL, 10) > ptx)
					ptx = (unsigned)strtoul(p + 4, NULL, 10);
		}
		const char *at = memchr(line, '@', n);
		mangled |= strncmp(line, "declare ", 8) == 0 && at && strncmp(at, "@_Z", 3) == 0;
		line += n + (line[n] == '\n');
	}
	CHECK_INT(cpu_count, f->cpu_count);
	for (size_t i = 0; i < cpu_count && i < f->cpu_count; i++)
		CHECK_STR(f->cpus[i], cpus[i]);
	CHECK_INT(ptx, f->ptx_isa);
	static const char flag[] = "!\"amdhsa_code_object_version\", i32 ";
	const char *value = strstr(ll, flag);
	if (value)
		version = (unsigned)strtoul(value + strlen(flag), NULL, 10) / 100;
	CHECK_INT(version, f->code_object_version);
	CHECK(optnone == f->optnone);
	CHECK(mangled == f->calls_mangled);
	CHECK((strstr(ll, "\n!opencl.ocl.version = ") != NULL) == f->opencl);
	CHECK((strstr(ll, "+wavefrontsize64") != NULL) == f->wavefront64);
	CHECK((strstr(ll, "@__atomic_work_item_fence(") != NULL) == f->calls_hip);
	CHECK((strstr(ll, "@__nv_") != NULL) == f->calls_libdevice);
	CHECK((strstr(ll, "@__ocml_") != NULL || strstr(ll, "@__ockl_") != NULL) == f->calls_rocm);
}

typedef struct clang_case {
	const char *name, *source_name, *command; /* the source and "-o" the .bc follow */
	const char *needs; /* a file the case needs, or NULL */
	const char *triple, *cpu;
	unsigned ptx, version;
	bool wave64, optnone, opencl, mangled, libdevice, rocm, hip;
} clang_case;

static const char hip_source[] =
	"#include <hip/hip_runtime.h>\n"
	"__global__ void k(float *p) { __syncthreads(); p[threadIdx.x] = sinf(p[threadIdx.x]); }\n";
/* Without HIP's headers, which refuse wave64 on gfx10. */
static const char bare_hip_source[] =
	"extern \"C\" __attribute__((device)) float __ocml_sin_f32(float);\n"
	"__attribute__((global)) void k(float *p) {\n"
	"  int i = __builtin_amdgcn_workitem_id_x(); p[i] = __ocml_sin_f32(p[i]); }\n";
static const char cuda_source[] =
	"extern \"C\" __attribute__((device)) float __nv_sinf(float);\n"
	"__attribute__((global)) void k(float *p) {\n"
	"  int i = __nvvm_read_ptx_sreg_tid_x(); p[i] = __nv_sinf(p[i]); }\n";
static const char opencl_source[] =
	"kernel void k(global float *p) { size_t i = get_global_id(0); p[i] = sin(p[i]); }\n";

#define HIP "clang-19 -x hip --cuda-device-only -nogpulib -emit-llvm -c -D__HIP_PLATFORM_AMD__ "
#define HIP_HEADER "/usr/include/hip/hip_runtime.h"
#define CL "clang-19 -x cl -cl-std=CL2.0 -nogpulib -emit-llvm -c -Xclang -finclude-default-header "

static const clang_case clang_cases[] = {
	{"hip-gfx90a", "k.hip", HIP "--offload-arch=gfx90a -O2", HIP_HEADER, "amdgcn-amd-amdhsa",
	 "gfx90a", 0, 5, true, false, false, false, false, true, true},
	{"hip-gfx90a-O0-v4", "k.hip", HIP "--offload-arch=gfx90a -O0 -mcode-object-version=4",
	 HIP_HEADER, "amdgcn-amd-amdhsa", "gfx90a", 0, 4, true, true, false, false, false, true, true},
	{"hip-gfx1030-v5", "bare.hip", HIP "--offload-arch=gfx1030 -O2 -mcode-object-version=5",
	 NULL, "amdgcn-amd-amdhsa", "gfx1030", 0, 5, false, false, false, false, false, true, false},
	{"hip-gfx1030-wave64", "bare.hip", HIP "--offload-arch=gfx1030 -O2 -mwavefrontsize64",
	 NULL, "amdgcn-amd-amdhsa", "gfx1030", 0, 5, true, false, false, false, false, true, false},
	{"cuda-sm_80", "k.cu",
	 "clang-19 -x cuda --cuda-gpu-arch=sm_80 --cuda-device-only -nocudainc -nocudalib "
	 "-Wno-unknown-cuda-version -emit-llvm -c -O2",
	 NULL, "nvptx64-nvidia-cuda", "sm_80", 1, 0, false, false, false, false, true, false, false},
	{"opencl-amdgcn", "k.cl", CL "-target amdgcn-amd-amdhsa -mcpu=gfx90a", NULL,
	 "amdgcn-amd-amdhsa", "gfx90a", 0, 5, true, false, true, true, false, false, false},
	{"opencl-nvptx", "k.cl", CL "-target nvptx64-nvidia-cuda", NULL, "nvptx64-nvidia-cuda",
	 NULL, 1, 0, false, false, true, true, false, false, false},
};

/* Truncations and bit flips of data: never a crash, and facts that keep
 * their own rules. */
static void damage(const unsigned char *data, size_t size)
{
	unsigned char *copy = malloc(size);
	CHECK(copy != NULL);
	if (!copy)
		return;
	for (size_t cut = 0; cut < size; cut += 1 + cut / 64) {
		memcpy(copy, data, cut);
		gpucc_module_facts f;
		gpucc_module_facts_read(&f, copy, cut);
		CHECK(f.cpu_count <= GPUCC_MODULE_MAX_CPUS && memchr(f.triple, 0, sizeof f.triple));
		CHECK(f.attributes_known || (f.cpu_count == 0 && !f.optnone && f.ptx_isa == 0));
		CHECK(f.flags_known || f.code_object_version == 0);
	}
	for (size_t i = 4; i < size; i++) {
		memcpy(copy, data, size);
		copy[i] ^= (unsigned char)(1u << (i % 8));
		gpucc_module_facts f;
		gpucc_module_facts_read(&f, copy, size);
		CHECK(f.cpu_count <= GPUCC_MODULE_MAX_CPUS && memchr(f.triple, 0, sizeof f.triple));
		CHECK(f.attributes_known || (f.cpu_count == 0 && !f.optnone && f.ptx_isa == 0));
		CHECK(f.flags_known || f.code_object_version == 0);
	}
	free(copy);
}

/* The .bc's facts, its disassembly's facts, and what the disassembly says. */
static void check_bitcode_and_text(const char *label, const char *bc_path, const char *ll_path,
                                   unsigned producer, gpucc_module_facts *bc_out)
{
	size_t bc_size = 0, ll_size = 0;
	unsigned char *bc = check_read_file(bc_path, &bc_size);
	unsigned char *ll = check_read_file(ll_path, &ll_size); /* room for a NUL */
	CHECK(bc && ll);
	if (!bc || !ll) {
		free(bc);
		free(ll);
		return;
	}
	gpucc_module_facts from_bc, from_ll;
	gpucc_module_facts_read(&from_bc, bc, bc_size);
	gpucc_module_facts_read(&from_ll, ll, ll_size);
	CHECK(from_bc.bitcode && !from_ll.bitcode);
	CHECK(from_bc.triple_known && from_bc.attributes_known && from_bc.flags_known);
	/* The bitcode names its writer (clang's LLVM); text does not. */
	char producer_prefix[16];
	snprintf(producer_prefix, sizeof producer_prefix, "LLVM%u.", producer);
	CHECK_INT(from_bc.producer_major, producer);
	CHECK(strncmp(from_bc.producer, producer_prefix, strlen(producer_prefix)) == 0);
	CHECK(!from_ll.producer[0] && !from_ll.producer_major);
	if (!same_facts(&from_bc, &from_ll)) {
		fprintf(stderr, "  %s: .bc and .ll disagree\n", label);
		print_facts(".bc", &from_bc);
		print_facts(".ll", &from_ll);
		CHECK(false);
	}
	ll[ll_size] = '\0';
	int before = check_failures;
	check_against_disassembly((const char *)ll, &from_bc);
	if (check_failures != before) {
		fprintf(stderr, "  %s: the facts are not what llvm-dis-19 says\n", label);
		print_facts(".bc", &from_bc);
	}
	damage(bc, bc_size);
	*bc_out = from_bc;
	free(bc);
	free(ll);
}

/* A variant of .ll text that LLVM's lexer reads as the same module: the
 * spaces between tokens (outside strings and comments) become, in turn, a
 * tab, several spaces, a line break and a comment that names a library
 * function and holds a quote and a ';', per kind.  Returns a malloc()ed
 * NUL-terminated text. */
static char *lexer_variant(const char *text, int kind)
{
	static const char *const gaps[] = {"\t", "   ", "\n  ", " ; @__nv_sinf \"@__ocml_x ;\n "};
	const char *gap = gaps[kind];
	size_t n = strlen(text), grown = n * strlen(gap) + 1;
	char *out = malloc(grown), *o = out;
	if (!out)
		return NULL;
	bool in_string = false, in_comment = false;
	for (const char *p = text; *p; p++) {
		if (in_comment) {
			in_comment = *p != '\n';
		} else if (*p == '"') {
			in_string = !in_string;
		} else if (!in_string && *p == ';') {
			in_comment = true;
		} else if (!in_string && *p == ' ') {
			memcpy(o, gap, strlen(gap));
			o += strlen(gap);
			continue;
		}
		*o++ = *p;
	}
	*o = '\0';
	return out;
}

/* The text reader against LLVM's own parse of generated variants of a
 * module's text: each variant must assemble (llvm-as-19), and the facts of
 * its text must equal those of the bitcode LLVM made of it, and those of
 * the original. */
static void check_lexer_variants(const char *label, const char *ll_path,
                                 const gpucc_module_facts *want)
{
	size_t size = 0;
	unsigned char *ll = check_read_file(ll_path, &size);
	CHECK(ll != NULL);
	if (!ll)
		return;
	ll[size] = '\0';
	for (int kind = 0; kind < 4; kind++) {
		char *variant = lexer_variant((const char *)ll, kind);
		CHECK(variant != NULL);
		if (!variant)
			break;
		char text_path[160], bc_path[160], command[512];
		snprintf(text_path, sizeof text_path, "%s/%s.v%d.ll", check_dir, label, kind);
		snprintf(bc_path, sizeof bc_path, "%s/%s.v%d.bc", check_dir, label, kind);
		write_text(text_path, variant);
		snprintf(command, sizeof command, "llvm-as-19 %s -o %s", text_path, bc_path);
		if (system(command) != 0) {
			fprintf(stderr, "  %s: variant %d is not valid IR for llvm-as-19\n", label, kind);
			CHECK(false);
			free(variant);
			continue;
		}
		size_t bc_size = 0;
		unsigned char *bc = check_read_file(bc_path, &bc_size);
		gpucc_module_facts from_text, from_llvm;
		gpucc_module_facts_read(&from_text, (const unsigned char *)variant, strlen(variant));
		gpucc_module_facts_read(&from_llvm, bc, bc ? bc_size : 0);
		/* The comments name libraries the module does not call. */
		if (!same_facts(&from_text, &from_llvm) || !same_facts(&from_text, want)) {
			fprintf(stderr, "  %s: variant %d read otherwise than LLVM reads it\n", label, kind);
			print_facts("variant text", &from_text);
			print_facts("llvm-as-19 of it", &from_llvm);
			print_facts("original", want);
			CHECK(false);
		}
		free(bc);
		free(variant);
	}
	free(ll);
}

static bool have_tools(void)
{
	return system("command -v clang-19 >/dev/null 2>&1 && command -v llvm-dis-19 >/dev/null 2>&1 "
	              "&& command -v llvm-as-19 >/dev/null 2>&1") == 0;
}

static void check_case_expectations(const clang_case *c, const gpucc_module_facts *f)
{
	int before = check_failures;
	CHECK_STR(f->triple, c->triple);
	CHECK_INT(f->cpu_count, c->cpu ? 1 : 0);
	if (c->cpu && f->cpu_count)
		CHECK_STR(f->cpus[0], c->cpu);
	CHECK(c->ptx ? f->ptx_isa >= 70 : f->ptx_isa == 0); /* +ptx80 or +ptx85 by the CUDA found */
	CHECK_INT(f->code_object_version, c->version);
	CHECK(f->wavefront64 == c->wave64 && f->optnone == c->optnone);
	CHECK(f->opencl == c->opencl && f->calls_mangled == c->mangled);
	CHECK(f->calls_libdevice == c->libdevice && f->calls_rocm == c->rocm &&
	      f->calls_hip == c->hip);
	CHECK(f->xnack == GPUCC_FEATURE_ANY && f->sramecc == GPUCC_FEATURE_ANY);
	if (check_failures != before)
		print_facts(c->name, f);
}

/* Build case c with clang-LLVM, disassemble it with llvm-dis-LLVM (the
 * text into ll), and check the facts read from both against the case;
 * false (a failed check) when clang or llvm-dis failed. */
static bool run_clang_case(const clang_case *c, unsigned llvm, gpucc_module_facts *f, char *ll,
                           size_t ll_size)
{
	char bc[128], source[128], command[1024];
	snprintf(bc, sizeof bc, "%s/%s.bc", check_dir, c->name);
	snprintf(ll, ll_size, "%s/%s.ll", check_dir, c->name);
	snprintf(source, sizeof source, "%s/%s", check_dir, c->source_name);
	snprintf(command, sizeof command, "%s %s -o %s 2>%s.log && llvm-dis-%u %s -o %s", c->command,
	         source, bc, bc, llvm, bc, ll);
	if (system(command) != 0) {
		fprintf(stderr, "  %s failed: %s\n", c->name, command);
		CHECK(false);
		return false;
	}
	check_bitcode_and_text(c->name, bc, ll, llvm, f);
	check_case_expectations(c, f);
	return true;
}

static void test_clang_modules(void)
{
	write_text(path_in_dir("k.hip"), hip_source);
	write_text(path_in_dir("bare.hip"), bare_hip_source);
	write_text(path_in_dir("k.cu"), cuda_source);
	write_text(path_in_dir("k.cl"), opencl_source);
	for (size_t i = 0; i < sizeof clang_cases / sizeof clang_cases[0]; i++) {
		const clang_case *c = &clang_cases[i];
		if (c->needs && access(c->needs, R_OK) != 0) {
			fprintf(stderr, "  %s skipped: no %s (libamdhip64-dev)\n", c->name, c->needs);
			continue;
		}
		gpucc_module_facts f;
		char ll[128];
		if (!run_clang_case(c, 19, &f, ll, sizeof ll))
			continue;
		check_lexer_variants(c->name, ll, &f);
	}
}

/* What clang-22 writes for the processors only LLVM 20 and later know
 * (sm_100, gfx950, gfx1250): its bitcode (LLVM 22's attribute kinds, code
 * object v6) read as llvm-dis-22 shows it, the producer LLVM22.x. */
static const clang_case clang22_cases[] = {
	{"cuda22-sm_100", "k.cu",
	 "clang-22 -x cuda --cuda-gpu-arch=sm_100 --cuda-device-only -nocudainc -nocudalib "
	 "-Wno-unknown-cuda-version -emit-llvm -c -O2",
	 NULL, "nvptx64-nvidia-cuda", "sm_100", 1, 0, false, false, false, false, true, false, false},
	{"hip22-gfx950", "bare.hip",
	 "clang-22 -x hip --cuda-device-only -nogpulib -emit-llvm -c --offload-arch=gfx950 -O2",
	 NULL, "amdgcn-amd-amdhsa", "gfx950", 0, 6, true, false, false, false, false, true, false},
	{"hip22-gfx1250-O0", "bare.hip",
	 "clang-22 -x hip --cuda-device-only -nogpulib -emit-llvm -c --offload-arch=gfx1250 -O0",
	 NULL, "amdgcn-amd-amdhsa", "gfx1250", 0, 6, false, true, false, false, false, true, false},
};

static void test_clang22_modules(void)
{
	if (system("command -v clang-22 >/dev/null 2>&1 && command -v llvm-dis-22 >/dev/null 2>&1") !=
	    0) {
		fprintf(stderr, "  skipped: no clang-22 and llvm-dis-22 (llvm-22, clang-22)\n");
		return;
	}
	write_text(path_in_dir("bare.hip"), bare_hip_source);
	write_text(path_in_dir("k.cu"), cuda_source);
	for (size_t i = 0; i < sizeof clang22_cases / sizeof clang22_cases[0]; i++) {
		const clang_case *c = &clang22_cases[i];
		gpucc_module_facts f;
		char ll[128];
		if (!run_clang_case(c, 22, &f, ll, sizeof ll))
			continue;
		CHECK(f.ptx_isa == 0 || f.ptx_isa >= 86); /* sm_100's oldest */
	}
}

/* Every attribute encoding LLVM 19 writes (enum, int, string with and
 * without a value, type, ConstantRange narrow and wide, ConstantRange
 * lists), globals of every kind before the flag's constant, flags in
 * another order, xnack and sramecc. */
static void test_attribute_encodings(void)
{
	static const char module[] =
		"target triple = \"amdgcn-amd-amdhsa\"\n"
		"@g = global i32 7\n"
		"@h = global i64 -3\n"
		"@a = alias i32, ptr @g\n"
		"@i = ifunc void (), ptr @resolver\n"
		"define ptr @resolver() { ret ptr null }\n"
		"define range(i128 -5, 100000000000000000000000) i128 @f(ptr initializes((0, 4), (8, 12)) %p,\n"
		"    ptr byval(i32) %q, ptr \"target-cpu\"=\"gfx600\" %r, i32 range(i32 0, 10) %s) #0 {\n"
		"  call void @_Z3fooi(i32 1) #2\n"
		"  ret i128 0\n"
		"}\n"
		"declare void @_Z3fooi(i32) \"foo\" \"bar\"=\"baz\"\n"
		"declare void @__ockl_x() #3\n"
		"attributes #0 = { optnone noinline \"target-cpu\"=\"gfx90a\" \"target-features\"=\"+xnack,-sramecc\" memory(none) }\n"
		"attributes #2 = { \"target-cpu\"=\"gfx942\" \"key-only\" }\n"
		"attributes #3 = { \"target-cpu\"=\"\" }\n"
		"!llvm.module.flags = !{!1, !0, !2}\n"
		"!0 = !{i32 1, !\"amdhsa_code_object_version\", i32 600}\n"
		"!1 = !{i32 7, !\"wide\", i128 5}\n"
		"!2 = !{i32 7, !\"negative\", i64 -3}\n"
		"!opencl.ocl.version = !{!3}\n"
		"!3 = !{i32 2, i32 0}\n";
	char ll[128], bc[128], dis[128], command[1024];
	snprintf(ll, sizeof ll, "%s/encodings.ll", check_dir);
	snprintf(bc, sizeof bc, "%s/encodings.bc", check_dir);
	snprintf(dis, sizeof dis, "%s/encodings.dis.ll", check_dir);
	write_text(ll, module);
	snprintf(command, sizeof command, "llvm-as-19 %s -o %s && llvm-dis-19 %s -o %s", ll, bc, bc, dis);
	CHECK(system(command) == 0);
	gpucc_module_facts f, written = text_facts(module);
	check_bitcode_and_text("encodings", bc, dis, 19, &f);
	CHECK(same_facts(&f, &written));
	CHECK_INT(f.cpu_count, 2);
	CHECK_STR(f.cpus[0], "gfx90a");
	CHECK_STR(f.cpus[1], "gfx942");
	CHECK(f.optnone && f.opencl && f.calls_mangled && f.calls_rocm);
	CHECK_INT(f.xnack, GPUCC_FEATURE_ON);
	CHECK_INT(f.sramecc, GPUCC_FEATURE_OFF);
	CHECK_INT(f.code_object_version, 6);
}

int main(void)
{
	RUN(test_text_triple);
	RUN(test_text_references);
	RUN(test_text_declarations);
	RUN(test_text_attributes);
	RUN(test_text_module_flags);
	RUN(test_text_hostile);
	RUN(test_bitcode_synthetic);
	if (!have_tools()) {
		fprintf(stderr, "skipping the clang cases: clang-19, llvm-as-19 or llvm-dis-19 is not installed\n");
		return check_failures ? CHECK_DONE() : 77;
	}
	CHECK(check_dir_create("test_module_facts") == 0);
	RUN(test_attribute_encodings);
	RUN(test_clang_modules);
	RUN(test_clang22_modules);
	check_dir_remove();
	return CHECK_DONE();
}
