/*
 * cmd/cmd_embed.c -- `gpucc embed IMAGE -o OBJ.o --symbol NAME`: a host
 * object file that carries an image inside whatever links it.
 *
 * The object is emitted in process by the LLVM backend module (no assembler
 * or linker is run) and defines NAME, the image's bytes (aligned, in a
 * read-only section), and NAME_size, a uint64_t.  --header writes the
 * matching declarations.  The image is checked before it is embedded (its
 * manifest and every payload's digest), and both outputs are written in
 * full before either is published.  A bad argument (symbol, alignment,
 * triple, an output naming the image) is a usage error (129), whether this
 * file or libgpucc (GPUCC_EINVALID) finds it.  Outputs that cannot be
 * created are found before the image is read (cmd_output_creatable).
 */
#include "cmd.h"

#include <gpucc.h>

#include <stdlib.h>

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
		return cmd_error(args, EXIT_USAGE, "%s is required (see 'gpucc embed -h')",
		                 !output ? "-o OBJ" : "--symbol NAME");
	/* An output that cannot be created is said truly, naming what stops
	 * it, before the image is read through. */
	int rc = cmd_output_creatable(args, output);
	if (rc == EXIT_OK && header)
		rc = cmd_output_creatable(args, header);
	if (rc != EXIT_OK)
		return rc;
	gpucc_embed_options opts = {.symbol = symbol,
	                            .triple = triple,
	                            .header = header};
	if (align) {
		/* Digits only: strtoul would also take a space, a sign and wrap a
		 * negative number round to a positive one. */
		char *end = NULL;
		unsigned long v = strtoul(align, &end, 10);
		if (*align < '0' || *align > '9' || *end || v == 0 || v > 4096 || (v & (v - 1)) != 0)
			return cmd_error(args, EXIT_USAGE, "--align '%s' is not a power of two from 1 to 4096",
			                 align);
		opts.alignment = (unsigned)v;
	}
	if (gpucc_embed_image(args->positional[0], output, &opts) != 0) {
		/* libgpucc checks the symbol and the triple (which only LLVM can
		 * normalise): GPUCC_EINVALID is one of them, a bad argument. */
		int code = cmd_fail(args);
		return gpucc_error_last()->code == GPUCC_EINVALID ? EXIT_USAGE : code;
	}
	return EXIT_OK;
}

const cmd_spec cmd_embed_spec = {
	.name = "embed",
	.synopsis = "IMAGE -o OBJ --symbol NAME [--target-triple TRIPLE] [--header FILE] "
	            "[--align BYTES]",
	.summary = "write a host object file that carries an image as a symbol",
	.description =
		"Emits, with LLVM in process, a relocatable object defining NAME (the image's\n"
		"bytes, aligned to 64 bytes or --align, in the read-only section\n"
		".rodata.gpucc) and NAME_size (a uint64_t).  Link it into a program or library\n"
		"and open the image with gpucc_image_open_memory(&img, NAME, NAME_size,\n"
		"\"NAME\"): no file is needed at run time.  The image is checked before it is\n"
		"embedded: its manifest and the SHA-256 of every payload.  Objects are 64-bit\n"
		"ELF, for x86_64 or aarch64 Linux (not the x32 or ILP32 ABIs), and the same\n"
		"image and options give the same bytes.\n"
		"NAME must be a C identifier of at most 200 characters that C and C++ can\n"
		"declare: no keyword, no leading or trailing '_', no '__', no name that\n"
		"<stdint.h> declares or reserves (uint64_t, int*_t, SIZE_MAX, INT*_MAX), and\n"
		"not ending in '_size' (the size of the image named by the rest: two images\n"
		"NAME and NAME_size could not be linked into one program).\n"
		"The object and the --header are written in full before either replaces its\n"
		"file: a failure leaves both as they were.  Whether each can be created in its\n"
		"directory is checked before the image is read.\n"
		"\n"
		"exit codes: 0 success, 1 a read or write failed, or an output's directory is\n"
		"not writable (the error names the file), 2 the image does not exist, or an\n"
		"output's directory does not exist or is not one, 3 the image is not a valid\n"
		"gpucc image (a directory, a FIFO, an empty file, a snapshot, a corrupt image, a\n"
		"name too long to open: the error names the file and its defect), 6 the LLVM\n"
		"backend is absent, 129 usage or a bad argument (--symbol not such an\n"
		"identifier, --align not a power of two up to 4096, a --target-triple other\n"
		"than 64-bit x86_64 or aarch64 Linux, -o or --header naming the image, a\n"
		"directory, a name in /proc or a name too long, --header naming the object).",
	.options = embed_options,
	.min_positional = 1,
	.max_positional = 1,
	.run = run_embed,
};
