/*
 * lib/tests/fuzz_module_facts.c -- fuzz target: module facts read without
 * LLVM (gpucc_module_facts_read: .ll text, and .bc bitcode with or without
 * its wrapper).  The input is the module's bytes.  Whatever they are, the
 * reader returns, reads nothing past them (the sanitizers' to see), and
 * gives facts that keep their own rules: strings that end inside their
 * buffers, distinct processors within their count, nothing claimed for
 * what it says it could not tell, the same facts twice, and the same facts
 * for bitcode in a wrapper as without.
 */
#include "fuzz.h"

#include "compile_impl.h"

#include <stdlib.h>
#include <string.h>

static bool same_facts(const gpucc_module_facts *a, const gpucc_module_facts *b)
{
	if (a->cpu_count != b->cpu_count)
		return false;
	for (size_t i = 0; i < a->cpu_count; i++)
		if (strcmp(a->cpus[i], b->cpus[i]) != 0)
			return false;
	return a->bitcode == b->bitcode && strcmp(a->triple, b->triple) == 0 &&
	       a->triple_known == b->triple_known && a->calls_libdevice == b->calls_libdevice &&
	       a->calls_rocm == b->calls_rocm && a->calls_hip == b->calls_hip &&
	       a->opencl == b->opencl && a->calls_mangled == b->calls_mangled &&
	       a->attributes_known == b->attributes_known && a->ptx_isa == b->ptx_isa &&
	       a->wavefront64 == b->wavefront64 && a->xnack == b->xnack &&
	       a->sramecc == b->sramecc && a->optnone == b->optnone &&
	       a->flags_known == b->flags_known && a->code_object_version == b->code_object_version;
}

static bool valid_feature(gpucc_feature f)
{
	return f == GPUCC_FEATURE_ANY || f == GPUCC_FEATURE_ON || f == GPUCC_FEATURE_OFF;
}

static void check_rules(const gpucc_module_facts *f, const uint8_t *data, size_t size)
{
	bool magic = size >= 4 && (memcmp(data, "BC\xc0\xde", 4) == 0 ||
	                           memcmp(data, "\xde\xc0\x17\x0b", 4) == 0);
	if (f->bitcode != magic)
		fuzz_fail("bitcode is not what the magic says");
	if (!memchr(f->triple, '\0', sizeof f->triple) || (!f->triple_known && f->triple[0]))
		fuzz_fail("a triple without its NUL, or one the reader could not tell");
	if (f->cpu_count > GPUCC_MODULE_MAX_CPUS)
		fuzz_fail("more processors than the table holds");
	for (size_t i = 0; i < f->cpu_count; i++) {
		if (!memchr(f->cpus[i], '\0', sizeof f->cpus[i]))
			fuzz_fail("a processor without its NUL");
		for (size_t k = 0; k < i; k++)
			if (strcmp(f->cpus[i], f->cpus[k]) == 0)
				fuzz_fail("one processor twice");
	}
	if (!valid_feature(f->xnack) || !valid_feature(f->sramecc))
		fuzz_fail("an xnack or sramecc outside ANY, ON, OFF");
	if (!f->attributes_known && (f->cpu_count || f->ptx_isa || f->wavefront64 || f->optnone ||
	                             f->xnack != GPUCC_FEATURE_ANY || f->sramecc != GPUCC_FEATURE_ANY))
		fuzz_fail("attributes the reader could not tell, yet set");
	if (!f->flags_known && f->code_object_version)
		fuzz_fail("a code object version the reader could not tell, yet set");
	if (!f->bitcode && !f->triple_known && f->triple[0])
		fuzz_fail("text whose triple is both unknown and set");
}

/* Raw bitcode (magic "BC") in a wrapper header must give the same facts. */
static void check_wrapped(const gpucc_module_facts *f, const uint8_t *data, size_t size)
{
	if (size < 4 || memcmp(data, "BC\xc0\xde", 4) != 0)
		return;
	unsigned char *wrapped = malloc(size + 20);
	if (!wrapped)
		return;
	static const unsigned char header[8] = {0xde, 0xc0, 0x17, 0x0b, 0, 0, 0, 0};
	memcpy(wrapped, header, sizeof header);
	uint32_t fields[3] = {20, (uint32_t)size, 0};
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < 4; i++)
			wrapped[8 + 4 * k + i] = (unsigned char)(fields[k] >> (8 * i));
	memcpy(wrapped + 20, data, size);
	gpucc_module_facts w;
	gpucc_module_facts_read(&w, wrapped, size + 20);
	free(wrapped);
	/* The fallback scan for library names sees the header too: no names. */
	if (!same_facts(f, &w))
		fuzz_fail("bitcode in a wrapper gives other facts");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gpucc_module_facts f, again;
	gpucc_module_facts_read(&f, data, size);
	check_rules(&f, data, size);
	gpucc_module_facts_read(&again, data, size);
	if (!same_facts(&f, &again))
		fuzz_fail("the same bytes give other facts");
	check_wrapped(&f, data, size);
	return 0;
}

void fuzz_seeds(void (*add)(const void *data, size_t size))
{
	static const char *const seeds[] = {
		"target triple = \"amdgcn-amd-amdhsa\"\n"
		"declare float @__ocml_sin_f32(float)\n"
		"declare i64 @_Z13get_global_idj(i32) #1\n"
		"define void @k(ptr addrspace(1) %p) #0 {\n"
		"  call void @\"__atomic_work_item\\5Ffence\"(i32 0, i32 1, i32 2) ; fence\n"
		"  ret void\n}\n"
		"attributes #0 = { convergent optnone noinline \"target-cpu\"=\"gfx90a\" "
		"\"target-features\"=\"+xnack,-sramecc,+wavefrontsize64\" }\n"
		"!llvm.module.flags = !{!0}\n!opencl.ocl.version = !{!1}\n"
		"!0 = !{i32 1, !\"amdhsa_code_object_version\", i32 500}\n!1 = !{i32 2, i32 0}\n",
		"target\ttriple =\"nvptx64-nvidia-cuda\"\n"
		"define ptx_kernel void @k() \"target-cpu\"=\"sm_90\" \"target-features\"=\"+ptx80,+sm_90\" {\n"
		"  %x = call float @__nv_expf(float 0.0)\n  ret void\n}\n",
		("!3 = distinct !{i32 1, !\"amdhsa_code_object_version\", i32 u0x190}\n"
		 "!llvm.module.flags = !{!3}\n"),
	};
	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
		add(seeds[i], strlen(seeds[i]));
}
