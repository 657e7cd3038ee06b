/*
 * lib/compile/compile_bitstream.c -- LLVM's bitstream container, read without
 * LLVM for lib/compile/compile_bitcode.c (lib/compile/compile_bitstream.h):
 * fixed and VBR fields, abbreviation definitions, BLOCKINFO, records
 * abbreviated or not, and walking blocks (again, from a saved position).
 *
 * The bitstream (llvm.org/docs/BitCodeFormat.html), as LLVM 19 writes it:
 * an optional wrapper header, the magic "BC" 0xC0DE, then top-level blocks
 * (IDENTIFICATION, MODULE, STRTAB, SYMTAB).  A block holds records, nested
 * blocks and abbreviation definitions; a record is unabbreviated (VBR6
 * fields) or follows an abbreviation (literals, fixed and VBR fields,
 * char6, one trailing array or blob), defined in the block itself or, for
 * every block of an id, in the BLOCKINFO block (id 0: SETBID, then
 * DEFINE_ABBREVs; LLVM writes it inside the module block and uses it for
 * CONSTANTS, VALUE_SYMTAB and FUNCTION blocks).
 *
 * Every read is checked against the end of its block, counts against the
 * bits left, tables against their capacity (bitcode is untrusted input).
 */
#include "compile_bitstream.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the bitstream ------------------------------------------------------------ */

static size_t bits_left(const bit_cursor *c)
{
	return c->pos <= c->limit ? c->limit - c->pos : 0;
}

/* width (0..64) bits, least significant first. */
uint64_t read_fixed(bit_cursor *c, unsigned width)
{
	if (c->bad || width > 64 || bits_left(c) < width) {
		c->bad = true;
		return 0;
	}
	if (width == 0)
		return 0;
	size_t byte = c->pos >> 3;
	unsigned shift = (unsigned)(c->pos & 7), touched = (shift + width + 7) / 8;
	uint64_t v = 0;
	for (unsigned i = 0; i < touched && i < 8; i++)
		v |= (uint64_t)c->data[byte + i] << (8 * i);
	v >>= shift;
	if (touched == 9)
		v |= (uint64_t)c->data[byte + 8] << (64 - shift);
	if (width < 64)
		v &= ((uint64_t)1 << width) - 1;
	c->pos += width;
	return v;
}

/* A VBR field of chunks of width (2..32) bits; more than 64 bits of value
 * is malformed. */
uint64_t read_vbr(bit_cursor *c, unsigned width)
{
	if (width < 2 || width > 32) {
		c->bad = true;
		return 0;
	}
	uint64_t v = 0, high = (uint64_t)1 << (width - 1);
	for (unsigned shift = 0; !c->bad; shift += width - 1) {
		uint64_t chunk = read_fixed(c, width);
		uint64_t bits = chunk & (high - 1);
		if (shift >= 64 || (shift > 0 && bits >> (64 - shift)))
			break;
		v |= bits << shift;
		if (!(chunk & high))
			return v;
	}
	c->bad = true;
	return 0;
}

/* To the next multiple of 32 bits, which must lie inside the block. */
static void align32(bit_cursor *c)
{
	size_t to = (c->pos + 31) & ~(size_t)31;
	if (to > c->limit)
		c->bad = true;
	else
		c->pos = to;
}

/* ---- abbreviations, blocks and records ------------------------------------------ */

/* A DEFINE_ABBREV's body into r->defined.  Fixed(0) and VBR(0) read as
 * literal 0, as LLVM does; an array must be last but one, followed by its
 * element (fixed, VBR, char6); a blob last; neither first. */
