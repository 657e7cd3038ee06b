/*
 * cmd/man.c -- man pages from the same text as -h: `gpucc help --man`
 * writes gpucc(1) (the command table and the exit codes) and
 * `gpucc help --man CMD...` writes gpucc-CMD(1) (synopsis, summary,
 * description, the options table and the exit codes), in roff, on
 * standard output.  The
 * build runs it for every command (cmd/meson.build), so a man page can never
 * disagree with -h.
 */
#include "cmd.h"

#include <string.h>

/* Write text with roff's special characters escaped; a line may not start
 * with '.' or '\''. */
static void roff_text(FILE *f, const char *text)
{
	bool line_start = true;
	for (const char *p = text; *p; p++) {
		if (line_start && (*p == '.' || *p == '\''))
			fputs("\\&", f);
		if (*p == '\\')
			fputs("\\e", f);
		else if (*p == '-')
			fputs("\\-", f);
		else
			fputc(*p, f);
		line_start = *p == '\n';
	}
}

/* Paragraphs of a -h description: blank lines separate paragraphs; an
 * indented line starts a new output line, as in the terminal. */
static void roff_description(FILE *f, const char *text)
{
	fputs(".PP\n", f);
	const char *p = text;
	while (*p) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == 0) {
			fputs(".PP\n", f);
		} else {
			if (*p == ' ')
				fputs(".br\n", f);
			char line[1024];
			snprintf(line, sizeof line, "%.*s", (int)len, p);
			roff_text(f, line);
			fputc('\n', f);
		}
		p += len + (end ? 1 : 0);
	}
}

static void page_name(char *out, size_t size, const char *command)
{
	snprintf(out, size, "gpucc-%s", command);
	for (char *c = out; *c; c++)
		if (*c == ' ')
			*c = '-';
}

/* The exit codes of `gpucc help`, the same for every command, as a
 * preformatted EXIT STATUS section. */
static void print_exit_status(FILE *f, const char *exit_codes)
{
	fputs(".SH EXIT STATUS\n.nf\n", f);
	const char *codes = strchr(exit_codes, '\n'); /* after the "exit codes:" title */
	roff_text(f, codes ? codes + 1 : exit_codes);
	fputs(".fi\n", f);
}

static void print_command_page(FILE *f, const cmd_spec *spec, const char *exit_codes)
{
	char name[128];
	page_name(name, sizeof name, spec->name);
	fprintf(f, ".TH %s 1 \"\" \"gpucc\" \"gpucc manual\"\n.SH NAME\n%s \\- ", name, name);
	roff_text(f, spec->summary);
	fputs("\n.SH SYNOPSIS\n.B gpucc ", f);
	roff_text(f, spec->name);
	fputc('\n', f);
	roff_text(f, spec->synopsis ? spec->synopsis : "");
	fputs("\n.SH DESCRIPTION\n", f);
	roff_text(f, spec->summary);
	fputs(".\n", f);
	if (spec->description)
		roff_description(f, spec->description);
	if (spec->more)
		roff_description(f, spec->more);
	fputs(".SH OPTIONS\n", f);
	for (size_t i = 0; spec->options && spec->options[i].long_name; i++) {
		const cmd_option *o = &spec->options[i];
		fputs(".TP\n", f);
		if (o->short_name)
			fprintf(f, "\\fB\\-%c\\fR, ", o->short_name);
		fputs(cmd_option_dashes(o)[1] ? "\\fB\\-\\-" : "\\fB\\-", f);
		roff_text(f, o->long_name);
		fputs("\\fR", f);
		if (o->arg) {
			fputs(o->optional_arg ? "[=\\fI" : " \\fI", f);
			roff_text(f, o->arg);
			fputs(o->optional_arg ? "\\fR]" : "\\fR", f);
		}
		fputc('\n', f);
		roff_text(f, o->help);
		fputc('\n', f);
	}
	fputs(".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nshow this help and exit\n", f);
	print_exit_status(f, exit_codes);
	fputs(".SH SEE ALSO\n.BR gpucc (1)\n", f);
}

