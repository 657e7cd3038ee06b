/*
 * formats/tests/fuzz_snapshot.c -- fuzz target: snapshot decoding
 * (formats/snapshot_format.c) on arbitrary bytes.  What it accepts must
 * hold strictly increasing keys inside the input.
 */
#include "fuzz.h"
#include "snapshot_format.h"

#include <gpucc.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const unsigned char *items;
	uint64_t count;
	if (gpucc_snapshot_format_decode(&items, &count, data, size, "fuzz.snap") != 0) {
		if (!gpucc_error_last()->message[0])
			fuzz_fail("a refusal without a message");
		return 0;
	}
	if (count && (items < data || items + count * GPUCC_SNAPSHOT_ITEM_SIZE > data + size))
		fuzz_fail("items outside the input");
	for (uint64_t i = 1; i < count; i++)
		if (memcmp(items + (i - 1) * GPUCC_SNAPSHOT_ITEM_SIZE, items + i * GPUCC_SNAPSHOT_ITEM_SIZE,
		           GPUCC_DIGEST_SIZE) >= 0)
			fuzz_fail("accepted keys out of order");
	return 0;
}

void fuzz_seeds(void (*add)(const void *data, size_t size))
{
	for (uint64_t count = 0; count <= 3; count++) {
		size_t size = (size_t)gpucc_snapshot_format_size(count);
		unsigned char *buf = calloc(1, size);
		if (!buf)
			return;
		gpucc_snapshot_format_header(buf, count);
		unsigned char *items = buf + GPUCC_SNAPSHOT_HEADER_SIZE;
		for (uint64_t i = 0; i < count; i++) {
			items[i * GPUCC_SNAPSHOT_ITEM_SIZE] = (unsigned char)(16 * (i + 1)); /* sorted */
			items[i * GPUCC_SNAPSHOT_ITEM_SIZE + 40] = (unsigned char)i;
		}
		gpucc_snapshot_format_trailer(items + count * GPUCC_SNAPSHOT_ITEM_SIZE, buf, items, count);
		add(buf, size);
		free(buf);
	}
}
