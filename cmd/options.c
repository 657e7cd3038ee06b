/*
 * cmd/options.c -- the command-line parser and -h printer driven by each
 * command's cmd_option table, and the mapping of libgpucc errors to exit
 * codes and one-line messages.
 *
 * Accepted forms: --name, --name=VALUE, --name VALUE (when the option takes a
 * required value), -x, -xVALUE, -x VALUE, "--" ending options.  Options and
 * positional arguments may be interleaved.  An option whose value is
 * optional is stored as "" when given bare (--zstd), so its empty
 * --name= is refused rather than taken for that.
 */
#include "cmd.h"
/* The speller libgpucc's messages use too, compiled into the command
 * (cmd/meson.build): libgpucc exports only its public header. */
#include "../formats/escape.h"
#include "../formats/hex.h"

#include <gpucc.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static const cmd_option *find_long(const cmd_spec *spec, const char *name, size_t len,
                                   size_t *index)
{
	for (size_t i = 0; spec->options && spec->options[i].long_name; i++) {
		if (strlen(spec->options[i].long_name) == len &&
		    strncmp(spec->options[i].long_name, name, len) == 0) {
			*index = i;
			return &spec->options[i];
		}
	}
	return NULL;
}

static const cmd_option *find_short(const cmd_spec *spec, char c, size_t *index)
{
	for (size_t i = 0; spec->options && spec->options[i].long_name; i++) {
		if (spec->options[i].short_name == c) {
			*index = i;
			return &spec->options[i];
		}
	}
	return NULL;
}

static void usage_line(FILE *f, const cmd_spec *spec)
{
	fprintf(f, "usage: gpucc %s %s\n", spec->name, spec->synopsis ? spec->synopsis : "");
}

void (*cmd_help_more)(FILE *f, const cmd_spec *spec);

const char *cmd_option_dashes(const cmd_option *o)
{
	return o->long_name[0] >= 'A' && o->long_name[0] <= 'Z' ? "-" : "--";
}

void cmd_print_help(FILE *f, const cmd_spec *spec)
{
	usage_line(f, spec);
	fprintf(f, "\n%s\n", spec->summary);
	if (spec->description)
		fprintf(f, "\n%s\n", spec->description);
	if (spec->more)
		fprintf(f, "\n%s\n", spec->more);
	if (cmd_help_more)
		cmd_help_more(f, spec);
	fprintf(f, "\noptions:\n");
	for (size_t i = 0; spec->options && spec->options[i].long_name; i++) {
		const cmd_option *o = &spec->options[i];
		char left[64];
		int n = 0;
		if (o->short_name)
			n = snprintf(left, sizeof left, "-%c, ", o->short_name);
		else
			n = snprintf(left, sizeof left, "    ");
		const char *dashes = cmd_option_dashes(o);
		if (o->arg && o->optional_arg)
			snprintf(left + n, sizeof left - (size_t)n, "%s%s[=%s]", dashes, o->long_name, o->arg);
		else if (o->arg)
			snprintf(left + n, sizeof left - (size_t)n, "%s%s %s", dashes, o->long_name, o->arg);
		else
			snprintf(left + n, sizeof left - (size_t)n, "%s%s", dashes, o->long_name);
		fprintf(f, "  %-28s %s\n", left, o->help);
	}
	fprintf(f, "  %-28s %s\n", "-h, --help", "show this help and exit");
}

/* "gpucc NAME: MESSAGE" and a newline on stderr, MESSAGE's control
 * characters spelt as cmd_shown spells them (an option or argument from
 * the command line can hold an escape sequence); with usage, followed on
 * the same line by where the command line is explained, " (see 'gpucc
 * NAME -h')", unless MESSAGE says so already.  One write, whole, as stderr
 * is line-buffered (cmd/gpucc.c). */
static void put_message(const char *name, const char *message, bool usage)
{
	fprintf(stderr, "gpucc %s: ", name);
	cmd_put_shown(stderr, message);
	if (usage && !strstr(message, "(see 'gpucc "))
		fprintf(stderr, " (see 'gpucc %s -h')", name);
	fputc('\n', stderr);
}

