/*
 * lib/tests/test_image_pack.c -- entries from files another tool wrote
 * (gpucc_image_writer_add_files, lib/image/image_pack.c): a table of
 * descriptions, each added to a fresh writer, with the code and the words
 * of its refusal, or the entry it gives (canonical target, sorted lists,
 * the module named after its file); then the image written and read back.
 * Real files in a scratch directory: a FIFO, a directory, ELF headers of
 * the wrong kind.
 */
#include "check.h"

#include <gpucc.h>

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static char module[256], ptx[256], hsaco[256], rel_cubin[256], exec_cubin[256], fifo[256],
	dir[256], missing[256], output[256], lib_file[256];

static void write_bytes(const char *path, const void *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f) {
		CHECK_INT(fwrite(data, 1, size, f), size);
		fclose(f);
	}
}

/* The first 20 bytes of a 64-bit little-endian ELF of type and machine. */
static void write_elf(const char *path, unsigned type, unsigned machine)
{
	unsigned char h[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
	h[16] = (unsigned char)type;
	h[18] = (unsigned char)machine;
	write_bytes(path, h, sizeof h);
}

static void setup(void)
{
#define NAME(var, file) snprintf(var, sizeof var, "%s/%s", check_dir, file)
	NAME(module, "saxpy.ll");
	NAME(ptx, "saxpy.ptx");
	NAME(hsaco, "saxpy.hsaco");
	NAME(rel_cubin, "rel.cubin");
	NAME(exec_cubin, "exec.cubin");
	NAME(fifo, "fifo");
	NAME(dir, "dir");
	NAME(missing, "missing.ptx");
	NAME(output, "out.gpucc");
	NAME(lib_file, "libdevice.10.bc");
#undef NAME
	write_bytes(module, "define void @saxpy() { ret void }\n", 34);
	write_bytes(ptx, "// ptx\n", 7);
	write_bytes(hsaco, "not an ELF: taken as given\n", 27);
	write_bytes(lib_file, "BC", 2);
	write_elf(rel_cubin, 1 /* ET_REL */, 190 /* EM_CUDA */);
	write_elf(exec_cubin, 2 /* ET_EXEC */, 190);
	CHECK_INT(mkfifo(fifo, 0600), 0);
	CHECK_INT(mkdir(dir, 0700), 0);
}

/* A description of one NVIDIA entry whose every part is valid. */
static gpucc_entry_files valid_files(void)
{
	static const gpucc_kernel kernels[] = {{"saxpy", -1, -1, -1}};
	static const gpucc_option options[] = {{"opt-level", "3"}, {"fast-math", "off"}};
	static const char *const externals[] = {"vprintf", "__assertfail"};
	gpucc_entry_files f;
	gpucc_entry_files_init(&f);
	f.module_file = module;
	f.target = "sm_90";
	f.kernels = kernels;
	f.kernel_count = 1;
	f.options = options;
	f.option_count = 2;
	f.externals = externals;
	f.external_count = 2;
	f.payloads[GPUCC_PART_PTX] = ptx;
	return f;
}

static gpucc_image_writer *new_writer(void)
{
	gpucc_image_writer *w = NULL;
	CHECK_INT(gpucc_image_writer_new(&w, output, NULL), 0);
	return w;
}

static void test_refusals(void)
{
	static const gpucc_kernel empty_kernel[] = {{"", -1, -1, -1}};
	static const gpucc_option empty_option[] = {{"", "1"}};
	static const char *const empty_external[] = {""};
	gpucc_device_lib_file lib_unnamed_digest[] = {
		{"", NULL, "0000000000000000000000000000000000000000000000000000000000000000"}};
	gpucc_device_lib_file lib_bad_hex[] = {{"ocml.bc", NULL, "12"}};
	gpucc_device_lib_file lib_both[] = {{"ocml.bc", lib_file, "00"}};
	gpucc_device_lib_file lib_fifo[] = {{NULL, fifo, NULL}};
	enum { NONE, NO_MODULE, BOTH_MODULES, BAD_HEX, NO_TARGET, BAD_TARGET, EMPTY_KERNEL,
	       EMPTY_OPTION, EMPTY_EXTERNAL, LIB_UNNAMED, LIB_BAD_HEX, LIB_BOTH, LIB_FIFO,
	       PAYLOAD_FIFO, PAYLOAD_DIR, PAYLOAD_MISSING, PAYLOAD_IS_OUTPUT, MODULE_IS_OUTPUT,
	       REL_CUBIN, CUBIN_AS_HSACO, WRONG_VENDOR, NO_PAYLOAD, FUTURE_VERSION };
	static const struct {
		int change, code;
		const char *message;
	} rows[] = {
		{NO_MODULE, GPUCC_EINVALID, "no module: give a module file or its SHA-256"},
		{BOTH_MODULES, GPUCC_EINVALID, "not both"},
		{BAD_HEX, GPUCC_EINVALID, "module SHA-256 'xyz' is not 64 hex digits"},
		{NO_TARGET, GPUCC_EINVALID, "no target"},
		{BAD_TARGET, GPUCC_EINVALID, "sm_9"},
		{EMPTY_KERNEL, GPUCC_EINVALID, "a kernel name is empty"},
		{EMPTY_OPTION, GPUCC_EINVALID, "an option name is empty"},
		{EMPTY_EXTERNAL, GPUCC_EINVALID, "an external symbol name is empty"},
		{LIB_UNNAMED, GPUCC_EINVALID, "a device library name is empty"},
		{LIB_BAD_HEX, GPUCC_EINVALID, "device library 'ocml.bc': SHA-256 '12' is not 64 hex"},
		{LIB_BOTH, GPUCC_EINVALID, "exactly one of a file and a SHA-256"},
		{LIB_FIFO, GPUCC_EINVALID, "is a FIFO, socket or device, not a regular file"},
		{PAYLOAD_FIFO, GPUCC_EINVALID, "is a FIFO, socket or device, not a regular file"},
		{PAYLOAD_DIR, GPUCC_EINVALID, "is a directory, not a regular file"},
		{PAYLOAD_MISSING, GPUCC_ENOTFOUND, "cannot open"},
		{PAYLOAD_IS_OUTPUT, GPUCC_EINVALID, "is the image being written"},
		{MODULE_IS_OUTPUT, GPUCC_EINVALID, "is the image being written"},
		{REL_CUBIN, GPUCC_ECORRUPT, "is a relocatable cubin"},
		{CUBIN_AS_HSACO, GPUCC_ECORRUPT, "is not an AMDGPU code object"},
		{WRONG_VENDOR, GPUCC_EINVALID, "does not fit target"},
		{NO_PAYLOAD, GPUCC_EINVALID, "payload"},
		{FUTURE_VERSION, GPUCC_EINVALID, "entry files"},
	};
	write_bytes(output, "an image", 8); /* exists, for the rows that name it */
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		gpucc_entry_files f = valid_files();
		switch (rows[i].change) {
		case NO_MODULE: f.module_file = NULL; break;
		case BOTH_MODULES: f.module_sha256 = "00"; break;
		case BAD_HEX: f.module_file = NULL; f.module = "m"; f.module_sha256 = "xyz"; break;
		case NO_TARGET: f.target = NULL; break;
		case BAD_TARGET: f.target = "sm_9"; break;
		case EMPTY_KERNEL: f.kernels = empty_kernel; break;
		case EMPTY_OPTION: f.options = empty_option; f.option_count = 1; break;
		case EMPTY_EXTERNAL: f.externals = empty_external; f.external_count = 1; break;
		case LIB_UNNAMED: f.device_libs = lib_unnamed_digest; f.device_lib_count = 1; break;
		case LIB_BAD_HEX: f.device_libs = lib_bad_hex; f.device_lib_count = 1; break;
		case LIB_BOTH: f.device_libs = lib_both; f.device_lib_count = 1; break;
		case LIB_FIFO: f.device_libs = lib_fifo; f.device_lib_count = 1; break;
		case PAYLOAD_FIFO: f.payloads[GPUCC_PART_PTX] = fifo; break;
		case PAYLOAD_DIR: f.payloads[GPUCC_PART_PTX] = dir; break;
		case PAYLOAD_MISSING: f.payloads[GPUCC_PART_PTX] = missing; break;
		case PAYLOAD_IS_OUTPUT: f.payloads[GPUCC_PART_CUBIN] = output; break;
		case MODULE_IS_OUTPUT: f.module_file = output; break;
		case REL_CUBIN: f.payloads[GPUCC_PART_CUBIN] = rel_cubin; break;
		case CUBIN_AS_HSACO: f.target = "gfx90a"; f.payloads[GPUCC_PART_PTX] = NULL;
			f.payloads[GPUCC_PART_HSACO] = exec_cubin; break;
		case WRONG_VENDOR: f.target = "gfx90a"; break;
		case NO_PAYLOAD: f.payloads[GPUCC_PART_PTX] = NULL; break;
		case FUTURE_VERSION: f.version = GPUCC_ENTRY_FILES_VERSION + 1; break;
		}
		gpucc_image_writer *w = new_writer();
		int rc = gpucc_image_writer_add_files(w, &f, NULL);
		if (rc != rows[i].code)
			fprintf(stderr, "  row %zu: %s\n", i, gpucc_error_last()->message);
		CHECK_INT(rc, rows[i].code);
		CHECK_ERROR_HAS(rows[i].message);
		CHECK_INT(gpucc_image_writer_entry_count(w), 0);
		gpucc_image_writer_free(w);
	}
	unlink(output);
}

