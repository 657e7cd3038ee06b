/*
 * cmd/tests/fuzz_options.c -- fuzz target: command-line parsing
 * (cmd/options.c, cmd_parse) against the option table of every real
 * command, taken from cmd/gpucc.c's command table; no command runs.  The
 * input is split at NUL bytes into arguments, and parsed as the arguments
 * of each command in turn.
 *
 * Checked, besides not crashing or leaking: help only when -h or --help was
 * given; on success the positional count is within the command's bounds,
 * positional arguments and option values are the given strings (or parts
 * of them) in order, and the parse written back in one canonical form
 * (--name=VALUE for each value, "--", the positional arguments) parses
 * again to the same result; the accessors agree with it.  And, once, that
 * every table is sound: unique long and short names, none shadowed by -h.
 */
#include "fuzz.h"

#include "../cmd.h"

#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 256

static void check_tables(void)
{
	static bool checked;
	if (checked)
		return;
	checked = true;
	for (size_t c = 0; c < gpucc_command_count; c++) {
		const cmd_spec *spec = gpucc_commands[c];
		if (!spec->name || !spec->name[0] || !spec->summary || !spec->run ||
		    (spec->max_positional >= 0 && spec->max_positional < spec->min_positional))
			fuzz_fail("a command without a name, summary or run, or with bad bounds");
		for (size_t i = 0; spec->options && spec->options[i].long_name; i++) {
			const cmd_option *o = &spec->options[i];
			if (strcmp(o->long_name, "help") == 0 || o->short_name == 'h' ||
			    strchr(o->long_name, '=') || !o->long_name[0])
				fuzz_fail("an option that -h, --help or '=' would shadow");
			for (size_t j = 0; j < i; j++)
				if (strcmp(spec->options[j].long_name, o->long_name) == 0 ||
				    (o->short_name && spec->options[j].short_name == o->short_name))
					fuzz_fail("two options of one command share a name");
		}
	}
}

/* True when p points into one of the n strings of argv. */
static bool points_into(const char *p, char **argv, int n)
{
	for (int i = 0; i < n; i++)
		if (p >= argv[i] && p <= argv[i] + strlen(argv[i]))
			return true;
	return false;
}

/* Parse the canonical form of a and check it gives the same result. */
static void check_canonical(const cmd_spec *spec, const cmd_args *a)
{
	size_t words = 2 + (size_t)a->positional_count;
	for (size_t i = 0; i < a->option_count; i++)
		words += (size_t)a->counts[i];
	char **argv = calloc(words + 1, sizeof *argv);
	char **owned = calloc(words + 1, sizeof *owned);
	if (!argv || !owned)
		fuzz_fail("out of memory");
	int argc = 0;
	argv[argc++] = (char *)spec->name;
	for (size_t i = 0; i < a->option_count; i++) {
		const cmd_option *o = &spec->options[i];
		for (int v = 0; v < a->counts[i]; v++) {
			size_t len = strlen(o->long_name) + strlen(a->values[i][v]) + 4;
			char *word = owned[argc] = malloc(len);
			if (!word)
				fuzz_fail("out of memory");
			/* An optional value given bare is stored as "", and
			 * --name= is refused: its canonical form is --name. */
			if (o->arg && !(o->optional_arg && !*a->values[i][v]))
				snprintf(word, len, "--%s=%s", o->long_name, a->values[i][v]);
			else
				snprintf(word, len, "--%s", o->long_name);
			argv[argc++] = word;
		}
	}
	argv[argc++] = "--";
	for (int i = 0; i < a->positional_count; i++)
		argv[argc++] = a->positional[i];

	cmd_args b;
	fuzz_quiet_begin();
	int rc = cmd_parse(&b, spec, argc, argv);
	fuzz_quiet_end();
	if (rc != EXIT_OK)
		fuzz_fail("the canonical form of an accepted command line is refused");
	if (b.positional_count != a->positional_count || b.option_count != a->option_count)
		fuzz_fail("the canonical form parses to other arguments");
	for (int i = 0; i < a->positional_count; i++)
		if (strcmp(a->positional[i], b.positional[i]) != 0)
			fuzz_fail("the canonical form parses to other positional arguments");
	for (size_t i = 0; i < a->option_count; i++) {
		if (a->counts[i] != b.counts[i])
			fuzz_fail("the canonical form parses to other option counts");
		for (int v = 0; v < a->counts[i]; v++)
			if (strcmp(a->values[i][v], b.values[i][v]) != 0)
				fuzz_fail("the canonical form parses to other option values");
	}
	cmd_args_release(&b);
	for (int i = 0; i < argc; i++)
		free(owned[i]);
	free(owned);
	free(argv);
}

