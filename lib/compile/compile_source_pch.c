/*
 * lib/compile/compile_source_pch.c -- the vendor prelude, precompiled once per run
 * (lib/compile/compile_source.h, "the prelude").
 *
 * Before it reads a line of a CUDA unit, clang's front end parses the
 * runtime wrapper its driver includes implicitly (-include
 * __clang_cuda_runtime_wrapper.h, which pulls in the toolkit's runtime
 * headers): most of a small unit's front-end time.  A run groups its
 * clang command lines by everything but the unit's own parts (the input,
 * the outputs, -v, HIP's -cuid), and makes, the first time a group needs
 * it, a precompiled header of an empty unit compiled with the group's
 * command line: exactly that prelude.  Every unit of the group then reads
 * it with -include-pch; the wrapper's -include that follows is skipped by
 * its include guard.  The PCH is one run's, in its temporary directory.
 *
 * What holds, and why the rule is narrow (gpucc_source_pch_applies):
 *  - The bitcode is byte-identical to the compile without the PCH for
 *    CUDA, whose wrapper defines nothing a unit must emit (checked against
 *    --no-pch runs by cmd/tests/compile_sources_pch.sh).
 *    HIP's wrapper defines __cxa_pure_virtual and __cxa_deleted_virtual;
 *    clang 19 writes a PCH's extern "C" definitions in name order, so a
 *    unit read through one emits them swapped: another module, hence
 *    another key.  HIP units get no PCH.  OpenCL C has no such prelude.
 *  - IR with inline assembly names its source offsets (!srcloc), which a
 *    PCH moves: the caller makes such IR again without the PCH
 *    (gpucc_source_pch_ir_trusted), and a unit whose text shows inline
 *    assembly, or a library made of it, is not tried with one
 *    (gpucc_source_pch_worth).
 *  - Debug info (DWARF of types read from a PCH), relocatable device code
 *    (statics named after the unit) and a -include of the user's (which
 *    would land in the PCH) are not shown to keep the IR: none of those
 *    compiles uses one.
 *  - A PCH clang refuses (a header changed under it) fails the unit's
 *    compile: the caller compiles it again without one and reports it here
 *    (gpucc_source_pch_refused); a group refused twice in a run gets no PCH.
 *
 * Thread safety: every function but _new and _free may be called from many
 * threads at once; the first thread of a group makes its PCH while the
 * others of that group wait.
 */
#include "compile_source.h"

#include "sha256.h"

#include <fcntl.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* STALE: clang refused its PCH once; the next unit makes another. */
typedef enum group_state { GROUP_MAKING, GROUP_READY, GROUP_STALE, GROUP_FAILED } group_state;

typedef struct pch_group {
	unsigned char digest[32]; /* of the command line, as pch_group_digest takes it */
	group_state state;
	unsigned refusals;        /* units that failed with the PCH and compiled without it */
	unsigned made;            /* PCHs made for it, to name the next */
	char *path;               /* GROUP_READY: the PCH */
} pch_group;

struct gpucc_source_pch_set {
	pthread_mutex_t lock;
	pthread_cond_t changed; /* a group left GROUP_MAKING */
	pch_group *groups;
	size_t count, capacity;
	gpucc_source_tool_runner run;
	unsigned timeout_seconds;
};

int gpucc_source_pch_set_new(gpucc_source_pch_set **out, gpucc_source_tool_runner run,
                             unsigned timeout_seconds)
{
	*out = calloc(1, sizeof **out);
	if (!*out)
		return -1;
	pthread_mutex_init(&(*out)->lock, NULL);
	pthread_cond_init(&(*out)->changed, NULL);
	(*out)->run = run;
	(*out)->timeout_seconds = timeout_seconds;
	return 0;
}

void gpucc_source_pch_set_free(gpucc_source_pch_set *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->count; i++)
		free(set->groups[i].path);
	free(set->groups);
	pthread_cond_destroy(&set->changed);
	pthread_mutex_destroy(&set->lock);
	free(set);
}

bool gpucc_source_pch_applies(gpucc_source_language language, bool debug_info, bool relocatable,
                              const char *const *user_args, size_t count)
{
	if (language != GPUCC_LANGUAGE_CUDA || debug_info || relocatable)
		return false;
	for (size_t i = 0; i < count; i++) {
		const char *v = user_args[i];
		if (strncmp(v, "-include", 8) == 0 || strncmp(v, "--include", 9) == 0 ||
		    strncmp(v, "-imacros", 8) == 0 || strncmp(v, "--imacros", 9) == 0 ||
		    strncmp(v, "-g", 2) == 0 || strcmp(v, "-fgpu-rdc") == 0)
			return false;
	}
	return true;
}