/* A valid description: the entry in canonical form, keyed, written and
 * read back; an identical one collapses; another with the same key and
 * other bytes is a conflict whose key is still said. */
static void test_entry_built(void)
{
	gpucc_image_writer *w = new_writer();
	gpucc_entry_files f = valid_files();
	gpucc_device_lib_file libs[] = {{NULL, lib_file, NULL}};
	f.device_libs = libs;
	f.device_lib_count = 1;
	f.payloads[GPUCC_PART_CUBIN] = exec_cubin;
	gpucc_digest key, again, conflict;
	CHECK_INT(gpucc_image_writer_add_files(w, &f, &key), 0);
	CHECK_INT(gpucc_image_writer_add_files(w, &f, &again), 0);
	CHECK_INT(gpucc_digest_compare(&key, &again), 0);
	CHECK_INT(gpucc_image_writer_entry_count(w), 1);
	f.payloads[GPUCC_PART_CUBIN] = NULL; /* same key, other payloads */
	CHECK_INT(gpucc_image_writer_add_files(w, &f, &conflict), GPUCC_ECONFLICT);
	CHECK_INT(gpucc_digest_compare(&key, &conflict), 0);
	CHECK_INT(gpucc_image_writer_commit(w), 0);
	gpucc_image_writer_free(w);

	gpucc_image *img = NULL;
	CHECK_INT(gpucc_image_open(&img, output), 0);
	const gpucc_entry *e = img ? gpucc_image_find(img, &key) : NULL;
	CHECK(e != NULL);
	if (e) {
		CHECK_STR(e->module, "saxpy.ll");
		CHECK_STR(e->target, "sm_90:ptx78");
		CHECK_STR(e->triple, "nvptx64-nvidia-cuda");
		CHECK_INT(e->option_count, 2);
		CHECK_STR(e->options[0].name, "fast-math"); /* sorted by name */
		CHECK_INT(e->external_count, 2);
		CHECK_STR(e->externals[0], "__assertfail");
		CHECK_INT(e->device_lib_count, 1);
		CHECK_STR(e->device_libs[0].name, "libdevice.10.bc");
		CHECK_INT(e->payload_count, 2);
		gpucc_digest module_digest;
		CHECK_INT(gpucc_digest_file(&module_digest, NULL, module), 0);
		CHECK_INT(gpucc_digest_compare(&e->module_sha256, &module_digest), 0);
	}
	gpucc_image_free(img);
	unlink(output);
}

int main(void)
{
	if (check_dir_create("image-pack") != 0)
		skip("cannot make a scratch directory");
	setup();
	RUN(test_refusals);
	RUN(test_entry_built);
	check_dir_remove();
	return CHECK_DONE();
}
