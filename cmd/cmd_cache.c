/*
 * cmd/cmd_cache.c -- `gpucc cache stats|import|gc|prune|clear|lookup|verify`:
 * the local cache (formats/cache.md).
 *
 *   gpucc cache stats [--json] [--reset]     entries, size, bound, hits, misses
 *   gpucc cache import IMAGE...              put images' entries into the cache
 *   gpucc cache gc [--max-size SIZE [--save]] evict least recently used entries
 *   gpucc cache prune [--older-than AGE] [-n] remove entries no key can reach
 *   gpucc cache clear                        remove every entry
 *   gpucc cache lookup KEY...                hit or miss, per key
 *   gpucc cache verify [--json]              check every entry completely
 *
 * Every one takes --cache DIR; without it, GPUCC_CACHE_DIR, else
 * $XDG_CACHE_HOME/gpucc, else ~/.cache/gpucc.  gc, prune and clear, which
 * remove entries, are in cmd/cmd_cache_maintain.c.
 */
#include "algebra.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ---- cache verify ------------------------------------------------------------------ */

static const cmd_option verify_options[] = {
	{"cache", 0, "DIR", false, "the cache directory (default: see formats/cache.md)"},
	{"json", 0, NULL, false, "print the counts as JSON"},
	{"quiet", 'q', NULL, false, "print nothing on success (--json still prints its object)"},
	{0},
};

/* One line for a defect of the entry at path.  libgpucc's message spells
 * the control characters of the path it names (the cache's name may hold
 * some), so it is looked for, and added when absent, spelt so too. */
static void print_defect(void *ctx, const char *path, const char *message)
{
	const cmd_args *args = ctx;
	size_t size = 4 * strlen(path) + 1; /* each byte in at most 4 ("\\xHH"), not cut */
	char *shown = malloc(size);
	if (shown)
		cmd_shown(shown, size, path);
	if (shown && strstr(message, shown)) /* most messages name the file already */
		fprintf(stderr, "gpucc %s: %s\n", args->spec->name, message);
	else
		fprintf(stderr, "gpucc %s: '%s': %s\n", args->spec->name, shown ? shown : "?", message);
	free(shown);
}

static int run_verify(const cmd_args *args)
{
	gpucc_cache *c;
	int rc = cmd_open_cache_to_report(args, &c, GPUCC_CACHE_READ_ONLY);
	if (rc)
		return rc;
	gpucc_cache_verify_result r;
	int status = gpucc_cache_verify(c, print_defect, (void *)args, &r);
	if (cmd_flag(args, "json")) {
		printf("{\"directory\": ");
		cmd_json_string(stdout, gpucc_cache_dir(c));
		printf(", \"ok\": %s, \"entries\": %" PRIu64 ", \"bytes\": %" PRIu64
		       ", \"corrupt\": %" PRIu64 ", \"unreadable\": %" PRIu64
		       ", \"temporaries\": %" PRIu64 "}\n",
		       status == 0 ? "true" : "false", r.entries, r.bytes, r.corrupt, r.unreadable,
		       r.temporaries);
	}
	if (status != 0)
		rc = cmd_fail(args);
	else if (!cmd_flag(args, "quiet") && !cmd_flag(args, "json")) {
		cmd_put_shown(stdout, gpucc_cache_dir(c)); /* one row, whatever its name */
		printf(": ok (%" PRIu64 " %s, %" PRIu64 " %s, %" PRIu64 " temporary %s)\n",
		       r.entries, cmd_plural(r.entries, "entry", "entries"), r.bytes,
		       cmd_plural(r.bytes, "byte", "bytes"), r.temporaries,
		       cmd_plural(r.temporaries, "file", "files"));
	}
	gpucc_cache_free(c);
	return rc;
}

const cmd_spec cmd_cache_verify_spec = {
	"cache verify", "[--cache DIR] [--json] [-q]",
	"check every entry of the local cache completely",
	"Checks each entry as a lookup does (format, manifest, every payload's size\n"
	"and SHA-256, and that it holds the key its file name says), without\n"
	"touching, counting or removing anything; safe while other processes use\n"
	"the cache (an entry evicted meanwhile is skipped).  Temporary files of\n"
	"writers at work, or left by killed processes (which gc removes), are\n"
	"counted, never taken for entries.  On success prints\n"
	"'DIR: ok (N entries, B bytes, T temporary files)'.  Prints each defect in\n"
	"one line naming the entry file (or a file where v1/, a shard directory or\n"
	"v1/tmp belongs), and removes nothing (a lookup of a corrupt entry removes\n"
	"it; gpucc cache clear removes all); exits 3 when an entry is corrupt or a\n"
	"file is where a directory belongs, 1 when an entry cannot be read.\n"
	"--json prints one object:\n"
	"{\"directory\", \"ok\", \"entries\", \"bytes\", \"corrupt\", \"unreadable\",\n"
	"\"temporaries\"}.  A directory named by --cache that does not exist is\n"
	"an error (exit 2), as is one holding other things but no v1/ (exit 3);\n"
	"the default cache, not created yet, verifies as empty.",
	verify_options, 0, 0, run_verify, NULL,
};

