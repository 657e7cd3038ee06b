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
 * Either way libgpucc puts the entry in canonical form and keys it
 * (gpucc_entry_prepare: the target's canonical spelling and triple, options,
 * device libraries and externals sorted by name, this gpucc's key schema)
 * and checks each cubin and code object (gpucc_code_object_check); the
 * image is published
 * atomically by the image writer.  Member times come from SOURCE_DATE_EPOCH
 * (or 0), so one set of inputs always gives the same bytes.
 */
#include "cmd.h"

#include <gpucc.h>

#include <cJSON.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SPEC_MAX_SIZE ((size_t)64 << 20)

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

typedef struct pack_state {
	const cmd_args *args;
	gpucc_image_writer *writer;
	char *where;         /* "'pack.json': entries[2]" while reading a spec */
	gpucc_digest *keys;  /* the key of every spec entry added, by index */
	size_t key_count;
	char **owned;        /* strings that must live until commit */
	size_t owned_count, owned_capacity;
	const char *output;
	bool output_exists;  /* and then its identity: */
	dev_t output_dev;
	ino_t output_ino;
} pack_state;

/* One entry being described: the gpucc_entry handed to the writer and the
 * arrays it points to. */
typedef struct entry_builder {
	gpucc_entry e;
	bool has_module;
	char target[GPUCC_TARGET_NAME_SIZE];
	gpucc_option *options;
	gpucc_kernel *kernels;
	gpucc_device_lib *libs;
	const char **externals;
	gpucc_payload_source sources[GPUCC_PART_COUNT];
	size_t source_count;
} entry_builder;

/* ---- messages ------------------------------------------------------------ */

static int pack_error(pack_state *st, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int pack_error(pack_state *st, int code, const char *fmt, ...)
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
static int pack_fail(pack_state *st)
{
	const gpucc_error *e = gpucc_error_last();
	return pack_error(st, cmd_exit_code(e->code ? e->code : GPUCC_ERROR), "%s", e->message);
}

static int out_of_memory(pack_state *st)
{
	return pack_error(st, EXIT_FAIL, "out of memory");
}

/* Keep s (malloc'd) alive until the end; NULL on failure (s is freed). */
static char *keep(pack_state *st, char *s)
{
	if (!s)
		return NULL;
	if (st->owned_count == st->owned_capacity) {
		size_t capacity = st->owned_capacity ? st->owned_capacity * 2 : 16;
		char **grown = realloc(st->owned, capacity * sizeof *grown);
		if (!grown) {
			free(s);
			return NULL;
		}
		st->owned = grown;
		st->owned_capacity = capacity;
	}
	return st->owned[st->owned_count++] = s;
}

/* ---- input files ------------------------------------------------------------ */

/* Check the input file at path before it is read: it must be a regular file
 * (a FIFO would be waited on, /dev/zero read forever; O_NONBLOCK lets the
 * open of a FIFO return so that it can be refused), and not the output,
 * which the rename at commit would replace (inputs are never modified).
 * With fd_out, the file is left open there for reading; otherwise closed. */
static int check_input(pack_state *st, const char *path, int *fd_out)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		char message[512];
		int code = cmd_open_failure(message, sizeof message, path, errno);
		return pack_error(st, code, "%s", message);
	}
	struct stat in;
	int rc = EXIT_OK;
	if (fstat(fd, &in) != 0)
		rc = pack_error(st, EXIT_FAIL, "cannot read '%s': %s", path, strerror(errno));
	else if (!S_ISREG(in.st_mode))
		rc = pack_error(st, EXIT_BAD_INPUT, "'%s' is %s, not a regular file", path,
		                S_ISDIR(in.st_mode) ? "a directory" : "a FIFO, socket or device");
	else if (st->output_exists && in.st_dev == st->output_dev && in.st_ino == st->output_ino)
		rc = pack_error(st, EXIT_USAGE,
		                "-o '%s' names the input '%s': write the image elsewhere", st->output,
		                path);
	if (rc == EXIT_OK && fd_out && fcntl(fd, F_SETFL, 0) == 0) {
		*fd_out = fd;
		return EXIT_OK;
	}
	if (rc == EXIT_OK && fd_out)
		rc = pack_error(st, EXIT_FAIL, "cannot read '%s': %s", path, strerror(errno));
	close(fd);
	return rc;
}

