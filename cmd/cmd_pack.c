/*
 * cmd/cmd_pack.c -- `gpucc pack -o IMAGE`: build an image from payload files
 * that already exist (made by hand, by llc, by another tool) and metadata the
 * user gives, for tests, fixtures and hand-made images.
 *
 * Two ways to describe the entries:
 *
 *   gpucc pack -o OUT.gpucc [--zstd[=LEVEL]] SPEC.json
 *
 *     SPEC.json = {"entries": [ENTRY, ...]}, each ENTRY an object:
 *       "module"        module name (informational); default: the base name
 *                       of module_file
 *       "module_file"   the input module; its SHA-256 is the module digest
 *       "module_sha256" or the digest itself, 64 hex digits
 *       "target"        e.g. "sm_90", "gfx90a:xnack-" (stored canonically)
 *       "options"       {"name": "value", ...}; values strings or integers
 *       "kernels"       ["name", ...] or [{"name": ..., "registers": N,
 *                       "shared_bytes": N, "scratch_bytes": N}, ...]
 *       "externals"     ["symbol", ...]
 *       "device_libs"   [{"name": ..., "sha256": hex} or {"file": path
 *                       [, "name": ...]}, ...]
 *       "ptx", "cubin", "hsaco", "bitcode"   payload files
 *       "gpucc_version", "llvm_version"      default: this gpucc's and LLVM's
 *       "comment"       ignored
 *     Paths are relative to the spec file's directory.  Unknown fields, and
 *     fields given twice, are errors, so that nothing is silently dropped.
 *
 *   gpucc pack -o OUT.gpucc --module FILE --target T --kernel K [--ptx F] ...
 *
 *     one entry, from flags with the same meaning (repeat --kernel, --option
 *     NAME=VALUE, --device-lib FILE and --external SYM).
 *
 * Every input file must be a regular file (a FIFO or a device is refused,
 * not waited on or read forever), and -o may not name one of them: the
 * rename at commit would replace it, and inputs are never modified.
 *
 * Either way the description becomes a gpucc_entry_files, and libgpucc
 * builds the entry (gpucc_image_writer_add_files: inputs opened and
 * checked, the module and device libraries hashed, each cubin and code
 * object checked, the entry put in canonical form and keyed); the image is
 * published atomically by the image writer.  Member times come from
 * SOURCE_DATE_EPOCH (or 0), so one set of inputs always gives the same
 * bytes.  This file reads the command line, cmd/pack_spec.c a spec file.
 */
#include "pack.h"

#include <gpucc.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const cmd_option pack_options[] = {
	{"output", 'o', "IMAGE", false, "the image to write (required)"},
	{"zstd", 0, "LEVEL", true, CMD_ZSTD_HELP},
	{"module", 'm', "FILE", false, "entry's input module; its SHA-256 goes into the key"},
	{"module-sha256", 0, "HEX", false, "the input module's SHA-256, instead of --module"},
	{"module-name", 0, "NAME", false, "module name to record (default: base name of --module)"},
	{"target", 't', "TARGET", false, "sm_XY[a][:ptxNN] or gfxNNN[:sramecc+|-][:xnack+|-]"},
	{"kernel", 'k', "NAME", false, "a kernel of the module (repeatable, in order)"},
	{"option", 'O', "NAME=VALUE", false, "a compile option (repeatable)"},
	{"device-lib", 0, "FILE", false, "a linked device library (repeatable)"},
	{"external", 0, "SYMBOL", false, "a symbol the loader must resolve (repeatable)"},
	{"ptx", 0, "FILE", false, "the PTX payload"},
	{"cubin", 0, "FILE", false, "the cubin payload"},
	{"hsaco", 0, "FILE", false, "the AMDGPU code object payload"},
	{"bitcode", 0, "FILE", false, "the input module as bitcode"},
	{"gpucc-version", 0, "VERSION", false, "toolchain identity to record (default: this gpucc)"},
	{"llvm-version", 0, "VERSION", false, "LLVM version to record (default: the backend's)"},
	{0},
};