static void print_main_page(FILE *f, const cmd_spec *const *commands, size_t count,
                            const char *exit_codes)
{
	fputs(".TH gpucc 1 \"\" \"gpucc\" \"gpucc manual\"\n"
	      ".SH NAME\ngpucc \\- build, inspect, merge and embed precompile images of GPU kernels\n"
	      ".SH SYNOPSIS\n.B gpucc\n\\fIcommand\\fR [\\fIargs\\fR]\n.br\n"
	      ".B gpucc\n\\fIcommand\\fR \\-h\n.br\n.B gpucc \\-\\-version\n"
	      ".SH DESCRIPTION\n"
	      "gpucc builds, inspects and merges precompile images (.gpucc): archives of GPU\n"
	      "kernels compiled ahead of time by LLVM, which a package embeds and loads at\n"
	      "start-up instead of compiling its kernels again.\n"
	      ".SH OPTIONS\n"
	      ".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR, \\fBhelp\\fR [\\fIcommand\\fR]\n"
	      "list the commands and the exit codes, or document one command\n"
	      ".TP\n\\fB\\-\\-version\\fR\n"
	      "print the versions of gpucc, the LLVM its backend was built against and libarchive\n"
	      ".SH COMMANDS\n",
	      f);
	for (size_t i = 0; i < count; i++) {
		char name[128];
		page_name(name, sizeof name, commands[i]->name);
		fputs(".TP\n.B gpucc ", f);
		roff_text(f, commands[i]->name);
		fputc('\n', f);
		roff_text(f, commands[i]->summary);
		fprintf(f, "; see\n.BR %s (1).\n", name);
	}
	print_exit_status(f, exit_codes);
	fputs(".SH ENVIRONMENT\n"
	      ".TP\n.B GPUCC_CACHE_DIR\n"
	      "the cache directory (default: \\fB$XDG_CACHE_HOME\\fR/gpucc, else ~/.cache/gpucc)\n"
	      ".TP\n.B GPUCC_CACHE_MAX_SIZE\n"
	      "the size above which gc evicts entries, when the cache's config sets none (default 5G)\n"
	      ".TP\n.B GPUCC_BACKEND\n"
	      "the LLVM backend module (libgpucc\\-llvm.so; by default the one installed\n"
	      "beside libgpucc, in its gpucc/ directory); compiles run the gpucc\\-compile\\-worker\n"
	      "beside it, embed loads it\n"
	      ".TP\n.B CUDA_PATH\n"
	      "the CUDA toolkit whose ptxas and libdevice compile uses (else /usr/local/cuda)\n"
	      ".TP\n.B GPUCC_ROCM_DEVICE_LIBS\nthe directory of the ROCm device bitcode libraries\n"
	      ".TP\n.B GPUCC_LIBCLC_DIR\nthe directory of libclc's bitcode (else /usr/lib/clc)\n"
	      ".TP\n.B GPUCC_NVJITLINK\n"
	      "the libnvJitLink that links cubins (empty: none, ptxas is used; else the toolkit's)\n"
	      ".TP\n.B GPUCC_LIBARCHIVE\nthe libarchive to load for compressed images\n"
	      ".TP\n.B GPUCC_HIP_LIBRARY\\fR, \\fBGPUCC_CUDA_LIBRARY\n"
	      "the HIP runtime or CUDA driver library to load; \\(lqnone\\(rq disables it.\n"
	      "Unnamed, HIP is loaded only where /dev/kfd (the amdgpu driver) is present\n"
	      ".TP\n.B GPUCC_IMAGE_LIMITS\n"
	      "bounds on reading images: expanded=SIZE,ratio=N,manifest=SIZE\n"
	      "(defaults 32G, 1000, 128M; 0 turns a check off)\n"
	      ".TP\n.B SOURCE_DATE_EPOCH\n"
	      "the time recorded in images written (decimal seconds, at most 253402300799;\n"
	      "anything else fails every command, exit 3)\n"
	      ".TP\n.B TMPDIR\nwhere compiles make their temporary directories (else /tmp)\n"
	      ".TP\n.B PATH\nwhere clang\\-19, clang, clang\\-22 and ptxas are looked for\n"
	      ".TP\n.B CURL_CA_BUNDLE\\fR, \\fBSSL_CERT_FILE\n"
	      "the CA certificates HTTPS remotes are checked against, unless the remote names its own\n"
	      ".PP\nThe command reads these when it starts and hands them to libgpucc,\n"
	      "which reads no environment itself (gpucc/config.h).\n",
	      f);
}

int cmd_man_main(int argc, char **argv, const cmd_spec *const *commands, size_t count,
                 const char *exit_codes)
{
	if (argc == 0) {
		print_main_page(stdout, commands, count, exit_codes);
		return EXIT_OK;
	}
	char wanted[128] = "";
	for (int i = 0; i < argc; i++) {
		size_t used = strlen(wanted);
		snprintf(wanted + used, sizeof wanted - used, "%s%s", i ? " " : "", argv[i]);
	}
	for (size_t i = 0; i < count; i++) {
		if (strcmp(commands[i]->name, wanted) == 0) {
			print_command_page(stdout, commands[i], exit_codes);
			return EXIT_OK;
		}
	}
	char shown[256];
	fprintf(stderr, "gpucc help: unknown command '%s' (see 'gpucc help')\n",
	        cmd_shown(shown, sizeof shown, wanted));
	return EXIT_USAGE;
}
