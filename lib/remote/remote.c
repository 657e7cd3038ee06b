/*
 * lib/remote/remote.c -- remote caches behind the local one (gpucc/remote.h,
 * formats/remote.md): the remotes a cache is given (their specs parsed by
 * lib/remote/remote_spec.c), asking the remotes in order for what the local
 * cache lacks, verifying what they return before it is stored or used,
 * uploading, and the remote counters (DIR/remote-stats).
 *
 * Every remote failure is a miss: the first one of a remote is reported
 * once through the cache's warning handler and disables that remote for the
 * rest of the handle's life, so that a dead or sick server costs a run at
 * most one round of its timeouts, and all its batches in a process at most
 * its total time (total-timeout=).
 */
#include "cache_internal.h"
#include "remote_impl.h"

#include "errors.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REMOTE_STATS_FILE "remote-stats"
#define REMOTE_STATS_MAGIC "gpucc-remote-stats 1"

struct remote_set {
	remote **remotes;
	size_t count;
	remote_s3_credentials s3; /* for every S3 remote */
	gpucc_remote_stats unsaved; /* this handle's, not yet in DIR/remote-stats */
};

/* ---- the remotes of a cache ------------------------------------------------ */

typedef struct remote_set remote_set;
static void remote_set_free(gpucc_cache *c, void *set);

static remote_set *remote_set_of(gpucc_cache *c, bool create)
{
	remote_set *s = gpucc_cache_remotes(c);
	if (!s && create && (s = calloc(1, sizeof *s)) != NULL)
		gpucc_cache_attach_remotes(c, s, remote_set_free);
	return s;
}

int gpucc_cache_add_remotes(gpucc_cache *c, const char *spec, const char *origin)
{
	GPUCC_REQUIRE(c);
	GPUCC_REQUIRE(spec);
	if (!origin)
		origin = "remote";
	char *copy = strdup(spec);
	remote_set *s = remote_set_of(c, true);
	if (!copy || !s) {
		free(copy);
		return gpucc_error_oom();
	}
	size_t first = s->count;
	int rc = 0;
	for (char *save = NULL, *word = strtok_r(copy, " \t\n", &save); word && rc == 0;
	     word = strtok_r(NULL, " \t\n", &save)) {
		remote *r = NULL;
		if ((rc = parse_remote(&r, word, origin)) != 0)
			break;
		remote **grown = realloc(s->remotes, (s->count + 1) * sizeof *grown);
		if (!grown) {
			remote_free(r);
			rc = gpucc_error_oom();
			break;
		}
		s->remotes = grown;
		r->credentials = &s->s3;
		s->remotes[s->count++] = r;
	}
	if (rc != 0) {
		while (s->count > first)
			remote_free(s->remotes[--s->count]);
	}
	free(copy);
	return rc;
}

int gpucc_cache_set_s3_credentials(gpucc_cache *c, const char *access_key_id,
                                   const char *secret_access_key, const char *session_token)
{
	GPUCC_REQUIRE(c);
	remote_set *s = remote_set_of(c, true);
	if (!s)
		return gpucc_error_oom();
	char *values[3] = {NULL, NULL, NULL};
	const char *given[3] = {access_key_id, secret_access_key, session_token};
	for (int i = 0; i < 3; i++) {
		if (given[i] && *given[i] && !(values[i] = strdup(given[i]))) {
			free(values[0]);
			free(values[1]);
			return gpucc_error_oom();
		}
	}
	free(s->s3.access_key_id);
	free(s->s3.secret_access_key);
	free(s->s3.session_token);
	s->s3.access_key_id = values[0];
	s->s3.secret_access_key = values[1];
	s->s3.session_token = values[2];
	return 0;
}

size_t gpucc_cache_remote_count(const gpucc_cache *c)
{
	GPUCC_REQUIRE_OR(c, 0);
	const remote_set *s = gpucc_cache_remotes(c);
	return s ? s->count : 0;
}

