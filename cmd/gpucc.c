/*
 * cmd/gpucc.c -- the gpucc command: `gpucc help`, `gpucc --version`, and
 * dispatch over the table of subcommands (cmd/commands.c), after giving
 * libgpucc its settings from the environment and the process-wide state it
 * sets only when asked (the SIGBUS guard, the image limits).
 */
#include "cmd.h"

#include <gpucc.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char exit_codes_text[] =
	"exit codes:\n"
	"    0    success\n"
	"    1    failure: I/O error, out of memory, a failed check\n"
	"    2    not found: no such key, kernel, entry or file; an ambiguous key prefix;\n"
	"         a kernel no entry of the image serves on a device (devices --image)\n"
	"    3    bad input: corrupt, truncated or malformed input, another format version,\n"
	"         a name too long to open or create; or an argument, well formed, that\n"
	"         names what cannot serve: a directory where a file goes (-o DIR, -o new/),\n"
	"         a target (or embed's host triple) gpucc does not know; a malformed\n"
	"         SOURCE_DATE_EPOCH or GPUCC_IMAGE_LIMITS\n"
	"    4    conflict: one key with different contents\n"
	"    5    compile error: a module failed to compile\n"
	"    6    unavailable: a tool, driver or device is not present\n"
	"  129    usage: the command line itself is wrong, whatever the files: an unknown\n"
	"         option or command, a missing or extra argument or value, options that\n"
	"         exclude or need each other, an output that names an input, a value not\n"
	"         of its option's form (a number, size, age, level, key, part, policy or\n"
	"         symbol name), in one line ending \"(see 'gpucc CMD -h')\"\n";

static void print_help(FILE *f)
{
	fprintf(f, "usage: gpucc <command> [<args>]\n"
	           "       gpucc <command> -h\n"
	           "       gpucc --version\n\n"
	           "Builds, inspects and merges precompile images (.gpucc) of GPU kernels.\n\n"
	           "commands:\n");
	for (size_t i = 0; i < gpucc_command_count; i++)
		fprintf(f, "  %-16s %s\n", gpucc_commands[i]->name, gpucc_commands[i]->summary);
	fprintf(f, "  %-16s %s\n\n", "help", "show this help, or a command's");
	fprintf(f, "An option that takes one value (-o, --cache, --since, --on-conflict...)\n"
	           "given twice must be given the same value, else it is a usage error (129);\n"
	           "compile's -O and -j take the last, as cc and make do.\n\n%s",
	        exit_codes_text);
}

/* compile -h and devices -h: the backends found and the processors each
 * knows. */
static void help_more(FILE *f, const cmd_spec *spec)
{
	if (spec != &cmd_compile_spec && spec != &cmd_devices_spec)
		return;
	fputc('\n', f);
	cmd_print_backends(f);
}

static void print_version(void)
{
	printf("gpucc %s\n", gpucc_version());
	cmd_print_backends(stdout);
	printf("%s\n", gpucc_libarchive_version());
}

/* The command named by argv[1] (and argv[2] for two-word names); *used is set
 * to how many words the name took. */
static const cmd_spec *find_command(int argc, char **argv, int *used)
{
	if (argc >= 3) {
		for (size_t i = 0; i < gpucc_command_count; i++) {
			const char *name = gpucc_commands[i]->name;
			const char *space = strchr(name, ' ');
			size_t first = space ? (size_t)(space - name) : 0;
			if (space && strlen(argv[1]) == first && strncmp(name, argv[1], first) == 0 &&
			    strcmp(space + 1, argv[2]) == 0) {
				*used = 2;
				return gpucc_commands[i];
			}
		}
	}
	for (size_t i = 0; i < gpucc_command_count; i++) {
		if (strcmp(gpucc_commands[i]->name, argv[1]) == 0) {
			*used = 1;
			return gpucc_commands[i];
		}
	}
	return NULL;
}

/* Whether name ("cache stats") is a subcommand of group ("cache"). */
static bool in_group(const char *name, const char *group)
{
	size_t len = strlen(group);
	return strncmp(name, group, len) == 0 && name[len] == ' ';
}

static bool is_command_group(const char *word)
{
	for (size_t i = 0; i < gpucc_command_count; i++)
		if (in_group(gpucc_commands[i]->name, word))
			return true;
	return false;
}

/* The subcommands of group ("cache"): each one's usage line, then what it
 * does, as `gpucc cache -h` prints them. */