static int usage_error(const cmd_spec *spec, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A usage error found while parsing: one line, as every error is. */
static int usage_error(const cmd_spec *spec, const char *fmt, ...)
{
	char *message = NULL;
	va_list ap;
	va_start(ap, fmt);
	int len = vasprintf(&message, fmt, ap);
	va_end(ap);
	put_message(spec->name, len < 0 ? "out of memory" : message, true);
	if (len >= 0)
		free(message);
	return EXIT_USAGE;
}

static int add_value(cmd_args *a, size_t index, const char *value)
{
	const char **grown = realloc(a->values[index], sizeof *grown * (size_t)(a->counts[index] + 1));
	if (!grown)
		return -1;
	grown[a->counts[index]++] = value;
	a->values[index] = grown;
	return 0;
}

int cmd_parse(cmd_args *out, const cmd_spec *spec, int argc, char **argv)
{
	memset(out, 0, sizeof *out);
	out->spec = spec;
	size_t n = 0;
	while (spec->options && spec->options[n].long_name)
		n++;
	out->option_count = n;
	out->counts = calloc(n + 1, sizeof *out->counts);
	out->values = calloc(n + 1, sizeof *out->values);
	out->positional = calloc((size_t)argc + 1, sizeof *out->positional);
	if (!out->counts || !out->values || !out->positional) {
		fprintf(stderr, "gpucc %s: out of memory\n", spec->name);
		return EXIT_FAIL;
	}

	bool options_done = false;
	for (int i = 1; i < argc; i++) {
		char *arg = argv[i];
		if (options_done || arg[0] != '-' || arg[1] == '\0') {
			out->positional[out->positional_count++] = arg;
			continue;
		}
		if (strcmp(arg, "--") == 0) {
			options_done = true;
			continue;
		}
		if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
			cmd_print_help(stdout, spec);
			return -1;
		}
		size_t index;
		const cmd_option *o;
		const char *value = NULL;
		/* The long options compilers spell after one dash (-isystem DIR,
		 * -include FILE, -std=c++17, -MD -MF FILE), where a command has
		 * them (compile's for sources and dependency files). */
		static const char *const single_dash_names[] = {"isystem", "include", "std", "MD", "MF"};
		bool single_dash = false;
		for (size_t k = 0; arg[1] != '-' && k < sizeof single_dash_names / sizeof *single_dash_names; k++) {
			size_t len = strlen(single_dash_names[k]);
			single_dash |= strncmp(arg + 1, single_dash_names[k], len) == 0 &&
			               (arg[1 + len] == '\0' || arg[1 + len] == '=') &&
			               find_long(spec, single_dash_names[k], len, &index);
		}
		if (arg[1] == '-' || single_dash) {
			const char *name = arg + (single_dash ? 1 : 2);
			const char *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);
			o = find_long(spec, name, len, &index);
			if (!o)
				return usage_error(spec, "unknown option '%s'", arg);
			if (eq) {
				if (!o->arg)
					return usage_error(spec, "option '%s' takes no value", arg);
				/* Stored as "", an empty optional value would read as
				 * the bare option (--zstd= as --zstd, the default
				 * level): a script's unset $LEVEL, refused. */
				if (o->optional_arg && !eq[1])
					return usage_error(spec,
					                   "option '%s' needs a %s after '=' (or '--%s' alone "
					                   "for its default)",
					                   arg, o->arg, o->long_name);
				value = eq + 1;
			} else if (o->arg && !o->optional_arg) {
				if (i + 1 >= argc)
					return usage_error(spec, "option '%s' needs a value", arg);
				value = argv[++i];
			}
		} else {
			o = find_short(spec, arg[1], &index);
			if (!o)
				return usage_error(spec, "unknown option '%s'", arg);
			if (o->arg) {
				if (arg[2])
					value = arg + 2;
				else if (o->optional_arg)
					value = NULL;
				else if (i + 1 >= argc)
					return usage_error(spec, "option '%s' needs a value", arg);
				else
					value = argv[++i];
			} else if (arg[2]) {
				return usage_error(spec, "unknown option '%s'", arg);
			}
		}
		if (add_value(out, index, value ? value : "") != 0) {
			fprintf(stderr, "gpucc %s: out of memory\n", spec->name);
			return EXIT_FAIL;
		}
	}
	if (out->positional_count < spec->min_positional)
		return usage_error(spec, "%s", spec->min_positional == 1 ? "missing argument"
		                                                        : "missing arguments");
	if (spec->max_positional >= 0 && out->positional_count > spec->max_positional)
		return usage_error(spec, "unexpected argument '%s'",
		                   out->positional[spec->max_positional]);
	return EXIT_OK;
}

void cmd_args_release(cmd_args *args)
{
	for (size_t i = 0; i < args->option_count; i++)
		free(args->values[i]);
	free(args->values);
	free(args->counts);
	free(args->positional);
	memset(args, 0, sizeof *args);
}