/* Option names of the one-entry form, which a spec file replaces. */
static const char *const entry_flags[] = {
	"module", "module-sha256", "module-name", "target", "kernel", "option", "device-lib",
	"external", "ptx", "cubin", "hsaco", "bitcode", "gpucc-version", "llvm-version", NULL,
};

/* ---- messages ------------------------------------------------------------ */

int pack_error(pack_state *st, int code, const char *fmt, ...)
{
	/* One line, whatever the names in it hold (cmd_put_shown). */
	char *message = NULL;
	va_list ap;
	va_start(ap, fmt);
	int len = vasprintf(&message, fmt, ap);
	va_end(ap);
	fprintf(stderr, "gpucc pack: ");
	if (st->where) {
		cmd_put_shown(stderr, st->where);
		fputs(": ", stderr);
	}
	cmd_put_shown(stderr, len < 0 ? "out of memory" : message);
	if (code == EXIT_USAGE) /* as cmd_error ends every usage error */
		fputs(" (see 'gpucc pack -h')", stderr);
	fputc('\n', stderr);
	if (len >= 0)
		free(message);
	return code;
}

/* The last libgpucc error, in the context of the entry being read. */
int pack_fail(pack_state *st)
{
	const gpucc_error *e = gpucc_error_last();
	return pack_error(st, cmd_exit_code(e->code ? e->code : GPUCC_ERROR), "%s", e->message);
}

int pack_out_of_memory(pack_state *st)
{
	return pack_error(st, EXIT_FAIL, "out of memory");
}

/* Keep s (malloc'd) in o until the entry is added; NULL on failure (s is
 * freed). */
char *pack_keep(owned_strings *o, char *s)
{
	if (!s)
		return NULL;
	if (o->count == o->capacity) {
		size_t capacity = o->capacity ? o->capacity * 2 : 16;
		char **grown = realloc(o->items, capacity * sizeof *grown);
		if (!grown) {
			free(s);
			return NULL;
		}
		o->items = grown;
		o->capacity = capacity;
	}
	return o->items[o->count++] = s;
}

void pack_strings_release(owned_strings *o)
{
	for (size_t i = 0; i < o->count; i++)
		free(o->items[i]);
	free(o->items);
	memset(o, 0, sizeof *o);
}

/* ---- adding one entry ------------------------------------------------------ */

/* Refuse an input that -o names (the rename at commit would replace it),
 * before libgpucc opens it: a usage error, said in the command's words. */
static int check_not_output(pack_state *st, const char *path)
{
	if (path && gpucc_output_is_input(st->output, path))
		return pack_error(st, EXIT_USAGE,
		                  "-o '%s' names the input '%s': write the image elsewhere", st->output,
		                  path);
	return EXIT_OK;
}

/* Two entries of a spec with one key and other contents: name both (the
 * writer's own message names only the image being written). */
static int spec_conflict(pack_state *st, const gpucc_digest *key)
{
	size_t first = 0;
	while (first < st->key_count && gpucc_digest_compare(&st->keys[first], key) != 0)
		first++;
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, key);
	return pack_error(st, cmd_exit_code(GPUCC_ECONFLICT),
	                  "conflict: key %s is also entries[%zu]'s, with other contents", hex, first);
}

/* Hand the entry f describes to libgpucc, which builds it, keys it and
 * adds it to the writer (gpucc_image_writer_add_files). */
int pack_add(pack_state *st, const gpucc_entry_files *f)
{
	int rc = check_not_output(st, f->module_file);
	for (size_t i = 0; rc == EXIT_OK && i < f->device_lib_count; i++)
		rc = check_not_output(st, f->device_libs[i].file);
	for (int p = 0; rc == EXIT_OK && p < GPUCC_PART_COUNT; p++)
		rc = check_not_output(st, f->payloads[p]);
	if (rc != EXIT_OK)
		return rc;
	gpucc_digest key;
	if (gpucc_image_writer_add_files(st->writer, f, &key) != 0) {
		if (gpucc_error_last()->code == GPUCC_ECONFLICT && st->keys)
			return spec_conflict(st, &key);
		return pack_fail(st);
	}
	if (st->keys)
		st->keys[st->key_count++] = key;
	return EXIT_OK;
}

