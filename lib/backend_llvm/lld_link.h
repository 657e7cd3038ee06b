/*
 * lib/backend_llvm/lld_link.h -- LLD linked into the compile worker of its
 * own LLVM major, so that an AMDGPU code object is linked in process
 * instead of by an ld.lld process (whose start, mostly loading libLLVM,
 * costs ~70 ms of CPU per job against ~2 ms for the link itself).
 * lld_link.cpp where the build found that major's liblld (Debian's
 * liblld-19-dev, liblld-22-dev), lld_none.c elsewhere (the backend
 * modules, a worker built without it).
 */
#ifndef GPUCC_BACKEND_LLD_LINK_H
#define GPUCC_BACKEND_LLD_LINK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ld.lld's arguments (argv[0] names it in messages), run in this process:
 * 0 when it linked; else LLD's exit code (its messages in log, cut to
 * log_size), or -1 when this program has no LLD or an earlier link left
 * LLD unable to run again (the caller then runs the ld.lld process). */
int backend_lld_link(const char *const *argv, size_t argc, char *log, size_t log_size);

#ifdef __cplusplus
}
#endif

#endif
