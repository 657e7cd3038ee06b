/*
 * lib/tests/fuzz_driver.c -- main() for fuzz targets in the test suite
 * (lib/tests/fuzz.h): deterministic mutations of the target's seeds.
 *
 *   fuzz_<target> [ROUNDS [SEED]]      defaults: 2000 rounds, seed 1
 *
 * Mutations, after libFuzzer's and AFL's: bit flips, "interesting" bytes,
 * truncation, erasing or duplicating a range, zeroing a 512-byte block (a
 * tar header or data block), and splicing two seeds.  The same ROUNDS and
 * SEED always give the same inputs, so a failure replays.
 */
#include "fuzz.h"

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
static long current_round = -1;

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
	fprintf(stderr, "fuzz: check failed in round %ld: %s\n", current_round, what);
	abort();
}

static void on_crash(int sig)
{
	fprintf(stderr, "fuzz: signal %d in round %ld\n", sig, current_round);
	signal(sig, SIG_DFL);
	raise(sig);
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 2000;
	state = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
	if (!state)
		state = 1;
	signal(SIGSEGV, on_crash);
	signal(SIGBUS, on_crash);
	signal(SIGABRT, on_crash);
	fuzz_seeds(add_seed);
	if (!seed_count) {
		fprintf(stderr, "fuzz: no seeds\n");
		return 1;
	}
	size_t cap = 0;
	for (size_t i = 0; i < seed_count; i++) {
		current_round = -1 - (long)i; /* the seeds themselves first */
		LLVMFuzzerTestOneInput(seeds[i].data, seeds[i].size);
		cap = seeds[i].size > cap ? seeds[i].size : cap;
	}
	cap = cap * 2 + 1024;
	unsigned char *buf = malloc(cap);
	if (!buf)
		return 1;
	for (current_round = 0; current_round < rounds; current_round++) {
		const seed *s = &seeds[below(seed_count)];
		size_t size = s->size;
		memcpy(buf, s->data, size);
		mutate(buf, &size, cap);
		/* A copy of exactly size bytes, so that reading past the end is
		 * a sanitizer report rather than a read of the buffer's slack. */
		unsigned char *input = malloc(size ? size : 1);
		if (!input)
			return 1;
		memcpy(input, buf, size);
		LLVMFuzzerTestOneInput(input, size);
		free(input);
	}
	free(buf);
	for (size_t i = 0; i < seed_count; i++)
		free(seeds[i].data);
	free(seeds);
	fprintf(stderr, "fuzz: %ld rounds from %zu seeds, no failure\n", rounds, seed_count);
	return 0;
}
