/*
 * cmd/cmd_remote.c -- remote caches on the command line
 * (docs/remote-cache.md): which remotes a command uses, and
 * `gpucc cache push` / `gpucc cache pull`.
 *
 *   gpucc cache push IMAGE... [--remote URL]...   upload what the remotes lack
 *   gpucc cache pull IMAGE-OR-SNAPSHOT [--remote URL]...
 *                                                  fetch those entries into the cache
 *
 * The remotes of a command: none with --no-remote; else every --remote
 * (in order); else $GPUCC_REMOTE; else the cache's config file ("remote =
 * URL..." lines).  A malformed --remote is a usage error; a malformed
 * GPUCC_REMOTE or config line is a warning, and no remote is used (a remote
 * problem never breaks a build).  S3 remotes sign with the credentials of
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN.
 */
#include "algebra.h"
#include "cmd_remote.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_configure_remotes(const cmd_args *args, gpucc_cache *c)
{
	int given = cmd_value_count(args, "remote");
	if (!cmd_flag(args, "no-remote") &&
	    gpucc_cache_set_s3_credentials(c, getenv("AWS_ACCESS_KEY_ID"),
	                                   getenv("AWS_SECRET_ACCESS_KEY"),
	                                   getenv("AWS_SESSION_TOKEN")) != 0)
		return cmd_fail(args);
	if (cmd_flag(args, "no-remote")) {
		if (given)
			return cmd_error(args, EXIT_USAGE, "--remote and --no-remote exclude each other");
		return EXIT_OK;
	}
	for (int i = 0; i < given; i++) {
		const char *url = cmd_value_at(args, "remote", i);
		if (!*url)
			return cmd_error(args, EXIT_USAGE, "--remote needs a URL, not ''");
		if (gpucc_cache_add_remotes(c, url, "--remote") != 0)
			return cmd_error(args, EXIT_USAGE, "%s", gpucc_error_last()->message);
	}
	if (given)
		return EXIT_OK;
	const char *spec = getenv("GPUCC_REMOTE");
	const char *origin = "GPUCC_REMOTE";
	char config_origin[300];
	if (!spec || !*spec) {
		spec = gpucc_cache_config_remotes(c);
		char shown[256];
		snprintf(config_origin, sizeof config_origin, "'%s/config'",
		         cmd_shown(shown, sizeof shown, gpucc_cache_dir(c)));
		origin = config_origin;
	}
	if (spec && *spec && gpucc_cache_add_remotes(c, spec, origin) != 0)
		fprintf(stderr, "gpucc %s: warning: %s; no remote from there is used\n",
		        args->spec->name, gpucc_error_last()->message);
	return EXIT_OK;
}

void cmd_upload_compiled(gpucc_compile *c, gpucc_cache *cache)
{
	if (!cache || gpucc_cache_remote_count(cache) == 0 || !gpucc_cache_writable(cache))
		return;
	size_t n = gpucc_compile_result_count(c), count = 0;
	gpucc_digest *keys = malloc((n ? n : 1) * sizeof *keys);
	for (size_t i = 0; keys && i < n; i++) {
		const gpucc_compile_result *r = gpucc_compile_result_at(c, i);
		if (r->status == GPUCC_COMPILE_COMPILED && r->key_known)
			keys[count++] = r->key;
	}
	if (keys && count)
		gpucc_cache_remote_push(cache, keys, count, false, NULL);
	free(keys);
}

static int require_remote(const cmd_args *args, gpucc_cache *c)
{
	if (gpucc_cache_remote_count(c) == 0)
		return cmd_error(args, EXIT_USAGE,
		                 "no remote: give --remote URL, set GPUCC_REMOTE or a 'remote' line in "
		                 "the cache's config");
	return EXIT_OK;
}

/* ---- cache keygen --------------------------------------------------------------- */

static const cmd_option keygen_options[] = {
	{0},
};

