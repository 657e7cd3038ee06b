/*
 * lib/tests/fuzz_cache_files.c -- fuzz target: the small files a cache
 * keeps beside its entries (formats/cache.md), as every process that opens
 * the cache reads them.  The input's first byte, modulo 3, picks the file
 * the rest is written to, in a fresh cache directory:
 *
 *   0: DIR/config, "name = value" lines: the cache opens whatever it
 *         holds (a cache problem never breaks a build), and its bound and
 *         remotes are what a plain reading of the lines written here gives:
 *         the last max-size that is a size other than 0, else the default,
 *         and the values of the remote lines joined by blanks; a file past
 *         64 KiB is ignored whole;
 *   1: DIR/stats, the counters' line: a file that does not start with
 *         the line's magic and a blank counts nothing, and the counters
 *         read, written back with one more miss (a lookup of a key the
 *         cache lacks, then gpucc_cache_flush), read again as the same
 *         counters and that miss;
 *   2: DIR/remote-stats, the remotes' counters (lib/remote/remote.c): a
 *         file that does not start with its magic and a blank counts
 *         nothing, and a counter read is one the line names.
 */
#include "fuzz.h"

#include <gpucc.h>
#include <gpucc/remote.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG_MAX_BYTES (64 * 1024)
#define STATS_MAGIC "gpucc-cache-stats 1"
#define REMOTE_STATS_MAGIC "gpucc-remote-stats 1"

static char *trim(char *text)
{
	while (*text == ' ' || *text == '\t')
		text++;
	size_t n = strlen(text);
	while (n && (text[n - 1] == ' ' || text[n - 1] == '\t' || text[n - 1] == '\r'))
		text[--n] = '\0';
	return text;
}

/* The bound and remotes of a config file holding text (NUL-terminated),
 * read line by line as formats/cache.md describes it.  *remotes: owned,
 * NULL when no remote line names one. */
static uint64_t model_config(char *text, size_t size, char **remotes)
{
	uint64_t bound = GPUCC_CACHE_DEFAULT_MAX_SIZE, v;
	*remotes = NULL;
	if (size > CONFIG_MAX_BYTES)
		return bound;
	size_t used = 0;
	for (char *next = text; next && *next;) {
		char *line = next;
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		char *name = trim(line), *value = trim(eq + 1);
		if (strcmp(name, "max-size") == 0 && gpucc_size_parse(&v, value) == 0 && v != 0) {
			bound = v;
		} else if (strcmp(name, "remote") == 0 && *value) {
			char *grown = realloc(*remotes, used + strlen(value) + 2);
			if (!grown)
				fuzz_fail("out of memory");
			*remotes = grown;
			if (used)
				grown[used++] = ' ';
			strcpy(grown + used, value);
			used += strlen(value);
		}
	}
	return bound;
}

static void write_file(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		fuzz_fail("cannot write the cache's file");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	unsetenv("GPUCC_CACHE_MAX_SIZE");
	char dir[4096], path[4200];
	snprintf(dir, sizeof dir, "%s/cache", fuzz_scratch_dir());
	fuzz_remove_tree(dir);
	gpucc_cache *c = NULL;
	if (gpucc_cache_open(&c, dir, 0) != 0)
		fuzz_fail("an empty cache does not open");
	gpucc_cache_free(c);
	static const char *const files[] = {"config", "stats", "remote-stats"};
	int which = data[0] % 3;
	snprintf(path, sizeof path, "%s/%s", dir, files[which]);
	write_file(path, data + 1, size - 1);
	if (gpucc_cache_open(&c, dir, 0) != 0)
		fuzz_fail("a cache does not open for what its config or stats file holds");
	if (which == 0) {
		char *text = fuzz_string(data + 1, size - 1), *remotes;
		if (!text)
			return 0;
		uint64_t bound = model_config(text, size - 1, &remotes);
		if (gpucc_cache_max_size(c) != bound)
			fuzz_fail("the cache's bound is not the config's last valid max-size");
		const char *got = gpucc_cache_config_remotes(c);
		if ((got == NULL) != (remotes == NULL) || (got && strcmp(got, remotes) != 0))
			fuzz_fail("the cache's remotes are not the config's remote lines");
		free(remotes);
		free(text);
	} else if (which == 1) {
		gpucc_cache_stats before, after;
		if (gpucc_cache_stats_get(&before, c) != 0)
			fuzz_fail("stats of a cache whatever its stats file holds");
		size_t magic = strlen(STATS_MAGIC);
		bool starts = size - 1 > magic && memcmp(data + 1, STATS_MAGIC, magic) == 0 &&
		              (data[1 + magic] == ' ' || data[1 + magic] == '\n');
		if (!starts && (before.hits || before.misses || before.corrupt || before.reset_time))
			fuzz_fail("counters read from a file that is no stats line");
		gpucc_digest key;
		memset(&key, 0xa5, sizeof key);
		gpucc_image *img = NULL;
		if (gpucc_cache_lookup(&img, c, &key) != GPUCC_ENOTFOUND)
			fuzz_fail("a lookup in an empty cache is no miss");
		if (gpucc_cache_flush(c) != 0)
			fuzz_fail("the counters cannot be written back");
		if (gpucc_cache_stats_get(&after, c) != 0)
			fuzz_fail("stats of a cache after a flush");
		if (after.hits != before.hits || after.misses != before.misses + 1 ||
		    after.corrupt != before.corrupt || after.reset_time != before.reset_time)
			fuzz_fail("the counters written back read as other counters");
	} else {
		gpucc_remote_stats st;
		if (gpucc_cache_remote_stats_get(&st, c) != 0)
			fuzz_fail("remote stats of a cache whatever its remote-stats file holds");
		char *text = fuzz_string(data + 1, size - 1);
		if (!text)
			return 0;
		bool starts = strncmp(text, REMOTE_STATS_MAGIC " ", strlen(REMOTE_STATS_MAGIC) + 1) == 0;
		const struct { const char *name; uint64_t value; } fields[] = {
			{" hits=", st.hits}, {" misses=", st.misses}, {" errors=", st.errors},
			{" timeouts=", st.timeouts}, {" bytes_in=", st.bytes_in}, {" bytes_out=", st.bytes_out},
		};
		for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
			if (fields[i].value && (!starts || !strstr(text, fields[i].name)))
				fuzz_fail("a remote counter read from a line that does not name it");
		free(text);
	}
	gpucc_cache_free(c);
	return 0;
}

void fuzz_seeds(void (*add)(const void *data, size_t size))
{
	static const char *seeds[] = {
		"\x03" "# gpucc cache settings\nmax-size = 10G\nremote = http://a/ redis://b\n",
		"\x03" "max-size=0\nmax-size = 512MiB # half a GiB\n\tremote\t= s3://c/d \r\nbogus\n",
		"\x03" "max-size = x\nunknown = 1\n= \n",
		"\x02" REMOTE_STATS_MAGIC " hits=2 misses=1 errors=0 timeouts=3 bytes_in=999 bytes_out=7\n",
		"\x02" "gpucc-remote-stats 2 hits=2\n",
		"\x01" STATS_MAGIC " hits=3 misses=4 corrupt=1 reset=1700000000 bytes=4096\n",
		"\x01" STATS_MAGIC " hits=18446744073709551615 misses=x\n",
		"\x01" "gpucc-cache-stats 2 hits=1\n",
	};
	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
		add(seeds[i], strlen(seeds[i]));
}
