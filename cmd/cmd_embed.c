/*
 * cmd/cmd_embed.c -- `gpucc embed IMAGE -o OBJ.o --symbol NAME`: a host
 * object file that carries an image inside whatever links it.
 *
 * The object is written by libgpucc itself (no LLVM, assembler or linker
 * is run) and defines NAME, the image's bytes (aligned, in a
 * read-only section), and NAME_size, a uint64_t.  --header writes the
 * matching declarations.  The image is checked before it is embedded (its
 * manifest and every payload's digest), and both outputs are written in
 * full before either is published.  A malformed command line (a symbol
 * that is no name the header can declare, an alignment, an output naming
 * the image or the other output) is a usage error (129), found here before
 * any file is read; a host triple gpucc cannot target is bad input (3), as
 * an unknown GPU target is, found by libgpucc.  Outputs that cannot be
 * created are found before the image is read (cmd_output_creatable).
 */
#include "cmd.h"

#include <gpucc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const cmd_option embed_options[] = {
	{"output", 'o', "OBJ", false, "the object file to write (required)"},
	{"symbol", 's', "NAME", false, "the symbol holding the image; NAME_size holds its size (required)"},
	{"target-triple", 0, "TRIPLE", false,
	 "host triple of the object, x86_64 or aarch64 Linux (ELF) (default: this machine's, "
	 "e.g. x86_64-pc-linux-gnu; aarch64-linux-gnu is supported too)"},
	{"header", 0, "FILE", false, "also write a C header declaring NAME and NAME_size"},
	{"align", 0, "BYTES", false, "alignment of NAME, a power of two up to 4096 (default 64)"},
	{0},
};

/* Whether paths a and b name one output: one existing file (links too), or
 * the same name in the same directory. */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	const char *name_a = strrchr(a, '/') ? strrchr(a, '/') + 1 : a;
	const char *name_b = strrchr(b, '/') ? strrchr(b, '/') + 1 : b;
	if (strcmp(name_a, name_b) != 0)
		return false;
	char *dir_a = NULL, *dir_b = NULL;
	bool same = asprintf(&dir_a, "%.*s.", (int)(name_a - a), a) >= 0 &&
	            asprintf(&dir_b, "%.*s.", (int)(name_b - b), b) >= 0 && stat(dir_a, &sa) == 0 &&
	            stat(dir_b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	free(dir_a);
	free(dir_b);
	return same;
}

static int run_embed(const cmd_args *args)
{
	const char *output, *header;
	if (cmd_output_value(&output, args, "output") != EXIT_OK ||
	    cmd_output_value(&header, args, "header") != EXIT_OK)
		return EXIT_USAGE;
	const char *symbol, *triple, *align;
	if (cmd_single_value(&symbol, args, "symbol") != EXIT_OK ||
	    cmd_single_value(&triple, args, "target-triple") != EXIT_OK ||
	    cmd_single_value(&align, args, "align") != EXIT_OK)
		return EXIT_USAGE;
	if (!output || !symbol)
		return cmd_error(args, EXIT_USAGE, "%s is required", !output ? "-o OBJ" : "--symbol NAME");
	/* The arguments' own form, and how they relate, before any file is
	 * looked at: a usage error. */
	if (gpucc_embed_check_symbol(symbol) != 0)
		return cmd_error(args, EXIT_USAGE, "%s", gpucc_error_last()->message);
	unsigned alignment = 0;
	if (align) {
		/* Digits only: strtoul would also take a space, a sign and wrap a
		 * negative number round to a positive one. */
		char *end = NULL;
		unsigned long v = strtoul(align, &end, 10);
		if (*align < '0' || *align > '9' || *end || v == 0 || v > 4096 || (v & (v - 1)) != 0)
			return cmd_error(args, EXIT_USAGE, "--align '%s' is not a power of two from 1 to 4096",
			                 align);
		alignment = (unsigned)v;
	}
	char shown[256], other[256];
	const char *image = args->positional[0];
	if (header && same_file(header, output))
		return cmd_error(args, EXIT_USAGE, "the header '%s' and the object '%s' are the same file",
		                 cmd_shown(shown, sizeof shown, header),
		                 cmd_shown(other, sizeof other, output));
	struct stat image_st, out_st;
	const char *clash = NULL;
	if (stat(image, &image_st) == 0) {
		if (stat(output, &out_st) == 0 && out_st.st_dev == image_st.st_dev &&
		    out_st.st_ino == image_st.st_ino)
			clash = "-o";
		else if (header && stat(header, &out_st) == 0 && out_st.st_dev == image_st.st_dev &&
		         out_st.st_ino == image_st.st_ino)
			clash = "--header";
	}
	if (clash)
		return cmd_error(args, EXIT_USAGE, "%s '%s' is the image being embedded: write the %s "
		                 "elsewhere", clash, cmd_shown(shown, sizeof shown,
		                                              clash[1] == 'o' ? output : header),
		                 clash[1] == 'o' ? "object" : "header");
	/* An output that cannot be created is said truly, naming what stops
	 * it, before the image is read through. */
	int rc = cmd_output_creatable(args, output);
	if (rc == EXIT_OK && header)
		rc = cmd_output_creatable(args, header);
	if (rc != EXIT_OK)
		return rc;
	gpucc_embed_options opts = {.version = GPUCC_EMBED_OPTIONS_VERSION, .symbol = symbol,
	                            .triple = triple,
	                            .header = header,
	                            .alignment = alignment};
	/* What libgpucc refuses now is of the files or the triple (one that is
	 * no x86_64 or aarch64 Linux): bad input, 3, as an unknown target is
	 * everywhere (GPUCC_EINVALID's exit code). */
	if (gpucc_embed_image(image, output, &opts) != 0)
		return cmd_fail(args);
	return EXIT_OK;
}