/* ---- building one entry --------------------------------------------------- */

static void builder_release(entry_builder *b)
{
	free(b->options);
	free(b->kernels);
	free(b->libs);
	free(b->externals);
	memset(b, 0, sizeof *b);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static int set_module_file(pack_state *st, entry_builder *b, const char *path)
{
	int rc = check_input(st, path, NULL);
	if (rc != EXIT_OK)
		return rc;
	if (gpucc_digest_file(&b->e.module_sha256, NULL, path) != 0)
		return pack_fail(st);
	/* A name taken from a file name is spelt as manifests record one (a
	 * control character or a byte that is not UTF-8 as \xHH); one given
	 * (--module-name, "module") is the user's, and refused if no manifest
	 * can carry it. */
	char *name = NULL;
	if (!b->e.module) {
		if (gpucc_module_name_from_path(&name, path) != 0)
			return out_of_memory(st);
		b->e.module = keep(st, strdup(name)); /* kept strings are free()d */
		gpucc_free(name);
		if (!b->e.module)
			return out_of_memory(st);
	}
	b->has_module = true;
	return EXIT_OK;
}

static int set_module_sha256(pack_state *st, entry_builder *b, const char *hex)
{
	if (gpucc_digest_from_hex(&b->e.module_sha256, hex) != 0)
		return pack_error(st, EXIT_BAD_INPUT,
		                  "module SHA-256 '%s' is not 64 hex digits", hex);
	b->has_module = true;
	return EXIT_OK;
}

static int set_target(pack_state *st, entry_builder *b, const char *spelling)
{
	gpucc_target t;
	if (gpucc_target_parse(&t, spelling) != 0)
		return pack_fail(st);
	gpucc_target_format(b->target, &t);
	b->e.target = b->target;
	b->e.triple = gpucc_target_triple(&t);
	return EXIT_OK;
}

static int add_kernel(pack_state *st, entry_builder *b, const gpucc_kernel *k)
{
	if (!k->name || !*k->name)
		return pack_error(st, EXIT_BAD_INPUT, "a kernel name is empty");
	gpucc_kernel *grown = realloc(b->kernels, (b->e.kernel_count + 1) * sizeof *grown);
	if (!grown)
		return out_of_memory(st);
	grown[b->e.kernel_count++] = *k;
	b->kernels = grown;
	b->e.kernels = grown;
	return EXIT_OK;
}

static int add_option(pack_state *st, entry_builder *b, const char *name, const char *value)
{
	if (!*name)
		return pack_error(st, EXIT_BAD_INPUT, "an option name is empty");
	gpucc_option *grown = realloc(b->options, (b->e.option_count + 1) * sizeof *grown);
	if (!grown)
		return out_of_memory(st);
	grown[b->e.option_count++] = (gpucc_option){name, value};
	b->options = grown;
	b->e.options = grown;
	return EXIT_OK;
}

/* A device library from a file (name defaults to its base name). */
static int add_device_lib_file(pack_state *st, entry_builder *b, const char *name,
                               const char *path)
{
	gpucc_device_lib lib = {.name = name ? name : base_name(path)};
	int rc = check_input(st, path, NULL);
	if (rc != EXIT_OK)
		return rc;
	if (gpucc_digest_file(&lib.sha256, NULL, path) != 0)
		return pack_fail(st);
	if (!*lib.name)
		return pack_error(st, EXIT_BAD_INPUT, "a device library name is empty");
	gpucc_device_lib *grown = realloc(b->libs, (b->e.device_lib_count + 1) * sizeof *grown);
	if (!grown)
		return out_of_memory(st);
	grown[b->e.device_lib_count++] = lib;
	b->libs = grown;
	b->e.device_libs = grown;
	return EXIT_OK;
}

static int add_device_lib_digest(pack_state *st, entry_builder *b, const char *name,
                                 const char *hex)
{
	gpucc_device_lib lib = {.name = name};
	if (!*name)
		return pack_error(st, EXIT_BAD_INPUT, "a device library name is empty");
	if (gpucc_digest_from_hex(&lib.sha256, hex) != 0)
		return pack_error(st, EXIT_BAD_INPUT,
		                  "device library '%s': SHA-256 '%s' is not 64 hex digits", name, hex);
	gpucc_device_lib *grown = realloc(b->libs, (b->e.device_lib_count + 1) * sizeof *grown);
	if (!grown)
		return out_of_memory(st);
	grown[b->e.device_lib_count++] = lib;
	b->libs = grown;
	b->e.device_libs = grown;
	return EXIT_OK;
}

static int add_external(pack_state *st, entry_builder *b, const char *symbol)
{
	if (!*symbol)
		return pack_error(st, EXIT_BAD_INPUT, "an external symbol name is empty");
	const char **grown = realloc(b->externals, (b->e.external_count + 1) * sizeof *grown);
	if (!grown)
		return out_of_memory(st);
	grown[b->e.external_count++] = symbol;
	b->externals = grown;
	b->e.externals = grown;
	return EXIT_OK;
}

static int add_payload(pack_state *st, entry_builder *b, gpucc_part part, const char *path)
{
	for (size_t i = 0; i < b->source_count; i++)
		if (b->sources[i].part == part)
			return pack_error(st, EXIT_BAD_INPUT, "two %s payloads", gpucc_part_name(part));
	bool code = part == GPUCC_PART_CUBIN || part == GPUCC_PART_HSACO;
	int fd = -1;
	int rc = check_input(st, path, code ? &fd : NULL);
	if (rc == EXIT_OK && code && gpucc_code_object_check(part, fd, path) != 0)
		rc = pack_fail(st);
	if (fd >= 0)
		close(fd);
	if (rc != EXIT_OK)
		return rc;
	b->sources[b->source_count++] = (gpucc_payload_source){.part = part, .path = path};
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

/* Check the entry, put it in canonical form and key it
 * (gpucc_entry_prepare), and hand it to the writer. */
static int finish_entry(pack_state *st, entry_builder *b)
{
	gpucc_entry *e = &b->e;
	if (!b->has_module)
		return pack_error(st, EXIT_BAD_INPUT, "no module: give a module file or its SHA-256");
	if (gpucc_entry_prepare(e, b->sources, b->source_count) != 0)
		return pack_fail(st);
	if (gpucc_image_writer_add(st->writer, e, b->sources, b->source_count) != 0) {
		if (gpucc_error_last()->code == GPUCC_ECONFLICT && st->keys)
			return spec_conflict(st, &e->key);
		return pack_fail(st);
	}
	if (st->keys)
		st->keys[st->key_count++] = e->key;
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

	entry_builder b = {0};
	int rc;
	b.e.module = cmd_value(args, "module-name");
	b.e.gpucc_version = cmd_value(args, "gpucc-version");
	b.e.llvm_version = cmd_value(args, "llvm-version");
	if (cmd_flag(args, "module"))
		rc = set_module_file(st, &b, cmd_value(args, "module"));
	else
		rc = set_module_sha256(st, &b, cmd_value(args, "module-sha256"));
	if (rc == EXIT_OK)
		rc = set_target(st, &b, cmd_value(args, "target"));
	for (int i = 0; rc == EXIT_OK && i < cmd_value_count(args, "kernel"); i++) {
		gpucc_kernel k = {cmd_value_at(args, "kernel", i), -1, -1, -1};
		rc = add_kernel(st, &b, &k);
	}
	for (int i = 0; rc == EXIT_OK && i < cmd_value_count(args, "option"); i++) {
		const char *nv = cmd_value_at(args, "option", i);
		const char *eq = strchr(nv, '=');
		char *name = keep(st, strndup(nv, (size_t)(eq - nv)));
		rc = name ? add_option(st, &b, name, eq + 1) : out_of_memory(st);
	}
	for (int i = 0; rc == EXIT_OK && i < cmd_value_count(args, "device-lib"); i++)
		rc = add_device_lib_file(st, &b, NULL, cmd_value_at(args, "device-lib", i));
	for (int i = 0; rc == EXIT_OK && i < cmd_value_count(args, "external"); i++)
		rc = add_external(st, &b, cmd_value_at(args, "external", i));
	for (int p = 0; rc == EXIT_OK && p < GPUCC_PART_COUNT; p++) {
		const char *path = cmd_value(args, gpucc_part_name((gpucc_part)p));
		if (path)
			rc = add_payload(st, &b, (gpucc_part)p, path);
	}
	if (rc == EXIT_OK)
		rc = finish_entry(st, &b);
	builder_release(&b);
	return rc;
}

/* ---- the spec file form ---------------------------------------------------- */

typedef struct spec_reader {
	pack_state *st;
	const char *path; /* the spec file, as given */
	char *dir;        /* its directory, for relative paths */
} spec_reader;

/* A path from the spec, relative to the spec's directory; kept until commit. */
static const char *spec_path(spec_reader *r, const char *path)
{
	if (path[0] == '/')
		return path;
	size_t len = strlen(r->dir) + 1 + strlen(path) + 1;
	char *joined = malloc(len);
	if (joined)
		snprintf(joined, len, "%s/%s", r->dir, path);
	return keep(r->st, joined);
}

/* field of object as a non-empty string, or NULL when absent; *rc set to an
 * exit code when present but not a string. */
static const char *string_field(spec_reader *r, const cJSON *object, const char *field, int *rc)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, field);
	if (!item)
		return NULL;
	if (!cJSON_IsString(item) || !item->valuestring[0]) {
		*rc = pack_error(r->st, EXIT_BAD_INPUT, "'%s' must be a non-empty string", field);
		return NULL;
	}
	return item->valuestring;
}

