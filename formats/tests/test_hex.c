/*
 * formats/tests/test_hex.c -- the hex codec (formats/hex.h): every byte
 * value there and back, both cases where either is taken and lowercase
 * only where gpucc reads what it wrote, and a short or bad spelling
 * refused without reading past its first bad digit.
 */
#include "check.h"
#include "hex.h"

static void test_digits(void)
{
	const char *digits = "0123456789abcdef";
	for (int i = 0; i < 16; i++) {
		CHECK_INT(gpucc_hex_digit(digits[i]), i);
		CHECK_INT(gpucc_hex_digit_lower(digits[i]), i);
	}
	for (int c = 'A'; c <= 'F'; c++) {
		CHECK_INT(gpucc_hex_digit(c), c - 'A' + 10);
		CHECK_INT(gpucc_hex_digit_lower(c), -1);
	}
	int valid = 0;
	for (int c = -1; c < 256; c++)
		valid += gpucc_hex_digit(c) >= 0;
	CHECK_INT(valid, 22);
	CHECK_INT(gpucc_hex_digit('g'), -1);
	CHECK_INT(gpucc_hex_digit('/'), -1);
	CHECK_INT(gpucc_hex_digit(':'), -1);
	CHECK_INT(gpucc_hex_digit('@'), -1);
	CHECK_INT(gpucc_hex_digit('G'), -1);
	CHECK_INT(gpucc_hex_digit(0), -1);
	CHECK_INT(gpucc_hex_digit(0x80 + '0'), -1);
	CHECK_INT(gpucc_hex_digit(-200), -1);
	CHECK_INT(gpucc_hex_digit(1000), -1);
}

/* Every byte value, encoded and decoded again. */
static void test_round_trip(void)
{
	unsigned char all[256], back[256];
	char text[513];
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	memset(text, '#', sizeof text);
	gpucc_hex_encode(text, all, 256);
	CHECK(text[512] == '#'); /* no NUL written */
	text[512] = '\0';
	CHECK(strncmp(text, "000102030405060708090a0b0c0d0e0f10", 34) == 0);
	CHECK(strcmp(text + 500, "fafbfcfdfeff") == 0);
	CHECK(gpucc_hex_decode(back, text, 256, true));
	CHECK(memcmp(all, back, 256) == 0);
	memset(back, 0, sizeof back);
	CHECK(gpucc_hex_decode(back, text, 256, false));
	CHECK(memcmp(all, back, 256) == 0);
}

static void test_cases(void)
{
	unsigned char b[4] = {0};
	CHECK(gpucc_hex_decode(b, "DeadBEEF", 4, false));
	CHECK(b[0] == 0xde && b[1] == 0xad && b[2] == 0xbe && b[3] == 0xef);
	CHECK(!gpucc_hex_decode(b, "DeadBEEF", 4, true));
	CHECK(gpucc_hex_decode(b, "deadbeef", 4, true));
	CHECK(b[0] == 0xde && b[3] == 0xef);
	/* Only the 2n digits are read: what follows does not matter. */
	CHECK(gpucc_hex_decode(b, "01zz", 1, true));
	CHECK(b[0] == 0x01);
}

static void test_span(void)
{
	CHECK_INT(gpucc_hex_span("", false), 0);
	CHECK_INT(gpucc_hex_span("09afAF", false), 6);
	CHECK_INT(gpucc_hex_span("09afAF", true), 4);
	CHECK_INT(gpucc_hex_span("0123456789abcdefg0", true), 16);
	CHECK_INT(gpucc_hex_span("x12", false), 0);
	CHECK_INT(gpucc_hex_span("12\xff", false), 2);
}

static void test_refused(void)
{
	unsigned char b[4];
	CHECK(!gpucc_hex_decode(b, "0g", 1, false));
	CHECK(!gpucc_hex_decode(b, "g0", 1, false));
	CHECK(!gpucc_hex_decode(b, "0 ", 1, false));
	CHECK(!gpucc_hex_decode(b, "-1", 1, false));
	CHECK(!gpucc_hex_decode(b, "00112", 3, false));
	/* A string shorter than 2n stops at its NUL: a buffer of exactly its
	 * size (AddressSanitizer would see a read past it). */
	char *shorter = malloc(4);
	memcpy(shorter, "abc", 4);
	CHECK(!gpucc_hex_decode(b, shorter, 4, false));
	memcpy(shorter, "ab", 3);
	CHECK(!gpucc_hex_decode(b, shorter, 4, false));
	free(shorter);
	CHECK(gpucc_hex_decode(b, "", 0, false)); /* nothing to read */
}

int main(void)
{
	RUN(test_digits);
	RUN(test_round_trip);
	RUN(test_cases);
	RUN(test_span);
	RUN(test_refused);
	return CHECK_DONE();
}
