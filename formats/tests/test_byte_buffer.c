/*
 * formats/tests/test_byte_buffer.c -- the growable byte buffer
 * (formats/byte_buffer.h): bytes and printf output appended across many
 * growths, always NUL-terminated, handed over whole; a size past SIZE_MAX
 * refused without wrapping, and a failed buffer inert until freed.
 */
#include "byte_buffer.h"
#include "check.h"

#include <stdint.h>

static void test_append_and_take(void)
{
	gpucc_buffer b = GPUCC_BUFFER_INIT;
	CHECK(b.data == NULL);
	char expected[20000];
	size_t used = 0;
	for (int i = 0; i < 2000; i++) {
		char piece[16];
		int n = snprintf(piece, sizeof piece, "%d,", i);
		if (i % 3 == 0)
			CHECK_INT(gpucc_buffer_append(&b, piece, (size_t)n), 0);
		else if (i % 3 == 1)
			CHECK_INT(gpucc_buffer_printf(&b, "%d,", i), 0);
		else
			CHECK_INT(gpucc_buffer_append_string(&b, piece), 0);
		memcpy(expected + used, piece, (size_t)n);
		used += (size_t)n;
		CHECK(b.data[b.size] == '\0');
		CHECK(b.capacity > b.size);
	}
	CHECK_INT(b.size, used);
	CHECK(memcmp(b.data, expected, used) == 0);
	size_t size = 0;
	char *taken = gpucc_buffer_take(&b, &size);
	CHECK_INT(size, used);
	CHECK(taken && taken[used] == '\0' && memcmp(taken, expected, used) == 0);
	CHECK(b.data == NULL && b.size == 0 && b.capacity == 0 && !b.failed);
	free(taken);
}

/* Bytes with NULs in them, and printf output longer than any first guess. */
static void test_binary_and_long(void)
{
	gpucc_buffer b = GPUCC_BUFFER_INIT;
	CHECK_INT(gpucc_buffer_append(&b, "a\0b", 3), 0);
	CHECK_INT(b.size, 3);
	CHECK(memcmp(b.data, "a\0b", 4) == 0);
	char long_text[3001];
	memset(long_text, 'x', 3000);
	long_text[3000] = '\0';
	CHECK_INT(gpucc_buffer_printf(&b, "<%s>%d", long_text, 42), 0);
	CHECK_INT(b.size, 3 + 1 + 3000 + 1 + 2);
	CHECK(b.data[4] == 'x' && b.data[3003] == 'x' && strcmp(b.data + 3004, ">42") == 0);
	CHECK_INT(gpucc_buffer_append(&b, NULL, 0), 0);
	CHECK_INT(b.size, 3007);
	gpucc_buffer_free(&b);
	CHECK(b.data == NULL && b.size == 0);
}

static void test_reserve_extend_clear(void)
{
	gpucc_buffer b = GPUCC_BUFFER_INIT;
	CHECK_INT(gpucc_buffer_reserve(&b, 10000), 0);
	CHECK(b.capacity >= 10001);
	CHECK_INT(b.size, 0);
	CHECK(b.data[0] == '\0');
	char *before = b.data;
	char *at = gpucc_buffer_extend(&b, 10000);
	CHECK(at == before); /* reserved: no move */
	memset(at, 'y', 10000);
	CHECK(b.data[10000] == '\0');
	size_t capacity = b.capacity;
	gpucc_buffer_clear(&b);
	CHECK_INT(b.size, 0);
	CHECK_INT(b.capacity, capacity);
	CHECK(b.data[0] == '\0');
	CHECK_INT(gpucc_buffer_append_string(&b, "again"), 0);
	CHECK_STR(b.data, "again");
	gpucc_buffer_free(&b);
}

/* Sizes that would wrap are refused; a failed buffer stays failed, keeps
 * what it held until freed, and hands nothing over. */
static void test_overflow(void)
{
	gpucc_buffer b = GPUCC_BUFFER_INIT;
	CHECK_INT(gpucc_buffer_append_string(&b, "kept"), 0);
	CHECK_INT(gpucc_buffer_reserve(&b, SIZE_MAX), -1);
	CHECK(b.failed);
	CHECK_STR(b.data, "kept");
	CHECK(gpucc_buffer_extend(&b, 1) == NULL);
	CHECK_INT(gpucc_buffer_append_string(&b, "more"), -1);
	CHECK_INT(gpucc_buffer_printf(&b, "%s", "more"), -1);
	CHECK_INT(b.size, 4);
	size_t size = 99;
	CHECK(gpucc_buffer_take(&b, &size) == NULL);
	CHECK_INT(size, 0);
	CHECK(!b.failed && b.data == NULL);

	gpucc_buffer c = GPUCC_BUFFER_INIT;
	CHECK_INT(gpucc_buffer_append(&c, "ab", 2), 0);
	CHECK(gpucc_buffer_extend(&c, SIZE_MAX - 2) == NULL);
	CHECK(c.failed);
	CHECK_INT(c.size, 2);
	gpucc_buffer_free(&c);
	CHECK(!c.failed);
}

static void test_take_empty(void)
{
	gpucc_buffer b = GPUCC_BUFFER_INIT;
	size_t size = 7;
	CHECK(gpucc_buffer_take(&b, &size) == NULL);
	CHECK_INT(size, 0);
	CHECK_INT(gpucc_buffer_printf(&b, "%s", ""), 0);
	char *taken = gpucc_buffer_take(&b, &size); /* allocated, empty */
	CHECK(taken && taken[0] == '\0');
	CHECK_INT(size, 0);
	free(taken);
}

int main(void)
{
	RUN(test_append_and_take);
	RUN(test_binary_and_long);
	RUN(test_reserve_extend_clear);
	RUN(test_overflow);
	RUN(test_take_empty);
	return CHECK_DONE();
}