static void print_group_help(FILE *f, const char *group)
{
	const char *lead = "usage:";
	for (size_t i = 0; i < gpucc_command_count; i++) {
		const cmd_spec *s = gpucc_commands[i];
		if (in_group(s->name, group)) {
			fprintf(f, "%6s gpucc %s %s\n", lead, s->name, s->synopsis ? s->synopsis : "");
			lead = "or:";
		}
	}
	fprintf(f, "\nsubcommands:\n");
	for (size_t i = 0; i < gpucc_command_count; i++) {
		const cmd_spec *s = gpucc_commands[i];
		if (in_group(s->name, group))
			fprintf(f, "  %-8s %s\n", s->name + strlen(group) + 1, s->summary);
	}
	fprintf(f, "\n'gpucc %s <subcommand> -h' describes one.\n", group);
}

static int run_help(int argc, char **argv)
{
	if (argc < 3) {
		print_help(stdout);
		return EXIT_OK;
	}
	if (strcmp(argv[2], "--man") == 0) /* hidden: man pages at build time (cmd/man.c) */
		return cmd_man_main(argc - 3, argv + 3, gpucc_commands, gpucc_command_count, exit_codes_text);
	int used;
	const cmd_spec *spec = find_command(argc - 1, argv + 1, &used);
	if (!spec && argc == 3 && is_command_group(argv[2])) {
		print_group_help(stdout, argv[2]);
		return EXIT_OK;
	}
	if (!spec) {
		/* "help cache nope" names both words: cache is a command. */
		bool group = argc > 3 && is_command_group(argv[2]);
		char shown[256];
		fprintf(stderr, "gpucc help: unknown command '%s%s%s' (see 'gpucc help')\n",
		        group ? argv[2] : "", group ? " " : "",
		        cmd_shown(shown, sizeof shown, argv[group ? 3 : 2]));
		return EXIT_USAGE;
	}
	if (argc > 2 + used) {
		char shown[256];
		fprintf(stderr, "gpucc help: unexpected argument '%s' (see 'gpucc help')\n",
		        cmd_shown(shown, sizeof shown, argv[2 + used]));
		return EXIT_USAGE;
	}
	cmd_print_help(stdout, spec);
	return EXIT_OK;
}

/* GPUCC_IMAGE_LIMITS, the user's bounds on what reading an image may cost
 * ("expanded=64G,ratio=5000,manifest=512M"), made the defaults of every
 * image this process reads; libgpucc reads no environment itself.  A
 * malformed value is an error (3), not silently the defaults. */
static int apply_image_limits(const char *command)
{
	const char *text = getenv("GPUCC_IMAGE_LIMITS");
	gpucc_image_limits limits = GPUCC_IMAGE_LIMITS_INIT;
	if ((text && gpucc_image_limits_parse(&limits, text) != 0) ||
	    gpucc_image_set_default_limits(&limits, "GPUCC_IMAGE_LIMITS") != 0) {
		fprintf(stderr, "gpucc %s: GPUCC_IMAGE_LIMITS: %s\n", command, gpucc_error_last()->message);
		return cmd_exit_code(gpucc_error_last()->code);
	}
	return EXIT_OK;
}

/* The settings libgpucc takes from the environment (gpucc/config.h: TMPDIR,
 * PATH, SOURCE_DATE_EPOCH, GPUCC_CACHE_DIR, GPUCC_BACKEND...), made those
 * of the whole process before anything else runs: the library reads none
 * itself.  A malformed value (SOURCE_DATE_EPOCH) is an error (3), as a
 * malformed GPUCC_IMAGE_LIMITS is, in one line naming the variable;
 * command is the name it is reported under (NULL: gpucc's own). */
static int apply_environment(const char *command)
{
	gpucc_config *cfg = NULL;
	if (gpucc_config_from_env(&cfg) != 0 || gpucc_set_config(cfg) != 0) {
		gpucc_config_free(cfg);
		fprintf(stderr, "gpucc%s%s: %s\n", command ? " " : "", command ? command : "",
		        gpucc_error_last()->message);
		return cmd_exit_code(gpucc_error_last()->code);
	}
	gpucc_config_free(cfg);
	return EXIT_OK;
}

/* Run the command line; *who becomes the command's name for the closing
 * check of standard output ("" for gpucc's own help and version). */
