/*
 * lib/compile/compile_module_facts.c -- what a module's bytes say without LLVM
 * (gpucc_module_facts, lib/compile/compile_impl.h): the reader of .ll text, which
 * hands bitcode to its reader (lib/compile/compile_bitcode.c); the meaning of what
 * both read is lib/compile/compile_module_facts_note.c's.  Keys are computed, and cache
 * hits served, from these facts before LLVM is loaded, so this runs for
 * every compile: one pass over the text, no allocation but for an escaped
 * "target-features" value.
 *
 * The text is split into tokens as LLVM 19's lexer (LLLexer) splits it:
 * any run of spaces, tabs and line breaks separates tokens; ';' starts a
 * comment to the end of the line, outside strings; strings run to the next
 * '"' (LLVM writes a quote inside one as \22), across lines; quoted names
 * (@"...", %"...") and strings take \HH and \\ escapes, as do metadata names
 * (!name).  Statements are recognised by their tokens, not by lines:
 *
 *   target triple = "..."                          the triple (the last one)
 *   attributes #N = { ... }                        an attribute group
 *   define ... @name(...) ATTRS {                  attributes on the define
 *   declare ... @name                              a declaration
 *   !llvm.module.flags = !{!A, !B, ...}            the module flags
 *   !N = [distinct] !{T B, !"key", T V}            a module flag's node
 *   !opencl.ocl.version = ...                      OpenCL C's front end
 *
 * and every @name outside comments and strings is a reference.  Text that
 * LLVM would refuse can give any facts, but never a crash or a read past
 * the end.
 */
#include "compile_module_facts.h"

#include "hex.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Whether the size bytes at a are the literal. */
static bool bytes_equal(const char *a, size_t size, const char *literal)
{
	return size == strlen(literal) && memcmp(a, literal, size) == 0;
}

/* ---- tokens ------------------------------------------------------------------ */

typedef enum token_kind {
	TOKEN_END,
	TOKEN_WORD,            /* keywords, types, numbers: a run of [-a-zA-Z$._0-9] */
	TOKEN_LABEL,           /* word: or "string": */
	TOKEN_GLOBAL,          /* @name, @"name", @0 */
	TOKEN_LOCAL,           /* %name and $comdat likewise */
	TOKEN_METADATA_NAME,   /* !name */
	TOKEN_ATTRIBUTE_GROUP, /* #0 */
	TOKEN_STRING,          /* "..." */
	TOKEN_PUNCT,           /* any other single character: = { } ( ) ! , ... */
} token_kind;

typedef struct token {
	token_kind kind;
	const unsigned char *text; /* the name, number or string, without sigil or quotes */
	size_t size;
	bool escaped;              /* text may hold \HH escapes */
	unsigned char punct;       /* for TOKEN_PUNCT */
} token;

typedef struct lexer {
	const unsigned char *p, *end;
	token pushed; /* a token handed back (push_back), seen next */
	bool has_pushed;
	gpucc_module_facts *out;
} lexer;

/* The characters of LLVM's unquoted names and keywords: [-a-zA-Z$._0-9]. */
static bool is_name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
	       c == '$' || c == '.' || c == '_';
}

/* Decode LLVM's escapes (\\ and \HH; any other backslash stands for
 * itself) of text into out, at most cap bytes: the decoded size, or cap
 * when the rest did not fit. */
static size_t unescape(const unsigned char *text, size_t size, char *out, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < size && n < cap; i++) {
		unsigned char c = text[i];
		if (c == '\\' && i + 1 < size && text[i + 1] == '\\') {
			i++;
		} else if (c == '\\' && i + 2 < size &&
		           gpucc_hex_decode(&c, (const char *)text + i + 1, 1, false)) {
			i += 2;
		}
		out[n++] = (char)c;
	}
	return n;
}

/* A token's text, decoded into buf (cap bytes): the size, cut at cap. */
static size_t token_text(const token *t, char *buf, size_t cap)
{
	if (t->escaped)
		return unescape(t->text, t->size, buf, cap);
	size_t n = t->size < cap ? t->size : cap;
	memcpy(buf, t->text, n);
	return n;
}

