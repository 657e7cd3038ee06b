/*
 * cmd/compile_options.c -- reading the command line of `gpucc compile`
 * (cmd/compile_options.h): numbers, the language and clang's arguments of
 * sources, the dependency file, and an -o that would replace a module.
 */
#include "compile_options.h"

#include <stdlib.h>
#include <string.h>

static int parse_number(const char *text, int low, int high, int *out)
{
	char *end;
	long v = strtol(text, &end, 10);
	if (!*text || *end || v < low || v > high)
		return -1;
	*out = (int)v;
	return 0;
}

int compile_read_numbers(const cmd_args *args, gpucc_compile_options *o)
{
	const char *value;
	if ((value = cmd_value(args, "opt-level")) && parse_number(value, 0, 3, &o->opt_level) != 0)
		return cmd_error(args, EXIT_USAGE, "bad optimisation level '%s': expected -O0 to -O3",
		                 value);
	int n;
	if ((value = cmd_value(args, "jobs"))) {
		if (parse_number(value, 1, 1024, &n) != 0)
			return cmd_error(args, EXIT_USAGE, "bad job count '%s': expected 1 to 1024", value);
		o->jobs = (unsigned)n;
	}
	if (cmd_single_value(&value, args, "code-object") != EXIT_OK)
		return EXIT_USAGE;
	if (value) {
		if (parse_number(value, 4, 6, &n) != 0)
			return cmd_error(args, EXIT_USAGE,
			                 "bad code object version '%s': expected 4, 5 or 6", value);
		o->code_object_version = n;
	}
	if (cmd_single_value(&value, args, "llvm") != EXIT_OK)
		return EXIT_USAGE;
	if (value) {
		if (parse_number(value, 1, 999, &n) != 0)
			return cmd_error(args, EXIT_USAGE, "bad LLVM major '%s': expected a number such as 22",
			                 value);
		o->llvm_major = (unsigned)n;
	}
	if (cmd_single_value(&value, args, "job-timeout") != EXIT_OK)
		return EXIT_USAGE;
	if (value) {
		if (parse_number(value, 0, 86400 * 7, &n) != 0)
			return cmd_error(args, EXIT_USAGE, "bad job timeout '%s': expected 0 to 604800 seconds",
			                 value);
		o->job_timeout_seconds = (unsigned)n;
	}
	if (cmd_single_value(&value, args, "job-memory") != EXIT_OK)
		return EXIT_USAGE;
	if (value) {
		if (parse_number(value, 64, 1 << 24, &n) != 0)
			return cmd_error(args, EXIT_USAGE, "bad job memory '%s': expected 64 to 16777216 MiB",
			                 value);
		o->job_memory_bytes = (uint64_t)n << 20;
	}
	return EXIT_OK;
}

int compile_read_language(const cmd_args *args, gpucc_source_language *language)
{
	const char *value;
	*language = GPUCC_LANGUAGE_FROM_NAME;
	if (cmd_single_value(&value, args, "language") != EXIT_OK)
		return EXIT_USAGE;
	if (value && strcmp(value, "hip") == 0)
		*language = GPUCC_LANGUAGE_HIP;
	else if (value && strcmp(value, "cuda") == 0)
		*language = GPUCC_LANGUAGE_CUDA;
	else if (value && (strcmp(value, "cl") == 0 || strcmp(value, "opencl") == 0))
		*language = GPUCC_LANGUAGE_OPENCL;
	else if (value)
		return cmd_error(args, EXIT_USAGE, "bad language '%s': expected hip, cuda or cl", value);
	return EXIT_OK;
}

const char **compile_clang_args(const cmd_args *args, size_t *count,
                                char std_arg[COMPILE_STD_ARG_SIZE])
{
	static const char *const source_options[][2] = {
		{"define", "-D"}, {"undefine", "-U"}, {"include-directory", "-I"},
		{"isystem", "-isystem"}, {"include", "-include"}, {"clang-arg", NULL}};
	size_t source_option_count = sizeof source_options / sizeof source_options[0];
	size_t arg_count = 0;
	for (size_t k = 0; k < source_option_count; k++)
		arg_count += 2 * (size_t)cmd_value_count(args, source_options[k][0]);
	const char **clang_args = calloc(arg_count + 2, sizeof *clang_args);
	if (!clang_args)
		return NULL;
	arg_count = 0;
	for (size_t k = 0; k < source_option_count; k++) {
		if (k == source_option_count - 1 && cmd_value(args, "std")) {
			snprintf(std_arg, COMPILE_STD_ARG_SIZE, "-std=%s", cmd_value(args, "std"));
			clang_args[arg_count++] = std_arg;
		}
		for (int i = 0; i < cmd_value_count(args, source_options[k][0]); i++) {
			if (source_options[k][1])
				clang_args[arg_count++] = source_options[k][1];
			clang_args[arg_count++] = cmd_value_at(args, source_options[k][0], i);
		}
	}
	*count = arg_count;
	return clang_args;
}

/* The dependency file asked for (--depfile FILE, -MD -MF FILE, -MD alone:
 * IMAGE.d) into *out (malloc'd; NULL: none), checked as -o is: it needs -o,
 * whose image its rule names, and a directory that takes a new file. */
int compile_depfile_value(char **out, const cmd_args *args, const char *output)
{
	*out = NULL;
	const char *named, *mf;
	if (cmd_output_value(&named, args, "depfile") != EXIT_OK ||
	    cmd_output_value(&mf, args, "MF") != EXIT_OK)
		return EXIT_USAGE;
	bool md = cmd_flag(args, "MD");
	if (named && (mf || md))
		return cmd_error(args, EXIT_USAGE, "--depfile and -MD/-MF name one file: give one of them");
	if (mf && !md)
		return cmd_error(args, EXIT_USAGE, "-MF names the file -MD writes: give -MD too");
	if (!named && !md)
		return EXIT_OK;
	if (!output)
		return cmd_error(args, EXIT_USAGE,
		                 "%s writes the image's dependencies: give -o", named ? "--depfile" : "-MD");
	if (named || mf) {
		*out = strdup(named ? named : mf);
	} else if ((*out = malloc(strlen(output) + 3)) != NULL) {
		sprintf(*out, "%s.d", output);
	}
	if (!*out)
		return cmd_error(args, EXIT_FAIL, "out of memory");
	if (strcmp(*out, output) == 0) {
		free(*out);
		*out = NULL;
		return cmd_error(args, EXIT_USAGE, "the dependency file and the image are one file");
	}
	int rc = cmd_output_creatable(args, *out);
	if (rc != EXIT_OK) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

/* Refuse an output that would overwrite one of the modules, and one whose
 * directory cannot take a new file: checked before anything is compiled,
 * not when the image is written at the end of a long run. */
int compile_check_output(const cmd_args *args, const char *output)
{
	for (int i = 0; i < args->positional_count; i++) {
		const char *module = args->positional[i];
		if (gpucc_output_is_input(output, module)) {
			fputs("gpucc compile: output '", stderr);
			cmd_put_shown(stderr, output);
			fputs("' is the module '", stderr);
			cmd_put_shown(stderr, module);
			fputs("': it would be overwritten\n", stderr);
			return EXIT_USAGE;
		}
	}
	/* What would stop the writer (no directory, no permission, a
	 * read-only file system) stops the run now. */
	return cmd_output_creatable(args, output);
}
