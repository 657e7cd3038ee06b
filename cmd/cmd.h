/*
 * cmd/cmd.h -- what every gpucc subcommand shares: the command table entry,
 * the declarative options table that drives both parsing and -h, the exit
 * codes, and the one place that turns a libgpucc error into a message and an
 * exit code.  Commands use only the public libgpucc header.
 */
#ifndef GPUCC_CMD_H
#define GPUCC_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes, documented by `gpucc help` (keep cmd/gpucc.c in step). */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,        /* generic failure: I/O, memory, a failed check */
	EXIT_NOT_FOUND = 2,   /* no such key, kernel, entry or file; ambiguous key prefix;
	                       * a kernel without a fit (devices --image) */
	EXIT_BAD_INPUT = 3,   /* an input is corrupt, truncated, malformed or of another version;
	                       * a well-formed argument names what cannot serve (a directory
	                       * where a file goes, a target gpucc does not know) */
	EXIT_CONFLICT = 4,    /* one key with different contents */
	EXIT_COMPILE = 5,     /* a module failed to compile */
	EXIT_UNAVAILABLE = 6, /* a tool, driver or device is not present */
	EXIT_USAGE = 129      /* the command line itself is malformed (gpucc help lists how) */
};

/* One option of a command.  arg names the value (NULL for a flag);
 * optional_arg allows --name and --name=VALUE; repeatable options collect
 * every value. */
typedef struct cmd_option {
	const char *long_name;
	char short_name;
	const char *arg;
	bool optional_arg;
	const char *help;
} cmd_option;

/* Parsed command line: positional arguments in order, and per option of the
 * table (same index) every value given (flags get "" per occurrence). */
typedef struct cmd_args {
	int positional_count;
	char **positional;
	const struct cmd_spec *spec;
	size_t option_count;
	int *counts;
	const char ***values;
} cmd_args;

typedef struct cmd_spec {
	const char *name;        /* "list", or "cache stats" for nested commands */
	const char *synopsis;    /* "IMAGE [--json]" */
	const char *summary;     /* one line, shown by `gpucc help` */
	const char *description; /* paragraphs shown by -h; may be NULL */
	const cmd_option *options; /* terminated by an all-zero element */
	int min_positional, max_positional; /* max -1: unbounded */
	int (*run)(const cmd_args *args);
	const char *more;        /* paragraphs after description's (a C string
	                            literal is held to 4,095 bytes); may be NULL */
} cmd_spec;

/* How an option is written: "--" before its long name, or "-" before a
 * compiler's spelling that has no other (-MD, -MF: an upper-case name). */
const char *cmd_option_dashes(const cmd_option *o);

/* Parse argv (argv[0] is the command's name).  Returns EXIT_OK, EXIT_USAGE
 * after printing the error (one line, as cmd_error prints a usage error),
 * or -1 after printing -h help (the caller then exits 0). */
int cmd_parse(cmd_args *out, const cmd_spec *spec, int argc, char **argv);
void cmd_args_release(cmd_args *args);
/* Print the full -h text of a command to f. */
void cmd_print_help(FILE *f, const cmd_spec *spec);
/* What -h prints after a command's description that only this
 * installation knows (the gpucc command sets it: compile's backends);
 * NULL: nothing. */
extern void (*cmd_help_more)(FILE *f, const cmd_spec *spec);
/* The LLVM backends gpucc was built with, whether each is found, and the
 * processors each knows (cmd/backends.c). */
void cmd_print_backends(FILE *f);
/* The LLVM version of the newest backend present that compiles native
 * code for a device's processor, or NULL when none does. */
struct gpucc_target;
const char *cmd_backend_for(const struct gpucc_target *device);

/* Option access by long name. */
bool cmd_flag(const cmd_args *args, const char *long_name);
const char *cmd_value(const cmd_args *args, const char *long_name); /* last value or NULL */
int cmd_value_count(const cmd_args *args, const char *long_name);
const char *cmd_value_at(const cmd_args *args, const char *long_name, int index);
/* The value of an option that takes one (NULL when absent) in *out.
 * Given more than once it must be the same each time, else EXIT_USAGE
 * after saying "--NAME=A and --NAME=B disagree": a script that appends
 * --on-conflict=last to one that says fail, or a bad value followed by a
 * good one, is refused rather than settled by the last. */
int cmd_single_value(const char **out, const cmd_args *args, const char *long_name);
/* The zstd level the --zstd option gives, in *level: 0 when absent,
 * GPUCC_ZSTD_DEFAULT_LEVEL (gpucc/image.h) when given bare, else its
 * LEVEL, digits only, 1 to 22.  Given twice only as cmd_single_value
 * allows; EXIT_USAGE after "--zstd level must be 1 to 22, not 'X'".
 * Every command's --zstd is read here, and described by CMD_ZSTD_HELP. */
int cmd_zstd_level(const cmd_args *args, int *level);
#define CMD_ZSTD_STRING(level) #level
#define CMD_ZSTD_LEVEL_STRING(level) CMD_ZSTD_STRING(level)
#define CMD_ZSTD_HELP                                                          \
	"compress the image with zstd at LEVEL 1..22 (bare --zstd: level "        \
	CMD_ZSTD_LEVEL_STRING(GPUCC_ZSTD_DEFAULT_LEVEL) ")"
