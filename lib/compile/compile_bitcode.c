/*
 * lib/compile/compile_bitcode.c -- the facts of an LLVM bitcode module
 * (gpucc_module_facts), read without LLVM: planning a compile, hits
 * included, must not load it.  Here: the records' contents and the passes
 * that make the facts of them; the bitstream itself (blocks,
 * abbreviations, records): lib/compile/compile_bitstream.c.
 *
 * What is read (ids and codes from LLVM 19's LLVMBitCodes.h, which LLVM 22
 * keeps):
 *
 *   IDENTIFICATION (13), top    STRING (1): the producer, "LLVM22.1.8", which
 *                               says what LLVM can read the module
 *   STRTAB (23), top level      the blob of names; read first
 *   MODULE (8)                  VERSION (1), TRIPLE (2); one value id per
 *                               GLOBALVAR (7), FUNCTION (8), ALIAS_OLD (9),
 *                               ALIAS (14), IFUNC (18); FUNCTION is
 *                               [strtab offset, size, type, cc, isproto, ...]
 *                               (version 1: [type, cc, isproto, ...], the
 *                               names in the module's VALUE_SYMTAB (14))
 *   PARAMATTR_GROUP (10)        ENTRY (3) [grpid, index, attributes...]:
 *                               the function's (index 0xFFFFFFFF) give
 *                               optnone (enum 37), target-cpu/-features
 *   METADATA (15), module's     STRINGS (35) [count, offset, blob], NAME (4)
 *                               + NAMED_NODE (10) [md ids], NODE (3) /
 *                               DISTINCT_NODE (5) [md id + 1...], VALUE (2)
 *                               [type, value id]
 *   CONSTANTS (11), module's    the values after the globals; INTEGER (4)
 *                               is a sign-rotated VBR
 *
 * The code object version takes a few passes: the module's walk finds the
 * string "amdhsa_code_object_version" and the nodes of !llvm.module.flags,
 * then the metadata blocks are walked again for the flag's node, again for
 * its VALUE record, and the constants for its integer.  Each pass is linear
 * and blocks nobody asks about (function bodies, types, symbol tables) are
 * skipped by their length, so memory is fixed and time linear in the input.
 *
 * Bitcode is untrusted input: every read is checked against the end of its
 * block, counts against the bits left, tables against their capacity.
 * What the reader cannot follow makes the facts it feeds unknown (the
 * *_known fields), and a stream it cannot walk makes them all unknown;
 * the library calls are then what a scan of the bytes for their names
 * finds (a module that links a library for nothing still compiles).
 */
#include "compile_bitstream.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- record contents ----------------------------------------------------------- */

/* Operands [from, to) as characters into r->chars (NUL-terminated);
 * false when one is no byte or NUL. */
static bool ops_chars(reader *r, size_t from, size_t to)
{
	size_t n = 0;
	for (size_t i = from; i < to; i++) {
		if (r->ops[i] == 0 || r->ops[i] > 255)
			return false;
		r->chars[n++] = (char)r->ops[i];
	}
	r->chars[n] = '\0';
	return true;
}