static void check_accepted(const cmd_spec *spec, const cmd_args *a, char **argv, int argc)
{
	if (a->positional_count < spec->min_positional ||
	    (spec->max_positional >= 0 && a->positional_count > spec->max_positional))
		fuzz_fail("accepted a number of arguments outside the command's bounds");
	/* Positional arguments are whole words of argv, in order. */
	int at = 1;
	for (int i = 0; i < a->positional_count; i++) {
		while (at < argc && argv[at] != a->positional[i])
			at++;
		if (at++ >= argc)
			fuzz_fail("a positional argument that is not a word of argv, in order");
	}
	for (size_t i = 0; i < a->option_count; i++) {
		const char *name = spec->options[i].long_name;
		if (cmd_value_count(a, name) != a->counts[i] || cmd_flag(a, name) != (a->counts[i] > 0))
			fuzz_fail("the option accessors disagree with the parse");
		for (int v = 0; v < a->counts[i]; v++)
			if (a->values[i][v][0] && !points_into(a->values[i][v], argv + 1, argc - 1))
				fuzz_fail("an option value that is not part of argv");
		if (a->counts[i] && cmd_value(a, name) != a->values[i][a->counts[i] - 1])
			fuzz_fail("cmd_value is not the last value given");
	}
	check_canonical(spec, a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_tables();
	/* The input as words: a copy, NUL-terminated, split at NUL bytes. */
	char *copy = fuzz_string(data, size);
	char *argv[MAX_ARGS + 2];
	int argc = 1;
	for (size_t i = 0; size && i <= size && argc <= MAX_ARGS; i += strlen(copy + i) + 1)
		argv[argc++] = copy + i;
	argv[argc] = NULL;

	for (size_t c = 0; c < gpucc_command_count; c++) {
		const cmd_spec *spec = gpucc_commands[c];
		argv[0] = (char *)spec->name;
		cmd_args a;
		fuzz_quiet_begin();
		int rc = cmd_parse(&a, spec, argc, argv);
		fuzz_quiet_end();
		if (rc == -1) {
			bool asked = false;
			for (int i = 1; i < argc; i++)
				asked |= strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0;
			if (!asked)
				fuzz_fail("help printed without -h or --help");
		} else if (rc == EXIT_OK) {
			check_accepted(spec, &a, argv, argc);
		} else if (rc != EXIT_USAGE) {
			fuzz_fail("cmd_parse returned neither success, help nor a usage error");
		}
		cmd_args_release(&a);
	}
	free(copy);
	return 0;
}

/* Append word and a NUL separator to buf at *used. */
static void append_word(char *buf, size_t size, size_t *used, const char *word)
{
	size_t len = strlen(word) + 1;
	if (*used + len <= size) {
		memcpy(buf + *used, word, len);
		*used += len;
	}
}

void fuzz_seeds(void (*add)(const void *data, size_t size))
{
	/* Per command: every option in long form, then in short form, with
	 * values, among positional arguments. */
	for (size_t c = 0; c < gpucc_command_count; c++) {
		const cmd_spec *spec = gpucc_commands[c];
		for (int form = 0; form < 2; form++) {
			char buf[2048];
			size_t used = 0;
			append_word(buf, sizeof buf, &used, "image.gpucc");
			for (size_t i = 0; spec->options && spec->options[i].long_name; i++) {
				const cmd_option *o = &spec->options[i];
				char word[128];
				if (form == 1 && o->short_name) {
					snprintf(word, sizeof word, "-%c%s", o->short_name, o->arg ? "3" : "");
					append_word(buf, sizeof buf, &used, word);
				} else if (o->arg && !o->optional_arg) {
					snprintf(word, sizeof word, "--%s", o->long_name);
					append_word(buf, sizeof buf, &used, word);
					append_word(buf, sizeof buf, &used, "value");
				} else {
					snprintf(word, sizeof word, "--%s%s", o->long_name, o->arg ? "=7" : "");
					append_word(buf, sizeof buf, &used, word);
				}
			}
			append_word(buf, sizeof buf, &used, "--");
			append_word(buf, sizeof buf, &used, "-x");
			add(buf, used - 1); /* no NUL after the last word */
		}
	}
	static const char help[] = "a\0--help";
	add(help, sizeof help - 1);
}
