/*
 * lib/compile/compile_bitstream.h -- the reader of LLVM bitcode that
 * lib/compile/compile_bitcode.c (the facts of a module) and
 * lib/compile/compile_bitstream.c (the bitstream: fields, abbreviations,
 * blocks and records) share: its state, and the walk the facts' passes use.
 */
#ifndef GPUCC_LIB_COMPILE_BITSTREAM_H
#define GPUCC_LIB_COMPILE_BITSTREAM_H

#include "compile_module_facts.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bit_cursor {
	const unsigned char *data;
	size_t limit; /* in bits: the end of the block being read */
	size_t pos;
	bool bad;
} bit_cursor;

enum { OP_LITERAL, OP_FIXED, OP_VBR, OP_ARRAY, OP_CHAR6, OP_BLOB };

#define MAX_ABBREV_OPS 16      /* LLVM's own use at most 8 */
#define MAX_BLOCK_ABBREVS 64   /* per block, inherited ones included */
#define MAX_BLOCKINFO_ABBREVS 128 /* indexed by unsigned char */
#define MAX_RECORD_OPS 16384   /* longer records are read, their tail dropped */
#define MAX_LEVELS 2           /* the module block and one inside it */
#define MAX_SAVED_BLOCKS 4
#define MAX_FLAGS 64
#define MAX_VERSION1_GLOBALS ((size_t)1 << 22)

enum { GLOBAL_OTHER, GLOBAL_FUNCTION, GLOBAL_DECLARATION };

typedef struct abbrev_op {
	uint64_t value; /* a literal's value, a field's width */
	unsigned char kind;
} abbrev_op;

typedef struct abbrev {
	abbrev_op ops[MAX_ABBREV_OPS];
	unsigned count;
} abbrev;

typedef struct block {
	uint64_t id;
	unsigned width; /* of abbreviation ids */
	size_t end;     /* bit position just after the block */
	/* Abbreviation ids 4, 5, ...: BLOCKINFO's for this block id (indexes
	 * into the reader's table, as they were when the block was entered),
	 * then the block's own. */
	unsigned char inherited[MAX_BLOCK_ABBREVS];
	unsigned inherited_count;
	abbrev abbrevs[MAX_BLOCK_ABBREVS];
	unsigned abbrev_count;
} block;

/* Where a block's body lies, to walk it again. */
typedef struct saved_block {
	uint64_t id;
	unsigned width;
	size_t start, end;
	uint64_t first; /* metadata: its first id; constants: the globals before it */
} saved_block;

enum entry_kind { ENTRY_BAD, ENTRY_END, ENTRY_BLOCK, ENTRY_DEFINE, ENTRY_RECORD };

typedef struct reader {
	bit_cursor c;
	gpucc_module_facts *out;
	unsigned blockinfo_count, blockinfo_generation;
	uint64_t blockinfo_target; /* the block id SETBID named */
	bool blockinfo_has_target;
	abbrev defined; /* the DEFINE_ABBREV just read */
	/* The sub-block just entered. */
	uint64_t entry_id;
	unsigned entry_width;
	size_t entry_end;
	/* The record just read: operands in ops, which grows as records need
	 * (up to MAX_RECORD_OPS), and chars as long, for the operands as a
	 * string: most records have a few operands, and a reader per module
	 * read stays small. */
	uint64_t code;
	uint64_t *ops;
	char *chars;
	size_t op_count, op_capacity;
	bool truncated; /* more operands than ops can hold */
	const unsigned char *blob;
	size_t blob_size;
	bool stop;      /* a pass has what it came for */

	/* The module. */
	const unsigned char *strtab;
	size_t strtab_size;
	bool have_strtab, module_seen;
	uint64_t version, global_count;
	bool names_bad, triple_bad, attributes_bad, flags_bad;
	saved_block metadata[MAX_SAVED_BLOCKS], constants[MAX_SAVED_BLOCKS], symtabs[MAX_SAVED_BLOCKS];
	size_t metadata_count, constants_count, symtab_count;
	/* Version 1 modules name globals in a VALUE_SYMTAB by value id: what
	 * each global value is (GLOBAL_*), to tell functions there. */
	unsigned char *globals;
	size_t globals_known, globals_capacity;
	uint64_t next_md;
	bool have_key;
	uint64_t key_md; /* the string "amdhsa_code_object_version" */
	char name[32];   /* the last METADATA_NAME, "" when long */
	uint64_t flags[MAX_FLAGS];
	size_t flag_count;
	/* Passes after the walk. */
	uint64_t flag_value_md[MAX_FLAGS]; /* + 1; 0: not the key's flag */
	uint64_t wanted;                   /* metadata or value id looked for */
	uint64_t value_id, value_index;
	int64_t integer;
	bool found;

	/* Tables, from here on not cleared: each is read only below a count
	 * that says how much of it was written. */
	block levels[MAX_LEVELS];
	abbrev blockinfo[MAX_BLOCKINFO_ABBREVS];
	uint64_t blockinfo_owner[MAX_BLOCKINFO_ABBREVS];     /* the block id it is for */
	unsigned blockinfo_of[MAX_BLOCKINFO_ABBREVS];        /* the BLOCKINFO that defined it */
} reader;

typedef bool (*record_handler)(reader *r, const block *b);
typedef bool (*block_handler)(reader *r, unsigned level);

/* width (0..64) bits, least significant first. */
uint64_t read_fixed(bit_cursor *c, unsigned width);
/* A VBR field of chunks of width (2..32) bits. */
uint64_t read_vbr(bit_cursor *c, unsigned width);
/* Walk the body of a block at [start, end) as block id at level. */
bool walk_body(reader *r, unsigned level, uint64_t id, unsigned width, size_t start,
               size_t end, record_handler on_record, block_handler on_block);
/* Walk the sub-block whose header was just read. */
bool enter(reader *r, unsigned level, record_handler on_record, block_handler on_block);
/* Walk a block remembered by save_block again, its sub-blocks skipped. */
bool walk_saved(reader *r, const saved_block *s, record_handler on_record);
/* Remember the sub-block whose header was just read, to walk it again. */
bool save_block(reader *r, saved_block *table, size_t *count, uint64_t first);
/* The top level, after the magic: only blocks, each handed to on_block. */
bool walk_top(reader *r, size_t size_bits, bool (*on_block)(reader *r));

#endif
