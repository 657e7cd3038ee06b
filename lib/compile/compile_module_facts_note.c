/*
 * lib/compile/compile_module_facts_note.c -- what the names, attributes and module
 * flags the two readers of module facts find mean (lib/compile/compile_module_facts.h):
 * the .ll reader (lib/compile/compile_module_facts.c) and the .bc reader
 * (lib/compile/compile_bitcode.c) note what they read here, so that one module gives
 * the same facts in either form.
 */
#include "compile_module_facts.h"

#include <stdbool.h>
#include <string.h>

static bool bytes_equal(const char *a, size_t size, const char *literal)
{
	return size == strlen(literal) && memcmp(a, literal, size) == 0;
}

static bool bytes_start(const char *a, size_t size, const char *prefix)
{
	size_t n = strlen(prefix);
	return size >= n && memcmp(a, prefix, n) == 0;
}

void gpucc_module_facts_note_reference(gpucc_module_facts *out, const char *name, size_t size)
{
	out->calls_libdevice |= bytes_start(name, size, "__nv_");
	out->calls_rocm |= bytes_start(name, size, "__ocml_") || bytes_start(name, size, "__ockl_");
	out->calls_hip |= bytes_equal(name, size, "__atomic_work_item_fence");
}

void gpucc_module_facts_note_declaration(gpucc_module_facts *out, const char *name, size_t size)
{
	out->calls_mangled |= bytes_start(name, size, "_Z");
}

/* value joins cpus unless there already or the table is full; cut to the
 * buffer. */
static void note_cpu(gpucc_module_facts *out, const char *value, size_t size)
{
	char cpu[sizeof out->cpus[0]];
	size_t n = size < sizeof cpu - 1 ? size : sizeof cpu - 1;
	memcpy(cpu, value, n);
	cpu[n] = '\0';
	for (size_t i = 0; i < out->cpu_count; i++)
		if (strcmp(out->cpus[i], cpu) == 0)
			return;
	if (out->cpu_count < GPUCC_MODULE_MAX_CPUS)
		memcpy(out->cpus[out->cpu_count++], cpu, sizeof cpu);
}

/* "+ptxNN": NN, or 0 when feature is not one. */
static unsigned ptx_feature(const char *feature, size_t size)
{
	if (size < 5 || size > 12 || !bytes_start(feature, size, "+ptx"))
		return 0;
	unsigned value = 0;
	for (size_t i = 4; i < size; i++) {
		if (feature[i] < '0' || feature[i] > '9')
			return 0;
		value = value * 10 + (unsigned)(feature[i] - '0');
	}
	return value;
}

/* "+name" ON, "-name" OFF, for a feature named name; else state unchanged.
 * The first one seen wins. */
static void note_switch(gpucc_feature *state, const char *feature, size_t size, const char *name)
{
	if (*state != GPUCC_FEATURE_ANY || size < 1 || !bytes_equal(feature + 1, size - 1, name))
		return;
	if (feature[0] == '+')
		*state = GPUCC_FEATURE_ON;
	else if (feature[0] == '-')
		*state = GPUCC_FEATURE_OFF;
}

/* One item of a "target-features" list. */
static void note_feature(gpucc_module_facts *out, const char *feature, size_t size)
{
	unsigned ptx = ptx_feature(feature, size);
	if (ptx > out->ptx_isa)
		out->ptx_isa = ptx;
	out->wavefront64 |= bytes_equal(feature, size, "+wavefrontsize64");
	note_switch(&out->xnack, feature, size, "xnack");
	note_switch(&out->sramecc, feature, size, "sramecc");
}

void gpucc_module_facts_note_attribute(gpucc_module_facts *out, const char *key, size_t key_size,
                                       const char *value, size_t value_size)
{
	if (value_size == 0) /* LLVM's "key"="" is the key alone */
		return;
	if (bytes_equal(key, key_size, "target-cpu")) {
		note_cpu(out, value, value_size);
	} else if (bytes_equal(key, key_size, "target-features")) {
		size_t start = 0;
		for (size_t i = 0; i <= value_size; i++) {
			if (i == value_size || value[i] == ',') {
				note_feature(out, value + start, i - start);
				start = i + 1;
			}
		}
	}
}

unsigned gpucc_module_facts_code_object_version(int64_t value)
{
	if (value < 100 || value / 100 > 0xffff)
		return 0;
	return (unsigned)(value / 100);
}