/* ---- failures ----------------------------------------------------------- */

/* The remote's first failure: one warning, and it is not asked again. */
static void disable(gpucc_cache *c, remote *r, const char *doing)
{
	if (r->disabled)
		return;
	r->disabled = true;
	if (r->deadline_ms && gpucc_remote_now_ms() >= r->deadline_ms) {
		/* What failed failed for the total's end: say that first. */
		char why[sizeof r->why];
		snprintf(why, sizeof why, "%s", r->why);
		snprintf(r->why, sizeof r->why, "its total time in this run (total-timeout=%ld ms) ran "
		         "out%s%.400s", r->total_timeout_ms, why[0] ? ": " : "", why);
	}
	gpucc_cache_warn(c, "remote '%s': %s%s%s; not used again in this run", r->shown,
	                 doing ? doing : "", doing ? ": " : "", r->why[0] ? r->why : "failed");
}

/* Begin a batch on r (connecting at its first): its deadline is what is
 * left of its total time; false (r disabled) when r cannot be used.
 * batch_end adds the batch's time to the total spent. */
static bool ready(gpucc_cache *c, remote *r)
{
	if (r->disabled)
		return false;
	r->batch_start_ms = gpucc_remote_now_ms();
	r->deadline_ms = r->batch_start_ms + (r->total_timeout_ms - r->spent_ms);
	if (r->spent_ms >= r->total_timeout_ms) {
		r->why[0] = '\0';
		disable(c, r, NULL);
		return false;
	}
	if (r->connected)
		return true;
	if (r->fault) {
		snprintf(r->why, sizeof r->why, "%s", r->fault);
		disable(c, r, NULL);
		return false;
	}
	r->why[0] = '\0';
	if (r->backend->connect(r) != 0) {
		disable(c, r, NULL);
		return false;
	}
	r->connected = true;
	return true;
}

static void batch_end(remote *r)
{
	r->spent_ms += gpucc_remote_now_ms() - r->batch_start_ms;
}

/* ---- fetching and verifying --------------------------------------------- */

static char *local_entry_path(gpucc_cache *c, const gpucc_digest *key)
{
	char hex[GPUCC_DIGEST_HEX_SIZE];
	gpucc_digest_to_hex(hex, key);
	const char *dir = gpucc_cache_dir(c);
	char *path = malloc(strlen(dir) + 2 * GPUCC_DIGEST_HEX_SIZE + 16);
	if (path)
		sprintf(path, "%s/v1/%.2s/%s.gpucc", dir, hex, hex);
	return path;
}

static bool held_locally(gpucc_cache *c, const gpucc_digest *key)
{
	char *path = local_entry_path(c, key);
	struct stat st;
	bool held = path && lstat(path, &st) == 0 && S_ISREG(st.st_mode);
	free(path);
	return held;
}

/* What verify_and_store returns when the entry verified but the local
 * cache could not store it (a full disk): no fault of the remote's. */
#define LOCAL_STORE_FAILED 1

/* Check a remote's bytes for key as an untrusted image: exactly one entry,
 * the key asked for, that key recomputed from the entry's fields, every
 * payload's digest; then insert it into the local cache.  0; an error whose
 * message says what was wrong with the object (b->untrusted set when it is
 * this reader's trust that refuses it); or LOCAL_STORE_FAILED. */
