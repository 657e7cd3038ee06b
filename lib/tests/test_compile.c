/*
 * lib/tests/test_compile.c -- compile sessions through the public API, and
 * the parts of planning that need no LLVM: module facts (triple and library
 * needs from the bytes, .ll and .bc; names in comments are not calls),
 * option validation, module files (a FIFO refused without waiting, one file
 * named twice is one module), keys that follow options and ignore names,
 * entry keys that refuse a non-canonical target, device library digests
 * remembered only while the file is the same, and a miss that cannot load
 * the backend.
 * One real compile checks results, kernels and the entry's fields, and a
 * hit under another name records that name; a source calls the hook before
 * clang when its record misses, never when it hits.
 */
#include "check.h"

#include "compile_impl.h"
#include "cache_internal.h"      /* GPUCC_SOURCE_RECORD_MAGIC */
#include "compile_source_run.h" /* record_view */
#include "gpucc.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char vector_add[] =
	"target triple = \"nvptx64-nvidia-cuda\"\n"
	"declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
	"define ptx_kernel void @k(ptr addrspace(1) %p) {\n"
	"  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
	"  store i32 %t, ptr addrspace(1) %p, align 4\n"
	"  ret void\n"
	"}\n";

static void test_module_facts_text(void)
{
	gpucc_module_facts f;
	gpucc_module_facts_read(&f, (const unsigned char *)vector_add, strlen(vector_add));
	CHECK(!f.bitcode);
	CHECK(f.triple_known);
	CHECK_STR(f.triple, "nvptx64-nvidia-cuda");
	CHECK(!f.calls_libdevice && !f.calls_rocm);
	const char *math = "declare float @__ocml_sin_f32(float)\n";
	gpucc_module_facts_read(&f, (const unsigned char *)math, strlen(math));
	CHECK(f.calls_rocm && !f.calls_libdevice);
	CHECK_STR(f.triple, "");

	/* A name in a comment is not a call; a ';' in a string starts none. */
	static const struct {
		const char *text;
		bool libdevice, rocm;
	} cases[] = {
		{"; avoids __ocml_exp_f32\n", false, false},
		{"; calls @__ocml_exp_f32 and @__nv_expf? no\n", false, false},
		{"define void @k() { ret void } ; @__nv_sinf\n", false, false},
		{"%r = call float @__ocml_exp_f32(float %x) ; exp\n", false, true},
		{"%r = call float @\"__ockl_get_local_id\"(i32 0)\n", false, true},
		{"@s = constant [4 x i8] c\"a;b\\00\" @__nv_sinf\n", true, false},
		{"@s = constant [9 x i8] c\"@__nv_sin\\00\"\n", false, false},
		{"; \"quoted in a comment\n@p = global ptr @__nv_expf\n", true, false},
		{"declare float @__nv_expf(float)", true, false},
		{"__nv_expf __ocml_sin_f32 without sigils\n", false, false},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		gpucc_module_facts_read(&f, (const unsigned char *)cases[i].text, strlen(cases[i].text));
		if (f.calls_libdevice != cases[i].libdevice || f.calls_rocm != cases[i].rocm) {
			fprintf(stderr, "  case %zu: %s", i, cases[i].text);
			CHECK(false);
		}
	}
}

static void test_module_facts_bitcode(void)
{
	if (system("command -v llvm-as-19 >/dev/null 2>&1") != 0)
		skip("llvm-as-19 is not installed");
	FILE *f = fopen("facts.ll", "w");
	fputs(vector_add, f);
	fputs("declare float @__nv_sinf(float)\n@use = global ptr @__nv_sinf\n", f);
	fclose(f);
	CHECK(system("llvm-as-19 facts.ll -o facts.bc") == 0);
	f = fopen("facts.bc", "rb");
	unsigned char data[65536];
	size_t n = f ? fread(data, 1, sizeof data, f) : 0;
	if (f)
		fclose(f);
	gpucc_module_facts facts;
	gpucc_module_facts_read(&facts, data, n);
	CHECK(facts.bitcode);
	CHECK(facts.triple_known);
	CHECK_STR(facts.triple, "nvptx64-nvidia-cuda");
	CHECK(facts.calls_libdevice);
	/* Truncated bitcode: the triple is unknown, nothing crashes. */
	for (size_t cut = 0; cut < n; cut += 7) {
		gpucc_module_facts_read(&facts, data, cut);
		CHECK(!facts.triple_known || facts.triple[0] == '\0' ||
		      strcmp(facts.triple, "nvptx64-nvidia-cuda") == 0);
	}
	unlink("facts.ll");
	unlink("facts.bc");
}