static bool text_has(const unsigned char *text, size_t size, const char *needle)
{
	size_t n = strlen(needle);
	for (size_t i = 0; i + n <= size; i++)
		if (text[i] == (unsigned char)needle[0] && memcmp(text + i, needle, n) == 0)
			return true;
	return false;
}

bool gpucc_source_pch_worth(const unsigned char *text, size_t size)
{
	/* Inline assembly of the unit's own, and the libraries made of it. */
	static const char *const asm_heavy[] = {"asm", "<cub/", "\"cub/", "<thrust/", "\"thrust/",
	                                        "cooperative_groups", "<cuda/", "\"cuda/", "mma.h"};
	for (size_t i = 0; i < sizeof asm_heavy / sizeof asm_heavy[0]; i++)
		if (text_has(text, size, asm_heavy[i]))
			return false;
	return true;
}

/* The arguments of argv that are the unit's own, which neither the group
 * nor the PCH's command line takes: how many to skip at argv[i] (0: none;
 * (size_t)-1: this and every later one, the input after "--"). */
static size_t unit_own(char *const *argv, size_t i)
{
	const char *v = argv[i];
	if (strcmp(v, "--") == 0)
		return (size_t)-1;
	if (strcmp(v, "-v") == 0 || strcmp(v, "-MD") == 0 || strncmp(v, "-cuid=", 6) == 0)
		return 1;
	if ((strcmp(v, "-MF") == 0 || strcmp(v, "-o") == 0) && argv[i + 1])
		return 2;
	return 0;
}

/* The index of the first argument from i on that the group shares (not
 * the unit's own: unit_own), or (size_t)-1 at the end. */
static size_t next_group_arg(char *const *argv, size_t i)
{
	while (argv[i]) {
		size_t skip = unit_own(argv, i);
		if (skip == (size_t)-1)
			return (size_t)-1;
		if (!skip)
			return i;
		i += skip;
	}
	return (size_t)-1;
}

static void pch_group_digest(unsigned char out[32], char *const *argv)
{
	gpucc_sha256 h;
	gpucc_sha256_init(&h);
	for (size_t i = 0; (i = next_group_arg(argv, i)) != (size_t)-1; i++) {
		/* Length-prefixed, so that no two lists hash alike. */
		unsigned long long len = strlen(argv[i]);
		gpucc_sha256_update(&h, &len, sizeof len);
		gpucc_sha256_update(&h, argv[i], len);
	}
	gpucc_sha256_final(&h, out);
}

/* Make the group's PCH at pch_path, from an empty unit beside it, with the
 * group's command line.  Whether clang made it. */