static int verify_and_store(gpucc_cache *c, remote *r, const gpucc_digest *key,
                            remote_blob *b)
{
	char name[600];
	snprintf(name, sizeof name, "%s", r->shown);
	gpucc_image *img = NULL;
	remote_blob entry = *b;
	int rc = gpucc_remote_check_signature(r, key, &entry);
	b->untrusted = entry.untrusted;
	if (rc == 0)
		rc = gpucc_image_open_memory(&img, entry.data, entry.size, name);
	if (rc == 0 && gpucc_image_entry_count(img) != 1)
		rc = gpucc_error_set(GPUCC_ECORRUPT, "holds %zu entries, not one",
		                     gpucc_image_entry_count(img));
	const gpucc_entry *e = rc == 0 ? gpucc_image_entry(img, 0) : NULL;
	if (rc == 0 && gpucc_digest_compare(&e->key, key) != 0)
		rc = gpucc_error_set(GPUCC_ECORRUPT, "holds the entry of another key");
	/* verify recomputes the key from the entry's fields, and checks every
	 * payload's digest. */
	if (rc == 0)
		rc = gpucc_image_verify(img);
	if (rc == 0) {
		cache_insert_outcome outcome;
		if (gpucc_cache_insert_entry_from(c, img, e, name, GPUCC_CONFLICT_FIRST, NULL, NULL,
		                                  &outcome) != 0)
			rc = LOCAL_STORE_FAILED;
	}
	gpucc_image_free(img);
	return rc;
}

/* Delete the rejected objects of keys from a writable remote, so that the
 * next writer replaces them rather than finding them present.  Only after
 * a batch whose every transfer ended whole and framed: a failed or
 * doubtful transfer says nothing of the server's copy.  Its own failures
 * are not reported: the rejection already is, once. */
static void remove_rejected(remote *r, const gpucc_digest *keys, size_t count)
{
	if (r->read_only || !r->backend->del)
		return;
	remote_outcome *outcomes = malloc(count * sizeof *outcomes);
	if (!outcomes)
		return;
	char why[sizeof r->why];
	memcpy(why, r->why, sizeof why);
	r->why[0] = '\0';
	r->backend->del(r, keys, count, outcomes);
	memcpy(r->why, why, sizeof why);
	free(outcomes);
}

/* Fetch the n keys of want[0..n) (indexes into keys) from r, verify and
 * store each as it is taken, and free its bytes before returning: the
 * memory one call holds is n objects.  Found keys are marked in found;
 * the indexes not found are moved to the front of want, their number
 * returned.  r is disabled at its first failure. */
static size_t fetch_piece(gpucc_cache *c, remote_set *s, remote *r, const gpucc_digest *keys,
                          size_t *want, size_t n, gpucc_digest *batch, remote_blob *blobs,
                          bool *found)
{
	for (size_t k = 0; k < n; k++)
		batch[k] = keys[want[k]];
	memset(blobs, 0, n * sizeof *blobs);
	r->why[0] = '\0';
	r->backend->get(r, batch, n, blobs);
	bool failed = false, local_failed = false, transport_failed = false;
	size_t kept = 0, bad = 0;
	for (size_t k = 0; k < n; k++) {
		remote_blob *b = &blobs[k];
		bool got = false;
		int stored = b->outcome == REMOTE_OK ? verify_and_store(c, r, &batch[k], b) : 0;
		if (b->outcome == REMOTE_BAD)
			stored = gpucc_error_set(GPUCC_ECORRUPT, "%s", b->bad);
		if (b->outcome == REMOTE_OK || b->outcome == REMOTE_BAD) {
			s->unsaved.bytes_in += b->size;
			if (stored == 0) {
				got = true;
				s->unsaved.hits++;
			} else if (stored == LOCAL_STORE_FAILED) {
				/* Verified, but the local cache refused it: a miss, and
				 * the cache's problem, said once. */
				if (!local_failed)
					gpucc_cache_warn(c, "an entry from remote '%s' verified but could not "
					                 "be stored: %s", r->shown, gpucc_error_last()->message);
				local_failed = true;
			} else if (stored == GPUCC_EUNAVAILABLE) {
				/* Not checked (libcrypto, which checks signatures, could
				 * not be loaded): this process's lack, not the object's
				 * fault, so not rejected and removed. */
				if (!failed)
					snprintf(r->why, sizeof r->why, "%s", gpucc_error_last()->message);
				s->unsaved.errors++;
				failed = true;
			} else {
				if (!failed) {
					char hex[GPUCC_DIGEST_HEX_SIZE];
					gpucc_digest_to_hex(hex, &batch[k]);
					snprintf(r->why, sizeof r->why, "entry %.16s... rejected: %s%s", hex,
					         gpucc_error_last()->message,
					         b->unframed ? " (its body ended at the connection's close: "
					                       "maybe cut short in transit)" : "");
				}
				s->unsaved.errors++;
				failed = true;
				/* An object that may have been cut short on the way is
				 * the transfer's failure: the server's copy may be
				 * whole, and nothing is deleted. */
				if (b->unframed)
					transport_failed = true;
				/* batch[0..k) is done with: the rejected keys gather there
				 * (not those this reader's trust refuses, which others
				 * may trust). */
				if (!b->untrusted)
					batch[bad++] = batch[k];
			}
		} else if (b->outcome == REMOTE_ERROR) {
			s->unsaved.errors++;
			failed = transport_failed = true;
		} else if (b->outcome == REMOTE_TIMEOUT) {
			s->unsaved.timeouts++;
			failed = transport_failed = true;
		}
		free(b->data);
		b->data = NULL;
		if (got && found)
			found[want[k]] = true;
		if (!got)
			want[kept++] = want[k];
	}
	if (bad && !transport_failed)
		remove_rejected(r, batch, bad);
	if (failed)
		disable(c, r, NULL);
	return kept;
}