static void test_options(void)
{
	gpucc_compile_options o;
	gpucc_compile_options_init(&o);
	gpucc_compile *c = NULL;
	o.opt_level = 4;
	CHECK_INT(gpucc_compile_new(&c, &o), GPUCC_EINVALID);
	o.opt_level = 2;
	o.code_object_version = 3;
	CHECK_INT(gpucc_compile_new(&c, &o), GPUCC_EINVALID);
	CHECK_ERROR_HAS("code object version 3");
	o.code_object_version = 7;
	CHECK_INT(gpucc_compile_new(&c, &o), GPUCC_EINVALID);
	CHECK_ERROR_HAS("code object version 7: expected 4, 5 or 6");
	o.code_object_version = 6;
	CHECK_INT(gpucc_compile_new(&c, &o), 0);
	gpucc_compile_free(c);
	c = NULL;
	o.code_object_version = 0;
	CHECK_INT(gpucc_compile_new(&c, &o), 0);
	CHECK_INT(gpucc_compile_add_target(c, "gfx90a:xnack+"), 0);
	CHECK_INT(gpucc_compile_add_target(c, "sm_99"), GPUCC_EINVALID);
	CHECK_INT(gpucc_compile_set_cubin_tool(c, (gpucc_cubin_tool)7), GPUCC_EINVALID);
	CHECK_ERROR_HAS("cubin tool 7");
	CHECK_INT(gpucc_compile_set_cubin_tool(c, GPUCC_CUBIN_PTXAS), 0);
	CHECK_INT(gpucc_compile_add_file(c, "/nonexistent/module.ll"), GPUCC_ENOTFOUND);
	CHECK_ERROR_HAS("/nonexistent/module.ll");
	CHECK_INT(gpucc_compile_plan(c), GPUCC_EINVALID); /* no modules */
	gpucc_compile_free(c);
	gpucc_compile_free(NULL);
}

/* A module file must be a regular file: a FIFO is refused without waiting
 * for a writer.  One file added twice, by another path or a link, is one
 * module, under its first name. */
static void test_add_file(void)
{
	char dir[] = "/tmp/gpucc-test-compile.XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char file[64], other[80], link_path[64], fifo[64];
	snprintf(file, sizeof file, "%s/a.ll", dir);
	snprintf(other, sizeof other, "%s/./a.ll", dir);
	snprintf(link_path, sizeof link_path, "%s/link.ll", dir);
	snprintf(fifo, sizeof fifo, "%s/fifo.ll", dir);
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, vector_add, strlen(vector_add)) == (ssize_t)strlen(vector_add));
	close(fd);
	CHECK_INT(symlink("a.ll", link_path), 0);
	CHECK_INT(mkfifo(fifo, 0644), 0);

	gpucc_compile_options o;
	gpucc_compile_options_init(&o);
	gpucc_compile *c = NULL;
	CHECK_INT(gpucc_compile_new(&c, &o), 0);
	CHECK_INT(gpucc_compile_add_target(c, "sm_90"), 0);
	CHECK_INT(gpucc_compile_add_file(c, fifo), GPUCC_EINVALID);
	CHECK_ERROR_HAS("not a regular file");
	CHECK_INT(gpucc_compile_add_file(c, dir), GPUCC_EINVALID);
	CHECK_ERROR_HAS("is a directory, not a regular file");
	/* A name too long to open is the name's defect, not the machine's;
	 * the message keeps the reason however long the name. */
	char long_name[5001];
	memset(long_name, 'a', sizeof long_name - 1);
	long_name[sizeof long_name - 1] = '\0';
	CHECK_INT(gpucc_compile_add_file(c, long_name), GPUCC_EINVALID);
	CHECK_ERROR_HAS("File name too long (the name has 5000 bytes)");
	CHECK_INT(gpucc_compile_add_file(c, file), 0);
	CHECK_INT(gpucc_compile_add_file(c, other), 0);
	CHECK_INT(gpucc_compile_add_file(c, link_path), 0);
	CHECK_INT(gpucc_compile_add_file(c, file), 0);
	CHECK_INT(gpucc_compile_plan(c), 0);
	CHECK_INT(gpucc_compile_result_count(c), 1);
	CHECK_STR(gpucc_compile_result_at(c, 0)->module, file);
	gpucc_compile_free(c);

	unlink(fifo);
	unlink(link_path);
	unlink(file);
	rmdir(dir);
}

