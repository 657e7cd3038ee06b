/*
 * cmd/pack_spec.c -- the spec file of `gpucc pack` (SPEC.json, described in
 * cmd/cmd_pack.c): read whole, refused when it holds what JSON parsing would
 * cut short (a NUL byte, \u0000), each entry checked field by field (unknown
 * fields and fields given twice are errors) into a gpucc_entry_files, with
 * its paths relative to the spec's directory, and added (pack_add).
 */
#include "pack.h"

#include <cJSON.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SPEC_MAX_SIZE ((size_t)64 << 20)

/* ---- the spec file form ---------------------------------------------------- */

typedef struct spec_reader {
	pack_state *st;
	const char *path;      /* the spec file, as given */
	char *dir;             /* its directory, for relative paths */
	owned_strings strings; /* of the entry being read */
} spec_reader;

/* The arrays of the entry being read, which its gpucc_entry_files points
 * to. */
typedef struct spec_entry {
	gpucc_entry_files f;
	gpucc_kernel *kernels;
	gpucc_option *options;
	gpucc_device_lib_file *libs;
	const char **externals;
} spec_entry;

/* A path from the spec, relative to the spec's directory; kept until the
 * entry is added. */
static const char *spec_path(spec_reader *r, const char *path)
{
	if (path[0] == '/')
		return path;
	size_t len = strlen(r->dir) + 1 + strlen(path) + 1;
	char *joined = malloc(len);
	if (joined)
		snprintf(joined, len, "%s/%s", r->dir, path);
	return pack_keep(&r->strings, joined);
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

/* Room for the n items of a JSON array or object: *out, zeroed. */
static int items_room(spec_reader *r, void *out, size_t size, const cJSON *items)
{
	void *room = calloc((size_t)cJSON_GetArraySize(items) + 1, size);
	memcpy(out, &room, sizeof room);
	return room ? EXIT_OK : pack_out_of_memory(r->st);
}

static int read_kernels(spec_reader *r, spec_entry *b, const cJSON *kernels)
{
	static const char *const kernel_fields[] = {
		"name", "registers", "shared_bytes", "scratch_bytes", NULL,
	};
	if (!cJSON_IsArray(kernels))
		return pack_error(r->st, EXIT_BAD_INPUT, "'kernels' must be an array");
	int rc = items_room(r, &b->kernels, sizeof *b->kernels, kernels);
	const cJSON *item;
	cJSON_ArrayForEach(item, kernels) {
		gpucc_kernel k = {NULL, -1, -1, -1};
		if (rc != EXIT_OK)
			return rc;
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
		b->kernels[b->f.kernel_count++] = k;
	}
	b->f.kernels = b->kernels;
	return rc;
}

static int read_options(spec_reader *r, spec_entry *b, const cJSON *options)
{
	if (!cJSON_IsObject(options))
		return pack_error(r->st, EXIT_BAD_INPUT, "'options' must be an object");
	int rc = items_room(r, &b->options, sizeof *b->options, options);
	const cJSON *item;
	cJSON_ArrayForEach(item, options) {
		const char *value;
		if (rc != EXIT_OK)
			return rc;
		if (cJSON_IsString(item)) {
			value = item->valuestring;
		} else if (cJSON_IsNumber(item) && item->valuedouble == (double)(int64_t)item->valuedouble &&
		           item->valuedouble > -1e15 && item->valuedouble < 1e15) {
			char number[32];
			snprintf(number, sizeof number, "%lld", (long long)item->valuedouble);
			value = pack_keep(&r->strings, strdup(number));
			if (!value)
				return pack_out_of_memory(r->st);
		} else {
			return pack_error(r->st, EXIT_BAD_INPUT,
			                  "option '%s' must be a string or an integer", item->string);
		}
		b->options[b->f.option_count++] = (gpucc_option){item->string, value};
	}
	b->f.options = b->options;
	return rc;
}

static int read_device_libs(spec_reader *r, spec_entry *b, const cJSON *libs)
{
	static const char *const lib_fields[] = {"name", "sha256", "file", NULL};
	if (!cJSON_IsArray(libs))
		return pack_error(r->st, EXIT_BAD_INPUT, "'device_libs' must be an array");
	int rc = items_room(r, &b->libs, sizeof *b->libs, libs);
	const cJSON *item;
	cJSON_ArrayForEach(item, libs) {
		if (rc != EXIT_OK)
			return rc;
		if (!cJSON_IsObject(item))
			return pack_error(r->st, EXIT_BAD_INPUT,
			                  "'device_libs' must hold {\"name\", \"sha256\"} or {\"file\"} objects");
		if ((rc = check_fields(r, item, "device library", lib_fields)) != EXIT_OK)
			return rc;
		gpucc_device_lib_file lib = {string_field(r, item, "name", &rc),
		                             string_field(r, item, "file", &rc),
		                             string_field(r, item, "sha256", &rc)};
		if (rc != EXIT_OK)
			return rc;
		if (!lib.file == !lib.sha256)
			return pack_error(r->st, EXIT_BAD_INPUT,
			                  "a device library needs exactly one of 'file' and 'sha256'");
		if (lib.sha256 && !lib.name)
			return pack_error(r->st, EXIT_BAD_INPUT, "a device library with 'sha256' needs a 'name'");
		if (lib.file && !(lib.file = spec_path(r, lib.file)))
			return pack_out_of_memory(r->st);
		b->libs[b->f.device_lib_count++] = lib;
	}
	b->f.device_libs = b->libs;
	return rc;
}

static int read_externals(spec_reader *r, spec_entry *b, const cJSON *externals)
{
	if (!cJSON_IsArray(externals))
		return pack_error(r->st, EXIT_BAD_INPUT, "'externals' must be an array of names");
	int rc = items_room(r, &b->externals, sizeof *b->externals, externals);
	const cJSON *item;
	cJSON_ArrayForEach(item, externals) {
		if (rc != EXIT_OK)
			return rc;
		if (!cJSON_IsString(item))
			return pack_error(r->st, EXIT_BAD_INPUT, "'externals' must be an array of names");
		b->externals[b->f.external_count++] = item->valuestring;
	}
	b->f.externals = b->externals;
	return rc;
}

/* The entry object describes, read into b; EXIT_OK or an exit code after
 * saying what is wrong. */
static int read_entry_fields(spec_reader *r, spec_entry *b, const cJSON *object)
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
	gpucc_entry_files *f = &b->f;
	f->module = string_field(r, object, "module", &rc);
	f->module_file = string_field(r, object, "module_file", &rc);
	f->module_sha256 = string_field(r, object, "module_sha256", &rc);
	f->target = string_field(r, object, "target", &rc);
	f->gpucc_version = string_field(r, object, "gpucc_version", &rc);
	f->llvm_version = string_field(r, object, "llvm_version", &rc);
	for (int p = 0; p < GPUCC_PART_COUNT; p++)
		f->payloads[p] = string_field(r, object, gpucc_part_name((gpucc_part)p), &rc);
	if (rc != EXIT_OK)
		return rc;
	if (!f->module_file == !f->module_sha256)
		return pack_error(r->st, EXIT_BAD_INPUT,
		                  "needs exactly one of 'module_file' and 'module_sha256'");
	if (f->module_sha256 && !f->module)
		return pack_error(r->st, EXIT_BAD_INPUT, "'module_sha256' needs a 'module' name");
	if (!f->target)
		return pack_error(r->st, EXIT_BAD_INPUT, "missing 'target'");
	if (f->module_file && !(f->module_file = spec_path(r, f->module_file)))
		return pack_out_of_memory(r->st);
	const cJSON *item;
	if (rc == EXIT_OK && (item = cJSON_GetObjectItemCaseSensitive(object, "kernels")))
		rc = read_kernels(r, b, item);
	if (rc == EXIT_OK && (item = cJSON_GetObjectItemCaseSensitive(object, "options")))
		rc = read_options(r, b, item);
	if (rc == EXIT_OK && (item = cJSON_GetObjectItemCaseSensitive(object, "device_libs")))
		rc = read_device_libs(r, b, item);
	if (rc == EXIT_OK && (item = cJSON_GetObjectItemCaseSensitive(object, "externals")))
		rc = read_externals(r, b, item);
	for (int p = 0; rc == EXIT_OK && p < GPUCC_PART_COUNT; p++)
		if (f->payloads[p] && !(f->payloads[p] = spec_path(r, f->payloads[p])))
			rc = pack_out_of_memory(r->st);
	return rc;
}