int gpucc_cache_remote_fetch(gpucc_cache *c, const gpucc_digest *keys, size_t count, bool *found)
{
	GPUCC_REQUIRE(c);
	if (count)
		GPUCC_REQUIRE(keys);
	if (found)
		memset(found, 0, count * sizeof *found);
	remote_set *s = remote_set_of(c, false);
	if (!s || s->count == 0 || count == 0 || !gpucc_cache_writable(c))
		return 0;
	/* Index into keys of those still wanted. */
	size_t *want = malloc(count * sizeof *want);
	gpucc_digest *batch = malloc(REMOTE_FETCH_PIECE * sizeof *batch);
	remote_blob *blobs = calloc(REMOTE_FETCH_PIECE, sizeof *blobs);
	if (!want || !batch || !blobs) {
		free(want);
		free(batch);
		free(blobs);
		return 0; /* a remote is an optimisation: no memory, no remote */
	}
	/* A key given twice is asked twice: the second copy to arrive is a
	 * duplicate the local insert collapses. */
	size_t wanted = 0;
	for (size_t i = 0; i < count; i++)
		if (!held_locally(c, &keys[i]))
			want[wanted++] = i;
	for (size_t ri = 0; ri < s->count && wanted; ri++) {
		remote *r = s->remotes[ri];
		if (!ready(c, r))
			continue;
		/* In pieces of REMOTE_FETCH_PIECE keys, each verified, stored
		 * and freed before the next is asked: the objects in memory at
		 * once do not grow with the batch.  After a failure the rest are
		 * kept for the next remote, unasked. */
		size_t kept = 0;
		for (size_t first = 0; first < wanted; first += REMOTE_FETCH_PIECE) {
			size_t n = wanted - first < REMOTE_FETCH_PIECE ? wanted - first : REMOTE_FETCH_PIECE;
			size_t left = n;
			if (!r->disabled)
				left = fetch_piece(c, s, r, keys, want + first, n, batch, blobs, found);
			/* kept <= first: the piece's misses move down in place. */
			memmove(want + kept, want + first, left * sizeof *want);
			kept += left;
		}
		wanted = kept;
		batch_end(r);
	}
	s->unsaved.misses += wanted;
	free(want);
	free(batch);
	free(blobs);
	gpucc_error_clear();
	return 0;
}

/* ---- uploading ---------------------------------------------------------- */