/* A non-negative integer resource count (or -1 when absent). */
static int count_field(spec_reader *r, const cJSON *object, const char *field, int64_t *out)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, field);
	*out = -1;
	if (!item || cJSON_IsNull(item))
		return EXIT_OK;
	double v = cJSON_IsNumber(item) ? item->valuedouble : -1;
	if (v < 0 || v > 9007199254740992.0 || v != (double)(int64_t)v)
		return pack_error(r->st, EXIT_BAD_INPUT, "kernel '%s' must be a non-negative integer",
		                  field);
	*out = (int64_t)v;
	return EXIT_OK;
}

static int check_fields(spec_reader *r, const cJSON *object, const char *what,
                        const char *const *known)
{
	for (const cJSON *item = object->child; item; item = item->next) {
		bool ok = false;
		for (int i = 0; known[i] && !ok; i++)
			ok = strcmp(item->string, known[i]) == 0;
		if (!ok)
			return pack_error(r->st, EXIT_BAD_INPUT, "unknown %s field '%s'", what, item->string);
		/* cJSON keeps both of {"ptx": "a", "ptx": "b"} and lookups find
		 * the first: refuse the second rather than drop it silently. */
		for (const cJSON *before = object->child; before != item; before = before->next)
			if (strcmp(before->string, item->string) == 0)
				return pack_error(r->st, EXIT_BAD_INPUT, "%s field '%s' given twice", what,
				                  item->string);
	}
	return EXIT_OK;
}

