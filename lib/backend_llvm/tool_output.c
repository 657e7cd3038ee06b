/*
 * lib/backend_llvm/tool_output.c -- reading what the tools produce: kernel
 * names from PTX text, resource usage from `ptxas -v`, and kernel names and
 * resources from an AMDGPU code object's metadata note.
 *
 * The code object is untrusted in the sense that every offset and length is
 * checked before use; the note's payload is MessagePack (AMDGPUUsage, "Code
 * Object V3 and Above Metadata"), read by the small bounded decoder below,
 * which knows just enough of the format to find keys and skip the rest.
 */
#include "backend_llvm.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void backend_kernels_free(gpucc_backend_kernel *kernels, size_t count)
{
	for (size_t i = 0; i < count; i++)
		free(kernels[i].name);
	free(kernels);
}

static int kernels_push(gpucc_backend_kernel **kernels, size_t *count, const char *name,
                        size_t name_len)
{
	gpucc_backend_kernel *grown = realloc(*kernels, sizeof *grown * (*count + 1));
	if (!grown)
		return -1;
	*kernels = grown;
	gpucc_backend_kernel *k = &grown[*count];
	k->name = strndup(name, name_len);
	if (!k->name)
		return -1;
	k->registers = k->shared_bytes = k->scratch_bytes = -1;
	(*count)++;
	return 0;
}

/* ---- PTX ------------------------------------------------------------------- */

static bool ptx_ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.';
}

int backend_ptx_entries(const char *ptx, size_t size, gpucc_backend_kernel **out, size_t *count)
{
	*out = NULL;
	*count = 0;
	size_t i = 0;
	while (i < size) {
		size_t end = i;
		while (end < size && ptx[end] != '\n')
			end++;
		/* A line "[.visible|.weak] .entry NAME(" declares a kernel. */
		const char *p = ptx + i, *e = ptx + end;
		for (;;) {
			while (p < e && (*p == ' ' || *p == '\t'))
				p++;
			if (e - p > 9 && strncmp(p, ".visible", 8) == 0 && (p[8] == ' ' || p[8] == '\t'))
				p += 8;
			else if (e - p > 6 && strncmp(p, ".weak", 5) == 0 && (p[5] == ' ' || p[5] == '\t'))
				p += 5;
			else
				break;
		}
		if (e - p > 7 && strncmp(p, ".entry", 6) == 0 && (p[6] == ' ' || p[6] == '\t')) {
			p += 6;
			while (p < e && (*p == ' ' || *p == '\t'))
				p++;
			const char *name = p;
			while (p < e && ptx_ident_char(*p))
				p++;
			if (p > name && kernels_push(out, count, name, (size_t)(p - name)) != 0) {
				backend_kernels_free(*out, *count);
				*out = NULL;
				*count = 0;
				return -1;
			}
		}
		i = end + 1;
	}
	return 0;
}

/* ---- ptxas -v -------------------------------------------------------------- */

static gpucc_backend_kernel *find_kernel(gpucc_backend_kernel *kernels, size_t count,
                                         const char *name, size_t len)
{
	for (size_t i = 0; i < count; i++)
		if (strlen(kernels[i].name) == len && strncmp(kernels[i].name, name, len) == 0)
			return &kernels[i];
	return NULL;
}

/* The number just before " <unit>" in [line, end), or -1. */
static int64_t number_before(const char *line, const char *end, const char *unit)
{
	size_t ulen = strlen(unit);
	for (const char *p = line; p + ulen <= end; p++) {
		if (strncmp(p, unit, ulen) != 0 || p == line || p[-1] != ' ')
			continue;
		const char *q = p - 1;
		while (q > line && isdigit((unsigned char)q[-1]))
			q--;
		if (q == p - 1)
			continue;
		return strtoll(q, NULL, 10);
	}
	return -1;
}