/* ---- cache stats ------------------------------------------------------------------- */

static const cmd_option stats_options[] = {
	{"cache", 0, "DIR", false, "the cache directory (default: see formats/cache.md)"},
	{"json", 0, NULL, false, "print JSON"},
	{"reset", 0, NULL, false, "zero the hit and miss counters after printing them"},
	{0},
};

static int run_stats(const cmd_args *args)
{
	bool reset = cmd_flag(args, "reset");
	gpucc_cache *c;
	int rc = cmd_open_cache_to_report(args, &c, reset ? 0 : GPUCC_CACHE_READ_ONLY);
	if (rc)
		return rc;
	/* Counters printed and then not zeroed would read as done to a
	 * script: refuse first, printing nothing. */
	if (reset && !gpucc_cache_writable(c)) {
		char shown[256];
		rc = cmd_error(args, EXIT_FAIL,
		               "cannot reset the counters of cache '%s': it is read-only",
		               cmd_shown(shown, sizeof shown, gpucc_cache_dir(c)));
		goto cleanup;
	}
	gpucc_cache_stats st;
	if (gpucc_cache_stats_get(&st, c) != 0) {
		rc = cmd_fail(args);
		goto cleanup;
	}
	uint64_t lookups = st.hits + st.misses;
	gpucc_remote_stats rs;
	gpucc_cache_remote_stats_get(&rs, c);
	if (cmd_flag(args, "json")) {
		printf("{\"directory\": ");
		cmd_json_string(stdout, gpucc_cache_dir(c));
		printf(", \"entries\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"max_bytes\": %" PRIu64
		       ", \"hits\": %" PRIu64 ", \"misses\": %" PRIu64 ", \"corrupt\": %" PRIu64
		       ", \"reset_time\": %" PRId64,
		       st.entries, st.bytes, st.max_bytes, st.hits, st.misses, st.corrupt, st.reset_time);
		printf(", \"remote\": {\"hits\": %" PRIu64 ", \"misses\": %" PRIu64
		       ", \"errors\": %" PRIu64 ", \"timeouts\": %" PRIu64 ", \"bytes_in\": %" PRIu64
		       ", \"bytes_out\": %" PRIu64 "}}\n",
		       rs.hits, rs.misses, rs.errors, rs.timeouts, rs.bytes_in, rs.bytes_out);
	} else {
		char size[32], max[32], when[64] = "first use (never reset)";
		cmd_format_size(size, sizeof size, st.bytes);
		cmd_format_size(max, sizeof max, st.max_bytes);
		if (st.reset_time) {
			time_t t = (time_t)st.reset_time;
			struct tm tm;
			strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&t, &tm));
		}
		printf("cache directory   ");
		cmd_put_shown(stdout, gpucc_cache_dir(c));
		putchar('\n');
		printf("entries           %" PRIu64 "\n", st.entries);
		printf("size              %s\n", size);
		printf("max size          %s\n", max);
		printf("hits              %" PRIu64 "\n", st.hits);
		printf("misses            %" PRIu64 "\n", st.misses);
		if (lookups)
			printf("hit rate          %.1f %%\n", 100.0 * (double)st.hits / (double)lookups);
		else
			printf("hit rate          -\n");
		printf("corrupt entries   %" PRIu64 "\n", st.corrupt);
		printf("counting since    %s\n", when);
		if (rs.hits || rs.misses || rs.errors || rs.timeouts || rs.bytes_out) {
			cmd_format_size(size, sizeof size, rs.bytes_in);
			cmd_format_size(max, sizeof max, rs.bytes_out);
			printf("remote hits       %" PRIu64 "\n", rs.hits);
			printf("remote misses     %" PRIu64 "\n", rs.misses);
			printf("remote errors     %" PRIu64 "\n", rs.errors);
			printf("remote timeouts   %" PRIu64 "\n", rs.timeouts);
			printf("remote bytes in   %s\n", size);
			printf("remote bytes out  %s\n", max);
		}
	}
	/* Nor are counters zeroed that did not reach the output. */
	if (reset && (fflush(stdout) != 0 || ferror(stdout)))
		rc = cmd_error(args, EXIT_FAIL,
		               "cannot write to standard output: the counters were not reset");
	else if (reset && (gpucc_cache_stats_reset(c) != 0 || gpucc_cache_remote_stats_reset(c) != 0))
		rc = cmd_fail(args);