static int read_local(gpucc_cache *c, const gpucc_digest *key, remote_blob *b)
{
	char *path = local_entry_path(c, key);
	int fd = path ? open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
	free(path);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > REMOTE_MAX_OBJECT) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	b->size = (size_t)st.st_size;
	b->data = malloc(b->size ? b->size : 1);
	size_t done = 0;
	while (b->data && done < b->size) {
		ssize_t n = read(fd, b->data + done, b->size - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	close(fd);
	if (!b->data || done != b->size) {
		free(b->data);
		b->data = NULL;
		return -1;
	}
	return 0;
}

/* Sign send[0..n) for r in place (signed copies into *out, to be freed);
 * false when an entry cannot be signed. */
static bool sign_all(remote *r, const gpucc_digest *batch, remote_blob *send, size_t n,
                     remote_blob **out)
{
	remote_blob *signed_blobs = calloc(n ? n : 1, sizeof *signed_blobs);
	*out = signed_blobs;
	size_t k = 0;
	for (; signed_blobs && k < n; k++) {
		if (gpucc_remote_sign(r, &batch[k], &send[k], &signed_blobs[k]) != 0)
			break;
		send[k] = signed_blobs[k];
	}
	if (signed_blobs && k == n)
		return true;
	for (size_t made = 0; signed_blobs && made < k; made++)
		free(signed_blobs[made].data);
	free(signed_blobs);
	*out = NULL;
	return false;
}

/* Upload the n keys batch[0..n) (index[k]: their place in keys, have[]
 * cleared for an entry gone since it was seen) to r: their local bytes
 * read, signed when r signs, put, and freed; the memory one call holds is
 * n entries.  Counts into res and s; false when r failed (disabled). */
static bool push_piece(gpucc_cache *c, remote_set *s, remote *r, const gpucc_digest *batch,
                       const size_t *index, size_t n, bool *have, gpucc_remote_push_result *res)
{
	gpucc_digest piece[REMOTE_FETCH_PIECE];
	remote_blob send[REMOTE_FETCH_PIECE], local[REMOTE_FETCH_PIECE];
	remote_outcome outcome[REMOTE_FETCH_PIECE];
	size_t m = 0;
	for (size_t k = 0; k < n; k++) {
		remote_blob b = {0};
		if (read_local(c, &batch[k], &b) != 0) {
			have[index[k]] = false;
			continue;
		}
		piece[m] = batch[k];
		local[m] = b;
		send[m++] = b;
	}
	bool failed = false;
	remote_blob *signed_blobs = NULL;
	/* Nothing goes out unsigned from a writer that signs. */
	if (m && r->sign_key && !sign_all(r, piece, send, m, &signed_blobs)) {
		snprintf(r->why, sizeof r->why, "cannot sign an entry");
		disable(c, r, "uploading");
		res->failed += m;
		failed = true;
	} else if (m) {
		r->why[0] = '\0';
		r->backend->put(r, piece, send, m, outcome);
		for (size_t k = 0; k < m; k++) {
			if (outcome[k] == REMOTE_OK) {
				res->uploaded++;
				s->unsaved.bytes_out += send[k].size;
			} else {
				res->failed++;
				outcome[k] == REMOTE_TIMEOUT ? s->unsaved.timeouts++ : s->unsaved.errors++;
				failed = true;
			}
		}
		if (failed)
			disable(c, r, "uploading");
	}
	for (size_t k = 0; k < m; k++) {
		free(local[k].data);
		if (signed_blobs)
			free(signed_blobs[k].data);
	}
	free(signed_blobs);
	return !failed;
}

int gpucc_cache_remote_push(gpucc_cache *c, const gpucc_digest *keys, size_t count,
                            bool check_existing, gpucc_remote_push_result *out)
{
	GPUCC_REQUIRE(c);
	if (count)
		GPUCC_REQUIRE(keys);
	gpucc_remote_push_result res = {0};
	remote_set *s = remote_set_of(c, false);
	int rc = 0;
	bool *have = calloc(count ? count : 1, sizeof *have);
	size_t *index = malloc((count ? count : 1) * sizeof *index);
	gpucc_digest *batch = malloc((count ? count : 1) * sizeof *batch);
	remote_outcome *outcome = calloc(count ? count : 1, sizeof *outcome);
	if (!have || !index || !batch || !outcome) {
		rc = gpucc_error_oom();
		goto done;
	}
	/* Held locally is a stat here; the bytes are read only for a remote
	 * that lacks the entry, so that checking what is present already
	 * costs no reading. */
	for (size_t i = 0; i < count; i++)
		have[i] = held_locally(c, &keys[i]);
	for (size_t ri = 0; s && ri < s->count; ri++) {
		remote *r = s->remotes[ri];
		if (r->read_only || !ready(c, r))
			continue;
		size_t n = 0;
		for (size_t i = 0; i < count; i++) {
			if (have[i]) {
				index[n] = i;
				batch[n++] = keys[i];
			}
		}
		bool failed = false;
		if (n && check_existing) {
			r->why[0] = '\0';
			r->backend->exists(r, batch, n, outcome);
			size_t kept = 0;
			for (size_t k = 0; k < n; k++) {
				if (outcome[k] == REMOTE_OK) {
					res.present++;
					continue;
				}
				if (outcome[k] == REMOTE_ERROR || outcome[k] == REMOTE_TIMEOUT) {
					failed = true;
					outcome[k] == REMOTE_TIMEOUT ? s->unsaved.timeouts++ : s->unsaved.errors++;
				}
				batch[kept] = batch[k];
				index[kept] = index[k];
				kept++;
			}
			n = failed ? 0 : kept;
			if (failed) {
				disable(c, r, "checking what it holds");
				res.failed += kept;
			}
		}
		/* In pieces, as fetching is: the entries in memory at once do not
		 * grow with the batch.  After a failure the rest are not sent. */
		for (size_t first = 0; first < n; first += REMOTE_FETCH_PIECE) {
			size_t m = n - first < REMOTE_FETCH_PIECE ? n - first : REMOTE_FETCH_PIECE;
			if (failed) {
				for (size_t k = first; k < first + m; k++)
					res.failed += have[index[k]];
				continue;
			}
			failed = !push_piece(c, s, r, batch + first, index + first, m, have, &res);
		}
		if (failed)
			rc = GPUCC_ERROR;
		batch_end(r);
	}
	for (size_t i = 0; i < count; i++)
		res.missing += !have[i];
	if (rc != 0)
		gpucc_error_set(GPUCC_ERROR, "%" PRIu64 " upload%s failed", res.failed,
		                res.failed == 1 ? "" : "s");
done:
	free(have);
	free(index);
	free(batch);
	free(outcome);
	if (out)
		*out = res;
	return rc;
}

/* ---- counters ------------------------------------------------------------ */

static void stats_parse(gpucc_remote_stats *st, const char *text)
{
	memset(st, 0, sizeof *st);
	size_t magic = strlen(REMOTE_STATS_MAGIC);
	if (strncmp(text, REMOTE_STATS_MAGIC, magic) != 0 || text[magic] != ' ')
		return;
	struct { const char *name; uint64_t *value; } fields[] = {
		{"hits", &st->hits}, {"misses", &st->misses}, {"errors", &st->errors},
		{"timeouts", &st->timeouts}, {"bytes_in", &st->bytes_in},
		{"bytes_out", &st->bytes_out},
	};
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		char pattern[32];
		snprintf(pattern, sizeof pattern, " %s=", fields[i].name);
		const char *at = strstr(text, pattern);
		if (!at)
			continue;
		at += strlen(pattern);
		if (*at < '0' || *at > '9')
			continue;
		errno = 0;
		unsigned long long v = strtoull(at, NULL, 10);
		if (errno == 0)
			*fields[i].value = v;
	}
}

