/*
 * lib/compile_bitcode.c -- the target triple of an LLVM bitcode module, read
 * without LLVM (so that planning a compile never loads it).
 *
 * The LLVM bitstream format (llvm.org/docs/BitCodeFormat.html): an optional
 * wrapper header, the magic "BC" 0xC0DE, then abbreviation-coded records in
 * nested blocks.  The triple is record TRIPLE (2) of the MODULE_BLOCK (8).
 * This reader walks the top level and the module block, skipping every
 * sub-block by its recorded length, and decodes plain and abbreviated
 * records (abbreviations defined in the module block itself; BLOCKINFO
 * abbreviations are not used by LLVM for the module block).  Anything it
 * does not understand ends the walk with the triple unknown: the backend
 * then checks the triple after parsing.
 */
#include "compile_internal.h"

#include <stdio.h>
#include <string.h>

enum { OP_LITERAL, OP_FIXED, OP_VBR, OP_ARRAY, OP_CHAR6, OP_BLOB };

typedef struct abbrev_op {
	int kind;
	uint64_t value; /* literal value or bit width */
} abbrev_op;

#define MAX_ABBREVS 64
#define MAX_OPS 16

typedef struct bits {
	const unsigned char *data;
	size_t size_bits, pos;
	bool bad;
} bits;

static uint64_t read_fixed(bits *b, unsigned width)
{
	if (width > 64 || b->pos + width > b->size_bits) {
		b->bad = true;
		return 0;
	}
	uint64_t v = 0;
	for (unsigned i = 0; i < width; i++, b->pos++)
		v |= (uint64_t)((b->data[b->pos >> 3] >> (b->pos & 7)) & 1) << i;
	return v;
}

static uint64_t read_vbr(bits *b, unsigned width)
{
	if (width < 2 || width > 32) {
		b->bad = true;
		return 0;
	}
	uint64_t v = 0, hi = (uint64_t)1 << (width - 1);
	for (unsigned shift = 0; !b->bad && shift < 64; shift += width - 1) {
		uint64_t piece = read_fixed(b, width);
		v |= (piece & (hi - 1)) << shift;
		if (!(piece & hi))
			return v;
	}
	b->bad = true;
	return 0;
}

static void align32(bits *b)
{
	b->pos = (b->pos + 31) & ~(size_t)31;
	if (b->pos > b->size_bits)
		b->bad = true;
}