/* ---- the one-entry form ---------------------------------------------------- */

static int pack_from_flags(pack_state *st)
{
	const cmd_args *args = st->args;
	static const char *const single[] = {
		"module", "module-sha256", "module-name", "target", "ptx", "cubin", "hsaco",
		"bitcode", "gpucc-version", "llvm-version", NULL,
	};
	for (int i = 0; single[i]; i++)
		if (cmd_value_count(args, single[i]) > 1)
			return cmd_error(args, EXIT_USAGE, "option '--%s' given more than once", single[i]);
	if (cmd_flag(args, "module") == cmd_flag(args, "module-sha256"))
		return cmd_error(args, EXIT_USAGE, "give a spec file, or one of '--module' and '--module-sha256'");
	if (cmd_flag(args, "module-sha256") && !cmd_flag(args, "module-name"))
		return cmd_error(args, EXIT_USAGE, "'--module-sha256' needs '--module-name'");
	if (!cmd_flag(args, "target"))
		return cmd_error(args, EXIT_USAGE, "missing option '--target'");
	for (int i = 0; i < cmd_value_count(args, "option"); i++)
		if (!strchr(cmd_value_at(args, "option", i), '='))
			return cmd_error(args, EXIT_USAGE, "option '%s' is not NAME=VALUE",
			                 cmd_value_at(args, "option", i));

	gpucc_entry_files f = GPUCC_ENTRY_FILES_INIT;
	f.module = cmd_value(args, "module-name");
	f.module_file = cmd_value(args, "module");
	f.module_sha256 = cmd_value(args, "module-sha256");
	f.target = cmd_value(args, "target");
	f.gpucc_version = cmd_value(args, "gpucc-version");
	f.llvm_version = cmd_value(args, "llvm-version");
	f.kernel_count = (size_t)cmd_value_count(args, "kernel");
	f.option_count = (size_t)cmd_value_count(args, "option");
	f.device_lib_count = (size_t)cmd_value_count(args, "device-lib");
	f.external_count = (size_t)cmd_value_count(args, "external");
	gpucc_kernel *kernels = calloc(f.kernel_count + 1, sizeof *kernels);
	gpucc_option *options = calloc(f.option_count + 1, sizeof *options);
	gpucc_device_lib_file *libs = calloc(f.device_lib_count + 1, sizeof *libs);
	const char **externals = calloc(f.external_count + 1, sizeof *externals);
	owned_strings names = {0};
	int rc = kernels && options && libs && externals ? EXIT_OK : pack_out_of_memory(st);
	for (size_t i = 0; rc == EXIT_OK && i < f.kernel_count; i++)
		kernels[i] = (gpucc_kernel){cmd_value_at(args, "kernel", (int)i), -1, -1, -1};
	for (size_t i = 0; rc == EXIT_OK && i < f.option_count; i++) {
		const char *nv = cmd_value_at(args, "option", (int)i);
		const char *eq = strchr(nv, '=');
		options[i].name = pack_keep(&names, strndup(nv, (size_t)(eq - nv)));
		options[i].value = eq + 1;
		if (!options[i].name)
			rc = pack_out_of_memory(st);
	}
	for (size_t i = 0; rc == EXIT_OK && i < f.device_lib_count; i++)
		libs[i].file = cmd_value_at(args, "device-lib", (int)i);
	for (size_t i = 0; rc == EXIT_OK && i < f.external_count; i++)
		externals[i] = cmd_value_at(args, "external", (int)i);
	for (int p = 0; p < GPUCC_PART_COUNT; p++)
		f.payloads[p] = cmd_value(args, gpucc_part_name((gpucc_part)p));
	f.kernels = kernels;
	f.options = options;
	f.device_libs = libs;
	f.externals = externals;
	if (rc == EXIT_OK)
		rc = pack_add(st, &f);
	pack_strings_release(&names);
	free(kernels);
	free(options);
	free(libs);
	free(externals);
	return rc;
}