static bool make_pch(gpucc_source_pch_set *set, char *const *argv, const char *pch_path)
{
	size_t n = 0;
	while (argv[n])
		n++;
	char *prelude = NULL, *err = NULL;
	char **args = calloc(n + 8, sizeof *args);
	bool made = false;
	if (!args || asprintf(&prelude, "%s.unit", pch_path) < 0 ||
	    asprintf(&err, "%s.err", pch_path) < 0)
		goto cleanup;
	size_t k = 0;
	for (size_t i = 0; (i = next_group_arg(argv, i)) != (size_t)-1; i++)
		args[k++] = argv[i];
	/* -emit-pch, the front end's last action, replaces -emit-llvm's. */
	args[k++] = "-Xclang";
	args[k++] = "-emit-pch";
	args[k++] = "-o";
	args[k++] = (char *)pch_path;
	args[k++] = "--";
	args[k++] = prelude;
	args[k] = NULL;
	int fd = open(prelude, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		goto cleanup;
	close(fd);
	int err_fd = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (err_fd < 0)
		goto cleanup;
	int status = 0;
	bool timed_out = false;
	int rc = set->run(args, err_fd, set->timeout_seconds, &status, &timed_out);
	close(err_fd);
	struct stat st;
	made = rc == 0 && !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	       stat(pch_path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
	if (rc != 0)
		gpucc_error_clear();
cleanup:
	/* The PCH names its unit, which clang reads again with it: kept
	 * beside it while it lives. */
	if (prelude && !made)
		unlink(prelude);
	if (err)
		unlink(err);
	if (!made && pch_path)
		unlink(pch_path);
	free(prelude);
	free(err);
	free(args);
	return made;
}

char *gpucc_source_pch_get(gpucc_source_pch_set *set, char *const *argv, const char *dir)
{
	unsigned char digest[32];
	pch_group_digest(digest, argv);
	pthread_mutex_lock(&set->lock);
	pch_group *g = NULL;
	for (;;) {
		g = NULL;
		for (size_t i = 0; i < set->count && !g; i++)
			if (memcmp(set->groups[i].digest, digest, sizeof digest) == 0)
				g = &set->groups[i];
		if (!g || g->state != GROUP_MAKING)
			break;
		pthread_cond_wait(&set->changed, &set->lock);
	}
	char *out = NULL;
	if (g && g->state == GROUP_READY) {
		out = strdup(g->path);
		pthread_mutex_unlock(&set->lock);
		return out;
	}
	if (g && g->state == GROUP_FAILED) {
		pthread_mutex_unlock(&set->lock);
		return NULL;
	}
	if (!g) {
		if (set->count == set->capacity) {
			size_t cap = set->capacity ? 2 * set->capacity : 8;
			pch_group *more = realloc(set->groups, cap * sizeof *more);
			if (!more) {
				pthread_mutex_unlock(&set->lock);
				return NULL;
			}
			set->groups = more;
			set->capacity = cap;
		}
		g = &set->groups[set->count];
		memset(g, 0, sizeof *g);
		memcpy(g->digest, digest, sizeof digest);
		g->state = GROUP_MAKING;
		set->count++;
	}
	g->state = GROUP_MAKING;
	size_t index = (size_t)(g - set->groups);
	unsigned made = g->made++;
	pthread_mutex_unlock(&set->lock);

	char *path = NULL;
	if (asprintf(&path, "%s/prelude-%zu-%u.pch", dir, index, made) < 0)
		path = NULL;
	bool ok = path && make_pch(set, argv, path);

	pthread_mutex_lock(&set->lock);
	g = &set->groups[index]; /* the array may have moved */
	free(g->path);
	g->path = ok ? path : NULL;
	g->state = ok ? GROUP_READY : GROUP_FAILED;
	if (ok)
		out = strdup(path);
	else
		free(path);
	pthread_cond_broadcast(&set->changed);
	pthread_mutex_unlock(&set->lock);
	return out;
}

void gpucc_source_pch_refused(gpucc_source_pch_set *set, const char *path)
{
	pthread_mutex_lock(&set->lock);
	for (size_t i = 0; i < set->count; i++) {
		pch_group *g = &set->groups[i];
		if (g->state != GROUP_READY || !g->path || strcmp(g->path, path) != 0)
			continue;
		/* The next unit of the group makes a new one (a header may have
		 * changed since); a second refusal ends the group's PCH. */
		g->refusals++;
		char *unit = NULL;
		if (asprintf(&unit, "%s.unit", g->path) >= 0) {
			unlink(unit);
			free(unit);
		}
		unlink(g->path);
		free(g->path);
		g->path = NULL;
		g->state = g->refusals >= 2 ? GROUP_FAILED : GROUP_STALE;
		break;
	}
	pthread_mutex_unlock(&set->lock);
}

/* The bits of "srcloc" as the name of an unabbreviated METADATA_KIND
 * record writes it: one 6-bit VBR field per character, least significant
 * bit first; into bits[], returns how many. */
static size_t srcloc_pattern(unsigned char bits[96])
{
	static const char name[] = "srcloc";
	size_t n = 0;
	for (const char *c = name; *c; c++) {
		unsigned v = (unsigned char)*c;
		do {
			unsigned chunk = v & 31;
			v >>= 5;
			if (v)
				chunk |= 32;
			for (int b = 0; b < 6; b++)
				bits[n++] = (chunk >> b) & 1;
		} while (v);
	}
	return n;
}

static unsigned bit_at(const unsigned char *data, size_t i)
{
	return (data[i >> 3] >> (i & 7)) & 1;
}

bool gpucc_source_pch_ir_trusted(const unsigned char *ir, size_t size)
{
	unsigned char pattern[96];
	size_t n = srcloc_pattern(pattern);
	uint64_t first = 0; /* the pattern's first 48 bits, the first at bit 0 */
	for (size_t b = 0; b < 48; b++)
		first |= (uint64_t)pattern[b] << b;
	const uint64_t mask = ((uint64_t)1 << 48) - 1;
	if (size < 16)
		return true;
	size_t bits = size * 8;
	for (size_t byte = 0; byte * 8 + n <= bits; byte++) {
		uint64_t w = 0;
		size_t have = size - byte < 8 ? size - byte : 8;
		for (size_t k = 0; k < have; k++)
			w |= (uint64_t)ir[byte + k] << (8 * k);
		for (unsigned shift = 0; shift < 8; shift++) {
			size_t s = byte * 8 + shift;
			if (s + n > bits)
				break;
			if (((w >> shift) & mask) != first)
				continue;
			size_t b = 48;
			while (b < n && bit_at(ir, s + b) == pattern[b])
				b++;
			if (b == n)
				return false;
		}
	}
	return true;
}