static int option_index(const cmd_args *args, const char *long_name)
{
	size_t index;
	if (!find_long(args->spec, long_name, strlen(long_name), &index))
		return -1;
	return (int)index;
}

bool cmd_flag(const cmd_args *args, const char *long_name)
{
	return cmd_value_count(args, long_name) > 0;
}

int cmd_value_count(const cmd_args *args, const char *long_name)
{
	int i = option_index(args, long_name);
	return i < 0 ? 0 : args->counts[i];
}

const char *cmd_value_at(const cmd_args *args, const char *long_name, int index)
{
	int i = option_index(args, long_name);
	if (i < 0 || index < 0 || index >= args->counts[i])
		return NULL;
	return args->values[i][index];
}

const char *cmd_value(const cmd_args *args, const char *long_name)
{
	return cmd_value_at(args, long_name, cmd_value_count(args, long_name) - 1);
}

/* How messages spell an option: -x when it has a short name, else --name. */
static void option_spelling(char out[64], const cmd_args *args, const char *long_name)
{
	size_t index;
	const cmd_option *o = find_long(args->spec, long_name, strlen(long_name), &index);
	if (o && o->short_name)
		snprintf(out, 64, "-%c", o->short_name);
	else
		snprintf(out, 64, "--%s", long_name);
}

int cmd_single_value(const char **out, const cmd_args *args, const char *long_name)
{
	*out = cmd_value(args, long_name);
	for (int i = 0; i < cmd_value_count(args, long_name); i++) {
		const char *v = cmd_value_at(args, long_name, i);
		/* Values are paths too (-o, --cache): spelt on one line. */
		char first[256], last[256];
		if (strcmp(v, *out) != 0)
			return cmd_error(args, EXIT_USAGE, "--%s%s%s and --%s%s%s disagree: give one",
			                 long_name, *v ? "=" : "", cmd_shown(first, sizeof first, v),
			                 long_name, **out ? "=" : "", cmd_shown(last, sizeof last, *out));
	}
	return EXIT_OK;
}

int cmd_zstd_level(const cmd_args *args, int *level)
{
	const char *v;
	*level = 0;
	if (cmd_single_value(&v, args, "zstd") != EXIT_OK)
		return EXIT_USAGE;
	if (!v)
		return EXIT_OK;
	if (!*v) {
		*level = GPUCC_ZSTD_DEFAULT_LEVEL;
		return EXIT_OK;
	}
	/* Digits only: strtol would also take a sign or a space. */
	char *end;
	long n = strtol(v, &end, 10);
	if (v[0] < '0' || v[0] > '9' || *end || n < 1 || n > 22)
		return cmd_error(args, EXIT_USAGE, "--zstd level must be 1 to 22, not '%s'", v);
	*level = (int)n;
	return EXIT_OK;
}

int cmd_path_value(const char **out, const cmd_args *args, const char *long_name,
                   const char *what)
{
	if (cmd_single_value(out, args, long_name) != EXIT_OK)
		return EXIT_USAGE;
	if (*out && !**out) {
		char spelling[64];
		option_spelling(spelling, args, long_name);
		return cmd_error(args, EXIT_USAGE, "%s needs %s, not ''", spelling, what);
	}
	return EXIT_OK;
}

int cmd_directory_value(const char **out, const cmd_args *args, const char *long_name)
{
	return cmd_path_value(out, args, long_name, "a directory");
}

const char *cmd_plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* Whether dir resolves into /proc, where a process's streams are. */
static bool resolves_into_proc(const char *dir)
{
	char *real = realpath(dir, NULL);
	bool in_proc = real && (strcmp(real, "/proc") == 0 || strncmp(real, "/proc/", 6) == 0);
	free(real);
	return in_proc;
}

/* Where a file named path would be written, as far as /proc goes: 0
 * elsewhere; 1 at a process's stream, or another of the kernel's files
 * there (/dev/fd/1, or /dev/stdout, a link to /proc/self/fd/1); 2 at a new
 * name in /proc (/proc/x.o), where no file can be created. */