/* ---- the command ------------------------------------------------------------ */

static int run_pack(const cmd_args *args)
{
	pack_state st = {.args = args};
	gpucc_write_options opts = GPUCC_WRITE_OPTIONS_INIT;
	const char *output;
	const char *spec_file = args->positional_count ? args->positional[0] : NULL;
	int rc;
	if (cmd_output_value(&output, args, "output") != EXIT_OK)
		return EXIT_USAGE;

	if (!output || !*output)
		return cmd_error(args, EXIT_USAGE, "missing option '-o IMAGE'");
	if (cmd_zstd_level(args, &opts.zstd_level) != EXIT_OK)
		return EXIT_USAGE;
	if (spec_file) {
		for (int i = 0; entry_flags[i]; i++)
			if (cmd_flag(args, entry_flags[i]))
				return cmd_error(args, EXIT_USAGE,
				                 "option '--%s' cannot be combined with a spec file",
				                 entry_flags[i]);
	}
	if ((rc = cmd_output_creatable(args, output)) != EXIT_OK)
		return rc;

	st.output = output;
	if (gpucc_image_writer_new(&st.writer, output, &opts) != 0)
		return cmd_fail(args);
	rc = spec_file ? pack_from_spec(&st, spec_file) : pack_from_flags(&st);
	if (rc == EXIT_OK && gpucc_image_writer_commit(st.writer) != 0)
		rc = cmd_fail(args);
	gpucc_image_writer_free(st.writer);
	free(st.keys);
	return rc;
}

const cmd_spec cmd_pack_spec = {
	.name = "pack",
	.synopsis = "-o IMAGE [--zstd[=LEVEL]] (SPEC.json | --module FILE --target T [options])",
	.summary = "build an image from existing payload files",
	.description =
		"SPEC.json is {\"entries\": [ENTRY, ...]}; each ENTRY is an object with\n"
		"  \"module_file\": path (its SHA-256 goes into the key) or \"module_sha256\": hex,\n"
		"  \"module\": name (default: base name of module_file), \"target\": \"sm_90\",\n"
		"  \"kernels\": [\"k\", ...] or [{\"name\", \"registers\", \"shared_bytes\",\n"
		"  \"scratch_bytes\"}, ...], \"options\": {\"name\": \"value\"}, \"externals\": [...],\n"
		"  \"device_libs\": [{\"name\", \"sha256\"} or {\"file\"}], payload files \"ptx\",\n"
		"  \"cubin\", \"hsaco\", \"bitcode\", and optionally \"gpucc_version\",\n"
		"  \"llvm_version\" and \"comment\".  Paths are relative to the spec file.\n"
		"Without SPEC.json the flags below describe one entry.  A module name taken\n"
		"from a file's name has its control characters and bytes that are not UTF-8\n"
		"spelt \\xHH (\\n, \\t); a name given that no manifest can carry is\n"
		"refused (exit 3), as is such a kernel, external or option (formats/manifest.md).\n"
		"\n"
		"Targets are stored in canonical spelling, options, device libraries and\n"
		"externals sorted by name, and the key computed by libgpucc.  The image is\n"
		"written to a temporary file and renamed into place; member times come from\n"
		"SOURCE_DATE_EPOCH (or 0), so the same inputs always give the same bytes.\n"
		"Every input (spec, module, device library, payload) must be a regular file,\n"
		"and -o may not name one of them.  A field given twice is an error.\n"
		"A cubin or hsaco that is an ELF must be one its runtime loads: an executable\n"
		"cubin (not ptxas -c's relocatable one), a linked AMDGPU code object (ld.lld\n"
		"-shared), neither for the other vendor; bytes that are no ELF are taken as\n"
		"given.\n"
		"--zstd without a level uses 3, as every command and zstd itself do; reading\n"
		"is as fast at any level.  --zstd=19 gives a smaller image to ship, but sets\n"
		"up about 90 MiB of tables, a quarter of a second even for a small image.",
	.options = pack_options,
	.min_positional = 0,
	.max_positional = 1,
	.run = run_pack,
};
