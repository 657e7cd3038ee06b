/*
 * formats/sha256.c -- SHA-256 (FIPS 180-4, formats/sha256.h): a portable
 * compression function, and one with the x86 SHA extensions, chosen once
 * per process by what CPUID reports.
 */
#include "sha256.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_SHANI_CODE 1
#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h> /* glibc's CPUID results, read once by ld.so */
#define HAVE_GLIBC_CPU_FEATURES 1
#else
#include <cpuid.h>
#endif
#endif

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

/* ---- portable ------------------------------------------------------------------ */

static inline uint32_t rotr(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static inline uint32_t load_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Compress count 64-byte blocks from data into state. */
static void blocks_portable(uint32_t state[8], const unsigned char *data, size_t count)
{
	for (; count--; data += 64) {
		uint32_t w[64];
		for (int i = 0; i < 16; i++)
			w[i] = load_be32(data + 4 * i);
		for (int i = 16; i < 64; i++) {
			uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
			uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
			w[i] = w[i - 16] + s0 + w[i - 7] + s1;
		}
		uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
		uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
		for (int i = 0; i < 64; i++) {
			uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
			              K[i] + w[i];
			uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
			h = g;
			g = f;
			f = e;
			e = d + t1;
			d = c;
			c = b;
			b = a;
			a = t1 + t2;
		}
		state[0] += a;
		state[1] += b;
		state[2] += c;
		state[3] += d;
		state[4] += e;
		state[5] += f;
		state[6] += g;
		state[7] += h;
	}
}

/* ---- x86 SHA extensions ------------------------------------------------------------ */

#ifdef HAVE_SHANI_CODE
/* The extensions keep the state as two registers, ABEF and CDGH (each
 * word order high to low); sha256rnds2 does two rounds with the message
 * words plus constants in the low half of its third operand, and
 * sha256msg1/msg2 compute the message schedule four words at a time. */
#define SHANI_TARGET __attribute__((target("sha,sse4.1,ssse3")))

/* Four rounds from message words m (plus their constants, from K[i]). */
#define ROUNDS4(m, i)                                                                          \
	do {                                                                                       \
		__m128i wk = _mm_add_epi32((m), _mm_loadu_si128((const __m128i *)&K[(i)]));           \
		cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);                                          \
		abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0e));                \
	} while (0)

/* The next four schedule words after a, b, c, d (each four words, a the
 * oldest): W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16]. */
#define SCHEDULE(a, b, c, d)                                                                   \
	_mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32((a), (b)),                         \
	                                   _mm_alignr_epi8((d), (c), 4)),                              \
	                     (d))

SHANI_TARGET static void blocks_shani(uint32_t state[8], const unsigned char *data, size_t count)
{
	const __m128i byteswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
	/* state[0..3] = A B C D, state[4..7] = E F G H, as little-endian
	 * lanes: DCBA and HGFE; the instructions want ABEF and CDGH. */
	__m128i dcba = _mm_loadu_si128((const __m128i *)&state[0]);
	__m128i hgfe = _mm_loadu_si128((const __m128i *)&state[4]);
	__m128i cdab = _mm_shuffle_epi32(dcba, 0xb1);
	__m128i efgh = _mm_shuffle_epi32(hgfe, 0x1b);
	__m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
	__m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xf0);
	for (; count--; data += 64) {
		__m128i abef_start = abef, cdgh_start = cdgh;
		__m128i m0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 0)), byteswap);
		__m128i m1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 16)), byteswap);
		__m128i m2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 32)), byteswap);
		__m128i m3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 48)), byteswap);
		ROUNDS4(m0, 0);
		ROUNDS4(m1, 4);
		ROUNDS4(m2, 8);
		ROUNDS4(m3, 12);
		for (int i = 16; i < 64; i += 16) {
			m0 = SCHEDULE(m0, m1, m2, m3);
			ROUNDS4(m0, i);
			m1 = SCHEDULE(m1, m2, m3, m0);
			ROUNDS4(m1, i + 4);
			m2 = SCHEDULE(m2, m3, m0, m1);
			ROUNDS4(m2, i + 8);
			m3 = SCHEDULE(m3, m0, m1, m2);
			ROUNDS4(m3, i + 12);
		}
		abef = _mm_add_epi32(abef, abef_start);
		cdgh = _mm_add_epi32(cdgh, cdgh_start);
	}
	/* Back to DCBA and HGFE. */
	__m128i feba = _mm_shuffle_epi32(abef, 0x1b);
	__m128i dchg = _mm_shuffle_epi32(cdgh, 0xb1);
	_mm_storeu_si128((__m128i *)&state[0], _mm_blend_epi16(feba, dchg, 0xf0));
	_mm_storeu_si128((__m128i *)&state[4], _mm_alignr_epi8(dchg, feba, 8));
}