static int read_kernels(spec_reader *r, entry_builder *b, const cJSON *kernels)
{
	static const char *const kernel_fields[] = {
		"name", "registers", "shared_bytes", "scratch_bytes", NULL,
	};
	if (!cJSON_IsArray(kernels))
		return pack_error(r->st, EXIT_BAD_INPUT, "'kernels' must be an array");
	const cJSON *item;
	cJSON_ArrayForEach(item, kernels) {
		gpucc_kernel k = {NULL, -1, -1, -1};
		int rc = EXIT_OK;
		if (cJSON_IsString(item)) {
			k.name = item->valuestring;
		} else if (cJSON_IsObject(item)) {
			if ((rc = check_fields(r, item, "kernel", kernel_fields)) != EXIT_OK)
				return rc;
			k.name = string_field(r, item, "name", &rc);
			if (rc == EXIT_OK && !k.name)
				rc = pack_error(r->st, EXIT_BAD_INPUT, "a kernel has no 'name'");
			if (rc == EXIT_OK)
				rc = count_field(r, item, "registers", &k.registers);
			if (rc == EXIT_OK)
				rc = count_field(r, item, "shared_bytes", &k.shared_bytes);
			if (rc == EXIT_OK)
				rc = count_field(r, item, "scratch_bytes", &k.scratch_bytes);
		} else {
			rc = pack_error(r->st, EXIT_BAD_INPUT,
			                "'kernels' must hold names or {\"name\": ...} objects");
		}
		if (rc == EXIT_OK)
			rc = add_kernel(r->st, b, &k);
		if (rc != EXIT_OK)
			return rc;
	}
	return EXIT_OK;
}