cleanup:
	gpucc_cache_free(c);
	return rc;
}

const cmd_spec cmd_cache_stats_spec = {
	"cache stats", "[--cache DIR] [--json] [--reset]",
	"show the local cache's entries, size, bound, hits and misses",
	"Entries and size are counted now; hits and misses are summed over every\n"
	"process that used the cache since the last reset (compiles and lookups).\n"
	"--json prints one object: {\"directory\", \"entries\", \"bytes\",\n"
	"\"max_bytes\" (the bound), \"hits\", \"misses\", \"corrupt\", \"reset_time\"\n"
	"(Unix seconds of the last reset or clear; 0: never), \"remote\": {\"hits\",\n"
	"\"misses\", \"errors\", \"timeouts\", \"bytes_in\", \"bytes_out\"} (remote caches,\n"
	"docs/remote-cache.md; shown as text once any is not 0)}.  Without --reset it\n"
	"writes nothing.  --reset zeroes hits, misses, corrupt and the remote\n"
	"counters once the numbers\n"
	"are written; on a cache this user may not write it prints nothing and\n"
	"exits 1, as it does when standard output cannot be written.  A directory\n"
	"named by --cache that does not exist is an error (exit 2), as is one\n"
	"holding other things but no v1/ (exit 3); the default cache, not created\n"
	"yet, shows as empty and is not made.",
	stats_options, 0, 0, run_stats, NULL,
};

/* ---- cache import ------------------------------------------------------------------ */

static const cmd_option import_options[] = {
	{"cache", 0, "DIR", false, "the cache directory (default: see formats/cache.md)"},
	{"on-conflict", 0, "POLICY", false,
	 "fail (default), first (keep the cache's entry) or last (replace it)"},
	{"quiet", 'q', NULL, false, "print nothing on success"},
	{0},
};

static int run_import(const cmd_args *args)
{
	gpucc_algebra_options opts;
	const char *dir;
	int rc = cmd_directory_value(&dir, args, "cache");
	if (rc || (rc = cmd_algebra_options(args, &opts)) != 0)
		return rc;
	gpucc_cache *c = NULL;
	size_t n = 0;
	const char **inputs = calloc((size_t)args->positional_count + 1, sizeof *inputs);
	gpucc_operand **sources = calloc((size_t)args->positional_count + 1, sizeof *sources);
	/* Each file once (gpucc_paths_distinct), as compile takes a module
	 * given twice, so that the counts printed are of distinct inputs. */
	if (!inputs || !sources ||
	    gpucc_paths_distinct(inputs, &n, (const char *const *)args->positional,
	                         (size_t)args->positional_count) != 0) {
		free(inputs);
		free(sources);
		return cmd_error(args, EXIT_FAIL, "out of memory");
	}
	if (gpucc_operands_open(sources, inputs, n, cmd_print_warning, (void *)args) != 0) {
		rc = cmd_fail(args);
		goto cleanup;
	}
	/* Refused before the cache is opened, so that nothing is created. */
	for (size_t i = 0; i < n; i++)
		if (gpucc_operand_kind_of(sources[i]) == GPUCC_OPERAND_SNAPSHOT) {
			rc = cmd_error(args, EXIT_BAD_INPUT,
			               "cannot import '%s': it is a snapshot, which holds keys and content "
			               "digests but no entries (import the image or cache it was made from)",
			               gpucc_operand_name(sources[i]));
			goto cleanup;
		}
	if ((rc = cmd_open_cache(args, &c, 0)) != 0)
		goto cleanup;
	gpucc_algebra_counts counts;
	if (gpucc_merge_into_cache(c, sources, n, &opts, &counts) != 0) {
		rc = cmd_fail(args);
		goto cleanup;
	}
	if (!cmd_flag(args, "quiet")) {
		printf("imported %zu %s into '", counts.entries_read,
		       cmd_plural(counts.entries_read, "entry", "entries"));
		cmd_put_shown(stdout, gpucc_cache_dir(c));
		printf("' (%zu new, %zu already there, %zu %s)\n", counts.entries_out,
		       counts.duplicates, counts.conflicts,
		       cmd_plural(counts.conflicts, "conflict", "conflicts"));
	}
cleanup:
	for (size_t i = 0; i < n; i++)
		gpucc_operand_free(sources[i]);
	free(sources);
	free(inputs);
	gpucc_cache_free(c);
	return rc;
}