/* Whether the processor (and the kernel) let us use the SHA extensions.
 * glibc's copy of CPUID where there is one: CPUID itself traps to the
 * hypervisor in a virtual machine, tens of microseconds each. */
static int have_shani(void)
{
#ifdef HAVE_GLIBC_CPU_FEATURES
	return CPU_FEATURE_ACTIVE(SHA) && CPU_FEATURE_ACTIVE(SSSE3) && CPU_FEATURE_ACTIVE(SSE4_1);
#else
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSSE3) || !(c & bit_SSE4_1))
		return 0;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return 0;
	return (b & bit_SHA) != 0;
#endif
}
#endif

/* ---- choosing ---------------------------------------------------------------------- */

typedef void (*blocks_fn)(uint32_t state[8], const unsigned char *data, size_t count);

static blocks_fn blocks = blocks_portable;
static const char *blocks_name = "portable";
static pthread_once_t chosen = PTHREAD_ONCE_INIT;

static void choose(void)
{
#ifdef HAVE_SHANI_CODE
	if (have_shani()) {
		blocks = blocks_shani;
		blocks_name = "shani";
	}
#endif
}

const char *gpucc_sha256_implementation(void)
{
	pthread_once(&chosen, choose);
	return blocks_name;
}

int gpucc_sha256_use(const char *name)
{
	pthread_once(&chosen, choose);
	if (strcmp(name, "portable") == 0) {
		blocks = blocks_portable;
		blocks_name = "portable";
		return 0;
	}
#ifdef HAVE_SHANI_CODE
	if (strcmp(name, "shani") == 0 && have_shani()) {
		blocks = blocks_shani;
		blocks_name = "shani";
		return 0;
	}
#endif
	return -1;
}

/* ---- the interface ----------------------------------------------------------------- */

void gpucc_sha256_init(gpucc_sha256 *s)
{
	static const uint32_t initial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	pthread_once(&chosen, choose);
	memcpy(s->state, initial, sizeof initial);
	s->length = 0;
}

void gpucc_sha256_update(gpucc_sha256 *s, const void *data, size_t size)
{
	const unsigned char *p = data;
	size_t used = (size_t)(s->length % 64);
	s->length += size;
	if (used) {
		size_t take = 64 - used < size ? 64 - used : size;
		memcpy(s->block + used, p, take);
		p += take;
		size -= take;
		if (used + take < 64)
			return;
		blocks(s->state, s->block, 1);
	}
	if (size >= 64) {
		blocks(s->state, p, size / 64);
		p += size - size % 64;
		size %= 64;
	}
	if (size)
		memcpy(s->block, p, size);
}

void gpucc_sha256_final(gpucc_sha256 *s, unsigned char out[32])
{
	uint64_t bits = s->length * 8;
	size_t used = (size_t)(s->length % 64);
	s->block[used++] = 0x80;
	if (used > 56) {
		memset(s->block + used, 0, 64 - used);
		blocks(s->state, s->block, 1);
		used = 0;
	}
	memset(s->block + used, 0, 56 - used);
	for (int i = 0; i < 8; i++)
		s->block[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
	blocks(s->state, s->block, 1);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (unsigned char)(s->state[i] >> 24);
		out[4 * i + 1] = (unsigned char)(s->state[i] >> 16);
		out[4 * i + 2] = (unsigned char)(s->state[i] >> 8);
		out[4 * i + 3] = (unsigned char)s->state[i];
	}
}

void gpucc_sha256_buffer(const void *data, size_t size, unsigned char out[32])
{
	gpucc_sha256 s;
	gpucc_sha256_init(&s);
	gpucc_sha256_update(&s, data, size);
	gpucc_sha256_final(&s, out);
}