const cmd_spec cmd_embed_spec = {
	.name = "embed",
	.synopsis = "IMAGE -o OBJ --symbol NAME [--target-triple TRIPLE] [--header FILE] "
	            "[--align BYTES]",
	.summary = "write a host object file that carries an image as a symbol",
	.description =
		"Writes, without LLVM, a relocatable object defining NAME (the image's\n"
		"bytes, aligned to 64 bytes or --align, in the read-only section\n"
		".rodata.gpucc) and NAME_size (a uint64_t).  Link it into a program or library\n"
		"and open the image with gpucc_image_open_memory(&img, NAME, NAME_size,\n"
		"\"NAME\"): no file is needed at run time.  The image is checked before it is\n"
		"embedded: its manifest and the SHA-256 of every payload.  Objects are 64-bit\n"
		"ELF, for x86_64 or aarch64 Linux (not the x32 or ILP32 ABIs), and the same\n"
		"image and options give the same bytes.\n"
		"NAME must be a C identifier of at most 200 characters that C and C++ can\n"
		"declare: no keyword, no leading or trailing '_', no '__', no name that\n"
		"<stdint.h> declares or reserves (uint64_t, int*_t, SIZE_MAX, INT*_MAX), no\n"
		"name of the C standard library (NULL, errno, size_t, FILE, malloc...) and\n"
		"not main, which a program would see beside the header or in place of its own,\n"
		"and not ending in '_size' (the size of the image named by the rest: two\n"
		"images NAME and NAME_size could not be linked into one program).\n"
		"The object and the --header are written in full before either replaces its\n"
		"file: a failure leaves both as they were.  Whether each can be created in its\n"
		"directory is checked before the image is read.\n"
		"\n"
		"exit codes: 0 success, 1 a read or write failed, or an output's directory is\n"
		"not writable (the error names the file), 2 the image does not exist, or an\n"
		"output's directory does not exist or is not one, 3 bad input: the image is\n"
		"not a valid gpucc image (a directory, a FIFO, an empty file, a snapshot, a\n"
		"corrupt image, a name too long to open: the error names the file and its\n"
		"defect), -o or --header names a directory or a name too long, or a\n"
		"--target-triple other than 64-bit x86_64 or aarch64 Linux; 129 usage\n"
		"(--symbol not such a name, --align not a power of two up to 4096, -o or\n"
		"--header naming the image or a name in /proc, --header naming the object).",
	.options = embed_options,
	.min_positional = 1,
	.max_positional = 1,
	.run = run_embed,
};