static int run(int argc, char **argv, const char **who)
{
	*who = "";
	/* Usage errors are one line, as every error is, saying where the
	 * command line is explained. */
	if (argc < 2) {
		fputs("usage: gpucc <command> [<args>] (see 'gpucc help')\n", stderr);
		return EXIT_USAGE;
	}
	int used = 0;
	const cmd_spec *spec = find_command(argc, argv, &used);
	int rc = apply_environment(spec ? spec->name : NULL);
	if (rc != EXIT_OK)
		return rc;
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		if (argc > 2) {
			char shown[256];
			fprintf(stderr, "gpucc: %s takes no arguments, not '%s' (see 'gpucc help')\n",
			        argv[1], cmd_shown(shown, sizeof shown, argv[2]));
			return EXIT_USAGE;
		}
		print_version();
		return EXIT_OK;
	}
	if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0)
		return run_help(argc, argv);

	if (!spec) {
		char shown[256];
		if (!is_command_group(argv[1])) {
			fprintf(stderr, "gpucc: unknown command '%s' (see 'gpucc help')\n",
			        cmd_shown(shown, sizeof shown, argv[1]));
		} else if (argc < 3) {
			fprintf(stderr, "gpucc %s: missing subcommand (see 'gpucc %s -h')\n", argv[1],
			        argv[1]);
		} else if (strcmp(argv[2], "-h") == 0 || strcmp(argv[2], "--help") == 0) {
			print_group_help(stdout, argv[1]);
			return EXIT_OK;
		} else {
			fprintf(stderr, "gpucc %s: unknown subcommand '%s' (see 'gpucc %s -h')\n", argv[1],
			        cmd_shown(shown, sizeof shown, argv[2]), argv[1]);
		}
		return EXIT_USAGE;
	}

	*who = spec->name;
	cmd_args args;
	rc = cmd_parse(&args, spec, argc - used, argv + used);
	if (rc == -1)
		rc = EXIT_OK;
	else if (rc == EXIT_OK && (rc = apply_image_limits(spec->name)) == EXIT_OK)
		rc = spec->run(&args);
	cmd_args_release(&args);
	return rc;
}

/* A standard stream the caller closed (>&-) is held by /dev/null opened
 * the other way round, so that using it fails as a closed one does (EBADF:
 * output lost is reported) while no file the command opens takes its
 * number, where the rows meant for standard output would be written into
 * an image or an extracted file. */
static void hold_closed_streams(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		int held = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
		if (held >= 0 && held != fd) {
			dup2(held, fd);
			close(held);
		}
	}
}

int main(int argc, char **argv)
{
	hold_closed_streams();
	cmd_help_more = help_more;
	/* stderr is unbuffered: every fputc and fputs of a message in pieces
	 * (compile's diagnostics, a byte at a time through the speller) would
	 * be a write of its own, and the lines of processes sharing stderr
	 * (make -j) would mix.  Line-buffered, each line is one write, up to
	 * the buffer's size (a path of PATH_MAX control characters, spelt \xHH,
	 * fits); the progress line, which has no newline, flushes itself. */
	static char stderr_buffer[64 << 10];
	setvbuf(stderr, stderr_buffer, _IOLBF, sizeof stderr_buffer);
	/* A write past RLIMIT_FSIZE (ulimit -f) fails with EFBIG, reported
	 * like a full disk, instead of killing the process: a compile whose
	 * cache entry would pass the limit compiles without storing it
	 * (a cache problem never breaks a build), and no command dies mid-write. */
	signal(SIGXFSZ, SIG_IGN);
	/* Manifests parsed in place from their files, under libgpucc's SIGBUS
	 * guard, which it installs only when asked (gpucc/image.h). */
	gpucc_image_set_sigbus_guard(true);
	const char *who;
	int rc = run(argc, argv, &who);
	/* Output lost to a full disk or a closed pipe is a failure (help and
	 * --version too), unless the command already failed for a reason. */
	int flushed = fflush(stdout), err = errno;
	if ((flushed != 0 || ferror(stdout)) && rc == EXIT_OK) {
		/* The reason (a full disk, a closed pipe) is the last write's:
		 * the flush retries what the failed one left in the buffer. */
		fprintf(stderr, "gpucc%s%s: cannot write to standard output%s%s\n", *who ? " " : "", who,
		        flushed != 0 ? ": " : "", flushed != 0 ? strerror(err) : "");
		rc = EXIT_FAIL;
	}
	return rc;
}