/* Whether operands from on are the characters of literal. */
static bool ops_equal(const reader *r, size_t from, const char *literal)
{
	size_t n = strlen(literal);
	if (r->op_count - from != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (r->ops[from + i] != (unsigned char)literal[i])
			return false;
	return true;
}

/* LLVM's signed VBR values: the magnitude shifted left, the sign in bit 0. */
static int64_t sign_rotated(uint64_t v)
{
	return v & 1 ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
}

/* ---- the string table (pass 0) -------------------------------------------------- */

/* STRTAB_BLOB (1): the first one is the module's string table. */
static bool strtab_record(reader *r, const block *b)
{
	(void)b;
	if (r->code == 1 && r->blob && !r->have_strtab) { /* STRTAB_BLOB */
		r->strtab = r->blob;
		r->strtab_size = r->blob_size;
		r->have_strtab = true;
	}
	return true;
}

/* IDENTIFICATION's STRING (1): who wrote the stream, "LLVM22.1.8" (the
 * first module's, as LLVM's reader names it). */
static bool identification_record(reader *r, const block *b)
{
	(void)b;
	gpucc_module_facts *out = r->out;
	if (r->code != 1 || out->producer[0] || r->op_count >= sizeof out->producer ||
	    !ops_chars(r, 0, r->op_count))
		return true;
	memcpy(out->producer, r->chars, r->op_count + 1);
	unsigned major = 0;
	char dot;
	if (sscanf(out->producer, "LLVM%u%c", &major, &dot) == 2 && dot == '.' && major < 1000)
		out->producer_major = major;
	return true;
}

/* Pass 0 at the top level: the STRTAB and IDENTIFICATION (13) blocks read,
 * the others skipped. */
static bool top_block_strtab(reader *r)
{
	if (r->entry_id == 13)
		return walk_body(r, 0, 13, r->entry_width, r->c.pos, r->entry_end,
		                 identification_record, NULL);
	return r->entry_id != 23 || walk_body(r, 0, 23, r->entry_width, r->c.pos, r->entry_end,
	                                      strtab_record, NULL);
}

/* ---- the module (pass 1) ----------------------------------------------------------- */

/* BLOCKINFO's records: SETBID names the block id that the abbreviations
 * defined next are for. */
static bool blockinfo_record(reader *r, const block *b)
{
	(void)b;
	if (r->code != 1) /* SETBID; BLOCKNAME and SETRECORDNAME are names only */
		return true;
	if (r->op_count < 1)
		return false;
	r->blockinfo_target = r->ops[0];
	r->blockinfo_has_target = true;
	return true;
}

/* An attribute that is a NUL-terminated string at ops[*i]: its characters
 * go to r->chars + at; *size is their count.  false when malformed. */
static bool attribute_string(reader *r, size_t *i, size_t at, size_t *size)
{
	size_t n = 0;
	for (; *i < r->op_count && r->ops[*i] != 0; (*i)++, n++) {
		if (r->ops[*i] > 255 || at + n > r->op_capacity)
			return false;
		r->chars[at + n] = (char)r->ops[*i];
	}
	if (*i == r->op_count)
		return false;
	(*i)++; /* the NUL */
	*size = n;
	return true;
}

/* Skip a ConstantRange at ops[*i]: for a bit width over 64, a word of
 * active word counts (lower | upper << 32) and the words; else two
 * sign-rotated values. */
static bool skip_range(reader *r, size_t *i, uint64_t bit_width)
{
	size_t left = r->op_count - *i;
	if (bit_width <= 64) {
		if (left < 2)
			return false;
		*i += 2;
		return true;
	}
	if (left < 1)
		return false;
	uint64_t lower = r->ops[*i] & 0xffffffff, upper = r->ops[*i] >> 32;
	if (lower + upper > left - 1)
		return false;
	*i += 1 + (size_t)(lower + upper);
	return true;
}

/* One attribute at ops[*i] of a group for a function (or not): kinds 0
 * enum, 1 int, 3 string key, 4 string key and value, 5 type attribute
 * without a type, 6 with one, 7 ConstantRange, 8 ConstantRange list. */
static bool read_attribute(reader *r, size_t *i, bool function)
{
	uint64_t kind = r->ops[(*i)++];
	size_t left = r->op_count - *i, key_size, value_size;
	switch (kind) {
	case 0:
		if (left < 1)
			return false;
		r->out->optnone |= function && r->ops[*i] == 37; /* ATTR_KIND_OPTIMIZE_NONE */
		*i += 1;
		return true;
	case 1: case 6:
		if (left < 2)
			return false;
		*i += 2;
		return true;
	case 5:
		if (left < 1)
			return false;
		*i += 1;
		return true;
	case 3: return attribute_string(r, i, 0, &key_size);
	case 4:
		if (!attribute_string(r, i, 0, &key_size) ||
		    !attribute_string(r, i, key_size, &value_size))
			return false;
		if (function)
			gpucc_module_facts_note_attribute(r->out, r->chars, key_size, r->chars + key_size,
			                                  value_size);
		return true;
	case 7:
		if (left < 2)
			return false;
		*i += 2; /* kind, bit width */
		return skip_range(r, i, r->ops[*i - 1]);
	case 8: {
		if (left < 3)
			return false;
		uint64_t count = r->ops[*i + 1], bit_width = r->ops[*i + 2];
		*i += 3;
		for (uint64_t k = 0; k < count; k++)
			if (!skip_range(r, i, bit_width))
				return false;
		return true;
	}
	default: return false;
	}
}

/* A PARAMATTR_GROUP record: the facts of a function's group (index
 * 0xFFFFFFFF); one not understood makes the attributes unknown. */
static bool attribute_group_record(reader *r, const block *b)
{
	(void)b;
	if (r->code != 3) /* PARAMATTR_GRP_CODE_ENTRY */
		return true;
	if (r->truncated || r->op_count < 2) {
		r->attributes_bad = true;
		return true;
	}
	bool function = r->ops[1] == 0xffffffff;
	for (size_t i = 2; i < r->op_count;) {
		if (!read_attribute(r, &i, function)) {
			r->attributes_bad = true;
			return true;
		}
	}
	return true;
}

/* How many metadata ids a record of the module's METADATA block takes
 * (as LLVM 19's MetadataLoader counts them); -1 for a code it does not
 * know, after which ids cannot be told. */
static int64_t metadata_ids(const reader *r)
{
	switch (r->code) {
	case 35: return r->op_count >= 1 ? (int64_t)(r->ops[0] & INT64_MAX) : -1; /* STRINGS */
	case 4: case 6: case 10: case 11: case 36: case 38: case 39:
		return 0; /* NAME, KIND, NAMED_NODE, ATTACHMENT, GLOBAL_DECL_ATTACHMENT, INDEX */
	case 1: case 2: case 3: case 5: case 7: case 8: case 9:
		return 1;
	default:
		return (r->code >= 12 && r->code <= 41 && r->code != 35) ||
		       (r->code >= 44 && r->code <= 47) ? 1 : -1;
	}
}

/* STRINGS [count, offset] + blob: count VBR6 lengths from the blob's
 * start, the characters from offset.  Finds the id of the flag's key. */
static bool strings_record(reader *r)
{
	if (r->op_count < 2 || !r->blob || r->ops[1] > r->blob_size)
		return false;
	uint64_t count = r->ops[0];
	size_t offset = (size_t)r->ops[1], at = offset;
	bit_cursor lengths = {r->blob, offset * 8, 0, false};
	if (count > offset * 8 / 6)
		return false;
	for (uint64_t k = 0; k < count; k++) {
		uint64_t size = read_vbr(&lengths, 6);
		if (lengths.bad || size > r->blob_size - at)
			return false;
		static const char key[] = "amdhsa_code_object_version";
		if (!r->have_key && size == sizeof key - 1 && memcmp(r->blob + at, key, size) == 0) {
			r->have_key = true;
			r->key_md = r->next_md + k;
		}
		at += (size_t)size;
	}
	return true;
}

/* NAMED_NODE, named by the NAME before it: OpenCL's version, or the
 * module flags' node ids (at most MAX_FLAGS, else flags unknown). */
static void named_node_record(reader *r)
{
	if (strcmp(r->name, "opencl.ocl.version") == 0)
		r->out->opencl = true;
	if (strcmp(r->name, "llvm.module.flags") == 0) {
		/* Named nodes list metadata ids as they are (no + 1). */
		if (r->truncated || r->op_count > MAX_FLAGS - r->flag_count)
			r->flags_bad = true;
		for (size_t i = 0; i < r->op_count && !r->flags_bad; i++)
			r->flags[r->flag_count++] = r->ops[i];
	}
	r->name[0] = '\0';
}

/* Pass 1 over the module's METADATA: counts ids, finds the flag's key
 * string and the named nodes.  An unknown code stops the walk with the
 * flags unknown. */
static bool metadata_record(reader *r, const block *b)
{
	(void)b;
	int64_t ids = metadata_ids(r);
	if (ids < 0 || (r->code == 35 && !strings_record(r))) {
		r->flags_bad = true;
		r->stop = true; /* later ids cannot be told */
		return true;
	}
	if (r->code == 1 && ops_equal(r, 0, "amdhsa_code_object_version") && !r->have_key) {
		r->have_key = true;
		r->key_md = r->next_md;
	}
	if (r->code == 4) { /* NAME: a long one is no name asked about */
		bool fits = !r->truncated && r->op_count < sizeof r->name && ops_chars(r, 0, r->op_count);
		memcpy(r->name, fits ? r->chars : "", fits ? r->op_count + 1 : 1);
	}
	if (r->code == 10)
		named_node_record(r);
	r->next_md += (uint64_t)ids;
	return true;
}

/* TRIPLE: characters; one that does not fit the facts is unknown. */
static void triple_record(reader *r)
{
	gpucc_module_facts *out = r->out;
	if (r->truncated || r->op_count >= sizeof out->triple || !ops_chars(r, 0, r->op_count)) {
		r->triple_bad = true;
		return;
	}
	memcpy(out->triple, r->chars, r->op_count + 1);
	r->triple_bad = false; /* the last TRIPLE is the module's */
}

/* What global value r->global_count is, for a version 1 module's symbol
 * table; false when out of room, or when earlier globals went unremembered
 * (a VERSION record that changed its mind). */
static bool remember_global(reader *r, unsigned char kind)
{
	if (r->globals_known != r->global_count)
		return false;
	if (r->globals_known == r->globals_capacity) {
		size_t capacity = r->globals_capacity ? 2 * r->globals_capacity : 256;
		unsigned char *grown = capacity <= MAX_VERSION1_GLOBALS ? realloc(r->globals, capacity) : NULL;
		if (!grown)
			return false;
		r->globals = grown;
		r->globals_capacity = capacity;
	}
	r->globals[r->globals_known++] = kind;
	return true;
}

/* FUNCTION [strtab offset, size, type, cc, isproto, ...] in version 2;
 * version 1 has no strtab fields, the name is in the symbol table. */
static void function_record(reader *r)
{
	if (r->version < 2) {
		if (r->op_count < 3 ||
		    !remember_global(r, r->ops[2] ? GLOBAL_DECLARATION : GLOBAL_FUNCTION))
			r->names_bad = true;
		return;
	}
	if (!r->have_strtab || r->op_count < 5 || r->ops[0] > r->strtab_size ||
	    r->ops[1] > r->strtab_size - r->ops[0]) {
		r->names_bad = true;
		return;
	}
	const char *name = (const char *)r->strtab + r->ops[0];
	size_t size = (size_t)r->ops[1];
	gpucc_module_facts_note_reference(r->out, name, size);
	if (r->ops[4])
		gpucc_module_facts_note_declaration(r->out, name, size);
}

/* MODULE_BLOCK's records: the version, the triple, and one value id per
 * global value, functions' names noted. */
static bool module_record(reader *r, const block *b)
{
	(void)b;
	switch (r->code) {
	case 1: r->version = r->op_count ? r->ops[0] : 0; break;
	case 2: triple_record(r); break;
	case 8:
		function_record(r);
		r->global_count++;
		break;
	case 7: case 9: case 14: case 18:
		if (r->version < 2 && !remember_global(r, GLOBAL_OTHER))
			r->names_bad = true;
		r->global_count++;
		break;
	default: break;
	}
	return true;
}

/* A version 1 symbol table's ENTRY (1) [value id, name...] or FNENTRY (3)
 * [value id, offset, name...]: a function's name. */
static bool symtab_record(reader *r, const block *b)
{
	(void)b;
	size_t from = r->code == 1 ? 1 : r->code == 3 ? 2 : 0;
	if (from == 0 || r->op_count < from)
		return true;
	uint64_t id = r->ops[0];
	if (id >= r->globals_known || r->globals[id] == GLOBAL_OTHER)
		return true;
	if (!ops_chars(r, from, r->op_count)) {
		r->names_bad = true;
		return true;
	}
	gpucc_module_facts_note_reference(r->out, r->chars, r->op_count - from);
	if (r->globals[id] == GLOBAL_DECLARATION)
		gpucc_module_facts_note_declaration(r->out, r->chars, r->op_count - from);
	return true;
}

/* Names in a version 1 module's symbol tables, once every global is known. */
static void read_symtabs(reader *r)
{
	if (r->version >= 2 || r->names_bad)
		return;
	for (size_t i = 0; i < r->symtab_count; i++)
		if (!walk_saved(r, &r->symtabs[i], symtab_record))
			r->names_bad = true;
}

/* Blocks inside the module: BLOCKINFO, attribute groups and metadata are
 * walked, constants remembered for later, the rest skipped. */
static bool module_block(reader *r, unsigned level)
{
	switch (r->entry_id) {
	case 0:
		/* A new BLOCKINFO replaces the last for blocks entered after it;
		 * those entered before keep theirs, as in LLVM. */
		r->blockinfo_generation++;
		r->blockinfo_has_target = false;
		return enter(r, level, blockinfo_record, NULL);
	case 10: return enter(r, level, attribute_group_record, NULL);
	case 14:
		if (!save_block(r, r->symtabs, &r->symtab_count, 0))
			r->names_bad = true;
		break;
	case 11:
		if (!save_block(r, r->constants, &r->constants_count, r->global_count))
			r->flags_bad = true;
		break;
	case 15: {
		if (!save_block(r, r->metadata, &r->metadata_count, r->next_md))
			r->flags_bad = true;
		bool ok = enter(r, level, metadata_record, NULL);
		r->stop = false;
		return ok;
	}
	default: break;
	}
	r->c.pos = r->entry_end;
	return true;
}

/* Pass 1 at the top level: the (only) MODULE block walked. */
static bool top_block_module(reader *r)
{
	if (r->entry_id != 8)
		return true;
	if (r->module_seen) /* LLVM reads one module per file */
		return false;
	r->module_seen = true;
	return enter(r, 0, module_record, module_block);
}

/* ---- the code object version flag (passes 2-4) ------------------------------------- */

/* The flag nodes (one operand the key): which value each names. */
static bool flag_node_record(reader *r, const block *b)
{
	(void)b;
	int64_t ids = metadata_ids(r);
	if (ids < 0)
		return false;
	if ((r->code == 3 || r->code == 5) && r->op_count == 3 && r->ops[1] == r->key_md + 1)
		for (size_t i = 0; i < r->flag_count; i++)
			if (r->flags[i] == r->next_md)
				r->flag_value_md[i] = r->ops[2];
	r->next_md += (uint64_t)ids;
	return true;
}

/* The VALUE record of metadata id r->wanted: its value id. */
static bool flag_value_record(reader *r, const block *b)
{
	(void)b;
	int64_t ids = metadata_ids(r);
	if (ids < 0)
		return false;
	if (r->next_md == r->wanted && ids == 1) {
		r->found = r->code == 2 && r->op_count >= 2; /* METADATA_VALUE [type, value] */
		r->value_id = r->found ? r->ops[1] : 0;
		r->stop = true;
	}
	r->next_md += (uint64_t)ids;
	return true;
}

/* The constant with value id r->wanted: an INTEGER's value. */
static bool flag_constant_record(reader *r, const block *b)
{
	(void)b;
	if (r->code == 1) /* SETTYPE takes no id */
		return true;
	if (r->value_index++ == r->wanted) {
		r->found = r->code == 4 && r->op_count >= 1;
		r->integer = r->found ? sign_rotated(r->ops[0]) : 0;
		r->stop = true;
	}
	return true;
}

/* Walk every saved metadata block, ids counted from its first. */
static bool walk_metadata(reader *r, record_handler on_record)
{
	for (size_t i = 0; i < r->metadata_count && !r->stop; i++) {
		r->next_md = r->metadata[i].first;
		if (!walk_saved(r, &r->metadata[i], on_record))
			return false;
	}
	r->stop = false;
	return true;
}

/* Walk every saved CONSTANTS block for the value id r->wanted, value ids
 * counted from the globals before each and the constants of the others. */
static bool walk_constants(reader *r)
{
	uint64_t constants_before = 0;
	for (size_t i = 0; i < r->constants_count && !r->stop; i++) {
		r->value_index = r->constants[i].first + constants_before;
		uint64_t start = r->value_index;
		if (!walk_saved(r, &r->constants[i], flag_constant_record))
			return false;
		constants_before += r->value_index - start;
	}
	r->stop = false;
	return true;
}

/* The code object version: the first flag, in !llvm.module.flags's order,
 * whose key is "amdhsa_code_object_version", its VALUE, its INTEGER.
 * false when that chain cannot be followed. */
static bool settle_flags(reader *r)
{
	if (!r->have_key || r->flag_count == 0)
		return true; /* no such flag */
	memset(r->flag_value_md, 0, sizeof r->flag_value_md);
	if (!walk_metadata(r, flag_node_record))
		return false;
	size_t i = 0;
	while (i < r->flag_count && r->flag_value_md[i] == 0)
		i++;
	if (i == r->flag_count)
		return true;
	r->wanted = r->flag_value_md[i] - 1;
	r->found = false;
	if (!walk_metadata(r, flag_value_record) || !r->found || r->value_id < r->global_count)
		return false;
	r->wanted = r->value_id;
	r->found = false;
	if (!walk_constants(r) || !r->found)
		return false;
	r->out->code_object_version = gpucc_module_facts_code_object_version(r->integer);
	return true;
}

/* ---- facts ------------------------------------------------------------------- */

static bool contains(const unsigned char *data, size_t size, const char *needle)
{
	size_t n = strlen(needle);
	for (size_t i = 0; i + n <= size; i++) {
		const unsigned char *hit = memchr(data + i, needle[0], size - i - n + 1);
		if (!hit)
			return false;
		i = (size_t)(hit - data);
		if (memcmp(hit, needle, n) == 0)
			return true;
	}
	return false;
}

/* Library calls when function names cannot be read: any mention of the
 * names' bytes, so that no library a module needs is left out. */
static void calls_from_bytes(gpucc_module_facts *out, const unsigned char *data, size_t size)
{
	out->calls_libdevice = contains(data, size, "__nv_");
	out->calls_rocm = contains(data, size, "__ocml_") || contains(data, size, "__ockl_");
	out->calls_hip = contains(data, size, "__atomic_work_item_fence");
	out->calls_mangled = contains(data, size, "_Z");
}

/* The attribute facts as "could not tell" leaves them. */
static void clear_attributes(gpucc_module_facts *out)
{
	memset(out->cpus, 0, sizeof out->cpus);
	out->cpu_count = 0;
	out->ptx_isa = 0;
	out->wavefront64 = false;
	out->xnack = out->sramecc = GPUCC_FEATURE_ANY;
	out->optnone = false;
}

/* The bitcode inside a wrapper header (magic 0x0B17C0DE, version, offset,
 * size, CPU type: five little-endian words), or data itself. */
static bool unwrap(const unsigned char **data, size_t *size)
{
	if (*size < 4 || memcmp(*data, "\xde\xc0\x17\x0b", 4) != 0)
		return true;
	if (*size < 20)
		return false;
	const unsigned char *d = *data;
	uint32_t offset = (uint32_t)d[8] | (uint32_t)d[9] << 8 | (uint32_t)d[10] << 16 |
	                  (uint32_t)d[11] << 24;
	uint32_t length = (uint32_t)d[12] | (uint32_t)d[13] << 8 | (uint32_t)d[14] << 16 |
	                  (uint32_t)d[15] << 24;
	if (offset > *size || length > *size - offset)
		return false;
	*data += offset;
	*size = length;
	return true;
}

/* Walk the stream into r: false when it cannot be walked. */
static bool read_stream(reader *r, const unsigned char *data, size_t size)
{
	r->c.data = data;
	if (size > SIZE_MAX / 8)
		return false;
	if (!walk_top(r, size * 8, top_block_strtab))
		return false;
	r->c.bad = false;
	return walk_top(r, size * 8, top_block_module) && r->module_seen;
}

void gpucc_bitcode_facts(gpucc_module_facts *out, const unsigned char *data, size_t size)
{
	bool bitcode = out->bitcode;
	memset(out, 0, sizeof *out);
	out->bitcode = bitcode;
	const unsigned char *stream = data;
	size_t stream_size = size;
	reader *r = NULL;
	if (unwrap(&stream, &stream_size) && stream_size >= 8 && memcmp(stream, "BC\xc0\xde", 4) == 0)
		r = malloc(sizeof *r);
	if (r) {
		memset(r, 0, offsetof(reader, levels));
		r->out = out;
		r->op_capacity = 64;
		r->ops = malloc(r->op_capacity * sizeof *r->ops);
		r->chars = malloc(r->op_capacity + 1);
		if (!r->ops || !r->chars) {
			free(r->ops);
			free(r->chars);
			free(r);
			r = NULL;
		}
	}
	bool walked = r && read_stream(r, stream, stream_size);
	if (walked) {
		out->triple_known = !r->triple_bad;
		out->attributes_known = !r->attributes_bad;
		out->flags_known = !r->flags_bad && settle_flags(r);
		read_symtabs(r);
	} else {
		memset(out, 0, sizeof *out);
		out->bitcode = bitcode;
	}
	if (!walked || r->names_bad)
		calls_from_bytes(out, data, size);
	if (!out->triple_known)
		memset(out->triple, 0, sizeof out->triple);
	if (!out->attributes_known)
		clear_attributes(out);
	if (!out->flags_known)
		out->code_object_version = 0;
	if (r) {
		free(r->globals);
		free(r->ops);
		free(r->chars);
	}
	free(r);
}
