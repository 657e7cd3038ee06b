/*
 * cmd/cmd_cache_maintain.c -- the subcommands that remove from the local
 * cache (formats/cache.md): `gpucc cache gc` (evict the least recently used
 * entries past a size), `gpucc cache clear` (every entry) and `gpucc cache
 * prune` (entries no key of this toolchain can reach).  The others are in
 * cmd/cmd_cache.c.
 */
#include "algebra.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- cache gc ---------------------------------------------------------------------- */

static const cmd_option gc_options[] = {
	{"cache", 0, "DIR", false, "the cache directory (default: see formats/cache.md)"},
	{"max-size", 0, "SIZE", false, "evict down to SIZE (e.g. 5G, 512M) instead of 90% of the bound"},
	{"save", 0, NULL, false, "with --max-size: make SIZE the cache's bound from now on"},
	{"quiet", 'q', NULL, false, "print nothing on success"},
	{0},
};

static int run_gc(const cmd_args *args)
{
	uint64_t max = 0;
	const char *v;
	if (cmd_single_value(&v, args, "max-size") != EXIT_OK)
		return EXIT_USAGE;
	if (v && gpucc_size_parse(&max, v) != 0)
		return cmd_error(args, EXIT_USAGE, "--max-size: %s", gpucc_error_last()->message);
	if (cmd_flag(args, "save") && !v)
		return cmd_error(args, EXIT_USAGE, "--save needs --max-size");
	if (cmd_flag(args, "save") && max == 0)
		return cmd_error(args, EXIT_USAGE,
		                 "--max-size '%s' --save: a bound of 0 would keep no entry (0 is not "
		                 "\"no limit\"; give a large size instead)",
		                 v);
	gpucc_cache *c;
	/* --save configures a cache, which may be new: it alone creates one. */
	int rc = cmd_flag(args, "save") ? cmd_open_cache(args, &c, 0) : cmd_open_cache_to_report(args, &c, 0);
	if (rc)
		return rc;
	gpucc_cache_gc_result r;
	if (cmd_flag(args, "save") && gpucc_cache_set_max_size(c, max) != 0) {
		rc = cmd_fail(args);
	} else if (gpucc_cache_gc(c, v && max == 0 ? 1 : max, &r) != 0) {
		/* (0 asks the library for the configured bound; no entry fits in
		 * one byte, so 1 evicts them all.) */
		rc = cmd_fail(args);
	} else if (!cmd_flag(args, "quiet")) {
		char removed[32], left[32];
		cmd_format_size(removed, sizeof removed, r.removed_bytes);
		cmd_format_size(left, sizeof left, r.bytes);
		printf("removed %" PRIu64 " %s (%s); %" PRIu64 " %s (%s) left", r.removed_entries,
		       cmd_plural(r.removed_entries, "entry", "entries"), removed, r.entries,
		       cmd_plural(r.entries, "entry", "entries"), left);
		if (r.removed_temporaries)
			printf("; removed %" PRIu64 " temporary %s left by killed processes",
			       r.removed_temporaries, cmd_plural(r.removed_temporaries, "file", "files"));
		putchar('\n');
	}
	gpucc_cache_free(c);
	return rc;
}

const cmd_spec cmd_cache_gc_spec = {
	"cache gc", "[--cache DIR] [--max-size SIZE [--save]]",
	"evict least recently used entries to below the cache's bound",
	"The bound is max-size in DIR/config, else GPUCC_CACHE_MAX_SIZE, else 5G\n"
	"(at most 8 EiB).  Evicts down to 90% of the bound, as does the gc that\n"
	"an insert runs when the cache grows past it, so that the inserts that\n"
	"follow do not each walk the cache again; with --max-size, down to SIZE\n"
	"(0 evicts every entry).  SIZE is digits and an optional K, M, G or T\n"
	"(binary: 1K = 1KiB = 1024); a bad one is a usage error (129).  --save\n"
	"sets max-size to SIZE in DIR/config, keeping its other lines, comments\n"
	"too; gpucc cache stats shows it as 'max size'.  A bound of 0 is\n"
	"refused (ccache's 'no limit'; here it would keep nothing).\n"
	"A directory named by --cache that does not exist is an error (exit 2),\n"
	"as is one holding other things but no v1/ (exit 3), but with --save,\n"
	"which makes either a cache, as compile would.\n"
	"Safe while other processes use the cache: a process reading an entry\n"
	"keeps it; a later lookup of it misses.  An entry that cannot be removed\n"
	"(its shard directory belongs to another user, a read-only file system) is\n"
	"passed over; when such entries keep the cache above the size asked for,\n"
	"gc exits 1, saying how many and naming the first and why.",
	gc_options, 0, 0, run_gc, NULL,
};

