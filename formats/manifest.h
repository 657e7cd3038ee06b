/*
 * formats/manifest.h -- the image manifest (formats/manifest.md): JSON that
 * lists the entries of an image, written canonically so that a set of
 * entries always gives the same bytes.
 *
 * Entries parsed from a manifest live in a gpucc_manifest, which owns every
 * string and array they point to.
 */
#ifndef GPUCC_FORMATS_MANIFEST_H
#define GPUCC_FORMATS_MANIFEST_H

#include "gpucc/common.h"

#define GPUCC_IMAGE_FORMAT_MEMBER "GPUCC-IMAGE"
#define GPUCC_IMAGE_MANIFEST_MEMBER "manifest.json"
#define GPUCC_IMAGE_FORMAT_VERSION 1
/* The minor version images are written with: 1, an index member
 * (formats/image.md); readers also read minor 0, without one. */
#define GPUCC_IMAGE_FORMAT_MINOR 1
/* Member sizes past which an image is refused as absurd. */
#define GPUCC_MANIFEST_MAX_SIZE ((uint64_t)1 << 31)
#define GPUCC_PAYLOAD_MAX_SIZE ((uint64_t)1 << 40)
/* The largest kernel resource count (registers, shared or scratch bytes) a
 * manifest may hold. */
#define GPUCC_KERNEL_RESOURCE_MAX ((int64_t)1 << 40)
/* The longest string (name, version, option value) a manifest may hold. */
#define GPUCC_MANIFEST_STRING_MAX 65536

typedef struct gpucc_manifest {
	size_t entry_count;
	gpucc_entry *entries; /* sorted by key, unique; malloc'd */
	struct gpucc_arena *arena; /* owns the strings and arrays */
	/* Where each entry's object lies in the JSON parsed: offset and
	 * length, two per entry (malloc'd; NULL when there are no entries):
	 * what an image's index must say (formats/image.md, "The index"). */
	uint64_t *spans;
} gpucc_manifest;

/* Parse and validate manifest JSON: the format and version fields first
 * (GPUCC_EVERSION for another version), then every entry (GPUCC_ECORRUPT with
 * the defect named).  Keys are not recomputed here (see
 * gpucc_manifest_check_keys).  name is used in messages. */
int gpucc_manifest_parse(gpucc_manifest *out, const char *json, size_t size, const char *name);
/* The same, refusing (GPUCC_ECORRUPT) a manifest whose parsed form --
 * entries, strings, arrays, and the scratch arrays used while parsing --
 * would take more than max_parsed bytes (0: no bound).  limit_hint ends
 * that message (how to raise the bound), or is NULL. */
int gpucc_manifest_parse_limited(gpucc_manifest *out, const char *json, size_t size,
                                 const char *name, uint64_t max_parsed, const char *limit_hint);
void gpucc_manifest_release(gpucc_manifest *m);
/* Parse one entry's JSON object (size bytes at json, nothing else but
 * whitespace around it) into out, a manifest of that one entry, validated
 * as gpucc_manifest_parse validates each entry; the key is not recomputed.
 * For lookups through an image's index.  name and index (the entry's
 * position) are used in messages. */
int gpucc_manifest_parse_entry(gpucc_manifest *out, const char *json, size_t size,
                               const char *name, size_t index);
/* Check that every entry's key is the one its components give
 * (GPUCC_ECORRUPT naming the first that is not). */
int gpucc_manifest_check_keys(const gpucc_manifest *m, const char *name);

/* The line layout of an indexed (format 1.1) image's manifest
 * (formats/image.md, "The index"): the first line, then each entry's object
 * on a line of its own (a ',' ends every line but the last), then the
 * last line.  It is the canonical form's layout. */
#define GPUCC_MANIFEST_LAYOUT_HEAD "{\"format\":\"gpucc-image\",\"version\":1,\"entries\":["
#define GPUCC_MANIFEST_LAYOUT_TAIL "\n]}\n"
/* Check that json (size bytes, parsed into m) is so laid out: its first
 * line, each entry's object (where m->spans says) beginning a line and
 * holding no newline, a ',' and a newline between entries, and the last
 * line.  GPUCC_ECORRUPT naming the first byte out of place. */
int gpucc_manifest_check_layout(const gpucc_manifest *m, const char *json, size_t size,
                                const char *name);
/* Whether an entry object of length bytes stands on a line of its own, from
 * the bytes around it alone: window holds the byte before the object, the
 * object, and up to 4 bytes after it (window_size in all); at_end says
 * that the window reaches the manifest's end.  In a manifest that
 * gpucc_manifest_check_layout takes, this holds exactly of the objects of
 * its entries list. */
bool gpucc_manifest_entry_on_line(const char *window, size_t window_size, size_t length,
                                  bool at_end);

/* Write the canonical JSON for entries (sorted by key, unique) to a new
 * NUL-terminated buffer (caller frees with free()). */
int gpucc_manifest_write(char **out, size_t *out_size, const gpucc_entry *const *entries,
                         size_t count);
/* The same bytes in bounded memory: gpucc_manifest_size gives their count
 * (for a tar header, which precedes the data), gpucc_manifest_write_to hands
 * them to sink in pieces.  A sink returns 0, or an error code (already set)
 * that stops the writing and is returned. */
typedef int (*gpucc_manifest_sink)(void *ctx, const void *data, size_t size);
int gpucc_manifest_size(uint64_t *out, const gpucc_entry *const *entries, size_t count);
int gpucc_manifest_write_to(gpucc_manifest_sink sink, void *ctx, const gpucc_entry *const *entries,
                            size_t count);
/* Where each entry's object lies in the canonical manifest of entries:
 * a new array (free()) of offset and length, two per entry. */
int gpucc_manifest_entry_spans(uint64_t **out, const gpucc_entry *const *entries, size_t count);
/* The canonical JSON record of one entry, without the module name (the
 * record whose SHA-256 is the entry's content digest). */
int gpucc_manifest_entry_record(char **out, const gpucc_entry *e);

/* Whether every string of e -- the module name, the triple, the versions,
 * option names and values, device library, kernel and external names --
 * is one a manifest can carry (manifest.md, "Names"): UTF-8, no control
 * character, at most GPUCC_MANIFEST_STRING_MAX bytes.  0, or GPUCC_EINVALID
 * naming the first that is not (spelt as gpucc_manifest_spell_name spells
 * it, cut to fit a message) and why.  Needs nothing else of e (no key,
 * target or payloads): for a compile to refuse a module whose names no
 * image could hold before it does work whose result could not be written;
 * gpucc_entry_validate and so every writer check the same, with the same
 * message. */
int gpucc_entry_names_check(const gpucc_entry *e);
/* name as a manifest records a name gpucc takes from a file name (the
 * module's, manifest.md "Names"): each control character spelt \n, \t or
 * \xHH, each byte that begins no valid UTF-8 sequence \xHH, the rest as it
 * is.  A new string (free()), or NULL when out of memory. */
char *gpucc_manifest_spell_name(const char *name);

/* Check an entry's fields for validity: hex digests, a canonical target,
 * sorted unique options/device libs/externals/payload parts, no empty names,
 * strings as gpucc_entry_names_check wants them.  GPUCC_EINVALID naming the
 * field otherwise. */
int gpucc_entry_validate(const gpucc_entry *e);

/* The member name of a payload: "payloads/<sha256 hex><extension>". */
#define GPUCC_PAYLOAD_MEMBER_SIZE 96
void gpucc_payload_member_name(char out[GPUCC_PAYLOAD_MEMBER_SIZE], const gpucc_payload *p);

#endif