/* The path an option names (NULL when not given) in *out, given twice only
 * as cmd_single_value allows; EXIT_USAGE after
 * saying "--NAME needs WHAT, not ''" when it is given empty, which is never
 * taken for a default or looked up as a file: a script passing an unset
 * variable gets a usage error, whatever the option. */
int cmd_path_value(const char **out, const cmd_args *args, const char *long_name,
                   const char *what);
/* cmd_path_value of a directory: an empty --cache or --into must not clear
 * or fill the user's own cache. */
int cmd_directory_value(const char **out, const cmd_args *args, const char *long_name);
/* The file an output option names (NULL when not given) in *out; EXIT_USAGE
 * after saying so when it is empty, "-" or a process's stream (/dev/stdout,
 * /dev/fd/N: links into /proc).  Outputs are written beside their name and
 * renamed into place, so such a name wrote nothing to the stream and, as
 * root, put a regular file where /dev/stdout was. */
int cmd_output_value(const char **out, const cmd_args *args, const char *long_name);
/* one when n is 1, else many: "1 entry", "2 entries", "0 entries". */
const char *cmd_plural(uint64_t n, const char *one, const char *many);
/* Whether a new file can be created beside path, as the writer of an output
 * will (tried by creating one and removing it): checked before work that
 * would end in writing it, after the command line's own checks.  EXIT_OK;
 * else, after saying why naming path: EXIT_BAD_INPUT when path names a
 * directory (one that exists, or a name ending in '/', "." or ".."),
 * EXIT_NOT_FOUND when its directory does not exist or is not one,
 * EXIT_BAD_INPUT when the name is too long, EXIT_FAIL when the directory is not
 * writable, read-only or takes no new files.  Messages quote path on one
 * line (control characters escaped, an absurd length cut). */
int cmd_output_creatable(const cmd_args *args, const char *path);

/* Names from the command line (an image's path, a key) as text output
 * and messages spell them: control characters as \\n, \\t or \\xHH, other
 * bytes as they are, so that a name holding a newline keeps its message
 * or row on one line.  libgpucc's messages spell them so too, by the same
 * code (formats/escape.h, compiled into both).  cmd_shown writes into out
 * (size bytes, 256 is plenty for a message), cut with "..." when it does
 * not fit, and returns out; cmd_put_shown writes all of text to f. */
const char *cmd_shown(char *out, size_t size, const char *text);
void cmd_put_shown(FILE *f, const char *text);

/* EXIT_OK when text, a KEY argument, is a key or a prefix of one (1 to 64
 * hex digits); else EXIT_USAGE after saying so: a malformed argument is a
 * bad command line, checked before IMAGE is opened, as cache lookup
 * checks its keys. */
int cmd_key_prefix_value(const cmd_args *args, const char *text);

/* Why the input file path (a key list, a spec) could not be opened, errno
 * err, into message (size bytes), and the exit code: 2 when it does not
 * exist, 3 when its name is too long to open (a defect of the name given,
 * cut in the message, as libgpucc says of images), 1 otherwise.  The name
 * is spelt on one line.  cmd_open_failed also reports it. */
int cmd_open_failure(char *message, size_t size, const char *path, int err);
int cmd_open_failed(const cmd_args *args, const char *path, int err);

/* Print "gpucc CMD: <last libgpucc error>" on stderr and return the exit code
 * for that error (see the table above). */
int cmd_fail(const cmd_args *args);
/* Print "gpucc CMD: <formatted message>" on stderr, on one line: its
 * control characters spelt as cmd_shown spells them, as libgpucc's
 * messages are (what a caller spelt already reads the same), and for
 * EXIT_USAGE " (see 'gpucc CMD -h')" after it; return code. */
int cmd_error(const cmd_args *args, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Map a libgpucc return code to an exit code. */
int cmd_exit_code(int gpucc_code);

/* Raise the soft limit on open files to the hard one: merges from caches
 * hold one open file per entry until they commit, extract one per new file
 * until it publishes. */
void cmd_raise_file_limit(void);

/* JSON string output for --json printers: writes a quoted, escaped string. */
void cmd_json_string(FILE *f, const char *s);

/* The subcommands: each cmd_<name>.c defines one spec (or several). */
extern const cmd_spec cmd_compile_spec;
extern const cmd_spec cmd_list_spec, cmd_show_spec, cmd_cat_spec, cmd_extract_spec,
	cmd_verify_spec, cmd_pack_spec, cmd_stats_spec;
/* The cache algebra (cmd_cache.c, cmd_snapshot.c, cmd_delta.c, cmd_merge.c). */
extern const cmd_spec cmd_cache_stats_spec, cmd_cache_import_spec, cmd_cache_gc_spec,
	cmd_cache_prune_spec,
	cmd_cache_clear_spec, cmd_cache_lookup_spec, cmd_cache_verify_spec, cmd_snapshot_spec,
	cmd_delta_spec, cmd_merge_spec;
/* Into the package and onto the GPU (cmd_embed.c, cmd_devices.c). */
extern const cmd_spec cmd_embed_spec, cmd_devices_spec;

/* Every subcommand, in `gpucc help` order (cmd/commands.c). */
extern const cmd_spec *const gpucc_commands[];
extern const size_t gpucc_command_count;

/* `gpucc help --man [CMD...]` (cmd/man.c): gpucc(1), or gpucc-CMD(1), in
 * roff on standard output, from the -h text of commands. */
int cmd_man_main(int argc, char **argv, const cmd_spec *const *commands, size_t count,
                 const char *exit_codes);

#endif