void backend_ptxas_resources(const char *output, gpucc_backend_kernel *kernels, size_t count)
{
	/* ptxas reports, per kernel:
	 *   ptxas info    : Compiling entry function 'k' for 'sm_90'
	 *   ptxas info    : Function properties for k
	 *       16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
	 *   ptxas info    : Used 8 registers, used 0 barriers, 1024 bytes smem
	 * (older versions add "N bytes lmem" to the "Used" line). */
	gpucc_backend_kernel *current = NULL;
	const char *p = output;
	while (p && *p) {
		const char *end = strchr(p, '\n');
		if (!end)
			end = p + strlen(p);
		const char *entry = strstr(p, "Compiling entry function '");
		if (entry && entry < end) {
			const char *name = entry + strlen("Compiling entry function '");
			const char *quote = memchr(name, '\'', (size_t)(end - name));
			current = quote ? find_kernel(kernels, count, name, (size_t)(quote - name)) : NULL;
		} else if (current) {
			int64_t v;
			if ((v = number_before(p, end, "registers")) >= 0)
				current->registers = v;
			if ((v = number_before(p, end, "bytes smem")) >= 0)
				current->shared_bytes = v;
			int64_t stack = number_before(p, end, "bytes stack frame");
			int64_t lmem = number_before(p, end, "bytes lmem");
			if (stack > current->scratch_bytes)
				current->scratch_bytes = stack;
			if (lmem > current->scratch_bytes)
				current->scratch_bytes = lmem;
			/* A kernel without shared memory gets no smem figure. */
			if (current->registers >= 0 && current->shared_bytes < 0 &&
			    number_before(p, end, "registers") >= 0)
				current->shared_bytes = 0;
		}
		p = *end ? end + 1 : end;
	}
}

/* ---- MessagePack ------------------------------------------------------------ */

typedef struct msgpack {
	const unsigned char *p, *end;
	bool bad;
} msgpack;

enum { MP_NIL, MP_BOOL, MP_INT, MP_FLOAT, MP_STR, MP_BIN, MP_ARRAY, MP_MAP, MP_EXT };

typedef struct mp_item {
	int kind;
	uint64_t value;           /* integer value, or element/pair count */
	bool negative;
	const unsigned char *data; /* STR, BIN, EXT bytes */
	size_t size;
} mp_item;

static uint64_t mp_be(msgpack *m, size_t n)
{
	if ((size_t)(m->end - m->p) < n) {
		m->bad = true;
		m->p = m->end;
		return 0;
	}
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v = v << 8 | m->p[i];
	m->p += n;
	return v;
}

static void mp_bytes(msgpack *m, mp_item *it, uint64_t n)
{
	if ((uint64_t)(m->end - m->p) < n) {
		m->bad = true;
		m->p = m->end;
		return;
	}
	it->data = m->p;
	it->size = (size_t)n;
	m->p += n;
}

static bool mp_next(msgpack *m, mp_item *it)
{
	memset(it, 0, sizeof *it);
	if (m->bad || m->p >= m->end) {
		m->bad = true;
		return false;
	}
	unsigned c = *m->p++;
	if (c <= 0x7f) {
		it->kind = MP_INT;
		it->value = c;
	} else if (c <= 0x8f) {
		it->kind = MP_MAP;
		it->value = c & 15;
	} else if (c <= 0x9f) {
		it->kind = MP_ARRAY;
		it->value = c & 15;
	} else if (c <= 0xbf) {
		it->kind = MP_STR;
		mp_bytes(m, it, c & 31);
	} else if (c >= 0xe0) {
		it->kind = MP_INT;
		it->negative = true;
	} else {
		switch (c) {
		case 0xc0: it->kind = MP_NIL; break;
		case 0xc2: case 0xc3: it->kind = MP_BOOL; it->value = c & 1; break;
		case 0xc4: case 0xc5: case 0xc6:
			it->kind = MP_BIN;
			mp_bytes(m, it, mp_be(m, (size_t)1 << (c - 0xc4)));
			break;
		case 0xc7: case 0xc8: case 0xc9: {
			uint64_t n = mp_be(m, (size_t)1 << (c - 0xc7));
			mp_be(m, 1);
			it->kind = MP_EXT;
			mp_bytes(m, it, n);
			break;
		}
		case 0xca: it->kind = MP_FLOAT; mp_be(m, 4); break;
		case 0xcb: it->kind = MP_FLOAT; mp_be(m, 8); break;
		case 0xcc: case 0xcd: case 0xce: case 0xcf:
			it->kind = MP_INT;
			it->value = mp_be(m, (size_t)1 << (c - 0xcc));
			break;
		case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
			size_t n = (size_t)1 << (c - 0xd0);
			uint64_t v = mp_be(m, n);
			it->kind = MP_INT;
			it->negative = n < 8 ? (v >> (8 * n - 1)) & 1 : v >> 63;
			it->value = it->negative ? 0 : v;
			break;
		}
		case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
			mp_be(m, 1);
			it->kind = MP_EXT;
			mp_bytes(m, it, (uint64_t)1 << (c - 0xd4));
			break;
		case 0xd9: case 0xda: case 0xdb:
			it->kind = MP_STR;
			mp_bytes(m, it, mp_be(m, (size_t)1 << (c - 0xd9)));
			break;
		case 0xdc: case 0xdd:
			it->kind = MP_ARRAY;
			it->value = mp_be(m, (size_t)2 << (c - 0xdc));
			break;
		case 0xde: case 0xdf:
			it->kind = MP_MAP;
			it->value = mp_be(m, (size_t)2 << (c - 0xde));
			break;
		default:
			m->bad = true;
		}
	}
	return !m->bad;
}

