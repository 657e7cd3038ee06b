# cmd/tests/compile_lld.sh -- AMDGPU code objects linked by the LLD linked
# into the compile worker (lib/backend_llvm/lld_link.h), where it is the
# ld.lld-19 found: no ld.lld process links a job (strace's execve trace),
# and the image is byte for byte the one ld.lld processes make when another
# ld.lld-19 (a copy of the real one, so another file) is first on PATH and
# links every job itself.  The ld.lld-19 the build found is not run even
# for its version (the build's memo of it); the copy is.  Skipped where the
# build has no LLD library (liblld-19-dev) or strace is missing.
. "$SRCROOT/cmd/tests/lib.sh"
use_llvm 19 "LLD 19, which links in process, is in LLVM 19's worker"

grep -q 'GPUCC_BUILD_LLD_VERSION "19' "$BUILDDIR/gpucc_build_config.h" ||
	skip "built without LLD as a library (liblld-19-dev): the compile worker runs ld.lld"
command -v strace >/dev/null || skip "strace is not installed (it shows which processes run)"
lld=$(command -v ld.lld-19) || skip "ld.lld-19 is not installed"
mods="vector_add math multi large"
set -- $(for m in $mods; do echo "$TESTDATA/kernels/amdgpu/$m.ll"; done)
targets="-t gfx90a -t gfx942 -t gfx1030"

# links: how many ld.lld processes linked (-shared) in TRACE
links() { grep -c 'execve(".*ld\.lld[^"]*", \[.*"-shared"' "$1"; }

# shellcheck disable=SC2086
no_leak_check strace -f -qq -e trace=execve -o inproc.trace \
	"$GPUCC" compile --cache inproc-cache -j2 $targets "$@" -o inproc.gpucc >out 2>err ||
	{ cat err >&2; fail "the compile with the worker's LLD failed"; }
[ "$(links inproc.trace)" = 0 ] || fail "ld.lld processes linked although the worker's LLD is that ld.lld"
# Nor is that ld.lld asked its version (the build saw it: meson.build), though
# the cache is new; the copy below, another file, is.
versions() { grep -c 'execve(".*ld\.lld[^"]*", \[.*"--version"' "$1"; }
[ "$(versions inproc.trace)" = 0 ] || fail "the ld.lld the build saw was asked its version"
grep -q 'gpucc-compile-worker' inproc.trace || fail "no compile worker ran (nothing was compiled)"

mkdir bin && cp "$(readlink -f "$lld")" bin/ld.lld-19
# shellcheck disable=SC2086
PATH=$PWD/bin:$PATH no_leak_check strace -f -qq -e trace=execve -o process.trace \
	"$GPUCC" compile --cache process-cache -j2 $targets "$@" -o process.gpucc --json >out 2>err ||
	{ cat err >&2; fail "the compile with ld.lld processes failed"; }
compiled=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["compiled"])' out)
[ "$compiled" = 12 ] || fail "$compiled of 12 jobs compiled"
[ "$(links process.trace)" = 12 ] ||
	fail "$(links process.trace) ld.lld processes linked 12 jobs with another ld.lld-19 first on PATH"
[ "$(versions process.trace)" = 1 ] ||
	fail "another ld.lld-19 first on PATH was asked its version $(versions process.trace) times, not once"
cmp -s inproc.gpucc process.gpucc ||
	fail "code objects linked in process differ from ld.lld's (keys or bytes)"
expect_exit 0 "$GPUCC" verify inproc.gpucc
echo ok