static uint64_t read_scalar(bits *b, const abbrev_op *op)
{
	static const char char6[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._";
	switch (op->kind) {
	case OP_LITERAL: return op->value;
	case OP_FIXED: return read_fixed(b, (unsigned)op->value);
	case OP_VBR: return read_vbr(b, (unsigned)op->value);
	case OP_CHAR6: return (unsigned char)char6[read_fixed(b, 6) & 63];
	default: b->bad = true; return 0;
	}
}

/* Decode one record's operands into a string (the triple is a record of
 * characters): code and chars; non-character values end it early. */
static void read_record(bits *b, unsigned abbrev_id, abbrev_op abbrevs[][MAX_OPS],
                        const unsigned *op_counts, size_t abbrev_count, uint64_t *code,
                        char *text, size_t text_size)
{
	size_t used = 0;
	text[0] = '\0';
#define PUT(ch) do { if (used + 1 < text_size) { text[used++] = (char)(ch); text[used] = '\0'; } } while (0)
	if (abbrev_id == 3) {
		*code = read_vbr(b, 6);
		uint64_t n = read_vbr(b, 6);
		for (uint64_t i = 0; i < n && !b->bad; i++)
			PUT(read_vbr(b, 6));
		return;
	}
	if (abbrev_id - 4 >= abbrev_count) {
		b->bad = true;
		return;
	}
	const abbrev_op *ops = abbrevs[abbrev_id - 4];
	unsigned count = op_counts[abbrev_id - 4];
	for (unsigned i = 0; i < count && !b->bad; i++) {
		uint64_t v;
		if (ops[i].kind == OP_ARRAY) {
			if (i + 1 >= count) {
				b->bad = true;
				return;
			}
			uint64_t n = read_vbr(b, 6);
			for (uint64_t k = 0; k < n && !b->bad; k++) {
				v = read_scalar(b, &ops[i + 1]);
				if (i == 0 && k == 0)
					*code = v;
				else
					PUT(v);
			}
			return;
		}
		if (ops[i].kind == OP_BLOB) {
			uint64_t n = read_vbr(b, 6);
			align32(b);
			if (b->pos + n * 8 > b->size_bits) {
				b->bad = true;
				return;
			}
			b->pos += (size_t)n * 8;
			align32(b);
			return;
		}
		v = read_scalar(b, &ops[i]);
		if (i == 0)
			*code = v;
		else
			PUT(v);
	}
#undef PUT
}

void gpucc_bitcode_triple(gpucc_module_facts *out, const unsigned char *data, size_t size)
{
	out->triple_known = false;
	out->triple[0] = '\0';
	if (size >= 20 && memcmp(data, "\xde\xc0\x17\x0b", 4) == 0) {
		uint32_t offset = (uint32_t)data[8] | (uint32_t)data[9] << 8 | (uint32_t)data[10] << 16 |
		                  (uint32_t)data[11] << 24;
		uint32_t length = (uint32_t)data[12] | (uint32_t)data[13] << 8 |
		                  (uint32_t)data[14] << 16 | (uint32_t)data[15] << 24;
		if (offset > size || length > size - offset)
			return;
		data += offset;
		size = length;
	}
	if (size < 8 || memcmp(data, "BC\xc0\xde", 4) != 0)
		return;
	bits b = {data, size * 8, 32, false};
	unsigned width = 2;
	bool in_module = false;
	abbrev_op abbrevs[MAX_ABBREVS][MAX_OPS];
	unsigned op_counts[MAX_ABBREVS];
	size_t abbrev_count = 0;
	while (!b.bad && b.pos < b.size_bits) {
		unsigned id = (unsigned)read_fixed(&b, width);
		if (b.bad)
			return;
		if (id == 0) { /* END_BLOCK: the module block had no triple */
			out->triple_known = in_module;
			return;
		}
		if (id == 1) { /* ENTER_SUBBLOCK */
			uint64_t block = read_vbr(&b, 8);
			unsigned new_width = (unsigned)read_vbr(&b, 4);
			align32(&b);
			uint64_t words = read_fixed(&b, 32);
			if (b.bad)
				return;
			if (!in_module && block == 8) {
				in_module = true;
				width = new_width;
				continue;
			}
			if (b.pos + words * 32 > b.size_bits)
				return;
			b.pos += (size_t)words * 32;
			continue;
		}
		if (id == 2) { /* DEFINE_ABBREV */
			unsigned n = (unsigned)read_vbr(&b, 5);
			if (n > MAX_OPS || abbrev_count == MAX_ABBREVS)
				return;
			for (unsigned i = 0; i < n && !b.bad; i++) {
				abbrev_op *op = &abbrevs[abbrev_count][i];
				if (read_fixed(&b, 1)) {
					op->kind = OP_LITERAL;
					op->value = read_vbr(&b, 8);
					continue;
				}
				uint64_t encoding = read_fixed(&b, 3);
				op->value = 0;
				switch (encoding) {
				case 1: op->kind = OP_FIXED; op->value = read_vbr(&b, 5); break;
				case 2: op->kind = OP_VBR; op->value = read_vbr(&b, 5); break;
				case 3: op->kind = OP_ARRAY; break;
				case 4: op->kind = OP_CHAR6; break;
				case 5: op->kind = OP_BLOB; break;
				default: return;
				}
			}
			op_counts[abbrev_count++] = n;
			continue;
		}
		if (!in_module)
			return;
		uint64_t code = 0;
		char text[sizeof out->triple];
		read_record(&b, id, abbrevs, op_counts, abbrev_count, &code, text, sizeof text);
		if (b.bad)
			return;
		if (code == 2) { /* MODULE_CODE_TRIPLE */
			snprintf(out->triple, sizeof out->triple, "%s", text);
			out->triple_known = true;
			return;
		}
	}
}