/* Whether the token's decoded text is literal.  Longer texts cannot match:
 * the buffer holds one byte more than any literal asked for. */
static bool token_is(const token *t, const char *literal)
{
	char buf[64];
	return bytes_equal(buf, token_text(t, buf, sizeof buf), literal);
}

static bool is_word(const token *t, const char *literal)
{
	return t->kind == TOKEN_WORD && t->size == strlen(literal) &&
	       memcmp(t->text, literal, t->size) == 0;
}

static bool is_punct(const token *t, unsigned char c)
{
	return t->kind == TOKEN_PUNCT && t->punct == c;
}

/* Past spaces, tabs, line breaks and ';' comments (to the line's end). */
static void skip_space_and_comments(lexer *lx)
{
	while (lx->p < lx->end) {
		unsigned char c = *lx->p;
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			lx->p++;
		} else if (c == ';') {
			while (lx->p < lx->end && *lx->p != '\n' && *lx->p != '\r')
				lx->p++;
		} else {
			return;
		}
	}
}

/* The string that starts at the opening quote lx->p; an unterminated one
 * runs to the end (LLVM refuses it). */
static void lex_string(lexer *lx, token *t)
{
	const unsigned char *start = lx->p + 1;
	const unsigned char *close = memchr(start, '"', (size_t)(lx->end - start));
	t->kind = TOKEN_STRING;
	t->text = start;
	t->size = (size_t)((close ? close : lx->end) - start);
	t->escaped = true;
	lx->p = close ? close + 1 : lx->end;
	if (lx->p < lx->end && *lx->p == ':') {
		t->kind = TOKEN_LABEL;
		lx->p++;
	}
}

/* The size of the name after a sigil: #N takes digits, !name starts with
 * no digit and may hold escapes, the others take name characters. */
static size_t sigil_name_size(unsigned char sigil, const unsigned char *p, const unsigned char *end)
{
	size_t n = 0;
	if (sigil == '#') {
		while (p + n < end && p[n] >= '0' && p[n] <= '9')
			n++;
		return n;
	}
	while (p + n < end && (is_name_char(p[n]) || (sigil == '!' && p[n] == '\\')))
		n++;
	if (sigil == '!' && n && p[0] >= '0' && p[0] <= '9')
		return 0; /* !0 is '!' and a number */
	return n;
}

/* @name, %name, $name, !name and #N, at their sigil; a sigil with no name
 * after it is punctuation. */
static void lex_sigil(lexer *lx, token *t)
{
	unsigned char sigil = *lx->p++;
	if ((sigil == '@' || sigil == '%' || sigil == '$') && lx->p < lx->end && *lx->p == '"') {
		lex_string(lx, t);
	} else {
		size_t n = sigil_name_size(sigil, lx->p, lx->end);
		if (n == 0) {
			t->kind = TOKEN_PUNCT;
			t->punct = sigil;
			return;
		}
		t->text = lx->p;
		t->size = n;
		t->escaped = sigil == '!';
		lx->p += n;
	}
	t->kind = sigil == '@'   ? TOKEN_GLOBAL
	          : sigil == '!' ? TOKEN_METADATA_NAME
	          : sigil == '#' ? TOKEN_ATTRIBUTE_GROUP
	                         : TOKEN_LOCAL;
}

/* A new token from the bytes; every global it names is noted as a
 * reference here, once. */
static void lex(lexer *lx, token *t)
{
	memset(t, 0, sizeof *t);
	skip_space_and_comments(lx);
	if (lx->p == lx->end) {
		t->kind = TOKEN_END;
		return;
	}
	unsigned char c = *lx->p;
	if (c == '"') {
		lex_string(lx, t);
	} else if (c == '@' || c == '%' || c == '$' || c == '!' || c == '#') {
		lex_sigil(lx, t);
	} else if (is_name_char(c)) {
		t->kind = TOKEN_WORD;
		t->text = lx->p;
		while (t->size < (size_t)(lx->end - lx->p) && is_name_char(lx->p[t->size]))
			t->size++;
		lx->p += t->size;
		if (lx->p < lx->end && *lx->p == ':') {
			t->kind = TOKEN_LABEL;
			lx->p++;
		}
	} else {
		t->kind = TOKEN_PUNCT;
		t->punct = c;
		lx->p++;
	}
	if (t->kind == TOKEN_GLOBAL) {
		char name[64];
		gpucc_module_facts_note_reference(lx->out, name, token_text(t, name, sizeof name));
	}
}

