/*
 * formats/tests/fuzz_manifest.c -- fuzz target: the manifest parser
 * (formats/manifest_read.c, formats/json_reader.c) on arbitrary bytes.  Whatever
 * it accepts must be a valid set of entries: sorted unique keys, and
 * written back canonically it must parse again to the same entries.
 */
#include "fuzz.h"
#include "key.h"
#include "manifest.h"

#include <gpucc.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gpucc_manifest m;
	if (gpucc_manifest_parse(&m, (const char *)data, size, "fuzz.json") != 0) {
		if (!gpucc_error_last()->message[0])
			fuzz_fail("a refusal without a message");
		return 0;
	}
	const gpucc_entry **list = malloc((m.entry_count + 1) * sizeof *list);
	for (size_t i = 0; i < m.entry_count; i++) {
		list[i] = &m.entries[i];
		if (i && gpucc_digest_compare(&m.entries[i - 1].key, &m.entries[i].key) >= 0)
			fuzz_fail("accepted entries out of order");
	}
	char *json;
	size_t json_size;
	if (gpucc_manifest_write(&json, &json_size, list, m.entry_count) != 0)
		fuzz_fail("cannot write back what was read");
	gpucc_manifest again;
	if (gpucc_manifest_parse(&again, json, json_size, "again.json") != 0)
		fuzz_fail("the canonical form of an accepted manifest does not parse");
	if (again.entry_count != m.entry_count)
		fuzz_fail("the canonical form holds other entries");
	gpucc_manifest_release(&again);
	free(json);
	free(list);
	gpucc_manifest_release(&m);
	return 0;
}

void fuzz_seeds(void (*add)(const void *data, size_t size))
{
	static gpucc_option options[2] = {{"fast-math", "off"}, {"opt-level", "2"}};
	static gpucc_kernel kernels[2] = {{"saxpy", 12, 0, 0}, {"k\"2\\\n", -1, 256, -1}};
	static const char *externals[1] = {"vprintf"};
	static gpucc_device_lib libs[1] = {{"libdevice.10.bc", {{0}}}};
	gpucc_payload payloads[2][2];
	gpucc_entry e[2];
	const char *targets[2][2] = {{"sm_90:ptx78", "nvptx64-nvidia-cuda"},
	                             {"gfx90a:sramecc+:xnack-", "amdgcn-amd-amdhsa"}};
	for (int i = 0; i < 2; i++) {
		memset(&e[i], 0, sizeof e[i]);
		e[i].key_schema = GPUCC_KEY_SCHEMA;
		e[i].module = i ? "b.ll" : "a.ll";
		gpucc_digest_buffer(&e[i].module_sha256, e[i].module, 4);
		e[i].target = targets[i][0];
		e[i].triple = targets[i][1];
		e[i].gpucc_version = "0.1.0";
		e[i].llvm_version = "19.1.7";
		e[i].device_lib_count = (size_t)(1 - i);
		e[i].device_libs = libs;
		e[i].option_count = 2;
		e[i].options = options;
		e[i].kernel_count = (size_t)(1 + i);
		e[i].kernels = kernels;
		e[i].external_count = (size_t)(1 - i);
		e[i].externals = externals;
		payloads[i][0].part = i ? GPUCC_PART_HSACO : GPUCC_PART_PTX;
		gpucc_digest_buffer(&payloads[i][0].sha256, "payload", 7);
		payloads[i][0].size = 7;
		payloads[i][1].part = GPUCC_PART_BITCODE;
		gpucc_digest_buffer(&payloads[i][1].sha256, "bitcode", 7);
		payloads[i][1].size = 7;
		e[i].payload_count = 2;
		e[i].payloads = payloads[i];
		gpucc_key_compute(&e[i].key, &e[i]);
	}
	const gpucc_entry *list[2] = {&e[0], &e[1]};
	if (gpucc_digest_compare(&e[0].key, &e[1].key) > 0) {
		list[0] = &e[1];
		list[1] = &e[0];
	}
	for (size_t n = 0; n <= 2; n++) {
		char *json;
		size_t size;
		if (gpucc_manifest_write(&json, &size, list, n) == 0) {
			add(json, size);
			free(json);
		}
	}
}
