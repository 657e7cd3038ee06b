/*
 * lib/tests/fuzz_driver.c -- main() for fuzz targets in the test suite
 * (lib/tests/fuzz.h): the saved inputs once each, then deterministic
 * mutations.
 *
 *   fuzz_<target> [--replay DIR]... [ROUNDS [SEED]]    defaults: 2000 rounds, seed 1
 *
 * --replay feeds every file of DIR (in the text form of fuzz_text.c; names
 * in sorted order) to the target once: the saved corpus and every input that
 * ever crashed it.  A file that does not decode fails the run.  The replayed
 * inputs then join the target's own seeds as material for the mutations.
 *
 * Mutations, after libFuzzer's and AFL's: bit flips, "interesting" bytes,
 * truncation, erasing or duplicating a range, zeroing a 512-byte block (a
 * tar header or data block), and splicing two seeds.  The same inputs,
 * ROUNDS and SEED always give the same mutants, so a failure replays.
 */
#include "fuzz.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct seed {
	unsigned char *data;
	size_t size;
} seed;

static seed *seeds;
static size_t seed_count;
static uint64_t state;
static char current_input[4200] = "setup"; /* what is running, for messages */

static void add_seed(const void *data, size_t size)
{
	seed *grown = realloc(seeds, (seed_count + 1) * sizeof *grown);
	if (!grown)
		abort();
	seeds = grown;
	seeds[seed_count].data = malloc(size ? size : 1);
	if (!seeds[seed_count].data)
		abort();
	memcpy(seeds[seed_count].data, data, size);
	seeds[seed_count].size = size;
	seed_count++;
}

/* xorshift64*: small, fast, and the same everywhere. */
static uint64_t next(void)
{
	state ^= state >> 12;
	state ^= state << 25;
	state ^= state >> 27;
	return state * 0x2545F4914F6CDD1DULL;
}

static size_t below(size_t n)
{
	return n ? (size_t)(next() % n) : 0;
}

static const unsigned char interesting[] = {
	0, 1, 0x7f, 0x80, 0xff, '0', '7', '9', ' ', '"', '\\', '{', '}', '[', ']', ',', ':', '/', '.',
};

/* Mutate buf (size *size, capacity cap) in place, one to four times. */
static void mutate(unsigned char *buf, size_t *size, size_t cap)
{
	int times = 1 + (int)below(4);
	for (int t = 0; t < times; t++) {
		size_t n = *size;
		switch (below(7)) {
		case 0: /* flip a bit */
			if (n)
				buf[below(n)] ^= (unsigned char)(1u << below(8));
			break;
		case 1: /* an interesting byte */
			if (n)
				buf[below(n)] = interesting[below(sizeof interesting)];
			break;
		case 2: /* truncate */
			*size = below(n + 1);
			break;
		case 3: { /* erase a range */
			size_t at = below(n + 1), len = below(n - at + 1);
			memmove(buf + at, buf + at + len, n - at - len);
			*size = n - len;
			break;
		}
		case 4: { /* duplicate a range */
			size_t at = below(n + 1), len = below(n - at + 1);
			if (len && n + len <= cap) {
				memmove(buf + at + len, buf + at, n - at);
				*size = n + len;
			}
			break;
		}
		case 5: /* zero a 512-byte block */
			if (n >= 512) {
				size_t block = below(n / 512) * 512;
				memset(buf + block, 0, 512);
			}
			break;
		default: { /* splice another seed's tail */
			const seed *s = &seeds[below(seed_count)];
			size_t at = below(n + 1), from = below(s->size + 1);
			size_t len = s->size - from;
			if (at + len > cap)
				len = cap - at;
			memcpy(buf + at, s->data + from, len);
			*size = at + len;
			break;
		}
		}
	}
}

void fuzz_fail(const char *what)
{
	fuzz_quiet_end();
	fprintf(stderr, "fuzz: check failed on %s: %s\n", current_input, what);
	abort();
}

static void on_crash(int sig)
{
	fuzz_quiet_end();
	fprintf(stderr, "fuzz: signal %d on %s\n", sig, current_input);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Feed the target a copy of exactly size bytes, so that reading past the
 * end is a sanitizer report rather than a read of a buffer's slack. */
static void run_one(const unsigned char *data, size_t size)
{
	unsigned char *input = malloc(size ? size : 1);
	if (!input)
		abort();
	memcpy(input, data, size);
	LLVMFuzzerTestOneInput(input, size);
	free(input);
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replay every input saved in dir (files starting with '.' are not
 * inputs); their number, or -1 after a message. */
static long replay(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "fuzz: cannot open '%s'\n", dir);
		return -1;
	}
	char **names = NULL;
	size_t count = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		char **grown = realloc(names, (count + 1) * sizeof *names);
		if (!grown || !(grown[count] = strdup(de->d_name)))
			abort();
		names = grown;
		count++;
	}
	closedir(d);
	if (count)
		qsort(names, count, sizeof *names, compare_names);
	long done = 0;
	for (size_t i = 0; i < count; i++) {
		unsigned char *data;
		size_t size;
		char error[128];
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		snprintf(current_input, sizeof current_input, "'%s'", path);
		if (fuzz_text_read_file(&data, &size, path, error) != 0) {
			fprintf(stderr, "fuzz: cannot decode %s: %s\n", current_input, error);
			done = -1;
			break;
		}
		run_one(data, size);
		add_seed(data, size);
		free(data);
		done++;
	}
	for (size_t i = 0; i < count; i++)
		free(names[i]);
	free(names);
	return done;
}

int main(int argc, char **argv)
{
	signal(SIGSEGV, on_crash);
	signal(SIGBUS, on_crash);
	signal(SIGABRT, on_crash);
	int arg = 1;
	long replayed = 0;
	for (; arg + 1 < argc && strcmp(argv[arg], "--replay") == 0; arg += 2) {
		long n = replay(argv[arg + 1]);
		if (n < 0)
			return 1;
		replayed += n;
	}
	long rounds = arg < argc ? atol(argv[arg]) : 2000;
	state = arg + 1 < argc ? strtoull(argv[arg + 1], NULL, 10) : 1;
	if (!state)
		state = 1;
	size_t saved = seed_count;
	fuzz_seeds(add_seed);
	if (!seed_count) {
		fprintf(stderr, "fuzz: no seeds\n");
		return 1;
	}
	size_t cap = 0;
	for (size_t i = 0; i < seed_count; i++) {
		if (i >= saved) { /* the built-in seeds themselves */
			snprintf(current_input, sizeof current_input, "seed %zu", i - saved);
			run_one(seeds[i].data, seeds[i].size);
		}
		cap = seeds[i].size > cap ? seeds[i].size : cap;
	}
	cap = cap * 2 + 1024;
	unsigned char *buf = malloc(cap);
	if (!buf)
		return 1;
	for (long round = 0; round < rounds; round++) {
		snprintf(current_input, sizeof current_input, "round %ld", round);
		const seed *s = &seeds[below(seed_count)];
		size_t size = s->size;
		memcpy(buf, s->data, size);
		mutate(buf, &size, cap);
		run_one(buf, size);
	}
	free(buf);
	for (size_t i = 0; i < seed_count; i++)
		free(seeds[i].data);
	free(seeds);
	fprintf(stderr, "fuzz: %ld saved inputs, %zu seeds, %ld rounds: no failure\n", replayed,
	        seed_count - saved, rounds);
	return 0;
}