static bool read_abbrev_definition(reader *r)
{
	abbrev *a = &r->defined;
	uint64_t count = read_vbr(&r->c, 5);
	if (r->c.bad || count == 0 || count > MAX_ABBREV_OPS)
		return false;
	a->count = (unsigned)count;
	for (unsigned i = 0; i < a->count; i++) {
		abbrev_op *op = &a->ops[i];
		if (read_fixed(&r->c, 1)) {
			op->kind = OP_LITERAL;
			op->value = read_vbr(&r->c, 8);
			continue;
		}
		uint64_t encoding = read_fixed(&r->c, 3);
		op->value = encoding == 1 || encoding == 2 ? read_vbr(&r->c, 5) : 0;
		if (encoding < 1 || encoding > 5 || (encoding == 1 && op->value > 64) ||
		    (encoding == 2 && (op->value == 1 || op->value > 32)))
			return false;
		op->kind = encoding == 1 ? OP_FIXED : encoding == 2 ? OP_VBR
		           : encoding == 3 ? OP_ARRAY : encoding == 4 ? OP_CHAR6 : OP_BLOB;
		if ((op->kind == OP_FIXED || op->kind == OP_VBR) && op->value == 0)
			op->kind = OP_LITERAL;
	}
	for (unsigned i = 0; i < a->count; i++) {
		unsigned char kind = a->ops[i].kind;
		if ((kind == OP_ARRAY || kind == OP_BLOB) && i == 0)
			return false;
		if (kind == OP_BLOB && i != a->count - 1)
			return false;
		if (kind == OP_ARRAY) {
			unsigned char element = i + 2 == a->count ? a->ops[i + 1].kind : OP_LITERAL;
			if (element != OP_FIXED && element != OP_VBR && element != OP_CHAR6)
				return false;
		}
	}
	return !r->c.bad;
}

/* One more operand of the record; past MAX_RECORD_OPS, or past what
 * memory allows, it is dropped and the record marked truncated. */
static void push_op(reader *r, uint64_t v)
{
	if (r->op_count == r->op_capacity) {
		size_t capacity = 2 * r->op_capacity;
		if (capacity > MAX_RECORD_OPS)
			capacity = MAX_RECORD_OPS;
		uint64_t *ops = capacity > r->op_capacity ? realloc(r->ops, capacity * sizeof *ops) : NULL;
		if (ops)
			r->ops = ops;
		char *chars = ops ? realloc(r->chars, capacity + 1) : NULL;
		if (chars)
			r->chars = chars;
		if (!chars) {
			r->truncated = true;
			return;
		}
		r->op_capacity = capacity;
	}
	r->ops[r->op_count++] = v;
}

/* One operand of a literal, fixed, VBR or char6 kind (char6 as its
 * character). */