static int read_options(spec_reader *r, entry_builder *b, const cJSON *options)
{
	if (!cJSON_IsObject(options))
		return pack_error(r->st, EXIT_BAD_INPUT, "'options' must be an object");
	const cJSON *item;
	cJSON_ArrayForEach(item, options) {
		const char *value;
		if (cJSON_IsString(item)) {
			value = item->valuestring;
		} else if (cJSON_IsNumber(item) && item->valuedouble == (double)(int64_t)item->valuedouble &&
		           item->valuedouble > -1e15 && item->valuedouble < 1e15) {
			char number[32];
			snprintf(number, sizeof number, "%lld", (long long)item->valuedouble);
			value = keep(r->st, strdup(number));
			if (!value)
				return out_of_memory(r->st);
		} else {
			return pack_error(r->st, EXIT_BAD_INPUT,
			                  "option '%s' must be a string or an integer", item->string);
		}
		int rc = add_option(r->st, b, item->string, value);
		if (rc != EXIT_OK)
			return rc;
	}
	return EXIT_OK;
}

static int read_device_libs(spec_reader *r, entry_builder *b, const cJSON *libs)
{
	static const char *const lib_fields[] = {"name", "sha256", "file", NULL};
	if (!cJSON_IsArray(libs))
		return pack_error(r->st, EXIT_BAD_INPUT, "'device_libs' must be an array");
	const cJSON *item;
	cJSON_ArrayForEach(item, libs) {
		int rc = EXIT_OK;
		if (!cJSON_IsObject(item))
			return pack_error(r->st, EXIT_BAD_INPUT,
			                  "'device_libs' must hold {\"name\", \"sha256\"} or {\"file\"} objects");
		if ((rc = check_fields(r, item, "device library", lib_fields)) != EXIT_OK)
			return rc;
		const char *name = string_field(r, item, "name", &rc);
		const char *hex = string_field(r, item, "sha256", &rc);
		const char *file = string_field(r, item, "file", &rc);
		if (rc != EXIT_OK)
			return rc;
		if (!file == !hex)
			return pack_error(r->st, EXIT_BAD_INPUT,
			                  "a device library needs exactly one of 'file' and 'sha256'");
		if (hex && !name)
			return pack_error(r->st, EXIT_BAD_INPUT, "a device library with 'sha256' needs a 'name'");
		if (file) {
			const char *path = spec_path(r, file);
			if (!path)
				return out_of_memory(r->st);
			rc = add_device_lib_file(r->st, b, name ? name : base_name(file), path);
		} else {
			rc = add_device_lib_digest(r->st, b, name, hex);
		}
		if (rc != EXIT_OK)
			return rc;
	}
	return EXIT_OK;
}

static int read_externals(spec_reader *r, entry_builder *b, const cJSON *externals)
{
	if (!cJSON_IsArray(externals))
		return pack_error(r->st, EXIT_BAD_INPUT, "'externals' must be an array of names");
	const cJSON *item;
	cJSON_ArrayForEach(item, externals) {
		if (!cJSON_IsString(item))
			return pack_error(r->st, EXIT_BAD_INPUT, "'externals' must be an array of names");
		int rc = add_external(r->st, b, item->valuestring);
		if (rc != EXIT_OK)
			return rc;
	}
	return EXIT_OK;
}

