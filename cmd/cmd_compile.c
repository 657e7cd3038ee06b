/*
 * cmd/cmd_compile.c -- `gpucc compile`: LLVM IR modules to PTX, cubins and
 * AMDGPU code objects, one entry per module x target, through the cache and
 * optionally into an image.
 *
 * usage: gpucc compile MODULE... --target T [--target T...] [-o OUT.gpucc]
 *                      [--cache DIR | --no-cache] [-O0..-O3] [-j N] ...
 *
 * Output: nothing on success unless asked (--json, --explain); warnings and
 * errors on stderr, each naming module and target; a progress line on
 * stderr when it is a terminal.  Exit 5 when a module fails to compile, 6
 * when a tool or library it needs is absent; the image is written only when
 * every job succeeded.
 */
#include "cmd.h"
#include "compile_options.h"
#include "compile_print.h"
#include "interrupt.h"
#include "cmd_remote.h"

#include <gpucc.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const cmd_option options[] = {
	{"target", 't', "TARGET", false,
	 "compile for TARGET: sm_XY[a|f][:ptxNN] or gfxNNN[:sramecc+|-][:xnack+|-]; CMake's 90, "
	 "90a, 90-real (a cubin alone), 90-virtual (PTX alone); native: the GPUs here (repeatable)"},
	{"llvm", 0, "N", false,
	 "compile every job with LLVM N's backend (19, 22...; default: per job, the newest that knows the target)"},
	{"output", 'o', "IMAGE", false, "also write every entry into this image"},
	{"depfile", 0, "FILE", false,
	 "with -o, also write a make rule naming IMAGE and every file it was made from (sources, "
	 "headers, modules, device libraries, clang), for ninja and make"},
	{"MD", 0, NULL, false, "with -o, write that rule to IMAGE.d (-MF names another file), as clang -MD does"},
	{"MF", 0, "FILE", false, "the file -MD writes: --depfile FILE"},
	{"zstd", 0, "LEVEL", true, CMD_ZSTD_HELP},
	{"cache", 0, "DIR", false, "the cache directory (default: $GPUCC_CACHE_DIR, else $XDG_CACHE_HOME/gpucc, else ~/.cache/gpucc)"},
	{"no-cache", 0, NULL, false, "neither look up nor store entries in a cache"},
	CMD_REMOTE_OPTIONS,
	{"opt-level", 'O', "N", false, "optimisation level 0..3, as -O0..-O3 (default 2)"},
	{"jobs", 'j', "N", false, "compile on N threads (default: the CPUs it may use, as nproc counts them)"},
	{"fast-math", 0, NULL, false, "unsafe floating-point math (finite-only device libraries)"},
	{"ftz", 0, NULL, false, "flush f32 denormals to zero (AMD: denormals-are-zero)"},
	{"debug-info", 'g', NULL, false, "keep the modules' debug info (ptxas -lineinfo); full debug info needs PTX 7.5+"},
	{"code-object", 0, "N", false,
	 "AMDGPU code object version 4, 5 or 6 (default: the module's, else 4, what HIP 5.2 loads)"},
	{"job-timeout", 0, "SECONDS", false,
	 "fail a job LLVM has compiled for this long (default 900; 0: no limit)"},
	{"job-memory", 0, "MIB", false,
	 "fail a job whose compile needs more than MIB MiB of address space (default: no limit)"},
	{"keep-going", 'k', NULL, false,
	 "with -o, write the image of every job that succeeded even when some failed (exit 5 all the same)"},
	{"link", 0, NULL, false,
	 "link every MODULE into one before compiling (relocatable device code, clang -fgpu-rdc)"},
	{"no-cubin", 0, NULL, false,
	 "NVIDIA: PTX only, do not run ptxas (keyed as on a machine without it)"},
	{"cubin-with", 0, "TOOL", false,
	 "NVIDIA: make cubins with nvjitlink (the toolkit's libnvJitLink, in process; $GPUCC_NVJITLINK names it, empty: none), ptxas, or auto: nvjitlink when found, else ptxas (default)"},
	{"language", 'x', "LANG", false,
	 "take every input not named .ll or .bc as a source in LANG: hip, cuda or cl"},
	{"include-directory", 'I', "DIR", false, "sources: add DIR to the include search path (repeatable)"},
	{"isystem", 0, "DIR", false, "sources: add DIR as a system include directory (repeatable; -isystem too)"},
	{"define", 'D', "NAME[=VALUE]", false, "sources: define a macro (repeatable)"},
	{"undefine", 'U', "NAME", false, "sources: undefine a macro, after every -D (repeatable)"},
	{"std", 0, "STD", false, "sources: the language standard (-std= too): c++17, cl2.0...; cl* for OpenCL C, others for HIP and CUDA"},
	{"include", 0, "FILE", false, "sources: include FILE first (repeatable; -include too)"},
	{"clang-arg", 0, "ARG", false, "sources: give clang ARG as well, after gpucc's own (repeatable)"},
	{"clang", 0, "PATH", false, "sources: the clang 19 to run (default: clang-19 on PATH; clang-22 for targets LLVM 19 does not know)"},
	{"no-pch", 0, NULL, false,
	 "sources: parse CUDA's and HIP's runtime prelude in every unit, not once from a precompiled header"},
	{"explain", 0, NULL, false, "print each job's key components and whether it hit (not with --json)"},
	{"dry-run", 'n', NULL, false, "compute keys and look them up; compile nothing, change no cache (not with -o)"},
	{"json", 0, NULL, false,
	 "print a JSON summary of the run and every job on stdout (not a terminal: else a line per job)"},
	{"verbose", 'v', NULL, false, "with a failure, also print LLVM's and the tools' own messages"},
	{0},
};