/* The next token: the one handed back, else a new one. */
static void next(lexer *lx, token *t)
{
	if (lx->has_pushed) {
		*t = lx->pushed;
		lx->has_pushed = false;
		return;
	}
	lex(lx, t);
}

/* Hand t back: next returns it again (one token at most). */
static void push_back(lexer *lx, const token *t)
{
	lx->pushed = *t;
	lx->has_pushed = true;
}

/* Whether the next token is the punctuation c; it is consumed if so,
 * handed back if not. */
static bool expect_punct(lexer *lx, unsigned char c)
{
	token t;
	next(lx, &t);
	if (is_punct(&t, c))
		return true;
	push_back(lx, &t);
	return false;
}

/* An integer as LLVM writes one: decimal with an optional '-', or u0x /
 * s0x hexadecimal.  false when the word is none or does not fit. */
static bool word_integer(const token *t, int64_t *value)
{
	if (t->kind != TOKEN_WORD || t->size == 0)
		return false;
	const unsigned char *p = t->text, *end = t->text + t->size;
	bool hex = t->size > 3 && (p[0] == 'u' || p[0] == 's') && p[1] == '0' && p[2] == 'x';
	bool negative = !hex && *p == '-';
	p += hex ? 3 : negative;
	if (p == end)
		return false;
	uint64_t v = 0, base = hex ? 16 : 10;
	for (; p < end; p++) {
		int d = hex ? gpucc_hex_digit(*p) : (*p >= '0' && *p <= '9' ? *p - '0' : -1);
		if (d < 0 || v > (UINT64_MAX - (uint64_t)d) / base)
			return false;
		v = v * base + (uint64_t)d;
	}
	if (v > (uint64_t)INT64_MAX)
		return false;
	*value = negative ? -(int64_t)v : (int64_t)v;
	return true;
}

/* ---- statements ------------------------------------------------------------- */

#define MAX_FLAG_CANDIDATES 8

typedef struct text_reader {
	lexer lx;
	gpucc_module_facts *out;
	/* Nodes !N = !{T B, !"amdhsa_code_object_version", T V}, and where
	 * the list of !llvm.module.flags starts: which of them is a flag is
	 * settled at the end, as they may come in either order. */
	int64_t candidate_node[MAX_FLAG_CANDIDATES], candidate_value[MAX_FLAG_CANDIDATES];
	size_t candidate_count;
	const unsigned char *flags_list; /* NULL: no !llvm.module.flags */
} text_reader;

/* The words that start a statement no other statement holds: where a
 * statement that does not end as it should is given up. */
static bool is_statement_keyword(const token *t)
{
	return is_word(t, "define") || is_word(t, "declare") || is_word(t, "attributes");
}

/* target triple = "...", after "target". */
static void read_target(text_reader *r)
{
	token t;
	next(&r->lx, &t);
	if (!is_word(&t, "triple")) {
		push_back(&r->lx, &t);
		return;
	}
	if (!expect_punct(&r->lx, '='))
		return;
	next(&r->lx, &t);
	if (t.kind != TOKEN_STRING) {
		push_back(&r->lx, &t);
		return;
	}
	char triple[sizeof r->out->triple];
	size_t n = token_text(&t, triple, sizeof triple);
	/* One that does not fit is no triple gpucc knows. */
	r->out->triple_known = n < sizeof triple;
	if (n == sizeof triple)
		n = 0;
	memcpy(r->out->triple, triple, n);
	r->out->triple[n] = '\0';
}

/* "key"="value" whose key is a string token: noted when it is one gpucc
 * reads.  The value is decoded into a buffer only when it holds escapes. */