static uint64_t read_scalar(bit_cursor *c, const abbrev_op *op)
{
	static const char char6[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._";
	switch (op->kind) {
	case OP_LITERAL: return op->value;
	case OP_FIXED: return read_fixed(c, (unsigned)op->value);
	case OP_VBR: return read_vbr(c, (unsigned)op->value);
	case OP_CHAR6: return (unsigned char)char6[read_fixed(c, 6) & 63];
	default: c->bad = true; return 0;
	}
}

/* Forget the last record's operands and blob. */
static void start_record(reader *r)
{
	r->op_count = 0;
	r->truncated = false;
	r->blob = NULL;
	r->blob_size = 0;
}

/* UNABBREV_RECORD: code, count and operands, all VBR6. */
static bool read_unabbreviated(reader *r)
{
	start_record(r);
	r->code = read_vbr(&r->c, 6);
	uint64_t count = read_vbr(&r->c, 6);
	if (r->c.bad || count > bits_left(&r->c) / 6)
		return false;
	for (uint64_t i = 0; i < count && !r->c.bad; i++)
		push_op(r, read_vbr(&r->c, 6));
	return !r->c.bad;
}

/* An array operand: a VBR6 count, then that many elements; a count the
 * bits left cannot hold is malformed. */
static bool read_array(reader *r, const abbrev_op *element)
{
	uint64_t count = read_vbr(&r->c, 6);
	uint64_t least = element->kind == OP_CHAR6 ? 6 : element->value; /* bits per element */
	if (r->c.bad || least == 0 || count > bits_left(&r->c) / least)
		return false;
	for (uint64_t k = 0; k < count && !r->c.bad; k++)
		push_op(r, read_scalar(&r->c, element));
	return !r->c.bad;
}

/* A blob operand: a VBR6 size, 32-bit alignment, the bytes (r->blob
 * points into the input), alignment again. */
static bool read_blob(reader *r)
{
	uint64_t size = read_vbr(&r->c, 6);
	align32(&r->c);
	if (r->c.bad || size > bits_left(&r->c) / 8)
		return false;
	r->blob = r->c.data + r->c.pos / 8;
	r->blob_size = (size_t)size;
	r->c.pos += (size_t)size * 8;
	align32(&r->c);
	return !r->c.bad;
}

/* A record that follows abbreviation a: the first operand is the code. */
static bool read_abbreviated(reader *r, const abbrev *a)
{
	start_record(r);
	r->code = read_scalar(&r->c, &a->ops[0]);
	for (unsigned i = 1; i < a->count && !r->c.bad; i++) {
		const abbrev_op *op = &a->ops[i];
		if (op->kind == OP_ARRAY)
			return read_array(r, &a->ops[i + 1]); /* validated: last but one */
		if (op->kind == OP_BLOB)
			return read_blob(r);
		push_op(r, read_scalar(&r->c, op));
	}
	return !r->c.bad;
}

/* ENTER_SUBBLOCK's header: id, abbreviation width, 32-bit alignment and
 * the length in words, which must lie inside the current block. */
static bool read_subblock_header(reader *r)
{
	r->entry_id = read_vbr(&r->c, 8);
	uint64_t width = read_vbr(&r->c, 4);
	align32(&r->c);
	uint64_t words = read_fixed(&r->c, 32);
	if (r->c.bad || width < 1 || width > 32 || words > bits_left(&r->c) / 32)
		return false;
	r->entry_width = (unsigned)width;
	r->entry_end = r->c.pos + (size_t)words * 32;
	return true;
}

/* The next entry of block b; ENTRY_BAD when the stream is malformed. */
static enum entry_kind read_entry(reader *r, const block *b)
{
	uint64_t id = read_fixed(&r->c, b->width);
	if (r->c.bad)
		return ENTRY_BAD;
	switch (id) {
	case 0: /* END_BLOCK */
		align32(&r->c);
		return !r->c.bad && r->c.pos == b->end ? ENTRY_END : ENTRY_BAD;
	case 1: return read_subblock_header(r) ? ENTRY_BLOCK : ENTRY_BAD;
	case 2: return read_abbrev_definition(r) ? ENTRY_DEFINE : ENTRY_BAD;
	case 3: return read_unabbreviated(r) ? ENTRY_RECORD : ENTRY_BAD;
	default:
		if (id - 4 < b->inherited_count)
			return read_abbreviated(r, &r->blockinfo[b->inherited[id - 4]]) ? ENTRY_RECORD
			                                                                  : ENTRY_BAD;
		if (id - 4 - b->inherited_count >= b->abbrev_count)
			return ENTRY_BAD;
		return read_abbreviated(r, &b->abbrevs[id - 4 - b->inherited_count]) ? ENTRY_RECORD
		                                                                       : ENTRY_BAD;
	}
}

/* r->defined joins block b's abbreviations or, in BLOCKINFO, those of the
 * block id SETBID named. */
static bool add_abbrev(reader *r, block *b)
{
	if (b->id != 0) {
		if (b->inherited_count + b->abbrev_count == MAX_BLOCK_ABBREVS)
			return false;
		b->abbrevs[b->abbrev_count++] = r->defined;
		return true;
	}
	if (!r->blockinfo_has_target || r->blockinfo_count == MAX_BLOCKINFO_ABBREVS)
		return false;
	r->blockinfo_owner[r->blockinfo_count] = r->blockinfo_target;
	r->blockinfo_of[r->blockinfo_count] = r->blockinfo_generation;
	r->blockinfo[r->blockinfo_count++] = r->defined;
	return true;
}

/* Walk block b to its END_BLOCK: records to on_record, sub-blocks to
 * on_block (which enters or skips each; NULL skips them all).  Stops early,
 * successfully, when a handler sets r->stop.  false when malformed. */
static bool walk(reader *r, block *b, unsigned level, record_handler on_record,
                 block_handler on_block)
{
	while (!r->stop) {
		switch (read_entry(r, b)) {
		case ENTRY_END: return true;
		case ENTRY_BLOCK:
			if (on_block && !on_block(r, level + 1))
				return false;
			if (!on_block)
				r->c.pos = r->entry_end;
			break;
		case ENTRY_DEFINE:
			if (!add_abbrev(r, b))
				return false;
			break;
		case ENTRY_RECORD:
			if (!on_record(r, b))
				return false;
			break;
		default: return false;
		}
	}
	return true;
}

/* Walk the body of a block at [start, end) as block id at level: its
 * abbreviations start with BLOCKINFO's for id.  The cursor is left at the
 * block's end, the parent's limit restored. */
bool walk_body(reader *r, unsigned level, uint64_t id, unsigned width, size_t start,
                      size_t end, record_handler on_record, block_handler on_block)
{
	if (level >= MAX_LEVELS)
		return false;
	block *b = &r->levels[level];
	b->id = id;
	b->width = width;
	b->end = end;
	b->abbrev_count = 0;
	b->inherited_count = 0;
	for (unsigned i = 0; i < r->blockinfo_count && id != 0; i++) {
		if (r->blockinfo_owner[i] != id || r->blockinfo_of[i] != r->blockinfo_generation)
			continue;
		if (b->inherited_count == MAX_BLOCK_ABBREVS)
			return false;
		b->inherited[b->inherited_count++] = (unsigned char)i;
	}
	size_t parent_limit = r->c.limit;
	r->c.pos = start;
	r->c.limit = end;
	bool ok = walk(r, b, level, on_record, on_block);
	r->c.limit = parent_limit;
	r->c.pos = end;
	return ok && !r->c.bad;
}

/* Walk the sub-block whose header was just read. */
bool enter(reader *r, unsigned level, record_handler on_record, block_handler on_block)
{
	return walk_body(r, level, r->entry_id, r->entry_width, r->c.pos, r->entry_end, on_record,
	                 on_block);
}

/* Walk a block remembered by save_block again, its sub-blocks skipped. */
bool walk_saved(reader *r, const saved_block *s, record_handler on_record)
{
	return walk_body(r, 0, s->id, s->width, s->start, s->end, on_record, NULL);
}

/* Remember the sub-block whose header was just read, to walk it again;
 * false when table (MAX_SAVED_BLOCKS) is full. */
bool save_block(reader *r, saved_block *table, size_t *count, uint64_t first)
{
	if (*count == MAX_SAVED_BLOCKS)
		return false;
	saved_block *s = &table[(*count)++];
	s->id = r->entry_id;
	s->width = r->entry_width;
	s->start = r->c.pos;
	s->end = r->entry_end;
	s->first = first;
	return true;
}

/* The top level, after the magic: only blocks, each handed to on_block.
 * As LLVM's reader does, it ends when less than 8 bytes are left (padding
 * or a tool's trailing bytes). */
bool walk_top(reader *r, size_t size_bits, bool (*on_block)(reader *r))
{
	r->c.pos = 32;
	r->c.limit = size_bits;
	while (r->c.pos / 8 + 8 < size_bits / 8) {
		if (read_fixed(&r->c, 2) != 1 || !read_subblock_header(r))
			return false;
		size_t end = r->entry_end; /* on_block reads headers of its own */
		if (!on_block(r))
			return false;
		r->c.pos = end;
		r->c.limit = size_bits;
	}
	return !r->c.bad;
}
