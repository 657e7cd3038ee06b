/*
 * lib/image/payload_checker.h -- checking payload digests on a second thread.
 *
 * The image writer, when it writes through libarchive (compressed images),
 * copies every payload it takes from a source image and checks the copy's
 * SHA-256 against the manifest (docs/design.md invariant 5).
 * Hashing is about a third of that work; a checker moves it off the copying
 * thread.  The copying thread reads payload bytes into a checker buffer,
 * writes them out from there and moves on; the checker's thread hashes them
 * and compares each payload's digest when the payload ends.  Memory stays
 * bounded: a few fixed buffers, and the copying thread waits when all of
 * them are still being hashed.
 *
 * Results arrive late.  A mismatch is reported by gpucc_payload_checker_finish
 * (and seen early by gpucc_payload_checker_failed), which the writer calls
 * before it publishes anything; the message is the reader's own, "'IMAGE':
 * member 'NAME': SHA-256 digest mismatch (the payload is corrupt)", for the
 * first bad payload in the order the payloads were begun.
 *
 * One thread, the copying one, calls all of these functions; the checker's
 * own thread never touches libgpucc's error state.
 */
#ifndef GPUCC_LIB_PAYLOAD_CHECKER_H
#define GPUCC_LIB_PAYLOAD_CHECKER_H

#include "gpucc/common.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct gpucc_payload_checker gpucc_payload_checker;

/* Start a checker and its thread. */
int gpucc_payload_checker_new(gpucc_payload_checker **out);
/* Stop the thread, dropping whatever was not checked yet.  Accepts NULL. */
void gpucc_payload_checker_free(gpucc_payload_checker *c);

/* The bytes that follow, up to gpucc_payload_checker_end, are payload p of
 * the image named image_name.  Both are copied except the name's text,
 * which must stay valid until gpucc_payload_checker_finish. */
void gpucc_payload_checker_begin(gpucc_payload_checker *c, const char *image_name,
                                 const gpucc_payload *p);
/* Room for at least min bytes (min <= 256 KiB) of the current payload, to
 * read them into: *size (>= min) bytes at the returned address.  Follow
 * with at most one gpucc_payload_checker_data for bytes in that room. */
void *gpucc_payload_checker_room(gpucc_payload_checker *c, size_t min, size_t *size);
/* The next size bytes of the current payload: either in the room just
 * obtained (which they then use up), or memory that stays unchanged until
 * gpucc_payload_checker_finish. */
void gpucc_payload_checker_data(gpucc_payload_checker *c, const void *data, size_t size);
/* The current payload is complete: compare its digest. */
void gpucc_payload_checker_end(gpucc_payload_checker *c);

/* True when some payload already failed its check (cheap; for stopping
 * early). */
bool gpucc_payload_checker_failed(gpucc_payload_checker *c);
/* Wait until every ended payload is checked.  0, or the first mismatch as
 * an error (GPUCC_ECORRUPT, set here). */
int gpucc_payload_checker_finish(gpucc_payload_checker *c);

#endif