/* The key of vector_add for sm_90 under options o, named name. */
static gpucc_digest key_with(const gpucc_compile_options *o, const char *name)
{
	gpucc_digest key;
	memset(&key, 0, sizeof key);
	gpucc_compile *c;
	CHECK_INT(gpucc_compile_new(&c, o), 0);
	CHECK_INT(gpucc_compile_add_target(c, "sm_90"), 0);
	CHECK_INT(gpucc_compile_add_memory(c, name, vector_add, strlen(vector_add)), 0);
	CHECK_INT(gpucc_compile_plan(c), 0);
	CHECK_INT(gpucc_compile_result_count(c), 1);
	const gpucc_compile_result *r = gpucc_compile_result_at(c, 0);
	CHECK(r->key_known);
	CHECK_INT(r->status, GPUCC_COMPILE_PENDING);
	CHECK_INT(r->key_part_count, 7);
	key = r->key;
	gpucc_compile_free(c);
	return key;
}

/* gpucc_compile_add_input: IR by .ll and .bc, sources by .hip, .cu and
 * .cl, or by the language given for anything that is not IR. */
static void test_add_input(void)
{
	char dir[] = "/tmp/gpucc-test-input.XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	static const char *const files[] = {"a.ll", "k.hip", "k.txt", "dir.cu/a.ll"};
	char path[4][96];
	for (size_t i = 0; i < 4; i++) {
		snprintf(path[i], sizeof path[i], "%s/%s", dir, files[i]);
		if (i == 3) {
			char sub[96];
			snprintf(sub, sizeof sub, "%s/dir.cu", dir);
			CHECK_INT(mkdir(sub, 0755), 0);
		}
		int fd = open(path[i], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		const char *text = i == 1 || i == 2 ? "__global__ void k() {}\n" : vector_add;
		CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text));
		close(fd);
	}
	char missing[96];
	snprintf(missing, sizeof missing, "%s/missing.cu", dir);
	static const struct {
		int file; /* index in path, or -1: missing */
		gpucc_source_language language;
		bool source;
		int rc;
	} rows[] = {
		{0, GPUCC_LANGUAGE_FROM_NAME, false, 0},
		{0, GPUCC_LANGUAGE_HIP, false, 0},  /* IR whatever the language */
		{1, GPUCC_LANGUAGE_FROM_NAME, true, 0},
		{2, GPUCC_LANGUAGE_HIP, true, 0},   /* -x hip */
		{3, GPUCC_LANGUAGE_FROM_NAME, false, 0}, /* a dot in a directory's name */
		{-1, GPUCC_LANGUAGE_FROM_NAME, true, GPUCC_ENOTFOUND},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		gpucc_compile_options o;
		gpucc_compile_options_init(&o);
		gpucc_compile *c = NULL;
		CHECK_INT(gpucc_compile_new(&c, &o), 0);
		bool source = !rows[i].source;
		const char *input = rows[i].file < 0 ? missing : path[rows[i].file];
		int rc = gpucc_compile_add_input(c, input, rows[i].language, &source);
		if (rc != rows[i].rc || source != rows[i].source)
			fprintf(stderr, "  row %zu: %s: %s\n", i, input, gpucc_error_last()->message);
		CHECK_INT(rc, rows[i].rc);
		CHECK(source == rows[i].source);
		gpucc_compile_free(c);
	}
	char command[128];
	snprintf(command, sizeof command, "rm -rf '%s'", dir);
	CHECK_INT(system(command), 0);
}

static void test_keys(void)
{
	gpucc_compile_options o;
	gpucc_compile_options_init(&o);
	gpucc_digest base = key_with(&o, "a.ll");
	gpucc_digest renamed = key_with(&o, "dir/b.ll");
	CHECK(gpucc_digest_compare(&base, &renamed) == 0);
	o.jobs = 7;
	gpucc_digest threads = key_with(&o, "a.ll");
	CHECK(gpucc_digest_compare(&base, &threads) == 0);
	o.fast_math = true;
	gpucc_digest fast = key_with(&o, "a.ll");
	CHECK(gpucc_digest_compare(&base, &fast) != 0);
	o.fast_math = false;
	o.code_object_version = 5; /* AMD only: NVIDIA keys ignore it */
	gpucc_digest cov = key_with(&o, "a.ll");
	CHECK(gpucc_digest_compare(&base, &cov) == 0);
}

/* The public key function refuses what no compile would key: a target it
 * does not know, or one not in its canonical spelling. */