static int run_keygen(const cmd_args *args)
{
	char public_hex[65];
	if (gpucc_signing_key_generate(args->positional[0], public_hex) != 0)
		return cmd_fail(args);
	printf("%s\n", public_hex);
	return EXIT_OK;
}

const cmd_spec cmd_cache_keygen_spec = {
	.name = "cache keygen",
	.synopsis = "KEY-FILE",
	.summary = "make an Ed25519 key that signs what a trusted writer uploads to a remote",
	.description =
	"Writes a new Ed25519 private key (PEM, mode 0600) to KEY-FILE, which must not\n"
	"exist, and prints its public key (64 hex digits).  A remote with the\n"
	"attribute sign=KEY-FILE signs every entry uploaded to it; one with\n"
	"trust=KEYS-FILE (public keys, one a line) takes only entries signed by one\n"
	"of them: an unsigned or wrongly signed entry is a miss, with a warning.  See\n"
	"docs/remote-cache.md.",
	.options = keygen_options,
	.min_positional = 1,
	.max_positional = 1,
	.run = run_keygen,
};

/* ---- cache push ----------------------------------------------------------------- */

static const cmd_option push_options[] = {
	{"cache", 0, "DIR", false, "the local cache the entries pass through (default: see formats/cache.md)"},
	{"remote", 0, "URL", false, "push to this remote (repeatable; default: $GPUCC_REMOTE, else the cache's config)"},
	{"no-remote", 0, NULL, false, "use no remote (then there is nothing to do)"},
	{0},
};

static int run_push(const cmd_args *args)
{
	gpucc_cache *c = NULL;
	gpucc_digest *keys = NULL;
	size_t count = 0, capacity = 0;
	int rc = cmd_open_cache(args, &c, 0);
	if (rc)
		return rc;
	if ((rc = cmd_configure_remotes(args, c)) != EXIT_OK || (rc = require_remote(args, c)))
		goto cleanup;
	for (int i = 0; i < args->positional_count; i++) {
		gpucc_image *img = NULL;
		if (gpucc_image_open(&img, args->positional[i]) != 0) {
			rc = cmd_fail(args);
			goto cleanup;
		}
		for (size_t k = 0; k < gpucc_image_entry_count(img); k++) {
			const gpucc_entry *e = gpucc_image_entry(img, k);
			/* Entries reach the remotes from the local cache, so that
			 * what is sent is what a lookup here verifies. */
			gpucc_image *held = NULL;
			if (gpucc_cache_open_entry(&held, c, &e->key) != 0 &&
			    gpucc_cache_insert_from(c, img, e, GPUCC_CONFLICT_FIRST) != 0) {
				gpucc_image_free(img);
				rc = cmd_fail(args);
				goto cleanup;
			}
			gpucc_image_free(held);
			if (count == capacity) {
				capacity = capacity ? 2 * capacity : 64;
				gpucc_digest *grown = realloc(keys, capacity * sizeof *grown);
				if (!grown) {
					gpucc_image_free(img);
					rc = cmd_error(args, EXIT_FAIL, "out of memory");
					goto cleanup;
				}
				keys = grown;
			}
			keys[count++] = e->key;
		}
		gpucc_image_free(img);
	}
	gpucc_remote_push_result res;
	int pushed = gpucc_cache_remote_push(c, keys, count, true, &res);
	printf("%" PRIu64 " uploaded, %" PRIu64 " present already, %" PRIu64 " failed\n",
	       res.uploaded, res.present, res.failed);
	if (pushed != 0)
		rc = cmd_error(args, EXIT_FAIL, "%s", gpucc_error_last()->message);
cleanup:
	free(keys);
	gpucc_cache_free(c);
	return rc;
}

