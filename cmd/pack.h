/*
 * cmd/pack.h -- what the two halves of `gpucc pack` share: the command's
 * state and messages, and adding one described entry (cmd/cmd_pack.c),
 * used by the reader of spec files (cmd/pack_spec.c).
 */
#ifndef GPUCC_CMD_PACK_H
#define GPUCC_CMD_PACK_H

#include "cmd.h"

#include <gpucc.h>

typedef struct pack_state {
	const cmd_args *args;
	gpucc_image_writer *writer;
	const char *output;
	char *where;         /* "'pack.json': entries[2]" while reading a spec */
	gpucc_digest *keys;  /* the key of every spec entry added, by index */
	size_t key_count;
} pack_state;

/* Strings made while one entry is described (joined paths, numbers),
 * released once the writer has its copy. */
typedef struct owned_strings {
	char **items;
	size_t count, capacity;
} owned_strings;

/* "gpucc pack: [WHERE: ]MESSAGE" on one line (names spelt as cmd_shown
 * spells them; a usage error ends as cmd_error ends it); returns code. */
int pack_error(pack_state *st, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The last libgpucc error, in the context of the entry being read. */
int pack_fail(pack_state *st);
int pack_out_of_memory(pack_state *st);
/* Keep s (malloc'd) in o until pack_strings_release; NULL on failure (s is
 * freed). */
char *pack_keep(owned_strings *o, char *s);
void pack_strings_release(owned_strings *o);

/* Hand the entry f describes to libgpucc, which builds it, keys it and
 * adds it to the writer (gpucc_image_writer_add_files), after refusing an
 * input that -o names.  EXIT_OK or an exit code after saying why. */
int pack_add(pack_state *st, const gpucc_entry_files *f);

/* The entries of the spec file at spec_file, each added (cmd/pack_spec.c). */
int pack_from_spec(pack_state *st, const char *spec_file);

#endif