/* --target native: the processor of every GPU the runtimes see here, as
 * each device runs (an AMD device's sramecc and xnack modes included), as
 * clang's --offload-arch=native takes them; the runtimes are loaded only
 * then.  No GPU: the error says why, per runtime. */
static int add_native_targets(const cmd_args *args, gpucc_compile *c)
{
	gpucc_device *devices = NULL;
	size_t count = 0;
	if (gpucc_devices_list(&devices, &count) != 0)
		return cmd_error(args, EXIT_UNAVAILABLE, "--target native: %s",
		                 gpucc_error_last()->message);
	int rc = EXIT_OK;
	size_t added = 0;
	for (size_t i = 0; i < count && rc == EXIT_OK; i++) {
		/* A processor gpucc does not know is said below if none is known. */
		char name[GPUCC_TARGET_NAME_SIZE];
		if (gpucc_device_compile_target(name, &devices[i]) != 0)
			continue;
		if (gpucc_compile_add_target(c, name) != 0)
			rc = cmd_fail(args);
		added++;
	}
	if (rc == EXIT_OK && added == 0)
		rc = cmd_error(args, EXIT_UNAVAILABLE,
		               "--target native: gpucc knows the processor of no GPU here (%s)",
		               devices[0].arch);
	gpucc_free(devices);
	return rc;
}

/* Ctrl-C's clean-up, started when something needs it (cmd/interrupt.h). */
typedef struct watch_state {
	const cmd_args *args;
	const char *output;
	bool watching;
	int rc; /* cmd_interrupt_watch's, when it failed */
} watch_state;

/* Before clang runs for a source: its temporary directory, the image's
 * temporary file and the workers' directories are all watched from here. */
static bool watch_before_clang(void *ctx)
{
	watch_state *w = ctx;
	if (!w->watching && (w->rc = cmd_interrupt_watch(w->args, w->output, true)) == EXIT_OK)
		w->watching = true;
	return w->watching;
}