static int written_in_proc(const char *path)
{
	char dir[2 * PATH_MAX + 2], target[PATH_MAX + 1];
	struct stat st;
	bool exists = stat(path, &st) == 0;
	const char *slash = strrchr(path, '/');
	int dir_len = !slash ? 0 : slash == path ? 1 : (int)(slash - path);
	snprintf(dir, sizeof dir, "%.*s", dir_len, dir_len ? path : ".");
	if (resolves_into_proc(dir))
		return exists ? 1 : 2;
	if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode))
		return 0;
	ssize_t len = readlink(path, target, sizeof target - 1);
	if (len <= 0)
		return 0;
	target[len] = '\0';
	slash = strrchr(target, '/');
	if (!slash)
		return 0; /* beside the link, checked above */
	/* A relative target is relative to the link's directory. */
	if (target[0] == '/')
		snprintf(dir, sizeof dir, "%.*s", slash == target ? 1 : (int)(slash - target), target);
	else
		snprintf(dir, sizeof dir, "%.*s/%.*s", dir_len, dir_len ? path : ".",
		         (int)(slash - target), target);
	return !resolves_into_proc(dir) ? 0 : exists ? 1 : 2;
}

int cmd_output_value(const char **out, const cmd_args *args, const char *long_name)
{
	if (cmd_path_value(out, args, long_name, "a file name") != EXIT_OK)
		return EXIT_USAGE;
	if (!*out)
		return EXIT_OK;
	char spelling[64];
	option_spelling(spelling, args, long_name);
	if (strcmp(*out, "-") == 0)
		return cmd_error(args, EXIT_USAGE,
		                 "%s -: standard output is not supported; outputs are written to a file "
		                 "beside their name and renamed into place",
		                 spelling);
	switch (written_in_proc(*out)) {
	case 1:
		return cmd_error(args, EXIT_USAGE,
		                 "%s '%s' names a process's stream, not a file; outputs are written "
		                 "beside their name and renamed into place",
		                 spelling, *out);
	case 2:
		return cmd_error(args, EXIT_USAGE,
		                 "%s '%s' is in /proc, where only the kernel makes files: write the "
		                 "output elsewhere",
		                 spelling, *out);
	default:
		return EXIT_OK;
	}
}

const char *cmd_shown(char *out, size_t size, const char *text)
{
	gpucc_escape_controls(out, size, text);
	return out;
}

void cmd_put_shown(FILE *f, const char *text)
{
	for (const unsigned char *p = (const unsigned char *)(text ? text : ""); *p; p++) {
		char spelt[GPUCC_ESCAPED_BYTE_MAX];
		fwrite(spelt, 1, gpucc_escape_byte(spelt, *p), f);
	}
}

int cmd_key_prefix_value(const cmd_args *args, const char *text)
{
	size_t len = strlen(text);
	if (len >= 1 && len <= 64 && gpucc_hex_span(text, false) == len)
		return EXIT_OK;
	char key[256];
	return cmd_error(args, EXIT_USAGE, "'%s' is not a key or key prefix (1 to 64 hex digits)",
	                 cmd_shown(key, sizeof key, text));
}

int cmd_open_failure(char *message, size_t size, const char *path, int err)
{
	char shown[256];
	cmd_shown(shown, sizeof shown, path);
	if (err == ENAMETOOLONG) {
		snprintf(message, size, "cannot open '%s': %s (the name has %zu bytes)", shown,
		         strerror(err), strlen(path));
		return EXIT_BAD_INPUT;
	}
	snprintf(message, size, "cannot open '%s': %s", shown, strerror(err));
	return err == ENOENT ? EXIT_NOT_FOUND : EXIT_FAIL;
}

int cmd_open_failed(const cmd_args *args, const char *path, int err)
{
	char message[512];
	int code = cmd_open_failure(message, sizeof message, path, err);
	return cmd_error(args, code, "%s", message);
}