static void note_string_attribute(text_reader *r, const token *key, const token *value)
{
	char k[64];
	size_t key_size = token_text(key, k, sizeof k);
	if (!bytes_equal(k, key_size, "target-cpu") && !bytes_equal(k, key_size, "target-features"))
		return;
	if (!memchr(value->text, '\\', value->size)) {
		gpucc_module_facts_note_attribute(r->out, k, key_size, (const char *)value->text,
		                                  value->size);
		return;
	}
	char *decoded = malloc(value->size);
	if (!decoded) {
		r->out->attributes_known = false;
		return;
	}
	size_t n = unescape(value->text, value->size, decoded, value->size);
	gpucc_module_facts_note_attribute(r->out, k, key_size, decoded, n);
	free(decoded);
}

/* Function attributes up to the punctuation stop ('}' of a group, '{' of a
 * define's body), which is consumed: optnone, "key"="value", and anything
 * else skipped.  A statement keyword ends them too (handed back). */
static void read_attributes(text_reader *r, unsigned char stop)
{
	for (;;) {
		token t;
		next(&r->lx, &t);
		if (t.kind == TOKEN_END || is_punct(&t, stop))
			return;
		if (is_statement_keyword(&t)) {
			push_back(&r->lx, &t);
			return;
		}
		if (is_word(&t, "optnone")) {
			r->out->optnone = true;
		} else if (t.kind == TOKEN_STRING && expect_punct(&r->lx, '=')) {
			token value;
			next(&r->lx, &value);
			if (value.kind == TOKEN_STRING)
				note_string_attribute(r, &t, &value);
			else
				push_back(&r->lx, &value);
		}
	}
}

/* attributes #N = { ... }, after "attributes". */
static void read_attribute_group(text_reader *r)
{
	token t;
	next(&r->lx, &t);
	if (t.kind != TOKEN_ATTRIBUTE_GROUP) {
		push_back(&r->lx, &t);
		return;
	}
	if (expect_punct(&r->lx, '=') && expect_punct(&r->lx, '{'))
		read_attributes(r, '}');
}

/* The tokens up to the function's name (a global), which goes to *name;
 * false, with the token handed back, at a statement keyword or the end. */
static bool read_to_function_name(text_reader *r, token *name)
{
	for (;;) {
		next(&r->lx, name);
		if (name->kind == TOKEN_GLOBAL)
			return true;
		if (name->kind == TOKEN_END || is_statement_keyword(name)) {
			push_back(&r->lx, name);
			return false;
		}
	}
}

/* define ... @name(params) ATTRS {, after "define": the attributes
 * written on the line (the parameters, attributes of their own, skipped). */
static void read_define(text_reader *r)
{
	token t;
	if (!read_to_function_name(r, &t) || !expect_punct(&r->lx, '('))
		return;
	for (size_t depth = 1; depth > 0;) {
		next(&r->lx, &t);
		if (t.kind == TOKEN_END || is_statement_keyword(&t)) {
			push_back(&r->lx, &t);
			return;
		}
		if (is_punct(&t, '('))
			depth++;
		else if (is_punct(&t, ')'))
			depth--;
	}
	read_attributes(r, '{');
}

/* declare ... @name, after "declare". */
static void read_declare(text_reader *r)
{
	token t;
	if (!read_to_function_name(r, &t))
		return;
	char name[64];
	gpucc_module_facts_note_declaration(r->out, name, token_text(&t, name, sizeof name));
}

/* !name = ..., after the name: the module flags' list is remembered,
 * OpenCL's version noted. */
static void read_named_metadata(text_reader *r, const token *name)
{
	bool flags = token_is(name, "llvm.module.flags");
	bool opencl = token_is(name, "opencl.ocl.version");
	if ((!flags && !opencl) || !expect_punct(&r->lx, '='))
		return;
	if (opencl)
		r->out->opencl = true;
	if (flags && !r->flags_list)
		r->flags_list = r->lx.p; /* nothing is pushed back after expect_punct's success */
}

/* The tokens of a flag's node after "!{": T B, !"key", T V }.  Its value
 * when the key is amdhsa_code_object_version; false, with the first token
 * that does not fit handed back, when it is another node. */
