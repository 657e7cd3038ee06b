/* formats/manifest_layout.c -- the line layout of an indexed image's
 * manifest (formats/image.md, "The index"): one entry per line, so that a
 * lookup that reads one entry's object can tell, from the bytes around it,
 * that the object is an element of the entries list and not a value held
 * inside another entry. */
#include <stdio.h>
#include <string.h>

#include "errors.h"
#include "manifest.h"

static const char head[] = GPUCC_MANIFEST_LAYOUT_HEAD;
static const char tail[] = GPUCC_MANIFEST_LAYOUT_TAIL;
#define HEAD_SIZE (sizeof head - 1)
#define TAIL_SIZE (sizeof tail - 1)

static int off_layout(const char *name, size_t at, const char *what)
{
	return gpucc_error_set(GPUCC_ECORRUPT,
	                       "'%s': corrupt manifest: not laid out one entry per line, as an indexed "
	                       "image's must be: %s at byte %zu",
	                       name, what, at);
}

int gpucc_manifest_check_layout(const gpucc_manifest *m, const char *json, size_t size,
                                const char *name)
{
	if (size < HEAD_SIZE + TAIL_SIZE || memcmp(json, head, HEAD_SIZE) != 0)
		return off_layout(name, 0, "another first line");
	size_t at = HEAD_SIZE;
	for (size_t i = 0; i < m->entry_count; i++) {
		uint64_t start = m->spans[2 * i], length = m->spans[2 * i + 1];
		if (i > 0 && json[at++] != ',')
			return off_layout(name, at - 1, "something else than ',' after an entry");
		if (json[at] != '\n' || start != at + 1)
			return off_layout(name, at, "an entry that does not begin a line");
		if (memchr(json + start, '\n', length))
			return off_layout(name, (size_t)((const char *)memchr(json + start, '\n', length) - json),
			                  "a newline inside an entry");
		at = (size_t)(start + length);
	}
	if (size - at != TAIL_SIZE || memcmp(json + at, tail, TAIL_SIZE) != 0)
		return off_layout(name, at, "another end than the line ']}'");
	return 0;
}

bool gpucc_manifest_entry_on_line(const char *window, size_t window_size, size_t length,
                                  bool at_end)
{
	if (window_size < 1 + length || window[0] != '\n' || memchr(window + 1, '\n', length))
		return false;
	const char *after = window + 1 + length;
	size_t left = window_size - 1 - length;
	if (left >= 2 && after[0] == ',' && after[1] == '\n')
		return true;
	return at_end && left == TAIL_SIZE && memcmp(after, tail, TAIL_SIZE) == 0;
}