const cmd_spec cmd_cache_push_spec = {
	.name = "cache push",
	.synopsis = "IMAGE... [--cache DIR] [--remote URL]...",
	.summary = "upload the entries of images to the remotes that lack them",
	.description =
	"Every entry of every IMAGE goes into the local cache (when it is not there\n"
	"already), then to each remote that is not read-only: one existence check\n"
	"per remote for all of them, then one batch of uploads of those it lacks.\n"
	"Prints 'N uploaded, M present already, K failed'.  A failed upload is\n"
	"reported (one line naming the remote) and makes the exit code 1; an\n"
	"unreadable IMAGE is an error as for other commands.  See\n"
	"docs/remote-cache.md for URLs and their attributes.",
	.options = push_options,
	.min_positional = 1,
	.max_positional = -1,
	.run = run_push,
};

/* ---- cache pull ----------------------------------------------------------------- */

static const cmd_option pull_options[] = {
	{"cache", 0, "DIR", false, "the local cache to fill (default: see formats/cache.md)"},
	{"remote", 0, "URL", false, "pull from this remote (repeatable; default: $GPUCC_REMOTE, else the cache's config)"},
	{"no-remote", 0, NULL, false, "use no remote (then every entry missing stays missing)"},
	{0},
};

static int run_pull(const cmd_args *args)
{
	gpucc_cache *c = NULL;
	gpucc_operand *src = NULL;
	gpucc_snapshot *snap = NULL;
	bool *found = NULL;
	gpucc_digest *wanted = NULL;
	int rc = cmd_open_cache(args, &c, 0);
	if (rc)
		return rc;
	if ((rc = cmd_configure_remotes(args, c)) != EXIT_OK || (rc = require_remote(args, c)))
		goto cleanup;
	if (gpucc_operand_open(&src, args->positional[0], cmd_print_warning, (void *)args) != 0 ||
	    gpucc_snapshot_of(&snap, src) != 0) {
		rc = cmd_fail(args);
		goto cleanup;
	}
	size_t n = gpucc_snapshot_count(snap), missing = 0, present = 0, fetched = 0;
	const gpucc_snapshot_item *items = gpucc_snapshot_items(snap);
	wanted = malloc((n ? n : 1) * sizeof *wanted);
	found = calloc(n ? n : 1, sizeof *found);
	if (!wanted || !found) {
		rc = cmd_error(args, EXIT_FAIL, "out of memory");
		goto cleanup;
	}
	size_t w = 0;
	for (size_t i = 0; i < n; i++) {
		gpucc_image *held = NULL;
		if (gpucc_cache_open_entry(&held, c, &items[i].key) == 0)
			present++;
		else
			wanted[w++] = items[i].key;
		gpucc_image_free(held);
	}
	gpucc_error_clear();
	gpucc_cache_remote_fetch(c, wanted, w, found);
	for (size_t i = 0; i < w; i++)
		found[i] ? fetched++ : missing++;
	printf("%zu fetched, %zu present already, %zu not found\n", fetched, present, missing);
	if (missing)
		rc = EXIT_NOT_FOUND;
cleanup:
	free(found);
	free(wanted);
	gpucc_snapshot_free(snap);
	gpucc_operand_free(src);
	gpucc_cache_free(c);
	return rc;
}

const cmd_spec cmd_cache_pull_spec = {
	.name = "cache pull",
	.synopsis = "IMAGE-OR-SNAPSHOT [--cache DIR] [--remote URL]...",
	.summary = "fetch the entries an image or snapshot names from the remotes into the cache",
	.description =
	"Every key the IMAGE or SNAPSHOT names that the local cache lacks is asked\n"
	"of each remote in order (one batch per remote); what arrives is verified\n"
	"(its key recomputed from its fields, every payload's SHA-256) before it is\n"
	"stored.  Prints 'N fetched, M present already, K not found'; exits 0 when\n"
	"the cache then holds every key, 2 otherwise.  A remote that fails is\n"
	"reported once and asked nothing more.  See docs/remote-cache.md.",
	.options = pull_options,
	.min_positional = 1,
	.max_positional = 1,
	.run = run_pull,
};