/* Skip the value whose header is it (its elements, recursively). */
static void mp_skip_rest(msgpack *m, const mp_item *it, int depth)
{
	if (depth > 32) {
		m->bad = true;
		return;
	}
	if (it->kind != MP_ARRAY && it->kind != MP_MAP)
		return;
	uint64_t n = it->kind == MP_MAP ? it->value * 2 : it->value;
	for (uint64_t i = 0; i < n && !m->bad; i++) {
		mp_item child;
		if (mp_next(m, &child))
			mp_skip_rest(m, &child, depth + 1);
	}
}

static bool mp_str_is(const mp_item *it, const char *s)
{
	return it->kind == MP_STR && it->size == strlen(s) && memcmp(it->data, s, it->size) == 0;
}

/* Read one kernel map of amdhsa.kernels (its header already read). */
static int read_kernel(msgpack *m, const mp_item *map, gpucc_backend_kernel **kernels,
                       size_t *count)
{
	const unsigned char *name = NULL;
	size_t name_len = 0;
	int64_t vgprs = -1, lds = -1, scratch = -1;
	for (uint64_t i = 0; i < map->value && !m->bad; i++) {
		mp_item key, value;
		if (!mp_next(m, &key) || !mp_next(m, &value))
			break;
		if (mp_str_is(&key, ".name") && value.kind == MP_STR) {
			name = value.data;
			name_len = value.size;
		} else if (value.kind == MP_INT && !value.negative && value.value < INT64_MAX) {
			if (mp_str_is(&key, ".vgpr_count"))
				vgprs = (int64_t)value.value;
			else if (mp_str_is(&key, ".group_segment_fixed_size"))
				lds = (int64_t)value.value;
			else if (mp_str_is(&key, ".private_segment_fixed_size"))
				scratch = (int64_t)value.value;
		}
		mp_skip_rest(m, &value, 1);
	}
	if (m->bad || !name || name_len == 0)
		return -1;
	if (kernels_push(kernels, count, (const char *)name, name_len) != 0)
		return -2;
	(*kernels)[*count - 1].registers = vgprs;
	(*kernels)[*count - 1].shared_bytes = lds;
	(*kernels)[*count - 1].scratch_bytes = scratch;
	return 0;
}

/* ---- ELF ------------------------------------------------------------------- */

static uint64_t le(const unsigned char *p, size_t n)
{
	uint64_t v = 0;
	for (size_t i = n; i > 0; i--)
		v = v << 8 | p[i - 1];
	return v;
}

#define NT_AMDGPU_METADATA 32

/* Find the AMDGPU metadata note's descriptor in a 64-bit little-endian ELF. */
static const unsigned char *find_metadata_note(const unsigned char *elf, size_t size,
                                               size_t *desc_size, const char **why)
{
	if (size < 64 || memcmp(elf, "\177ELF", 4) != 0 || elf[4] != 2 || elf[5] != 1) {
		*why = "not a 64-bit little-endian ELF file";
		return NULL;
	}
	uint64_t shoff = le(elf + 0x28, 8);
	uint64_t shentsize = le(elf + 0x3a, 2), shnum = le(elf + 0x3c, 2);
	if (shentsize < 64 || shoff > size || shnum > (size - shoff) / shentsize) {
		*why = "bad section header table";
		return NULL;
	}
	for (uint64_t i = 0; i < shnum; i++) {
		const unsigned char *sh = elf + shoff + i * shentsize;
		if (le(sh + 4, 4) != 7 /* SHT_NOTE */)
			continue;
		uint64_t off = le(sh + 0x18, 8), len = le(sh + 0x20, 8);
		if (off > size || len > size - off)
			continue;
		const unsigned char *p = elf + off, *end = elf + off + len;
		while ((size_t)(end - p) >= 12) {
			uint64_t namesz = le(p, 4), descsz = le(p + 4, 4), type = le(p + 8, 4);
			uint64_t name_padded = (namesz + 3) & ~(uint64_t)3;
			uint64_t desc_padded = (descsz + 3) & ~(uint64_t)3;
			if (name_padded > (uint64_t)(end - p - 12) ||
			    desc_padded > (uint64_t)(end - p - 12) - name_padded)
				break;
			const unsigned char *name = p + 12, *desc = name + name_padded;
			if (type == NT_AMDGPU_METADATA && namesz == 7 && memcmp(name, "AMDGPU", 7) == 0) {
				*desc_size = (size_t)descsz;
				return desc;
			}
			p = desc + desc_padded;
		}
	}
	*why = "no AMDGPU metadata note";
	return NULL;
}