static int read_entry(spec_reader *r, const cJSON *object)
{
	static const char *const entry_fields[] = {
		"module", "module_file", "module_sha256", "target", "options", "kernels",
		"externals", "device_libs", "ptx", "cubin", "hsaco", "bitcode", "gpucc_version",
		"llvm_version", "comment", NULL,
	};
	if (!cJSON_IsObject(object))
		return pack_error(r->st, EXIT_BAD_INPUT, "an entry must be an object");
	int rc = check_fields(r, object, "entry", entry_fields);
	if (rc != EXIT_OK)
		return rc;

	entry_builder b = {0};
	const char *module = string_field(r, object, "module", &rc);
	const char *module_file = string_field(r, object, "module_file", &rc);
	const char *module_hex = string_field(r, object, "module_sha256", &rc);
	const char *target = string_field(r, object, "target", &rc);
	b.e.gpucc_version = string_field(r, object, "gpucc_version", &rc);
	b.e.llvm_version = string_field(r, object, "llvm_version", &rc);
	const char *payloads[GPUCC_PART_COUNT];
	for (int p = 0; p < GPUCC_PART_COUNT; p++)
		payloads[p] = string_field(r, object, gpucc_part_name((gpucc_part)p), &rc);
	if (rc != EXIT_OK)
		goto cleanup;

	if (!module_file == !module_hex) {
		rc = pack_error(r->st, EXIT_BAD_INPUT, "needs exactly one of 'module_file' and 'module_sha256'");
		goto cleanup;
	}
	if (module_hex && !module) {
		rc = pack_error(r->st, EXIT_BAD_INPUT, "'module_sha256' needs a 'module' name");
		goto cleanup;
	}
	if (!target) {
		rc = pack_error(r->st, EXIT_BAD_INPUT, "missing 'target'");
		goto cleanup;
	}
	b.e.module = module; /* else set_module_file names it after the file */
	if (module_file) {
		const char *path = spec_path(r, module_file);
		rc = path ? set_module_file(r->st, &b, path) : out_of_memory(r->st);
	} else {
		rc = set_module_sha256(r->st, &b, module_hex);
	}
	if (rc == EXIT_OK)
		rc = set_target(r->st, &b, target);

	const cJSON *item;
	if (rc == EXIT_OK && (item = cJSON_GetObjectItemCaseSensitive(object, "kernels")))
		rc = read_kernels(r, &b, item);
	if (rc == EXIT_OK && (item = cJSON_GetObjectItemCaseSensitive(object, "options")))
		rc = read_options(r, &b, item);
	if (rc == EXIT_OK && (item = cJSON_GetObjectItemCaseSensitive(object, "device_libs")))
		rc = read_device_libs(r, &b, item);
	if (rc == EXIT_OK && (item = cJSON_GetObjectItemCaseSensitive(object, "externals")))
		rc = read_externals(r, &b, item);
	for (int p = 0; rc == EXIT_OK && p < GPUCC_PART_COUNT; p++) {
		if (!payloads[p])
			continue;
		const char *path = spec_path(r, payloads[p]);
		rc = path ? add_payload(r->st, &b, (gpucc_part)p, path) : out_of_memory(r->st);
	}
	if (rc == EXIT_OK)
		rc = finish_entry(r->st, &b);
cleanup:
	builder_release(&b);
	return rc;
}

/* Read the whole spec file into a new NUL-terminated buffer. */
static int read_spec_file(pack_state *st, const char *path, char **out, size_t *out_size)
{
	int fd = -1;
	int rc = check_input(st, path, &fd);
	if (rc != EXIT_OK)
		return rc;
	FILE *f = fdopen(fd, "rb");
	if (!f) {
		close(fd);
		return out_of_memory(st);
	}
	size_t capacity = 1 << 14, size = 0;
	char *data = malloc(capacity);
	while (data) {
		if (size + 1 >= capacity) {
			if (capacity >= SPEC_MAX_SIZE) {
				rc = pack_error(st, EXIT_BAD_INPUT, "'%s': larger than %zu bytes", path,
				                SPEC_MAX_SIZE);
				break;
			}
			char *grown = realloc(data, capacity * 2);
			if (!grown)
				break;
			data = grown;
			capacity *= 2;
		}
		size_t n = fread(data + size, 1, capacity - 1 - size, f);
		size += n;
		if (n == 0) {
			if (ferror(f))
				rc = pack_error(st, EXIT_FAIL, "cannot read '%s': %s", path, strerror(errno));
			break;
		}
	}
	fclose(f);
	if (!data)
		return out_of_memory(st);
	if (rc != EXIT_OK) {
		free(data);
		return rc;
	}
	data[size] = '\0';
	*out = data;
	*out_size = size;
	return EXIT_OK;
}

/* Where text (JSON) holds the escape \u0000 inside a string, or NULL: cJSON
 * would end the string there, silently dropping the rest of a name. */