static void test_entry_key_target(void)
{
	gpucc_option option = {"opt-level", "2"};
	gpucc_entry e;
	memset(&e, 0, sizeof e);
	e.key_schema = 1;
	e.gpucc_version = "0.1.0";
	e.llvm_version = "19.1.7";
	e.option_count = 1;
	e.options = &option;
	gpucc_digest key;
	e.target = "sm_90:ptx78";
	CHECK_INT(gpucc_entry_compute_key(&key, &e), 0);
	e.target = "gfx90a:sramecc+:xnack-";
	CHECK_INT(gpucc_entry_compute_key(&key, &e), 0);
	e.target = "nonsense";
	CHECK_INT(gpucc_entry_compute_key(&key, &e), GPUCC_EINVALID);
	CHECK_ERROR_HAS("nonsense");
	e.target = "sm_90";
	CHECK_INT(gpucc_entry_compute_key(&key, &e), GPUCC_EINVALID);
	CHECK_ERROR_HAS("'sm_90' is not canonical: its spelling is 'sm_90:ptx78'");
	e.target = "gfx90a:xnack-:sramecc+";
	CHECK_INT(gpucc_entry_compute_key(&key, &e), GPUCC_EINVALID);
	e.target = NULL;
	CHECK_INT(gpucc_entry_compute_key(&key, &e), GPUCC_EINVALID);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* A device library's digest is remembered, and used again only while the
 * file is the one that was hashed: a copy that restores size and mtime
 * (cp -p, rsync -t, tar x) is hashed again. */
static void test_toolchain_memo(void)
{
	CHECK_INT(check_dir_create("test_compile"), 0);
	char lib[256], memo_dir[256];
	snprintf(lib, sizeof lib, "%s", path_in_dir("ocml.bc"));
	snprintf(memo_dir, sizeof memo_dir, "%s", check_dir);
	write_text(lib, "library, version one\n");
	struct stat before;
	CHECK_INT(stat(lib, &before), 0);

	gpucc_toolchain tc;
	gpucc_digest first, again, changed, expected;
	CHECK_INT(gpucc_toolchain_init(&tc, memo_dir), 0);
	CHECK_INT(gpucc_toolchain_digest(&tc, lib, &first), 0);
	gpucc_toolchain_save(&tc);
	gpucc_toolchain_release(&tc);
	gpucc_digest_buffer(&expected, "library, version one\n", 21);
	CHECK(gpucc_digest_compare(&first, &expected) == 0);

	/* Remembered: a fresh toolchain reads the memo. */
	CHECK_INT(gpucc_toolchain_init(&tc, memo_dir), 0);
	CHECK_INT(tc.memo_count, 1);
	CHECK_INT(gpucc_toolchain_digest(&tc, lib, &again), 0);
	CHECK(gpucc_digest_compare(&first, &again) == 0);
	gpucc_toolchain_release(&tc);

	/* Replaced by a file of the same size, mtime set back (as cp -p does):
	 * its ctime and inode give it away. */
	char replacement[256];
	snprintf(replacement, sizeof replacement, "%s", path_in_dir("ocml.bc.new"));
	write_text(replacement, "library, version two\n");
	struct timespec times[2] = {before.st_atim, before.st_mtim};
	CHECK_INT(utimensat(AT_FDCWD, replacement, times, 0), 0);
	CHECK_INT(rename(replacement, lib), 0);
	struct stat after;
	CHECK_INT(stat(lib, &after), 0);
	CHECK(after.st_size == before.st_size && after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
	      after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
	CHECK_INT(gpucc_toolchain_init(&tc, memo_dir), 0);
	CHECK_INT(gpucc_toolchain_digest(&tc, lib, &changed), 0);
	gpucc_digest_buffer(&expected, "library, version two\n", 21);
	CHECK(gpucc_digest_compare(&changed, &expected) == 0);
	gpucc_toolchain_save(&tc);
	gpucc_toolchain_release(&tc);

	/* Rewritten in place (same inode), mtime set back: only the ctime
	 * moved.  The kernel stamps times at a clock tick, so the rewrite is
	 * repeated until the ctime differs from the one the memo recorded. */
	bool ctime_moved = false;
	for (int i = 0; i < 1000 && !ctime_moved; i++) {
		FILE *f = fopen(lib, "r+");
		CHECK(f != NULL);
		if (!f)
			break;
		fputs("library, version 3!!", f);
		fclose(f);
		CHECK_INT(utimensat(AT_FDCWD, lib, times, 0), 0);
		struct stat now;
		CHECK_INT(stat(lib, &now), 0);
		ctime_moved = now.st_ctim.tv_sec != after.st_ctim.tv_sec ||
		              now.st_ctim.tv_nsec != after.st_ctim.tv_nsec;
		if (!ctime_moved)
			nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
	}
	CHECK(ctime_moved);
	CHECK_INT(gpucc_toolchain_init(&tc, memo_dir), 0);
	CHECK_INT(gpucc_toolchain_digest(&tc, lib, &changed), 0);
	gpucc_digest_buffer(&expected, "library, version 3!!\n", 21);
	CHECK(gpucc_digest_compare(&changed, &expected) == 0);
	gpucc_toolchain_release(&tc);
	check_dir_remove();
}

/* Hundreds of memos (a source's headers): each is found again after the
 * table grew and after a reload (none is added twice), and the one file
 * changed among them gets its new digest. */
static void test_toolchain_many_memos(void)
{
	enum { FILES = 300 };
	CHECK_INT(check_dir_create("test_compile_memos"), 0);
	char memo_dir[256], path[FILES][256], text[64];
	snprintf(memo_dir, sizeof memo_dir, "%s", check_dir);
	gpucc_toolchain tc;
	gpucc_digest got, expected;
	CHECK_INT(gpucc_toolchain_init(&tc, memo_dir), 0);
	for (int i = 0; i < FILES; i++) {
		char name[32];
		snprintf(name, sizeof name, "header%03d.h", i);
		snprintf(path[i], sizeof path[i], "%s", path_in_dir(name));
		snprintf(text, sizeof text, "#define H%d %d\n", i, i);
		write_text(path[i], text);
		CHECK_INT(gpucc_toolchain_digest(&tc, path[i], &got), 0);
	}
	CHECK_INT(tc.memo_count, FILES);
	gpucc_toolchain_save(&tc);
	gpucc_toolchain_release(&tc);

	/* Reloaded; one file rewritten in place with another size. */
	write_text(path[FILES / 2], "changed, and longer than before\n");
	CHECK_INT(gpucc_toolchain_init(&tc, memo_dir), 0);
	CHECK_INT(tc.memo_count, FILES);
	for (int i = 0; i < FILES; i++) {
		if (i == FILES / 2)
			snprintf(text, sizeof text, "changed, and longer than before\n");
		else
			snprintf(text, sizeof text, "#define H%d %d\n", i, i);
		CHECK_INT(gpucc_toolchain_digest(&tc, path[i], &got), 0);
		gpucc_digest_buffer(&expected, text, strlen(text));
		CHECK(gpucc_digest_compare(&got, &expected) == 0);
	}
	CHECK_INT(tc.memo_count, FILES);
	gpucc_toolchain_release(&tc);
	check_dir_remove();
}

/* A lookup's view of a record: parsed from a mapping of the file where
 * SIGBUS guards are on (a file cut short meanwhile is reported, and the
 * process lives), read into memory where they are off; a damaged record
 * is no view. */
static void test_record_view(void)
{
	CHECK_INT(check_dir_create("test_compile_record_view"), 0);
	char path[256];
	snprintf(path, sizeof path, "%s", path_in_dir("r.record"));
	gpucc_digest key, file;
	gpucc_digest_buffer(&key, "key", 3);
	gpucc_digest_buffer(&file, "file", 4);
	char kh[GPUCC_DIGEST_HEX_SIZE], fh[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(kh, &key);
	gpucc_digest_to_hex(fh, &file);
	/* Longer than a page, so that cutting it takes a page the lookup
	 * would read. */
	gpucc_buffer t = GPUCC_BUFFER_INIT;
	gpucc_buffer_append_string(&t, RECORD_MAGIC "\nentry ");
	gpucc_buffer_append_string(&t, kh);
	gpucc_buffer_append_string(&t, " 200\n");
	for (int i = 0; i < 200; i++) {
		char line[160];
		snprintf(line, sizeof line, "%s src/file%03d.h\n", fh, i);
		gpucc_buffer_append_string(&t, line);
	}
	CHECK(!t.failed);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, t.data, t.size) == (ssize_t)t.size);
	if (fd >= 0)
		close(fd);

	record_view v;
	for (int guarded = 0; guarded < 2; guarded++) {
		gpucc_image_set_sigbus_guard(guarded);
		CHECK(record_view_open(&v, path) == NULL);
		CHECK_INT(v.rs.count, 1);
		CHECK_INT(v.rs.items[0].count, 200);
		CHECK(gpucc_digest_compare(&v.rs.items[0].key, &key) == 0);
		CHECK((v.mapping != NULL) == (guarded != 0));
		CHECK(!record_view_close(&v));
	}

	/* Cut short while mapped: the bytes past the cut read as zeros, and
	 * closing says so. */
	CHECK(record_view_open(&v, path) == NULL);
	CHECK(v.mapping != NULL);
	CHECK_INT(truncate(path, 100), 0);
	const char *last = v.rs.items[0].lines + v.rs.items[0].size - 2;
	CHECK_INT(*(volatile const char *)last, 0);
	CHECK(record_view_close(&v));
	gpucc_image_set_sigbus_guard(false);

	/* Damaged: no view, nothing held. */
	CHECK(record_view_open(&v, path) != NULL);
	CHECK(v.text == NULL && v.mapping == NULL && v.rs.items == NULL);
	CHECK(strcmp(record_view_open(&v, path_in_dir("none.record")), "no record") == 0);
	free(t.data);
	check_dir_remove();
}

/* The memo file's lines as memo_load reads them: the first of two lines
 * for one file stands, a line of too few fields or none is skipped, and a
 * last line without its line break is read.  A memo whose identity holds
 * is believed: its digest is returned, not the file's. */
static void test_toolchain_memo_lines(void)
{
	CHECK_INT(check_dir_create("test_compile_memo_lines"), 0);
	char a[256], b[256], memo[256], text[4096];
	snprintf(a, sizeof a, "%s", path_in_dir("a.bc"));
	snprintf(b, sizeof b, "%s", path_in_dir("b.bc"));
	snprintf(memo, sizeof memo, "%s", path_in_dir("compile-toolchain"));
	write_text(a, "library a\n");
	write_text(b, "library b\n");
	struct stat sa, sb;
	CHECK_INT(stat(a, &sa), 0);
	CHECK_INT(stat(b, &sb), 0);
	gpucc_digest first, second, third, got;
	gpucc_digest_buffer(&first, "first", 5);
	gpucc_digest_buffer(&second, "second", 6);
	gpucc_digest_buffer(&third, "third", 5);
	char h1[GPUCC_DIGEST_HEX_SIZE], h2[GPUCC_DIGEST_HEX_SIZE], h3[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(h1, &first);
	gpucc_digest_to_hex(h2, &second);
	gpucc_digest_to_hex(h3, &third);
	char id_a[160], id_b[160];
	snprintf(id_a, sizeof id_a, "%lld\t%lld\t%lld\t%llu\t%llu", (long long)sa.st_size,
	         (long long)sa.st_mtim.tv_sec * 1000000000 + sa.st_mtim.tv_nsec,
	         (long long)sa.st_ctim.tv_sec * 1000000000 + sa.st_ctim.tv_nsec,
	         (unsigned long long)sa.st_ino, (unsigned long long)sa.st_dev);
	snprintf(id_b, sizeof id_b, "%lld\t%lld\t%lld\t%llu\t%llu", (long long)sb.st_size,
	         (long long)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec,
	         (long long)sb.st_ctim.tv_sec * 1000000000 + sb.st_ctim.tv_nsec,
	         (unsigned long long)sb.st_ino, (unsigned long long)sb.st_dev);
	snprintf(text, sizeof text,
	         "sha256\t%s\t%s\t%s\n"
	         "sha256\t%s\t%s\t%s\n"
	         "no tabs at all\n"
	         "sha256\t1\t2\n"
	         "\n"
	         "sha256\t%s\t%s\t%s",
	         id_a, h1, a, id_a, h2, a, id_b, h3, b);
	write_text(memo, text);
	gpucc_toolchain tc;
	CHECK_INT(gpucc_toolchain_init(&tc, check_dir), 0);
	CHECK_INT(tc.memo_count, 2);
	CHECK_INT(gpucc_toolchain_digest(&tc, a, &got), 0);
	CHECK(gpucc_digest_compare(&got, &first) == 0);
	CHECK_INT(gpucc_toolchain_digest(&tc, b, &got), 0);
	CHECK(gpucc_digest_compare(&got, &third) == 0);
	gpucc_toolchain_release(&tc);

	/* A value that is not 64 hex digits is no digest: the file is hashed. */
	snprintf(text, sizeof text, "sha256\t%s\t%.63s\t%s\n", id_a, h1, a);
	write_text(memo, text);
	CHECK_INT(gpucc_toolchain_init(&tc, check_dir), 0);
	CHECK_INT(gpucc_toolchain_digest(&tc, a, &got), 0);
	gpucc_digest expected;
	gpucc_digest_buffer(&expected, "library a\n", 10);
	CHECK(gpucc_digest_compare(&got, &expected) == 0);
	gpucc_toolchain_release(&tc);
	check_dir_remove();
}

static void test_compile_and_unavailable(void)
{
	const char *backend = getenv("GPUCC_BACKEND");
	gpucc_compile_options o;
	gpucc_compile_options_init(&o);
	o.jobs = 1;
	gpucc_compile *c;
	CHECK_INT(gpucc_compile_new(&c, &o), 0);
	CHECK_INT(gpucc_compile_add_target(c, "sm_90"), 0);
	CHECK_INT(gpucc_compile_add_memory(c, "mem.ll", vector_add, strlen(vector_add)), 0);
	int rc = gpucc_compile_run(c);
	const gpucc_compile_result *r = gpucc_compile_result_at(c, 0);
	if (!backend || !*backend) {
		/* No backend to find from a test program: a clear EUNAVAILABLE. */
		CHECK_INT(rc, GPUCC_EUNAVAILABLE);
		CHECK_INT(r->status, GPUCC_COMPILE_FAILED);
		CHECK(strstr(r->error, "mem.ll: sm_90:ptx78: ") == r->error);
		gpucc_compile_free(c);
		return;
	}
	CHECK_INT(rc, 0);
	CHECK_INT(r->status, GPUCC_COMPILE_COMPILED);
	CHECK(gpucc_compile_backend_loaded(c));
	CHECK(r->entry != NULL);
	if (r->entry) {
		CHECK_STR(r->entry->module, "mem.ll");
		CHECK_STR(r->entry->target, "sm_90:ptx78");
		CHECK_INT(r->entry->kernel_count, 1);
		CHECK_STR(r->entry->kernels[0].name, "k");
		CHECK(gpucc_entry_payload(r->entry, GPUCC_PART_PTX) != NULL);
		CHECK_STR(gpucc_entry_option(r->entry, "opt-level"), "2");
		CHECK(gpucc_digest_compare(&r->entry->key, &r->key) == 0);
	}
	CHECK_INT(gpucc_compile_run(c), GPUCC_EINVALID); /* runs once */
	gpucc_compile_free(c);
}

/* One compile of vector_add for sm_90 named name through cache: its
 * status, and the module name its entry records in module_out. */
static gpucc_compile_status compile_named(gpucc_cache *cache, const char *name, char *module_out,
                                          size_t module_size)
{
	gpucc_compile_options o;
	gpucc_compile_options_init(&o);
	o.jobs = 1;
	o.no_cubin = true;
	o.cache = cache;
	gpucc_compile *c;
	CHECK_INT(gpucc_compile_new(&c, &o), 0);
	CHECK_INT(gpucc_compile_add_target(c, "sm_90"), 0);
	CHECK_INT(gpucc_compile_add_memory(c, name, vector_add, strlen(vector_add)), 0);
	CHECK_INT(gpucc_compile_run(c), 0);
	const gpucc_compile_result *r = gpucc_compile_result_at(c, 0);
	gpucc_compile_status status = r->status;
	snprintf(module_out, module_size, "%s", r->entry ? r->entry->module : "(no entry)");
	gpucc_compile_free(c);
	return status;
}

/* A hit carries the module name of the session that hits, not that of the
 * compile that filled the cache. */
static void test_hit_module_name(void)
{
	const char *backend = getenv("GPUCC_BACKEND");
	if (!backend || !*backend)
		return; /* nothing can fill the cache */
	CHECK_INT(check_dir_create("test_compile_hit"), 0);
	gpucc_cache *cache = NULL;
	CHECK_INT(gpucc_cache_open(&cache, check_dir, 0), 0);
	if (!cache)
		return;
	char module[128];
	CHECK_INT(compile_named(cache, "dir/foo.ll", module, sizeof module), GPUCC_COMPILE_COMPILED);
	CHECK_STR(module, "foo.ll");
	CHECK_INT(compile_named(cache, "other/bar.ll", module, sizeof module), GPUCC_COMPILE_HIT);
	CHECK_STR(module, "bar.ll");
	gpucc_cache_free(cache);
	check_dir_remove();
}

static bool clang_counted(void *ctx)
{
	int *calls = ctx;
	return ++calls[0] <= calls[1]; /* calls[1]: how many may go on */
}

/* One plan of k.hip for gfx90a through cache with the hook before clang
 * (allowed: whether it lets clang run); the pair's status. */
static gpucc_compile_status plan_source(gpucc_cache *cache, const char *source, int calls[2],
                                        bool run)
{
	gpucc_compile_options o;
	gpucc_compile_options_init(&o);
	o.jobs = 1;
	o.cache = cache;
	gpucc_compile *c;
	CHECK_INT(gpucc_compile_new(&c, &o), 0);
	CHECK_INT(gpucc_compile_add_target(c, "gfx90a"), 0);
	CHECK_INT(gpucc_compile_add_source(c, source, GPUCC_LANGUAGE_FROM_NAME), 0);
	CHECK_INT(gpucc_compile_set_before_clang(c, clang_counted, calls), 0);
	int rc = gpucc_compile_plan(c);
	CHECK_INT(gpucc_compile_set_before_clang(c, NULL, NULL), GPUCC_EINVALID);
	if (rc == 0 && run)
		rc = gpucc_compile_run(c);
	const gpucc_compile_result *r = gpucc_compile_result_count(c) ? gpucc_compile_result_at(c, 0) : NULL;
	gpucc_compile_status status = r ? r->status : GPUCC_COMPILE_FAILED;
	if (r && r->status == GPUCC_COMPILE_FAILED && calls[0] > calls[1])
		CHECK(r->error && strstr(r->error, "stopped by the caller before clang ran"));
	gpucc_compile_free(c);
	return status;
}

/* The hook before clang: called once when a source's record misses, and
 * false fails it unrun; never called when every record hits. */
static void test_before_clang(void)
{
	const char *backend = getenv("GPUCC_BACKEND");
	if (!backend || !*backend || system("clang-19 --version >/dev/null 2>&1") != 0)
		return; /* no clang-19 or no backend: nothing can fill a record */
	CHECK_INT(check_dir_create("test_compile_before_clang"), 0);
	const char *source = path_in_dir("k.hip");
	write_text(source, "extern \"C\" __global__ void k(float *p) { p[0] *= 2.0f; }\n");
	gpucc_cache *cache = NULL;
	CHECK_INT(gpucc_cache_open(&cache, path_in_dir("cache"), 0), 0);
	if (!cache)
		return;
	int refused[2] = {0, 0}, allowed[2] = {0, 1}, hit[2] = {0, 0};
	CHECK_INT(plan_source(cache, source, refused, true), GPUCC_COMPILE_FAILED);
	CHECK_INT(refused[0], 1);
	CHECK_INT(plan_source(cache, source, allowed, true), GPUCC_COMPILE_COMPILED);
	CHECK_INT(allowed[0], 1);
	CHECK_INT(plan_source(cache, source, hit, false), GPUCC_COMPILE_HIT);
	CHECK_INT(hit[0], 0);
	gpucc_cache_free(cache);
	check_dir_remove();
}

/* libnvJitLink's version is read from the toolkit banner it carries,
 * without loading it: the banner whose line ends in ", V" and digits. */
static void test_nvjitlink_version(void)
{
	CHECK_INT(check_dir_create("test_compile_nvjitlink"), 0);
	char path[256], version[64];
	snprintf(path, sizeof path, "%s", path_in_dir("libnvJitLink.so"));
	static const char carries[] = "\177ELF junk\0Cuda compilation tools, release %d.%d,\0"
	                              "Cuda compilation tools, release 13.0, V13.0.88\0tail";
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	fwrite(carries, 1, sizeof carries, f);
	fclose(f);
	CHECK_INT(gpucc_nvjitlink_scan_version(path, version, sizeof version), 0);
	CHECK_STR(version, "13.0.88");
	write_text(path, "a library without the banner, padded to be long enough\n");
	CHECK_INT(gpucc_nvjitlink_scan_version(path, version, sizeof version), GPUCC_EUNAVAILABLE);
	CHECK_ERROR_HAS("names no version");
	/* Named explicitly: that file or none, never the toolkit's. */
	char *found = gpucc_nvjitlink_find(path);
	CHECK(found && strcmp(found, path) == 0);
	free(found);
	CHECK(gpucc_nvjitlink_find("") == NULL);
	CHECK(gpucc_nvjitlink_find(path_in_dir("missing.so")) == NULL);
	check_dir_remove();
}

int main(void)
{
	/* Its settings from the environment meson gives it (GPUCC_BACKEND, GPUCC_CACHE_DIR), as the
	 * gpucc command takes them: libgpucc reads none unless asked. */
	gpucc_config *cfg = NULL;
	if (gpucc_config_from_env(&cfg) != 0 || gpucc_set_config(cfg) != 0)
		return 1;
	gpucc_config_free(cfg);
	RUN(test_module_facts_text);
	RUN(test_options);
	RUN(test_add_file);
	RUN(test_add_input);
	RUN(test_keys);
	RUN(test_entry_key_target);
	RUN(test_toolchain_memo);
	RUN(test_toolchain_many_memos);
	RUN(test_toolchain_memo_lines);
	RUN(test_record_view);
	RUN(test_nvjitlink_version);
	RUN(test_compile_and_unavailable);
	RUN(test_hit_module_name);
	RUN(test_before_clang);
	RUN(test_module_facts_bitcode); /* may skip: last */
	return CHECK_DONE();
}
