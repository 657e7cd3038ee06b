/*
 * lib/tests/test_compile.c -- compile sessions through the public API, and
 * the parts of planning that need no LLVM: module facts (triple and library
 * needs from the bytes, .ll and .bc), option validation, keys that follow
 * options and ignore names, and a miss that cannot load the backend.  One
 * real compile checks results, kernels and the entry's fields.
 */
#include "check.h"

#include "compile_internal.h"
#include "gpucc.h"

#include <stdlib.h>
#include <string.h>
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
	o.code_object_version = 0;
	CHECK_INT(gpucc_compile_new(&c, &o), 0);
	CHECK_INT(gpucc_compile_add_target(c, "gfx90a:xnack+"), 0);
	CHECK_INT(gpucc_compile_add_target(c, "sm_99"), GPUCC_EINVALID);
	CHECK_INT(gpucc_compile_add_file(c, "/nonexistent/module.ll"), GPUCC_ENOTFOUND);
	CHECK_ERROR_HAS("/nonexistent/module.ll");
	CHECK_INT(gpucc_compile_plan(c), GPUCC_EINVALID); /* no modules */
	gpucc_compile_free(c);
	gpucc_compile_free(NULL);
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

int main(void)
{
	RUN(test_module_facts_text);
	RUN(test_options);
	RUN(test_keys);
	RUN(test_compile_and_unavailable);
	RUN(test_module_facts_bitcode); /* may skip: last */
	return CHECK_DONE();
}