/* ---- cache clear ------------------------------------------------------------------- */

static const cmd_option clear_options[] = {
	{"cache", 0, "DIR", false, "the cache directory (default: see formats/cache.md)"},
	{0},
};

static int run_clear(const cmd_args *args)
{
	gpucc_cache *c;
	int rc = cmd_open_cache_to_report(args, &c, 0);
	if (rc)
		return rc;
	if (gpucc_cache_clear(c) != 0)
		rc = cmd_fail(args);
	gpucc_cache_free(c);
	return rc;
}

const cmd_spec cmd_cache_clear_spec = {
	"cache clear", "[--cache DIR]",
	"remove every entry from the local cache and zero its counters",
	"Evicts every entry, as gc --max-size 0 does, and zeroes the counters;\n"
	"DIR/config is kept.  Entries that cannot be removed (a shard directory of\n"
	"another user, a read-only file system) make it exit 1, saying how many and\n"
	"naming the first and why, once the others are removed.  A directory named\n"
	"by --cache that does not exist is an error (exit 2), not created; one\n"
	"holding other things but no v1/ is no cache (exit 3), left as it is.",
	clear_options, 0, 0, run_clear, NULL,
};

/* ---- cache prune ------------------------------------------------------------------- */

static const cmd_option prune_options[] = {
	{"cache", 0, "DIR", false, "the cache directory (default: see formats/cache.md)"},
	{"older-than", 0, "AGE", false,
	 "also remove entries not used for AGE: a number and a unit, s m h d or w (e.g. 30d)"},
	{"dry-run", 'n', NULL, false, "list what would be removed; remove nothing"},
	{"json", 0, NULL, false, "print the entries removed and the counts as JSON"},
	{"quiet", 'q', NULL, false, "print nothing on success (--json still prints its object)"},
	{0},
};

/* "30d" -> seconds; a unit is required (is "30" seconds or days?). */
static int parse_age(int64_t *out, const char *text)
{
	static const struct { char unit; int64_t seconds; } units[] = {
		{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}, {'w', 604800},
	};
	char *end;
	errno = 0;
	if (*text < '0' || *text > '9')
		return -1;
	unsigned long long n = strtoull(text, &end, 10);
	if (errno || end == text || !end[0] || end[1])
		return -1;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (*end == units[i].unit) {
			if (n > (unsigned long long)(INT64_MAX / units[i].seconds))
				return -1;
			*out = (int64_t)n * units[i].seconds;
			return 0;
		}
	return -1;
}

typedef struct prune_print {
	const cmd_args *args;
	FILE *json;       /* the "removed" array being built, or NULL */
	bool list, first; /* list: print each entry (dry run) */
} prune_print;

static void print_pruned(void *ctx, const gpucc_entry *e, uint64_t bytes, const char *reason)
{
	prune_print *pp = ctx;
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, &e->key);
	if (pp->json) {
		fprintf(pp->json, "%s{\"key\": \"%s\", \"target\": ", pp->first ? "" : ", ", hex);
		cmd_json_string(pp->json, e->target);
		fprintf(pp->json, ", \"module\": ");
		cmd_json_string(pp->json, e->module);
		fprintf(pp->json, ", \"bytes\": %" PRIu64 ", \"reason\": ", bytes);
		cmd_json_string(pp->json, reason);
		fputc('}', pp->json);
		pp->first = false;
	} else if (pp->list) {
		printf("would remove %.12s  %-14s %s: %s\n", hex, e->target, e->module, reason);
	}
}

