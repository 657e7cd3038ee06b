/*
 * formats/tests/fuzz_snapshot.c -- fuzz target: both snapshot forms on the
 * same arbitrary bytes.  The binary format (formats/snapshot_format.c):
 * what it accepts must hold strictly increasing keys inside the input, and
 * be exactly what the writer makes of those items (one encoding per set).
 * The text form (gpucc_snapshot_parse_text, lib/algebra/snapshot_text.c): what it
 * accepts must be sorted and unique, and written back as text must parse
 * to the same items.
 */
#include "fuzz.h"
#include "snapshot_format.h"

#include <gpucc.h>

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void check_binary(const uint8_t *data, size_t size)
{
	const unsigned char *items;
	uint64_t count;
	if (gpucc_snapshot_format_decode(&items, &count, data, size, "fuzz.snap") != 0) {
		if (!gpucc_error_last()->message[0])
			fuzz_fail("a refusal without a message");
		return;
	}
	if (count && (items < data || items + count * GPUCC_SNAPSHOT_ITEM_SIZE > data + size))
		fuzz_fail("items outside the input");
	for (uint64_t i = 1; i < count; i++)
		if (memcmp(items + (i - 1) * GPUCC_SNAPSHOT_ITEM_SIZE, items + i * GPUCC_SNAPSHOT_ITEM_SIZE,
		           GPUCC_DIGEST_SIZE) >= 0)
			fuzz_fail("accepted keys out of order");
	unsigned char header[GPUCC_SNAPSHOT_HEADER_SIZE], trailer[GPUCC_SNAPSHOT_TRAILER_SIZE];
	gpucc_snapshot_format_header(header, count);
	gpucc_snapshot_format_trailer(trailer, header, items, count);
	if (gpucc_snapshot_format_size(count) != size || items != data + sizeof header ||
	    memcmp(header, data, sizeof header) != 0 ||
	    memcmp(trailer, data + size - sizeof trailer, sizeof trailer) != 0)
		fuzz_fail("an accepted snapshot is not the one encoding of its items");
}

/* The text gpucc_snapshot_write_text makes of s (release with free). */
static char *written_text(const gpucc_snapshot *s, size_t *size)
{
	int fd = memfd_create("fuzz-snapshot", MFD_CLOEXEC);
	if (fd < 0 || gpucc_snapshot_write_text(s, fd) != 0)
		fuzz_fail("cannot write a snapshot as text");
	off_t end = lseek(fd, 0, SEEK_END);
	char *text = malloc((size_t)end + 1);
	if (!text || pread(fd, text, (size_t)end, 0) != end)
		fuzz_fail("cannot read back a snapshot's text");
	close(fd);
	*size = (size_t)end;
	return text;
}

static void check_text(const uint8_t *data, size_t size)
{
	gpucc_snapshot *s, *again;
	if (gpucc_snapshot_parse_text(&s, (const char *)data, size, "fuzz.txt") != 0) {
		if (!gpucc_error_last()->message[0])
			fuzz_fail("a refusal without a message");
		return;
	}
	size_t count = gpucc_snapshot_count(s);
	const gpucc_snapshot_item *items = gpucc_snapshot_items(s);
	for (size_t i = 1; i < count; i++)
		if (gpucc_digest_compare(&items[i - 1].key, &items[i].key) >= 0)
			fuzz_fail("parsed keys not sorted and unique");
	size_t text_size;
	char *text = written_text(s, &text_size);
	if (text_size != count * 130)
		fuzz_fail("the text of a snapshot is not one 130-byte line per item");
	if (gpucc_snapshot_parse_text(&again, text, text_size, "again.txt") != 0)
		fuzz_fail("the written text of a snapshot does not parse");
	if (gpucc_snapshot_count(again) != count ||
	    (count && memcmp(gpucc_snapshot_items(again), items, count * sizeof *items) != 0))
		fuzz_fail("the written text of a snapshot parses to other items");
	gpucc_snapshot_free(again);
	gpucc_snapshot_free(s);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_binary(data, size);
	check_text(data, size);
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
	static const char text[] =
		"00000000000000000000000000000000000000000000000000000000000000ff "
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
		"\r\n"
		"0000000000000000000000000000000000000000000000000000000000000001 "
		"FEDCBA9876543210FEDCBA9876543210FEDCBA9876543210FEDCBA9876543210\r\n";
	add(text, sizeof text - 1);
}