/* DIR/remote-stats's counters (lib/cache/cache.c's counters' files). */
static void stats_load(gpucc_cache *c, gpucc_remote_stats *st)
{
	char line[GPUCC_COUNTERS_MAX_BYTES];
	gpucc_cache_counters_read(c, REMOTE_STATS_FILE, line);
	stats_parse(st, line);
}

/* The counters' line for st, in text (GPUCC_COUNTERS_MAX_BYTES); its length. */
static size_t stats_format(char *text, const gpucc_remote_stats *st)
{
	int n = snprintf(text, GPUCC_COUNTERS_MAX_BYTES,
	                 REMOTE_STATS_MAGIC " hits=%" PRIu64 " misses=%" PRIu64 " errors=%" PRIu64
	                 " timeouts=%" PRIu64 " bytes_in=%" PRIu64 " bytes_out=%" PRIu64 "\n",
	                 st->hits, st->misses, st->errors, st->timeouts, st->bytes_in, st->bytes_out);
	return (size_t)n;
}

static void stats_add(gpucc_remote_stats *st, const gpucc_remote_stats *add)
{
	st->hits += add->hits;
	st->misses += add->misses;
	st->errors += add->errors;
	st->timeouts += add->timeouts;
	st->bytes_in += add->bytes_in;
	st->bytes_out += add->bytes_out;
}

