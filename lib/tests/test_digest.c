/*
 * lib/tests/test_digest.c -- SHA-256 against known vectors, hex round trips,
 * payload kind names, and the error contract (one line, control characters
 * spelt as formats/escape.h says).
 */
#include "check.h"

#include <gpucc.h>

#include "errors.h"
#include "escape.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_sha256_vectors(void)
{
	gpucc_digest d;
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_buffer(&d, "", 0);
	gpucc_digest_to_hex(hex, &d);
	CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	gpucc_digest_buffer(&d, "abc", 3);
	gpucc_digest_to_hex(hex, &d);
	CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_hex_round_trip(void)
{
	gpucc_digest d, back;
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_buffer(&d, "gpucc", 5);
	gpucc_digest_to_hex(hex, &d);
	CHECK_INT(gpucc_digest_from_hex(&back, hex), 0);
	CHECK_INT(gpucc_digest_compare(&d, &back), 0);
	CHECK_INT(gpucc_digest_from_hex(&back, "abc"), GPUCC_EINVALID);
	CHECK_INT(gpucc_digest_from_hex(&back,
	          "zz7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), GPUCC_EINVALID);
	CHECK_INT(gpucc_error_last()->code, GPUCC_EINVALID);
	CHECK_ERROR_HAS("not a SHA-256 digest");
}

static void test_digest_file(void)
{
	char path[] = "/tmp/gpucc-digest-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK(write(fd, "abc", 3) == 3);
	close(fd);
	gpucc_digest d, expected;
	uint64_t size = 0;
	CHECK_INT(gpucc_digest_file(&d, &size, path), 0);
	gpucc_digest_buffer(&expected, "abc", 3);
	CHECK_INT(gpucc_digest_compare(&d, &expected), 0);
	CHECK_INT(size, 3);
	unlink(path);
	CHECK_INT(gpucc_digest_file(&d, &size, path), GPUCC_ENOTFOUND);
	CHECK_ERROR_HAS(path);
}

/* A FIFO with no writer: open(2) without O_NONBLOCK would wait for one
 * forever.  gpucc_digest_file must return at once, refusing it (an alarm
 * ends the test if it hangs). */
static void test_digest_fifo(void)
{
	char dir[] = "/tmp/gpucc-digest-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char path[64];
	snprintf(path, sizeof path, "%s/fifo", dir);
	CHECK_INT(mkfifo(path, 0600), 0);
	gpucc_digest d;
	uint64_t size = 0;
	alarm(10);
	CHECK_INT(gpucc_digest_file(&d, &size, path), GPUCC_EINVALID);
	alarm(0);
	CHECK_ERROR_HAS("not a regular file");
	CHECK_ERROR_HAS(path);
	/* A directory is refused the same way, not read as empty. */
	CHECK_INT(gpucc_digest_file(&d, &size, dir), GPUCC_EINVALID);
	CHECK_ERROR_HAS("is a directory, not a regular file");
	unlink(path);
	rmdir(dir);
}

static void test_parts(void)
{
	gpucc_part p;
	CHECK_INT(gpucc_part_from_name(&p, "hsaco"), 0);
	CHECK_INT(p, GPUCC_PART_HSACO);
	CHECK_STR(gpucc_part_extension(GPUCC_PART_BITCODE), ".bc");
	CHECK_INT(gpucc_part_from_name(&p, "elf"), GPUCC_EINVALID);
	CHECK_ERROR_HAS("'elf'");
	gpucc_error_clear();
	CHECK_INT(gpucc_error_last()->code, 0);
	CHECK_STR(gpucc_error_name(GPUCC_ECONFLICT), "GPUCC_ECONFLICT");
}

/* Whoever quotes a name, the message spells its control characters once
 * (\n, \t, \xHH), and a message spelt already, or set again with a
 * prefix, reads the same; one too long is cut with "...". */
static void test_error_spelling(void)
{
	CHECK_INT(gpucc_error_set(GPUCC_ENOTFOUND, "cannot open '%s'", "a\nb\tc\x1b\x7f\r\xc3\xa9"),
	          GPUCC_ENOTFOUND);
	CHECK_STR(gpucc_error_last()->message, "cannot open 'a\\nb\\tc\\x1b\\x7f\\x0d\xc3\xa9'");
	char spelt[64];
	CHECK_INT(gpucc_escape_controls(spelt, sizeof spelt, "x\x1by"), 6);
	gpucc_error_set(GPUCC_ERROR, "'%s'", spelt);
	CHECK_STR(gpucc_error_last()->message, "'x\\x1by'");
	gpucc_error_prefix("in\n'%s'", "z");
	CHECK_STR(gpucc_error_last()->message, "in\\n'z': 'x\\x1by'");
	CHECK_INT(gpucc_error_last()->code, GPUCC_ERROR);
	char many[1000];
	memset(many, '\n', sizeof many - 1);
	many[sizeof many - 1] = '\0';
	gpucc_error_set(GPUCC_ERROR, "%s", many);
	const char *m = gpucc_error_last()->message;
	CHECK(strlen(m) < 1024 && strlen(m) > 1000);
	CHECK_STR(m + strlen(m) - 5, "\\n...");
	CHECK(strchr(m, '\n') == NULL);
	/* The cut: after a whole byte's spelling, "..." when it fits. */
	CHECK_INT(gpucc_escape_controls(spelt, 8, "\x1b\x1b"), 7);
	CHECK_STR(spelt, "\\x1b...");
	CHECK_INT(gpucc_escape_controls(spelt, 8, "abcdefghij"), 7);
	CHECK_STR(spelt, "abcd...");
	CHECK_INT(gpucc_escape_controls(spelt, 8, "\n\n\n"), 6);
	CHECK_STR(spelt, "\\n\\n\\n");
	CHECK_INT(gpucc_escape_controls(spelt, 8, NULL), 0);
	CHECK_STR(spelt, "");
	CHECK_INT(gpucc_escape_byte(spelt, 'a'), 1);
	CHECK_INT(gpucc_escape_byte(spelt, '\\'), 1);
	CHECK_INT(gpucc_escape_byte(spelt, 0x7f), 4);
	CHECK(memcmp(spelt, "\\x7f", 4) == 0);
	gpucc_error_clear();
}

int main(void)
{
	RUN(test_sha256_vectors);
	RUN(test_hex_round_trip);
	RUN(test_digest_file);
	RUN(test_digest_fifo);
	RUN(test_parts);
	RUN(test_error_spelling);
	return CHECK_DONE();
}
