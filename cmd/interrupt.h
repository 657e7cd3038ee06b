/*
 * cmd/interrupt.h -- leave nothing behind when asked to stop.  A command
 * that writes an output (merge, delta, snapshot, compile -o) and is ended by
 * SIGINT (Ctrl-C), SIGTERM (a CI runner cancelling a job) or SIGHUP removes
 * the temporary file libgpucc was writing beside the output, and the merge
 * lock it holds; a compile removes its backend's temporary directories in
 * $TMPDIR too.  Then it dies of that signal as it would have.  A SIGKILL
 * still leaves them: the output's, for the next write of the output to
 * remove (lib/base/atomic_file.h).
 */
#ifndef GPUCC_CMD_INTERRUPT_H
#define GPUCC_CMD_INTERRUPT_H

#include "cmd.h"

#include <stdbool.h>

/* Watch output (copied; NULL: none) and, with backend_tempdirs, the
 * compile backend's temporary directories of this process: from now on the signals above, unless they were ignored when
 * the process started (nohup, a shell's background job), are taken by a
 * thread of their own.  Call once, before any other thread is started:
 * threads started later inherit the blocked signals (child processes do
 * not: libgpucc spawns its tools with none blocked).  EXIT_OK, or
 * EXIT_FAIL after printing why. */
int cmd_interrupt_watch(const cmd_args *args, const char *output, bool backend_tempdirs);

/* Say whether this process holds the merge lock of the watched output
 * (.OUT.lock): only then is it removed on a signal.  Clear it before
 * releasing the lock, since another process may take the name at once. */
void cmd_interrupt_hold_lock(bool held);

#endif