/* The line's counters plus ctx's (a gpucc_remote_stats; NULL: zeros) over it. */
static size_t stats_apply(char *line, void *ctx)
{
	gpucc_remote_stats st = {0};
	if (ctx) {
		stats_parse(&st, line);
		stats_add(&st, ctx);
	}
	return stats_format(line, &st);
}

/* Add add (NULL: zero the file) to DIR/remote-stats, rewritten in place
 * (gpucc_cache_counters_update). */
static int stats_update(gpucc_cache *c, const gpucc_remote_stats *add)
{
	return gpucc_cache_counters_update(c, REMOTE_STATS_FILE, stats_apply, (void *)add);
}

int gpucc_cache_remote_stats_get(gpucc_remote_stats *out, gpucc_cache *c)
{
	GPUCC_REQUIRE(out);
	GPUCC_REQUIRE(c);
	stats_load(c, out);
	remote_set *s = remote_set_of(c, false);
	if (s) {
		out->hits += s->unsaved.hits;
		out->misses += s->unsaved.misses;
		out->errors += s->unsaved.errors;
		out->timeouts += s->unsaved.timeouts;
		out->bytes_in += s->unsaved.bytes_in;
		out->bytes_out += s->unsaved.bytes_out;
	}
	return 0;
}

int gpucc_cache_remote_stats_reset(gpucc_cache *c)
{
	GPUCC_REQUIRE(c);
	if (!gpucc_cache_writable(c))
		return gpucc_cache_refuse_read_only(c, "reset the remote counters of");
	remote_set *s = remote_set_of(c, false);
	if (s)
		memset(&s->unsaved, 0, sizeof s->unsaved);
	return stats_update(c, NULL);
}

/* The cache's release of its remotes (gpucc_cache_free): save the
 * counters, close the connections. */
static void remote_set_free(gpucc_cache *c, void *set)
{
	remote_set *s = set;
	if (!s)
		return;
	const gpucc_remote_stats *u = &s->unsaved;
	if (gpucc_cache_writable(c) &&
	    (u->hits || u->misses || u->errors || u->timeouts || u->bytes_in || u->bytes_out)) {
		gpucc_error save = *gpucc_error_last();
		char message[1024];
		snprintf(message, sizeof message, "%s", save.message ? save.message : "");
		if (stats_update(c, u) != 0 && !save.code)
			gpucc_cache_warn(c, "cannot save remote counters: %s", gpucc_error_last()->message);
		if (save.code)
			gpucc_error_set(save.code, "%s", message);
		else
			gpucc_error_clear();
	}
	for (size_t i = 0; i < s->count; i++)
		remote_free(s->remotes[i]);
	free(s->remotes);
	free(s->s3.access_key_id);
	free(s->s3.secret_access_key);
	free(s->s3.session_token);
	free(s);
}
