/*
 * lib/tests/fuzz_corpus.c -- converts fuzz inputs between the text form
 * kept in testdata/fuzz/ (fuzz_text.c) and the raw files libFuzzer reads and
 * writes; scripts/fuzz uses it on both sides of a run.
 *
 *   fuzz_corpus decode SRC DST              each input file of directory SRC
 *                                           (not those starting with '.'),
 *                                           raw, as DST/<same name>
 *   fuzz_corpus encode DST [--note TEXT] FILE...
 *                                           each raw FILE as text, as
 *                                           DST/<its base name>, with TEXT as
 *                                           a comment at the top
 *
 * Exits 0, 1 on failure (naming the file), 2 on a bad command line.
 */
#include "fuzz.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

void fuzz_fail(const char *what)
{
	fprintf(stderr, "fuzz_corpus: %s\n", what);
	exit(1);
}

static int write_file(const char *path, const void *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t written = fwrite(data, 1, size, f);
	int closed = fclose(f);
	return written == size && closed == 0 ? 0 : -1;
}

static int decode_dir(const char *src, const char *dst)
{
	DIR *d = opendir(src);
	if (!d) {
		fprintf(stderr, "fuzz_corpus: cannot open '%s'\n", src);
		return 1;
	}
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		char in[4096], out[4096], error[128];
		snprintf(in, sizeof in, "%s/%s", src, de->d_name);
		snprintf(out, sizeof out, "%s/%s", dst, de->d_name);
		unsigned char *data;
		size_t size;
		if (fuzz_text_read_file(&data, &size, in, error) != 0) {
			fprintf(stderr, "fuzz_corpus: '%s': %s\n", in, error);
			rc = 1;
			break;
		}
		if (write_file(out, data, size) != 0) {
			fprintf(stderr, "fuzz_corpus: cannot write '%s'\n", out);
			rc = 1;
		}
		free(data);
	}
	closedir(d);
	return rc;
}

static int encode_file(const char *dst, const char *path, const char *note)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "fuzz_corpus: cannot open '%s'\n", path);
		return 1;
	}
	unsigned char *data = malloc(FUZZ_TEXT_MAX_SIZE + 1);
	size_t size = data ? fread(data, 1, FUZZ_TEXT_MAX_SIZE + 1, f) : 0;
	int read_error = ferror(f);
	fclose(f);
	if (!data || read_error || size > FUZZ_TEXT_MAX_SIZE) {
		fprintf(stderr, "fuzz_corpus: cannot read '%s'%s\n", path,
		        size > FUZZ_TEXT_MAX_SIZE ? ": too large" : "");
		free(data);
		return 1;
	}
	char *text = fuzz_text_encode(data, size, note);
	free(data);
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	char out[4096];
	snprintf(out, sizeof out, "%s/%s", dst, base);
	int rc = text && write_file(out, text, strlen(text)) == 0 ? 0 : 1;
	if (rc)
		fprintf(stderr, "fuzz_corpus: cannot write '%s'\n", out);
	free(text);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "decode") == 0)
		return decode_dir(argv[2], argv[3]);
	if (argc >= 3 && strcmp(argv[1], "encode") == 0) {
		int i = 3;
		const char *note = NULL;
		if (i + 1 < argc && strcmp(argv[i], "--note") == 0) {
			note = argv[i + 1];
			i += 2;
		}
		for (; i < argc; i++)
			if (encode_file(argv[2], argv[i], note) != 0)
				return 1;
		return 0;
	}
	fprintf(stderr, "usage: fuzz_corpus decode SRC DST\n"
	                "       fuzz_corpus encode DST [--note TEXT] FILE...\n");
	return 2;
}