static const char *find_nul_escape(const char *text)
{
	bool in_string = false;
	for (const char *c = text; *c; c++) {
		if (*c == '"') {
			in_string = !in_string;
		} else if (in_string && *c == '\\') {
			if (c[1] == 'u' && strncmp(c + 2, "0000", 4) == 0)
				return c;
			if (c[1])
				c++; /* the escaped character, '"' or '\\' among them */
		}
	}
	return NULL;
}

/* Line number of position p in text, for parse errors. */
static unsigned line_of(const char *text, const char *p)
{
	unsigned line = 1;
	for (const char *c = text; c < p && *c; c++)
		line += *c == '\n';
	return line;
}

static int pack_from_spec(pack_state *st, const char *spec_file)
{
	char *text = NULL;
	size_t size = 0;
	int rc = read_spec_file(st, spec_file, &text, &size);
	if (rc != EXIT_OK)
		return rc;

	const char *nul = memchr(text, '\0', size);
	if (nul)
		rc = pack_error(st, EXIT_BAD_INPUT, "'%s': holds a NUL byte (line %u)", spec_file,
		                line_of(text, nul));
	else if ((nul = find_nul_escape(text)))
		rc = pack_error(st, EXIT_BAD_INPUT, "'%s': a string holds \\u0000 (line %u)", spec_file,
		                line_of(text, nul));
	if (rc != EXIT_OK) {
		free(text);
		return rc;
	}

	spec_reader r = {.st = st, .path = spec_file};
	char *copy = strdup(spec_file);
	r.dir = copy ? strdup(dirname(copy)) : NULL;
	free(copy);
	const char *parse_end = NULL;
	/* size + 1: cJSON counts the terminating NUL when the text must end there. */
	cJSON *root = cJSON_ParseWithLengthOpts(text, size + 1, &parse_end, true);
	if (!r.dir) {
		rc = out_of_memory(st);
	} else if (!root) {
		rc = pack_error(st, EXIT_BAD_INPUT, "'%s': not valid JSON (line %u)", spec_file,
		                line_of(text, parse_end ? parse_end : cJSON_GetErrorPtr()));
	} else if (!cJSON_IsObject(root)) {
		rc = pack_error(st, EXIT_BAD_INPUT, "'%s': expected an object {\"entries\": [...]}",
		                spec_file);
	} else {
		static const char *const top_fields[] = {"entries", "comment", NULL};
		const cJSON *entries = cJSON_GetObjectItemCaseSensitive(root, "entries");
		char where[PATH_MAX + 64];
		snprintf(where, sizeof where, "'%s'", spec_file);
		st->where = where;
		rc = check_fields(&r, root, "top-level", top_fields);
		if (rc == EXIT_OK && !cJSON_IsArray(entries))
			rc = pack_error(st, EXIT_BAD_INPUT, "needs an array 'entries'");
		size_t index = 0;
		const cJSON *item;
		if (rc == EXIT_OK) {
			size_t n = (size_t)cJSON_GetArraySize(entries);
			if (n && !(st->keys = malloc(n * sizeof *st->keys)))
				rc = out_of_memory(st);
		}
		if (rc == EXIT_OK) {
			cJSON_ArrayForEach(item, entries) {
				snprintf(where, sizeof where, "'%s': entries[%zu]", spec_file, index++);
				if ((rc = read_entry(&r, item)) != EXIT_OK)
					break;
			}
		}
		st->where = NULL;
	}
	cJSON_Delete(root);
	free(r.dir);
	free(text);
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

	struct stat out;
	st.output = output;
	if (stat(output, &out) == 0) {
		st.output_exists = true;
		st.output_dev = out.st_dev;
		st.output_ino = out.st_ino;
	}
	if (gpucc_image_writer_new(&st.writer, output, &opts) != 0)
		return cmd_fail(args);
	rc = spec_file ? pack_from_spec(&st, spec_file) : pack_from_flags(&st);
	if (rc == EXIT_OK && gpucc_image_writer_commit(st.writer) != 0)
		rc = cmd_fail(args);
	gpucc_image_writer_free(st.writer);
	for (size_t i = 0; i < st.owned_count; i++)
		free(st.owned[i]);
	free(st.owned);
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