static bool read_flag_node(text_reader *r, int64_t *value)
{
	int64_t behaviour;
	for (int i = 0; i < 9; i++) {
		token t;
		next(&r->lx, &t);
		bool fits;
		switch (i) {
		case 0: case 6: fits = t.kind == TOKEN_WORD; break; /* the type */
		case 1: fits = word_integer(&t, &behaviour); break;
		case 2: case 5: fits = is_punct(&t, ','); break;
		case 3: fits = is_punct(&t, '!'); break;
		case 4: fits = t.kind == TOKEN_STRING && token_is(&t, "amdhsa_code_object_version"); break;
		case 7: fits = word_integer(&t, value); break;
		default: fits = is_punct(&t, '}'); break;
		}
		if (!fits) {
			push_back(&r->lx, &t);
			return false;
		}
	}
	return true;
}

/* !N = [distinct] !{...}, after '!': a candidate when it has the form of
 * the code object version's flag. */
static void read_numbered_metadata(text_reader *r)
{
	token t;
	next(&r->lx, &t);
	int64_t node;
	if (!word_integer(&t, &node)) {
		push_back(&r->lx, &t);
		return;
	}
	if (!expect_punct(&r->lx, '='))
		return;
	next(&r->lx, &t);
	if (!is_word(&t, "distinct"))
		push_back(&r->lx, &t);
	int64_t value;
	if (expect_punct(&r->lx, '!') && expect_punct(&r->lx, '{') && read_flag_node(r, &value) &&
	    r->candidate_count < MAX_FLAG_CANDIDATES) {
		r->candidate_node[r->candidate_count] = node;
		r->candidate_value[r->candidate_count++] = value;
	}
}

/* The first node of !llvm.module.flags's list that is a candidate gives
 * the code object version. */
static void settle_flags(text_reader *r)
{
	if (!r->flags_list || r->candidate_count == 0)
		return;
	r->lx.p = r->flags_list;
	r->lx.has_pushed = false;
	if (!expect_punct(&r->lx, '!') || !expect_punct(&r->lx, '{'))
		return;
	for (;;) {
		token t;
		int64_t node;
		if (!expect_punct(&r->lx, '!'))
			return;
		next(&r->lx, &t);
		if (!word_integer(&t, &node))
			return;
		for (size_t i = 0; i < r->candidate_count; i++) {
			if (r->candidate_node[i] == node) {
				r->out->code_object_version =
					gpucc_module_facts_code_object_version(r->candidate_value[i]);
				return;
			}
		}
		if (!expect_punct(&r->lx, ','))
			return;
	}
}

/* The facts of .ll text, in one pass over its tokens (and a second over
 * the module flags' list when a flag's node was seen). */
static void read_text(gpucc_module_facts *out, const unsigned char *data, size_t size)
{
	text_reader r;
	memset(&r, 0, sizeof r);
	r.out = out;
	r.lx.p = data;
	r.lx.end = data + size;
	r.lx.out = out;
	out->triple_known = true;
	out->attributes_known = true;
	out->flags_known = true;
	for (;;) {
		token t;
		next(&r.lx, &t);
		if (t.kind == TOKEN_END)
			break;
		if (is_word(&t, "target"))
			read_target(&r);
		else if (is_word(&t, "attributes"))
			read_attribute_group(&r);
		else if (is_word(&t, "define"))
			read_define(&r);
		else if (is_word(&t, "declare"))
			read_declare(&r);
		else if (t.kind == TOKEN_METADATA_NAME)
			read_named_metadata(&r, &t);
		else if (is_punct(&t, '!'))
			read_numbered_metadata(&r);
	}
	settle_flags(&r);
	if (!out->attributes_known) {
		memset(out->cpus, 0, sizeof out->cpus);
		out->cpu_count = 0;
		out->ptx_isa = 0;
		out->wavefront64 = false;
		out->xnack = out->sramecc = GPUCC_FEATURE_ANY;
		out->optnone = false;
	}
}

void gpucc_module_facts_read(gpucc_module_facts *out, const unsigned char *data, size_t size)
{
	memset(out, 0, sizeof *out);
	out->bitcode = size >= 4 && (memcmp(data, "BC\xc0\xde", 4) == 0 ||
	                             memcmp(data, "\xde\xc0\x17\x0b", 4) == 0);
	if (out->bitcode)
		gpucc_bitcode_facts(out, data, size);
	else
		read_text(out, data, size);
}