static int run(const cmd_args *args)
{
	gpucc_compile_options o;
	gpucc_compile_options_init(&o);
	const char *value;
	if (compile_read_numbers(args, &o) != EXIT_OK)
		return EXIT_USAGE;
	o.no_cubin = cmd_flag(args, "no-cubin");
	gpucc_cubin_tool cubin_tool = GPUCC_CUBIN_AUTO;
	if (cmd_single_value(&value, args, "cubin-with") != EXIT_OK)
		return EXIT_USAGE;
	if (value && strcmp(value, "ptxas") == 0)
		cubin_tool = GPUCC_CUBIN_PTXAS;
	else if (value && strcmp(value, "nvjitlink") == 0)
		cubin_tool = GPUCC_CUBIN_NVJITLINK;
	else if (value && strcmp(value, "auto") != 0)
		return cmd_error(args, EXIT_USAGE,
		                 "bad cubin tool '%s': expected nvjitlink, ptxas or auto", value);
	o.link_modules = cmd_flag(args, "link");
	o.no_pch = cmd_flag(args, "no-pch");
	o.keep_going = cmd_flag(args, "keep-going");
	int zstd;
	if (cmd_zstd_level(args, &zstd) != EXIT_OK)
		return EXIT_USAGE;
	o.fast_math = cmd_flag(args, "fast-math");
	o.ftz = cmd_flag(args, "ftz");
	o.debug_info = cmd_flag(args, "debug-info");
	if (cmd_value_count(args, "target") == 0)
		return cmd_error(args, EXIT_USAGE, "no target: give at least one --target");
	if (cmd_flag(args, "no-cache") && cmd_flag(args, "cache"))
		return cmd_error(args, EXIT_USAGE, "--cache and --no-cache exclude each other");
	const char *cache_dir;
	int rc = cmd_directory_value(&cache_dir, args, "cache");
	if (rc != EXIT_OK)
		return rc;
	bool json = cmd_flag(args, "json"), explain = cmd_flag(args, "explain");
	bool dry_run = cmd_flag(args, "dry-run");
	const char *output;
	if (cmd_output_value(&output, args, "output") != EXIT_OK)
		return EXIT_USAGE;
	if (json && explain)
		return cmd_error(args, EXIT_USAGE,
		                 "--explain and --json exclude each other: both print on stdout");
	if (dry_run && output)
		return cmd_error(args, EXIT_USAGE, "--dry-run writes no image: drop -o");
	if (zstd && !output)
		return cmd_error(args, EXIT_USAGE, "--zstd compresses the image: give -o");
	if (output && (rc = compile_check_output(args, output)) != EXIT_OK)
		return rc;
	char *depfile = NULL;
	if ((rc = compile_depfile_value(&depfile, args, output)) != EXIT_OK)
		return rc;

	struct timespec start, end;
	clock_gettime(CLOCK_MONOTONIC, &start);
	gpucc_cache *cache = NULL;
	gpucc_image_writer *writer = NULL;
	gpucc_compile *c = NULL;
	const char **inputs = NULL; /* borrowed from args */
	compile_progress progress = {isatty(STDERR_FILENO) && !json && !explain, false, 0, false};
	progress.lines = !progress.tty && !isatty(STDOUT_FILENO) && !json && !explain && !dry_run;
	o.progress = compile_on_progress;
	o.progress_ctx = &progress;
	/* Sources: the language -x names, and clang's arguments in the order
	 * -D, -U, -I, -isystem, -include, -std=, --clang-arg. */
	gpucc_source_language language;
	if (compile_read_language(args, &language) != EXIT_OK)
		return EXIT_USAGE;
	char std_arg[COMPILE_STD_ARG_SIZE] = "";
	size_t arg_count = 0;
	const char **clang_args = compile_clang_args(args, &arg_count, std_arg);
	if (!clang_args)
		return cmd_error(args, EXIT_FAIL, "out of memory");
	o.clang_args = clang_args;
	o.clang_arg_count = arg_count;
	o.clang = cmd_value(args, "clang");
	bool sources = false;

	if (!cmd_flag(args, "no-cache")) {
		/* A dry run leaves the cache as it was: no counters, no LRU
		 * times, no directory created. */
		if (gpucc_cache_open(&cache, cache_dir, dry_run ? GPUCC_CACHE_READ_ONLY : 0) != 0) {
			/* A cache problem never breaks a build (a cache problem is a warning). */
			fprintf(stderr, "gpucc compile: warning: compiling without a cache: %s\n",
			        gpucc_error_last()->message);
			cache = NULL;
		} else {
			gpucc_cache_set_warning_handler(cache, compile_cache_warning, &progress);
			if ((rc = cmd_configure_remotes(args, cache)) != EXIT_OK)
				goto cleanup;
		}
	}
	o.cache = cache;
	if (output) {
		gpucc_write_options wo = {.version = GPUCC_WRITE_OPTIONS_VERSION, .zstd_level = zstd};
		if (gpucc_image_writer_new(&writer, output, &wo) != 0) {
			rc = cmd_fail(args);
			goto cleanup;
		}
		o.writer = writer;
	}
	if (gpucc_compile_new(&c, &o) != 0 || gpucc_compile_set_cubin_tool(c, cubin_tool) != 0) {
		rc = cmd_fail(args);
		goto cleanup;
	}
	/* Every target is validated before anything is read or compiled. */
	for (int i = 0; i < cmd_value_count(args, "target"); i++) {
		const char *t = cmd_value_at(args, "target", i);
		if (strcmp(t, "native") == 0) {
			if ((rc = add_native_targets(args, c)) != EXIT_OK)
				goto cleanup;
		} else if (gpucc_compile_add_target(c, t) != 0) {
			rc = cmd_fail(args);
			goto cleanup;
		}
	}
	/* A file given twice, by any path or link, is one input, under the
	 * name given first. */
	size_t input_count = 0;
	inputs = calloc((size_t)args->positional_count + 1, sizeof *inputs);
	if (!inputs || gpucc_paths_distinct(inputs, &input_count,
	                                    (const char *const *)args->positional,
	                                    (size_t)args->positional_count) != 0) {
		rc = cmd_error(args, EXIT_FAIL, "out of memory");
		goto cleanup;
	}
	for (size_t i = 0; i < input_count; i++) {
		/* .ll and .bc are IR, .hip, .cu and .cl sources, and with -x
		 * every input that is not IR is a source in that language. */
		bool source;
		if (gpucc_compile_add_input(c, inputs[i], language, &source) != 0) {
			rc = cmd_fail(args);
			goto cleanup;
		}
		sources |= source;
	}
	/* clang runs while the run is planned, for the sources whose records
	 * missed: what it leaves in $TMPDIR goes with Ctrl-C too, watched
	 * from just before it starts (watch_before_clang). */
	watch_state watch = {.args = args, .output = output, .rc = EXIT_OK};
	if (sources && gpucc_compile_set_before_clang(c, watch_before_clang, &watch) != 0) {
		rc = cmd_fail(args);
		goto cleanup;
	}
	int status = gpucc_compile_plan(c);
	if (watch.rc != EXIT_OK) {
		rc = watch.rc;
		goto cleanup;
	}
	if (status == 0 && !dry_run) {
		/* Ctrl-C or a cancelled CI job leaves neither the image's
		 * temporary file nor the backend's directories in $TMPDIR.  The
		 * watching thread starts only when there is something to leave:
		 * a run whose every key hits, without -o (the hit a build system
		 * pays for again and again), does not pay for it.  No thread of
		 * the plan's is left to take a signal. */
		bool misses = false;
		for (size_t i = 0; i < gpucc_compile_result_count(c) && !misses; i++)
			misses = gpucc_compile_result_at(c, i)->status == GPUCC_COMPILE_PENDING;
		if (!watch.watching && (output || misses) &&
		    (rc = cmd_interrupt_watch(args, output, misses)) != EXIT_OK)
			goto cleanup;
		status = gpucc_compile_run(c);
	}
	if (progress.drawn)
		fputc('\n', stderr);
	clock_gettime(CLOCK_MONOTONIC, &end);
	double seconds = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
	size_t count = gpucc_compile_result_count(c);
	if (status != 0 && count == 0) {
		rc = cmd_fail(args);
		goto cleanup;
	}
	const gpucc_compile_result *first_failed = compile_put_results(c, cmd_flag(args, "verbose"));
	/* Planning reports failed jobs in their results only: a dry run exits
	 * as the real run would, with the first failed job's code. */
	if (status == 0 && first_failed)
		status = first_failed->error_code;
	if (explain)
		compile_print_explain(c);
	/* With --keep-going the image holds what succeeded; the exit code
	 * still says that something failed. */
	bool commit = status == 0 || (o.keep_going && first_failed && count);
	if (commit && writer && gpucc_image_writer_commit(writer) != 0) {
		status = gpucc_error_last()->code ? gpucc_error_last()->code : GPUCC_ERROR;
		first_failed = NULL;
	} else if (commit && writer && depfile &&
	           gpucc_compile_write_depfile(c, depfile, output) != 0) {
		/* The image is written; the rule that says what it was made
		 * of is not, which a build must hear of. */
		status = gpucc_error_last()->code ? gpucc_error_last()->code : GPUCC_ERROR;
		first_failed = NULL;
	}
	if (json)
		compile_print_json(c, status == 0 ? output : NULL, seconds, dry_run);
	if (status != 0 && first_failed) {
		rc = cmd_exit_code(first_failed->error_code); /* the lines above said why */
	} else if (status != 0) {
		/* No job failed: the writer's reason. */
		const gpucc_error *e = gpucc_error_last();
		rc = cmd_exit_code(e->code ? e->code : status);
		fprintf(stderr, "gpucc compile: %s\n", e->message);
	}
	/* After every message of the run's: uploads report through the
	 * cache's warnings and never change the exit code. */
	cmd_upload_compiled(c, cache);

cleanup:
	gpucc_image_writer_free(writer);
	gpucc_compile_free(c);
	gpucc_cache_free(cache);
	free(clang_args);
	free(inputs);
	free(depfile);
	return rc;
}