int backend_amdgpu_kernels(const void *elf, size_t size, gpucc_backend_kernel **out, size_t *count,
                           char *target, size_t target_size, char *error, size_t error_size)
{
	*out = NULL;
	*count = 0;
	target[0] = '\0';
	const char *why = NULL;
	size_t desc_size = 0;
	const unsigned char *desc = find_metadata_note(elf, size, &desc_size, &why);
	if (!desc) {
		snprintf(error, error_size, "code object: %s", why);
		return -1;
	}
	msgpack m = {desc, desc + desc_size, false};
	mp_item top;
	if (!mp_next(&m, &top) || top.kind != MP_MAP) {
		snprintf(error, error_size, "code object: metadata note is not a MessagePack map");
		return -1;
	}
	bool saw_kernels = false;
	for (uint64_t i = 0; i < top.value && !m.bad; i++) {
		mp_item key, value;
		if (!mp_next(&m, &key) || !mp_next(&m, &value))
			break;
		if (mp_str_is(&key, "amdhsa.target") && value.kind == MP_STR) {
			snprintf(target, target_size, "%.*s", (int)value.size, (const char *)value.data);
		} else if (mp_str_is(&key, "amdhsa.kernels") && value.kind == MP_ARRAY) {
			saw_kernels = true;
			for (uint64_t k = 0; k < value.value && !m.bad; k++) {
				mp_item map;
				if (!mp_next(&m, &map))
					break;
				if (map.kind != MP_MAP) {
					mp_skip_rest(&m, &map, 1);
					continue;
				}
				int rc = read_kernel(&m, &map, out, count);
				if (rc == -2) {
					snprintf(error, error_size, "out of memory");
					backend_kernels_free(*out, *count);
					*out = NULL;
					*count = 0;
					return -1;
				}
			}
			continue;
		}
		mp_skip_rest(&m, &value, 1);
	}
	if (m.bad || !saw_kernels) {
		snprintf(error, error_size, "code object: %s",
		         m.bad ? "malformed metadata note" : "metadata note lists no amdhsa.kernels");
		backend_kernels_free(*out, *count);
		*out = NULL;
		*count = 0;
		return -1;
	}
	return 0;
}

/* ---- PTX call-site numbers -------------------------------------------------- */

typedef struct number_map {
	unsigned long *old;
	size_t count, capacity;
} number_map;

/* The new number of old: its rank in order of first appearance. */
static long map_number(number_map *m, unsigned long old)
{
	for (size_t i = 0; i < m->count; i++)
		if (m->old[i] == old)
			return (long)i;
	if (m->count == m->capacity) {
		size_t capacity = m->capacity ? m->capacity * 2 : 64;
		unsigned long *grown = realloc(m->old, sizeof *grown * capacity);
		if (!grown)
			return -1;
		m->old = grown;
		m->capacity = capacity;
	}
	m->old[m->count] = old;
	return (long)m->count++;
}

char *backend_ptx_renumber_calls(const char *ptx, size_t size, size_t *out_size)
{
	static const char *const prefixes[] = {"callseq ", "prototype_"};
	backend_text out = {0};
	number_map map = {0};
	size_t i = 0, copied = 0;
	while (i < size) {
		size_t plen = 0;
		for (size_t k = 0; k < 2 && !plen; k++) {
			size_t len = strlen(prefixes[k]);
			if (size - i > len && memcmp(ptx + i, prefixes[k], len) == 0 &&
			    isdigit((unsigned char)ptx[i + len]))
				plen = len;
		}
		if (!plen) {
			i++;
			continue;
		}
		size_t start = i + plen, end = start;
		unsigned long old = 0;
		while (end < size && isdigit((unsigned char)ptx[end]) && end - start < 12)
			old = old * 10 + (unsigned long)(ptx[end++] - '0');
		long fresh = map_number(&map, old);
		if (fresh < 0)
			out.failed = true;
		backend_text_append(&out, "%.*s%ld", (int)(start - copied), ptx + copied, fresh);
		copied = i = end;
	}
	backend_text_append(&out, "%.*s", (int)(size - copied), ptx + copied);
	free(map.old);
	*out_size = out.size;
	if (out.failed) {
		backend_text_release(&out);
		return NULL;
	}
	if (!out.data) {
		out.data = calloc(1, 1);
		*out_size = 0;
	}
	return out.data;
}