static int read_entry(spec_reader *r, const cJSON *object)
{
	spec_entry b = {.f = GPUCC_ENTRY_FILES_INIT};
	int rc = read_entry_fields(r, &b, object);
	if (rc == EXIT_OK)
		rc = pack_add(r->st, &b.f);
	free(b.kernels);
	free(b.options);
	free(b.libs);
	free(b.externals);
	pack_strings_release(&r->strings);
	return rc;
}

/* Open the spec at path for reading into *fd: a regular file (a FIFO
 * would be waited on, /dev/zero read forever; O_NONBLOCK lets the open of
 * a FIFO return so that it can be refused) that -o does not name. */
static int open_spec(pack_state *st, const char *path, int *fd_out)
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
	else if (gpucc_output_is_input_fd(st->output, fd))
		rc = pack_error(st, EXIT_USAGE,
		                "-o '%s' names the input '%s': write the image elsewhere", st->output,
		                path);
	else if (fcntl(fd, F_SETFL, 0) != 0)
		rc = pack_error(st, EXIT_FAIL, "cannot read '%s': %s", path, strerror(errno));
	if (rc != EXIT_OK) {
		close(fd);
		return rc;
	}
	*fd_out = fd;
	return EXIT_OK;
}

/* Read the whole spec file into a new NUL-terminated buffer. */
static int read_spec_file(pack_state *st, const char *path, char **out, size_t *out_size)
{
	int fd = -1;
	int rc = open_spec(st, path, &fd);
	if (rc != EXIT_OK)
		return rc;
	FILE *f = fdopen(fd, "rb");
	if (!f) {
		close(fd);
		return pack_out_of_memory(st);
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
		return pack_out_of_memory(st);
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

int pack_from_spec(pack_state *st, const char *spec_file)
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
		rc = pack_out_of_memory(st);
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
				rc = pack_out_of_memory(st);
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
