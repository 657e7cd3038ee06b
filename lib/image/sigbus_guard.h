/*
 * lib/image/sigbus_guard.h -- reading a mapping of a file that another process
 * may cut short meanwhile, without dying of SIGBUS.
 *
 * Parsing a large manifest in place, from a mapping of the image file,
 * costs nothing beyond the page cache; reading it into memory first costs
 * a fresh buffer as large as the manifest (5 MiB for 10,000 entries), and
 * making those pages is several times the cost of a whole `gpucc list`.
 * But a file cut short in place (cp rewrites its target so) takes the
 * pages of a mapping past its new end away, and the next access to them
 * raises SIGBUS, which ends the process.
 *
 * Guards are off until the program asks for them
 * (gpucc_image_set_sigbus_guard, gpucc/image.h): a library caller that does
 * not ask never has its SIGBUS disposition touched, and its readers read
 * manifests into memory instead.
 *
 * A guard covers one mapping while one thread reads it.  Meanwhile a
 * SIGBUS handler is installed (the first guard installs it, the last one
 * puts back what was there before): a fault inside a guarded mapping puts
 * a page of zeros where the vanished page was, notes the fault in the
 * guard, and lets the access go on; the reader then sees zeros where the
 * file had bytes (for JSON, an error soon after) and, at the end of the
 * guard, learns that what it read is not the file.  A SIGBUS anywhere else
 * goes to the handler that was there before (or, where that was the
 * default, ends the process as it would have).  Any number of threads may
 * hold guards at once, up to a fixed number; no longjmp, so whatever the
 * reader allocated is released as on any other failure.
 */
#ifndef GPUCC_LIB_SIGBUS_GUARD_H
#define GPUCC_LIB_SIGBUS_GUARD_H

#include <stdbool.h>
#include <stddef.h>

typedef struct gpucc_sigbus_guard {
	size_t slot;
} gpucc_sigbus_guard;

/* Whether the program has turned guards on (gpucc_image_set_sigbus_guard):
 * when not, a reader need not map a file it would guard. */
bool gpucc_sigbus_guard_enabled(void);

/* Guard the mapping [start, start + size) (start page-aligned, as mmap
 * returns it).  0; or -1 when no guard can be had (guards are off, every
 * slot is in use, or the handler cannot be installed): the caller must
 * then not read the mapping, and reads the file another way. */
int gpucc_sigbus_guard_begin(gpucc_sigbus_guard *g, const void *start, size_t size);

/* End the guard, before the mapping is unmapped.  True when an access
 * faulted: the file was cut short, and what was read of the mapping is not
 * what the file held. */
bool gpucc_sigbus_guard_end(gpucc_sigbus_guard *g);

#endif