int cmd_output_creatable(const cmd_args *args, const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	/* A directory where a file is needed: the argument names the wrong
	 * thing, whether the directory exists or only the name says so
	 * ("new/", "out/.", ".."), which the probe below would take for a
	 * missing directory. */
	struct stat st;
	char p[256], d[256];
	cmd_shown(p, sizeof p, path);
	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return cmd_error(args, EXIT_BAD_INPUT,
		                 "'%s' names a directory, not a file: give the output's file name", p);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return cmd_error(args, EXIT_BAD_INPUT,
		                 "'%s' is a directory, not a file name: give the output's file name", p);
	int dir_len = slash ? (int)(slash - path) + 1 : 0;
	size_t size = strlen(path) + 48;
	char *probe = malloc(size);
	char *dir = slash == path ? strdup("/") : slash ? strndup(path, (size_t)(slash - path))
	                                                : strdup(".");
	if (!probe || !dir) {
		free(probe);
		free(dir);
		return cmd_error(args, EXIT_FAIL, "out of memory");
	}
	/* As long a name as the writer's temporary file (".NAME.tmp.PID.N"),
	 * and one its sweep removes, were the process killed before the
	 * unlink. */
	snprintf(probe, size, "%.*s.%s.tmp.probe.0000000000.XXXXXX", dir_len, path, base);
	int rc = EXIT_OK;
	int fd = mkostemp(probe, O_CLOEXEC);
	int err = errno;
	cmd_shown(d, sizeof d, dir);
	if (fd >= 0) {
		close(fd);
		unlink(probe);
	} else if (err == ENAMETOOLONG) {
		/* Bad input, as an input's name too long to open is. */
		rc = cmd_error(args, EXIT_BAD_INPUT,
		               "cannot create '%s': %s (the name has %zu bytes, and the temporary file "
		               "written beside it %zu)",
		               p, strerror(err), strlen(path), strlen(probe + dir_len));
	} else if (err == ENOENT && stat(dir, &st) != 0) {
		rc = cmd_error(args, EXIT_NOT_FOUND, "cannot create '%s': its directory does not exist",
		               p);
	} else if (err == ENOENT) {
		rc = cmd_error(args, EXIT_FAIL,
		               "cannot create '%s': its directory '%s' exists but takes no new files (%s)",
		               p, d, strerror(err));
	} else if (err == ENOTDIR) {
		bool file = stat(dir, &st) == 0 && !S_ISDIR(st.st_mode);
		rc = cmd_error(args, EXIT_NOT_FOUND, "cannot create '%s': %s'%s' is not a directory", p,
		               file ? "" : "a component of ", d);
	} else if (err == EACCES || err == EPERM) {
		rc = cmd_error(args, EXIT_FAIL,
		               "cannot create '%s': its directory '%s' is not writable (%s)", p, d,
		               strerror(err));
	} else if (err == EROFS) {
		rc = cmd_error(args, EXIT_FAIL,
		               "cannot create '%s': its directory '%s' is on a read-only file system", p,
		               d);
	} else {
		rc = cmd_error(args, EXIT_FAIL, "cannot create '%s': %s", p, strerror(err));
	}
	free(probe);
	free(dir);
	return rc;
}

void cmd_raise_file_limit(void)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

int cmd_exit_code(int code)
{
	switch (code) {
	case GPUCC_OK:
		return EXIT_OK;
	case GPUCC_ENOTFOUND:
	case GPUCC_EAMBIGUOUS:
		return EXIT_NOT_FOUND;
	case GPUCC_ECORRUPT:
	case GPUCC_EVERSION:
	case GPUCC_EINVALID:
		return EXIT_BAD_INPUT;
	case GPUCC_ECONFLICT:
		return EXIT_CONFLICT;
	case GPUCC_ECOMPILE:
		return EXIT_COMPILE;
	case GPUCC_EUNAVAILABLE:
		return EXIT_UNAVAILABLE;
	default:
		return EXIT_FAIL;
	}
}

int cmd_fail(const cmd_args *args)
{
	const gpucc_error *e = gpucc_error_last();
	fprintf(stderr, "gpucc %s: %s\n", args->spec->name, e->message);
	return cmd_exit_code(e->code == 0 ? GPUCC_ERROR : e->code);
}

int cmd_error(const cmd_args *args, int code, const char *fmt, ...)
{
	char *message = NULL;
	va_list ap;
	va_start(ap, fmt);
	int len = vasprintf(&message, fmt, ap);
	va_end(ap);
	put_message(args->spec->name, len < 0 ? "out of memory" : message, code == EXIT_USAGE);
	if (len >= 0)
		free(message);
	return code;
}

void cmd_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p >= 0x80) {
			/* A valid UTF-8 sequence as it is (the second byte's range
			 * excludes overlong forms, surrogates and code points past
			 * U+10FFFF); any other byte, such as in a file name that is
			 * not UTF-8, as U+FFFD, so the output stays JSON. */
			size_t len = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3
			             : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
			unsigned char low = p[0] == 0xe0 ? 0xa0 : p[0] == 0xf0 ? 0x90 : 0x80;
			unsigned char high = p[0] == 0xed ? 0x9f : p[0] == 0xf4 ? 0x8f : 0xbf;
			bool valid = len > 0 && p[1] >= low && p[1] <= high;
			for (size_t i = 2; valid && i < len; i++)
				valid = p[i] >= 0x80 && p[i] <= 0xbf; /* stops at the NUL */
			if (valid) {
				fwrite(p, 1, len, f);
				p += len - 1;
			} else {
				fputs("\\ufffd", f);
			}
			continue;
		}
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\t': fputs("\\t", f); break;
		case '\r': fputs("\\r", f); break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}
