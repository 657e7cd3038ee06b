/*
 * cmd/compile_options.h -- reading the command line of `gpucc compile`
 * (cmd/cmd_compile.c), defined in cmd/compile_options.c.  Each function
 * returns EXIT_OK, or an exit code after saying what is wrong.
 */
#ifndef GPUCC_CMD_COMPILE_OPTIONS_H
#define GPUCC_CMD_COMPILE_OPTIONS_H

#include "cmd.h"

#include <gpucc.h>

/* Room for "-std=VALUE". */
#define COMPILE_STD_ARG_SIZE 256

/* -O, -j, --code-object, --llvm, --job-timeout and --job-memory into o. */
int compile_read_numbers(const cmd_args *args, gpucc_compile_options *o);
/* -x: the language of inputs that are not IR (FROM_NAME without it). */
int compile_read_language(const cmd_args *args, gpucc_source_language *language);
/* clang's arguments for sources, in the order -D, -U, -I, -isystem,
 * -include, -std=, --clang-arg: a new array (release with free) of *count
 * strings borrowed from args and std_arg; NULL when out of memory. */
const char **compile_clang_args(const cmd_args *args, size_t *count,
                                char std_arg[COMPILE_STD_ARG_SIZE]);
/* The dependency file asked for (--depfile FILE, -MD -MF FILE, -MD alone:
 * IMAGE.d) into *out (malloc'd; NULL: none), checked as -o is. */
int compile_depfile_value(char **out, const cmd_args *args, const char *output);
/* Refuse an output that would overwrite one of the modules, and one whose
 * directory cannot take a new file. */
int compile_check_output(const cmd_args *args, const char *output);

#endif