static int run_prune(const cmd_args *args)
{
	int64_t age = -1;
	const char *v;
	if (cmd_single_value(&v, args, "older-than") != EXIT_OK)
		return EXIT_USAGE;
	if (v && parse_age(&age, v) != 0)
		return cmd_error(args, EXIT_USAGE,
		                 "--older-than '%s': not an age (a number and a unit: s, m, h, d or w; "
		                 "e.g. 30d)",
		                 v);
	bool dry = cmd_flag(args, "dry-run"), json = cmd_flag(args, "json");
	gpucc_cache *c;
	int rc = cmd_open_cache_to_report(args, &c, dry ? GPUCC_CACHE_READ_ONLY : 0);
	if (rc)
		return rc;
	char *removed = NULL;
	size_t removed_size = 0;
	prune_print pp = {args, NULL, dry && !cmd_flag(args, "quiet"), true};
	if (json && !(pp.json = open_memstream(&removed, &removed_size))) {
		gpucc_cache_free(c);
		return cmd_error(args, EXIT_FAIL, "out of memory");
	}
	gpucc_cache_prune_result r;
	int status = gpucc_cache_prune(c, age, dry ? GPUCC_PRUNE_DRY_RUN : 0, print_pruned, &pp, &r);
	if (pp.json)
		fclose(pp.json);
	if (status != 0) {
		rc = cmd_fail(args);
	} else if (json) {
		printf("{\"directory\": ");
		cmd_json_string(stdout, gpucc_cache_dir(c));
		printf(", \"dry_run\": %s, \"removed\": [%s], \"removed_entries\": %" PRIu64
		       ", \"removed_bytes\": %" PRIu64 ", \"entries\": %" PRIu64 ", \"bytes\": %" PRIu64
		       ", \"unreadable\": %" PRIu64 "}\n",
		       dry ? "true" : "false", removed ? removed : "", r.removed_entries, r.removed_bytes,
		       r.entries, r.bytes, r.unreadable);
	} else if (!cmd_flag(args, "quiet")) {
		char gone[32], left[32];
		cmd_format_size(gone, sizeof gone, r.removed_bytes);
		cmd_format_size(left, sizeof left, r.bytes);
		printf("%s %" PRIu64 " %s (%s); %" PRIu64 " %s (%s) %s", dry ? "would remove" : "removed",
		       r.removed_entries, cmd_plural(r.removed_entries, "entry", "entries"), gone, r.entries,
		       cmd_plural(r.entries, "entry", "entries"), left, dry ? "would stay" : "left");
		if (r.unreadable)
			printf("; %" PRIu64 " %s (see gpucc cache verify)", r.unreadable,
			       cmd_plural(r.unreadable, "entry could not be read and stays",
			            "entries could not be read and stay"));
		putchar('\n');
	}
	free(removed);
	gpucc_cache_free(c);
	return rc;
}

const cmd_spec cmd_cache_prune_spec = {
	"cache prune", "[--cache DIR] [--older-than AGE] [-n] [--json] [-q]",
	"remove the entries no compile of this gpucc can hit again, and unused ones",
	"A key holds the versions of gpucc, LLVM, ptxas (NVIDIA) and LLD (AMD) and\n"
	"the digests of the device libraries it links, so an upgrade of any of them\n"
	"leaves entries that no compile reaches again; gc evicts them only when\n"
	"the cache is full.  prune removes every entry of another key schema, gpucc\n"
	"or LLVM version, made with another ptxas or LLD than a compile here would\n"
	"use, or linking a device library that is no longer what this toolchain has\n"
	"under its name.  The tools and libraries are found as compile finds them\n"
	"(CUDA_PATH, PATH, GPUCC_ROCM_DEVICE_LIBS): run prune where the builds run.\n"
	"A tool or library not found judges nothing: a warning says so and those\n"
	"entries stay.  Entries made by pack are judged by what they record.\n"
	"With --older-than AGE, entries not used (hit or written) for AGE go too.\n"
	"-n lists each entry that would go, with why; --json lists them whether or\n"
	"not -n is given.  Safe while other processes use the cache: an entry used\n"
	"meanwhile stays.  Exits 0, 1 when the cache cannot be written (without -n),\n"
	"2 when a directory named by --cache does not exist, 3 when it holds other\n"
	"things but no v1/, 6 from a gpucc built without LLVM (it compiles nothing,\n"
	"so it cannot judge), 129 on a bad AGE.",
	prune_options, 0, 0, run_prune, NULL,
};