const cmd_spec cmd_cache_import_spec = {
	"cache import", "IMAGE... [--cache DIR] [--on-conflict=POLICY]",
	"put the entries of images (or other caches) into the local cache",
	"Each entry is published on its own, atomically; payloads stream from the\n"
	"images and are verified on the way.  An entry already in the cache with\n"
	"the same contents is kept; with other contents it is a conflict, also\n"
	"when another process published it a moment before.  One that fails its\n"
	"checks (a corrupt payload) is replaced, with a warning.  An IMAGE that is\n"
	"corrupt stops the import at the entry that fails its checks (exit 3): the\n"
	"entries published before it stay, whole, and those after it are not\n"
	"imported.  An IMAGE cut short is refused (exit 3) even when the cache or\n"
	"another IMAGE holds all its entries: before anything is imported when it\n"
	"is uncompressed, before its own entries when it is compressed.  Importing\n"
	"an image again adds nothing ('already there').  A file given twice, by\n"
	"any path or a hard link, is read once, as compile reads a module given\n"
	"twice.  Of \"imported N entries into 'DIR' (A new, B already there, C\n"
	"conflicts)\", N counts the entries of each distinct IMAGE; B those the\n"
	"cache held with the same contents, put there before or by an earlier\n"
	"IMAGE of this run (a copy of a file counts again, as B).  A snapshot\n"
	"given as an IMAGE is refused (exit 3): it holds no entries.",
	import_options, 1, -1, run_import, NULL,
};

/* ---- cache lookup ------------------------------------------------------------------ */

static const cmd_option lookup_options[] = {
	{"cache", 0, "DIR", false, "the cache directory (default: see formats/cache.md)"},
	{"quiet", 'q', NULL, false, "print nothing; the exit code says whether all hit"},
	{0},
};

static int run_lookup(const cmd_args *args)
{
	/* A lookup counts its hit or miss in a cache that exists, but makes
	 * none: in a default cache not created yet, or an empty directory,
	 * every key misses and nothing is written. */
	const char *given = cmd_value(args, "cache");
	char *dir = NULL, *layout = NULL;
	struct stat st;
	unsigned flags = 0;
	if (given ? (dir = strdup(given)) != NULL : gpucc_cache_default_dir(&dir) == 0)
		layout = malloc(strlen(dir) + 4);
	if (layout) {
		sprintf(layout, "%s/v1", dir);
		if (stat(layout, &st) != 0 && errno == ENOENT)
			flags = GPUCC_CACHE_READ_ONLY;
	}
	free(layout);
	free(dir);
	gpucc_cache *c;
	int rc = cmd_open_cache_to_report(args, &c, flags);
	if (rc)
		return rc;
	bool quiet = cmd_flag(args, "quiet");
	int misses = 0;
	for (int i = 0; i < args->positional_count; i++) {
		gpucc_digest key;
		if (gpucc_digest_from_hex(&key, args->positional[i]) != 0) {
			char shown[256];
			rc = cmd_error(args, EXIT_USAGE, "'%s' is not a key (64 hex digits)",
			               cmd_shown(shown, sizeof shown, args->positional[i]));
			break;
		}
		gpucc_image *img;
		int r = gpucc_cache_lookup(&img, c, &key);
		if (r != 0 && r != GPUCC_ENOTFOUND) {
			rc = cmd_fail(args);
			break;
		}
		if (r)
			misses++;
		if (!quiet)
			printf("%s %s\n", r == 0 ? "hit " : "miss", args->positional[i]);
		gpucc_image_free(img);
	}
	gpucc_cache_free(c);
	if (rc == EXIT_OK && misses)
		rc = EXIT_NOT_FOUND;
	return rc;
}

const cmd_spec cmd_cache_lookup_spec = {
	"cache lookup", "KEY... [--cache DIR] [-q]",
	"look keys up in the local cache, as a compile would (counts hits and misses)",
	"Prints 'hit KEY' or 'miss KEY' per key; exits 0 when every key hit, 2\n"
	"otherwise, and 1 when the cache cannot be read.  A KEY is all 64 hex\n"
	"digits (a prefix is a usage error, 129).  A hit checks the entry\n"
	"completely; a corrupt entry is a miss, reported and removed.  A\n"
	"directory named by --cache that does not exist is an error (exit 2), as\n"
	"is one holding other things but no v1/ (exit 3); in the default cache not\n"
	"created yet, or an empty directory, every key misses, uncounted, and no\n"
	"cache is made.",
	lookup_options, 1, -1, run_lookup, NULL,
};
