# cmd/tests/lib.sh -- sourced by every CLI test.  Runs the test in a fresh
# empty directory (removed afterwards), and gives:
#   $GPUCC      the gpucc binary under test     $TESTDATA  testdata/
#   $SRCROOT    the source tree
#   fail MSG            report and exit 1
#   skip REASON         report and exit 77 (counted as skipped)
#   expect_exit N CMD…  run CMD, capture stdout/stderr in ./out ./err, and
#                       fail unless it exits with N
#   assert_grep PATTERN FILE / assert_no_file PATH / assert_same A B
#   assert_one_line FILE   the file holds exactly one line
#   $SANITIZE_CFLAGS    the -fsanitize flags of the build under test (empty
#                       without), for programs a test links against libgpucc
#   no_leak_check CMD…  run CMD with LeakSanitizer off (it cannot run under ptrace)
#   peak_rss_kib CMD…   run CMD (stdout discarded; fail if it fails) and print
#                       its peak resident memory in KiB
#   result_key JSON KERNELS…   compile --json's one result compiled, with
#                       exactly these kernels and no externals: its key
#   result_keys JSON TARGET    "key module kernel,..." per compiled or hit
#                       result of a target starting with TARGET
#   settle              wait out the file clock's granularity after writing
#                       what the next compile's clang reads, when the test
#                       needs that compile's direct-mode record
#   need_hip_sources    skip unless clang-19, ld.lld-19, the HIP headers and
#                       the ROCm device libraries are here; TMPDIR in the
#                       test's directory (clang's and gpucc's files there)
#   counting_clang      $TEST_DIR/clang-counting: clang-19 behind a wrapper
#                       that counts its compiles (--version aside); runs
#                       prints the count so far
#   remove_test_dirs    the EXIT trap's cleanup, for a test that sets its own
#   pack_variants IMAGE N   pack N entries of testdata/example's saxpy PTX
#                       that differ in an option only (so in their keys)
# Parts of a test that cannot run here (a tool, root, mount namespaces
# missing) are counted, never passed over in silence:
#   skip_block WHAT     print "SKIP: WHAT", count it (the test's last line
#                       says how many), and add "TEST: WHAT" to the file
#                       $GPUCC_SKIP_LOG names, when set (scripts/test counts
#                       those lines in its own last line)
#   have TOOL WHAT      true if TOOL is on PATH, else skip_block WHAT and false
#   as_root WHAT / not_root WHAT   true if (not) running as root, else the same
#   can_mount WHAT      true if root may mount in a new mount namespace
#                       (unshare -m), else the same
set -u
: "${GPUCC:?GPUCC must name the gpucc binary}"
: "${TESTDATA:?TESTDATA must name testdata/}"
: "${SRCROOT:?SRCROOT must name the source tree}"
TEST_DIR=$(mktemp -d "${TMPDIR:-/tmp}/gpucc-test.XXXXXX")
TEST_BIN=$(mktemp -d "${TMPDIR:-/tmp}/gpucc-test-bin.XXXXXX")
# remove_test_dirs: the EXIT trap's work; a test that sets its own trap
# calls it last.
remove_test_dirs() {
	[ "$SKIPPED_BLOCKS" = 0 ] ||
		echo "$TEST_NAME: $SKIPPED_BLOCKS part(s) skipped (the SKIP lines above)" >&2
	chmod -R u+w "$TEST_DIR" 2>/dev/null
	rm -rf "$TEST_DIR" "$TEST_BIN"
}
TEST_NAME=$(basename "$0" .sh)
SKIPPED_BLOCKS=0
trap remove_test_dirs EXIT
cd "$TEST_DIR" || exit 1
# python3 is the interpreter meson runs under ($PYTHON3, the build's), not
# the first on PATH: a version manager's shim there (pyenv's) costs ~0.4 s
# of CPU per run, and the tests run python3 a few thousand times.  A link
# on PATH, so that subshells, xargs and scripts find it too.
if [ -n "${PYTHON3:-}" ] && [ -x "$PYTHON3" ]; then
	ln -s "$PYTHON3" "$TEST_BIN/python3" && PATH=$TEST_BIN:$PATH
fi
export SOURCE_DATE_EPOCH=0
unset GPUCC_CACHE_DIR
case ${SANITIZE:-none} in
none) SANITIZE_CFLAGS="" ;;
*) SANITIZE_CFLAGS="-fsanitize=$SANITIZE" ;;
esac

no_leak_check() {
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$@"
}

# glibc's malloc as users have it (scripts/test gives it huge pages, which
# round what a process holds up to 2 MiB steps).
peak_rss_kib() {
	env -u GLIBC_TUNABLES python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@" || fail "'$*' failed"
}

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }

# One echo, one write: appends of tests running at once stay whole lines.
skip_block() {
	local what
	what=$(printf '%s' "$*" | tr '\n' ' ')
	echo "SKIP: $what" >&2
	SKIPPED_BLOCKS=$((SKIPPED_BLOCKS + 1))
	[ -z "${GPUCC_SKIP_LOG:-}" ] || echo "$TEST_NAME: $what" >>"$GPUCC_SKIP_LOG"
}
have() {
	command -v "$1" >/dev/null && return 0
	skip_block "$2 ($1 is not installed)"
	return 1
}
as_root() {
	[ "$(id -u)" = 0 ] && return 0
	skip_block "$1 (needs root)"
	return 1
}
not_root() {
	[ "$(id -u)" != 0 ] && return 0
	skip_block "$1 (not as root, whom permissions do not stop)"
	return 1
}
can_mount() {
	[ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null && return 0
	skip_block "$1 (needs root and mount namespaces)"
	return 1
}

# has_llvm N: whether gpucc has LLVM N's backend, found where it looks
# (gpucc --version lists each as "  LLVM N.x.y", adding why when not found).
has_llvm() { "$GPUCC" --version | grep -q "^  LLVM $1\.[0-9.]*\$"; }
# use_llvm N [WHY]: every compile of the test on LLVM N's backend (the
# GPUCC_BACKEND pin), for a test that checks what that LLVM writes; skip
# when the build has none.
use_llvm() {
	GPUCC_BACKEND=$BUILDDIR/lib/backend_llvm/libgpucc-llvm$1.so
	[ -f "$GPUCC_BACKEND" ] || skip "this build has no LLVM $1 backend${2:+ ($2)}"
	export GPUCC_BACKEND
}

expect_exit() {
	local want=$1; shift
	"$@" >out 2>err
	local got=$?
	if [ "$got" != "$want" ]; then
		echo "--- stdout:" >&2; head -c 2000 out >&2
		echo "--- stderr:" >&2; head -c 2000 err >&2
		fail "'$*' exited $got, expected $want"
	fi
}

assert_grep() {
	grep -q -e "$1" "$2" || { echo "--- $2:" >&2; head -c 2000 "$2" >&2; fail "'$1' not found in $2"; }
}
assert_no_grep() {
	! grep -q -e "$1" "$2" || { echo "--- $2:" >&2; head -c 2000 "$2" >&2; fail "'$1' unexpectedly found in $2"; }
}
assert_no_file() { [ ! -e "$1" ] || fail "'$1' should not exist"; }
assert_file() { [ -f "$1" ] || fail "'$1' should exist"; }
assert_same() { cmp -s "$1" "$2" || fail "'$1' and '$2' differ"; }
# A file whose mtime or ctime is within the file clock's granularity (a
# kernel tick: 1 to 10 ms) of clang's start may have changed while clang
# read it, so direct mode records nothing of that compile
# (lib/compile/compile_source_check.c).  A header written just before a compile that is
# fast enough falls inside that window; 50 ms is past any tick.
settle() { sleep 0.05; }

need_hip_sources() {
	command -v clang-19 >/dev/null || skip "clang-19 is not installed: sources need it"
	command -v ld.lld-19 >/dev/null || skip "ld.lld-19 is not installed (lld-19)"
	[ -f /usr/include/hip/hip_runtime.h ] || skip "HIP headers are not installed (libamdhip64-dev)"
	[ -f /usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ocml.bc ] ||
		skip "the ROCm device libraries are not installed (rocm-device-libs)"
	export TMPDIR=$TEST_DIR/tmp
	mkdir -p "$TMPDIR"
}

counting_clang() {
	cat >"$TEST_DIR/clang-counting" <<EOF
#!/bin/sh
case "\$1" in --version) ;; *) echo run >>"$TEST_DIR/clang-runs" ;; esac
exec clang-19 "\$@"
EOF
	chmod +x "$TEST_DIR/clang-counting"
	: >"$TEST_DIR/clang-runs"
}
runs() { wc -l <"$TEST_DIR/clang-runs"; }

assert_one_line() {
	[ "$(wc -l < "$1")" -eq 1 ] || { cat "$1" >&2; fail "$1 should hold exactly one line"; }
}

result_key() {
	python3 - "$@" <<'PY' || fail "$1: wrong result"
import json, sys
d = json.load(open(sys.argv[1]))
[r] = d["results"]
assert r["status"] == "compiled", r
assert [k["name"] for k in r["kernels"]] == sys.argv[2:], r
assert r["externals"] == [], r
print(r["key"])
PY
}
result_keys() {
	python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["results"]:
    if r["status"] in ("compiled", "hit") and r["target"].startswith(sys.argv[2]):
        print(r["key"], r["module"].rsplit("/", 1)[-1], ",".join(k["name"] for k in r["kernels"]))
PY
}

pack_variants() {
	python3 - "$TESTDATA/example" "$2" > "$1.json" <<'PY'
import json, sys
ex, n = sys.argv[1], int(sys.argv[2])
print(json.dumps({"entries": [
    {"module_file": ex + "/saxpy.nvptx.ll", "target": "sm_90", "kernels": ["saxpy"],
     "options": {"variant": str(i)}, "ptx": ex + "/saxpy.sm_90.ptx"} for i in range(n)]}))
PY
	expect_exit 0 "$GPUCC" pack -o "$1" "$1.json"
}