const cmd_spec cmd_compile_spec = {
	.name = "compile",
	.synopsis = "MODULE|SOURCE... --target T [--target T...] [-o IMAGE] [--cache DIR | --no-cache] "
	            "[-O0..-O3] [-j N] [--json]",
	.summary = "compile LLVM IR modules to PTX, cubins and AMDGPU code objects, through the cache",
	.description =
		"Every MODULE (.ll text or .bc bitcode, as clang -emit-llvm writes from HIP,\n"
		"CUDA or OpenCL C) is compiled for every --target into one entry, in a worker\n"
		"process through one of gpucc's LLVM backends, with the device libraries it\n"
		"calls linked as clang links\n"
		"them: libdevice (CUDA toolkit: $CUDA_PATH, /usr/local/cuda); the ROCm device\n"
		"libraries with hip.bc, the module's wave size and an ISA version library\n"
		"gpucc writes; libclc (/usr/lib/clc) for OpenCL builtins.  NVIDIA targets give\n"
		"PTX and a cubin (--cubin-with: libnvJitLink in process when found, else\n"
		"ptxas; PTX only, with a warning, for a target the tool does not know); AMD\n"
		"targets a code object linked by the LLD of the backend's LLVM (LLD 19 for\n"
		"LLVM 19, LLD 22 for LLVM 22).  docs/compile.md says what is refused and why.\n"
		"\n"
		"A target takes from the module what its spelling leaves open: sm_90 the highest\n"
		"PTX ISA the module's functions ask for (clang's +ptx85), gfx targets the\n"
		"module's amdhsa_code_object_version unless --code-object is given (v4 when the\n"
		"module names none: HIP 5.2 loads v4, ROCm 6 v5).  A spelling or --code-object\n"
		"that the module contradicts is refused, naming what would compile it.  A module\n"
		"for the other vendor (its triple) or another processor (its functions'\n"
		"\"target-cpu\") is skipped for that target, so one run builds every\n"
		"architecture's modules into one image; it is an error when no target fits.\n"
		"--link links every MODULE into one first (relocatable device code, clang\n"
		"-fgpu-rdc).  clang -O0 output (optnone) stays unoptimised, with a warning.  A\n"
		"failure is one line naming module and target; --verbose adds LLVM's own lines.\n"
		"Any error LLVM reports fails its job.  One backend per LLVM major (below): a\n"
		"job gets the newest that knows its target, unless --llvm N pins one; the entry\n"
		"records it, its key covers it.\n"
		"\n"
		"Sources (.hip, .cu, .cl; -x LANG) go through clang-19 (clang-22 for newer\n"
		"targets) to IR for each target their language serves, then compile as\n"
		"modules; records of the files clang read, of the places its include search\n"
		"found empty and of the environment it reads lead to its entries again without\n"
		"it (docs/compile.md, \"Sources\").  A unit of host code only is a warning.\n"
		"Hits replay their compile's warnings.",
	.more =
		"Keys are computed without LLVM (formats/key.md): a run where every key is cached\n"
		"never loads it.  Entries go into the cache (see `gpucc cache`) as they are\n"
		"compiled, and with -o into an image, written only when every job succeeded.\n"
		"A failed job stops no other: each compiles in a worker process, so that LLVM\n"
		"crashing, aborting or passing --job-timeout fails that job alone (\"LLVM\n"
		"crashed (SIGSEGV)\"); every failure is reported, what compiled is cached,\n"
		"and with --keep-going written to -o (exit 5 all the same).  The image replaces any file of that name atomically; -o may not name\n"
		"a module, and its directory must take a new file, both checked first.\n"
		"Ctrl-C, SIGTERM or SIGHUP leaves no temporary file beside the image and none\n"
		"in $TMPDIR.\n"
		"Remote caches (--remote, $GPUCC_REMOTE): docs/remote-cache.md.\n"
		"CUDA and HIP sources read clang's runtime prelude from a precompiled header made\n"
		"once per command line and kept in the cache, never changing their IR; --no-pch\n"
		"parses it in every unit (docs/compile.md, \"The precompiled prelude\").\n"
		"--depfile (-MD, -MF) writes, with the image, a make rule naming it and every\n"
		"file it was made from, the same on a hit (docs/compile.md, \"Dependency files\").\n"
		"\n"
		"A MODULE must be a regular file (not a directory or FIFO; `-` is a file of\n"
		"that name).  A file given twice, by any path or link, is one module, under the\n"
		"name given first; a target given twice is one target.  Control characters in\n"
		"names are escaped (\\n, \\xHH) in text output, in LLVM's messages too.\n"
		"Fast-math, FTZ, debug info, the code object version, -O and the ptxas,\n"
		"nvJitLink and ld.lld versions are part of the key; module names are not (a hit is recorded\n"
		"under this run's name).  A bare --zstd is level 3, as for every command and\n"
		"zstd's own; --zstd=19 gives a smaller image for shipping, at a cost of about\n"
		"90 MiB of tables and a second or more per 10 MB.\n"
		"\n"
		"exit codes: 0 success, 1 a read or write failed (-o's directory is not\n"
		"writable, say), 5 a module failed to compile (errors name module and target),\n"
		"6 a tool or library is absent (LLVM backend, libdevice, LLD 19, clang-19) or the\n"
		"backend's LLVM is not the one gpucc was built with, 2 a module file or -o's\n"
		"directory does not exist (or is not a directory), 3 an unknown target (or one\n"
		"no backend knows, or bitcode too new for it), a\n"
		"module that is not a regular file or whose name is too long to open, or an\n"
		"-o that names a directory or is too long, 129 usage (-o naming a module or in\n"
		"/proc, a malformed option value, among others).  With --dry-run, a job that fails while planning gives the code the\n"
		"real run would, and no cache is changed.",
	.options = options,
	.min_positional = 1,
	.max_positional = -1,
	.run = run,
};
