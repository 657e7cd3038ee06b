# cmd/tests/compile_sources.sh -- `gpucc compile` from HIP, CUDA and OpenCL C
# sources: one run turns .hip, .cu and .cl files into one image for every
# target their languages serve, clang-19 run as a tool; a second run hits
# every key without running clang (a clang wrapper counts its runs); a
# change to nothing but one included header's contents is a miss, which
# --explain names, and putting it back hits again; the build tree moved to
# another directory still hits (relative and absolute paths alike) and
# writes the same image; a record leads to an entry key, not to IR (no IR
# is cached), and an entry evicted, another -O level or a changed device
# library is a miss; cache verify reports a damaged record, gc removes the
# records whose entries are gone, clear every one; -I, -isystem, -D, -U, -std=, -include and
# --clang-arg reach clang and its key; --link links sources per target; clang's error is one line naming
# source and target (exit 5), a missing clang one line (exit 6); a clang
# past --job-timeout fails its job; a run killed while clang runs leaves
# no clang and no temporary directory behind.
. "$SRCROOT/cmd/tests/lib.sh"

command -v clang-19 >/dev/null || skip "clang-19 is not installed: sources need it (scripts/setup installs it)"
command -v ld.lld-19 >/dev/null || skip "ld.lld-19 is not installed (lld-19)"
command -v python3 >/dev/null || skip "python3 reads --json output"
[ -f /usr/include/hip/hip_runtime.h ] || skip "HIP headers are not installed (libamdhip64-dev)"
[ -f /usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ocml.bc ] || skip "the ROCm device libraries are not installed (rocm-device-libs)"
CUDA=${CUDA_PATH:-/usr/local/cuda}
cuda=
[ -f "$CUDA/include/cuda_runtime.h" ] && cuda=1
[ -n "$cuda" ] || skip_block "the CUDA source (no CUDA toolkit in '$CUDA')"
libclc=
[ -f /usr/lib/clc/amdgcn--amdhsa.bc ] && libclc=1
[ -n "$libclc" ] || skip_block "the OpenCL C source (no libclc: libclc-19)"
export TMPDIR=$TEST_DIR/tmp
mkdir -p "$TMPDIR"

# clang-19 behind a wrapper that counts its compiles (lib.sh).
counting_clang

mkdir -p proj/src proj/include proj/build
cat >proj/include/scale.h <<'EOF'
#define SCALE 2.0f
EOF
cat >proj/src/local.h <<'EOF'
#define OFFSET 1.0f
EOF
cat >proj/src/saxpy.hip <<'EOF'
#include <hip/hip_runtime.h>
#include <scale.h>
#include "local.h"
extern "C" __global__ void saxpy(int n, float a, const float *x, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = SCALE * a * x[i] + y[i] + OFFSET + sinf(x[i]);
}
EOF
cat >proj/src/scale.cu <<'EOF'
#ifndef FACTOR
#error FACTOR must be defined (-D)
#endif
extern "C" __global__ void scale(int n, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = FACTOR * sqrtf(y[i]);
}
void launch(float *y) { scale<<<1, 1>>>(1, y); }
EOF
cat >proj/src/square.cl <<'EOF'
__kernel void square(__global float *x) { size_t i = get_global_id(0); x[i] = x[i] * x[i] + sin(x[i]); }
EOF

cd proj/build || fail "no build directory"
inputs="../src/saxpy.hip"
targets="-t gfx90a -t gfx1100"
want=2 # HIP: both AMD targets
if [ -n "$cuda" ]; then
	inputs="$inputs ../src/scale.cu"
	targets="$targets -t sm_90"
	want=$((want + 1))
fi
if [ -n "$libclc" ]; then
	inputs="$inputs ../src/square.cl"
	if [ -n "$cuda" ]; then want=$((want + 3)); else want=$((want + 2)); fi # OpenCL C: every target
fi
compile() { # EXIT ARGS...: the run every check repeats, in proj/build
	local code=$1; shift
	# shellcheck disable=SC2086
	expect_exit "$code" "$GPUCC" compile $inputs $targets --cache "$TEST_DIR/cache" \
		--clang "$TEST_DIR/clang-counting" -I ../include -DFACTOR=3.0f "$@"
}

# ---- one command: sources to a multi-target image -----------------------------
settle # the files above are older than clang's start: the run records them
compile 0 -o first.gpucc --json
python3 - "$want" <<'PY' || fail "the first run's results are not the sources' compiles (above)"
import json, sys
want = int(sys.argv[1])
r = json.load(open("out"))
assert r["jobs"] == want and r["compiled"] == want and r["failed"] == 0 and r["skipped"] == 0, r
for job in r["results"]:
    assert job["status"] == "compiled", job
    names = [k["name"] for k in job["kernels"]]
    want_kernel = {"hip": "saxpy", "cu": "scale", "cl": "square"}[job["module"].rsplit(".", 1)[1]]
    assert names == [want_kernel], (job["module"], job["target"], names)
PY
[ "$(runs)" -eq "$want" ] || fail "clang ran $(runs) times for $want (source, target) pairs"
"$GPUCC" list first.gpucc >list.txt
assert_grep "gfx90a" list.txt
assert_grep "gfx1100" list.txt
[ -z "$cuda" ] || assert_grep "sm_90" list.txt

# ---- hits run no clang --------------------------------------------------------
: >"$TEST_DIR/clang-runs"
compile 0 -o second.gpucc --json
python3 -c 'import json; r = json.load(open("out")); assert r["hits"] == r["jobs"] and not r["llvm_loaded"], r' ||
	fail "the second run did not hit every key without LLVM"
[ "$(runs)" -eq 0 ] || fail "a run whose every record hits ran clang $(runs) times"
assert_same first.gpucc second.gpucc
compile 0 --explain
assert_grep "source       hit: record" out
# Hits need no temporary directory (CUDA's stub header included): they work
# where none can be made; a miss there names the directory it could not make.
TMPDIR=$TEST_DIR/no-such-dir compile 0 -o third.gpucc
assert_same first.gpucc third.gpucc
TMPDIR=$TEST_DIR/no-such-dir compile 6 -o fourth.gpucc -DFACTOR=4.0f -DMISS
assert_grep "cannot make a temporary directory in '$TEST_DIR/no-such-dir'" err
[ ! -e fourth.gpucc ] || fail "a run that could compile nothing wrote its image"
[ "$(runs)" -eq 0 ] || fail "clang ran $(runs) times without a temporary directory"

# ---- a header changed anywhere is a miss, never a stale hit ---------------------
cp ../include/scale.h scale.h.orig
echo '#define SCALE 4.0f' >../include/scale.h # the same size, other contents
settle # recorded: the next check finds this record, with local.h changed
compile 0 --explain -o changed.gpucc
assert_grep "saxpy.hip gfx90a: miss" out
assert_grep "source       miss: '../include/scale.h' changed" out
[ "$(runs)" -eq 2 ] || fail "a changed header reran clang $(runs) times, expected 2 (the HIP source, two targets)"
cmp -s first.gpucc changed.gpucc && fail "a changed header left the image as it was"
[ -z "$cuda" ] || { grep -q "scale.cu sm_90:ptx85: hit" out || fail "the CUDA source, which does not include the header, missed"; }
# The quoted header beside the source, too.
echo '#define OFFSET 2.0f' >../src/local.h
compile 0 --explain
assert_grep "source       miss: '../src/local.h' changed" out
echo '#define OFFSET 1.0f' >../src/local.h
# Put back, the first record's IR hits again: no clang.
cp scale.h.orig ../include/scale.h
: >"$TEST_DIR/clang-runs"
compile 0 -o back.gpucc
[ "$(runs)" -eq 0 ] || fail "the header put back ran clang $(runs) times"
assert_same first.gpucc back.gpucc

# ---- a moved build tree hits, relative and absolute paths alike ----------------
cd "$TEST_DIR" && mv proj moved && cd moved/build || fail "cannot move the tree"
compile 0 -o moved.gpucc
[ "$(runs)" -eq 0 ] || fail "the moved tree ran clang $(runs) times"
assert_same first.gpucc moved.gpucc
# shellcheck disable=SC2086
expect_exit 0 "$GPUCC" compile "$PWD/../src/saxpy.hip" -t gfx90a --cache "$TEST_DIR/cache" \
	--clang "$TEST_DIR/clang-counting" -I "$PWD/../include" -DFACTOR=3.0f --explain
assert_grep "hit: record" out
cd "$TEST_DIR" && mv moved elsewhere && cd elsewhere/build || fail "cannot move the tree again"
expect_exit 0 "$GPUCC" compile "$PWD/../src/saxpy.hip" -t gfx90a --cache "$TEST_DIR/cache" \
	--clang "$TEST_DIR/clang-counting" -I "$PWD/../include" -DFACTOR=3.0f --explain
assert_grep "hit: record" out
[ "$(runs)" -eq 0 ] || fail "absolute paths in a moved tree ran clang $(runs) times"

# ---- records lead to keys: clang's IR is never cached ---------------------------
[ -z "$(find "$TEST_DIR/cache" -name '*.bc')" ] ||
	fail "IR is stored in the cache: $(find "$TEST_DIR/cache" -name '*.bc' | head -3)"
rec=$(find "$TEST_DIR/cache/v1/sources" -name '*.record' | head -1)
[ -n "$rec" ] || fail "no source record was written"
[ "$(head -1 "$rec")" = "gpucc-source-record 4" ] || fail "'$rec' is not a record of format 4"
# Nothing of a run's own temporary directory (the CUDA stubs, a run's
# alone): a record's text does not change from run to run.
grep -l 'gpucc-backend-' "$TEST_DIR"/cache/v1/sources/*/*.record &&
	fail "a record names a place in the run's temporary directory"
hip() { # EXIT ARGS...: the HIP source alone, for gfx90a
	local code=$1; shift
	expect_exit "$code" "$GPUCC" compile ../src/saxpy.hip -t gfx90a --cache "$TEST_DIR/cache" \
		--clang "$TEST_DIR/clang-counting" -I ../include "$@"
}
hip 0 --json -o hip.gpucc
key=$(python3 -c 'import json; print(json.load(open("out"))["results"][0]["key"])')
entry="$TEST_DIR/cache/v1/${key:0:2}/$key.gpucc"
assert_file "$entry"
# A record whose entry was evicted is a miss: clang runs, the image is the same.
rm "$entry"
: >"$TEST_DIR/clang-runs"
hip 0 --explain -o evicted.gpucc
assert_grep "source       miss: the record's entry ${key:0:16} is no longer cached" out
[ "$(runs)" -eq 1 ] || fail "a record whose entry was evicted ran clang $(runs) times, expected 1"
assert_same hip.gpucc evicted.gpucc
assert_file "$entry"
: >"$TEST_DIR/clang-runs"
hip 0 --explain
assert_grep "source       hit: record" out
[ "$(runs)" -eq 0 ] || fail "the entry compiled again did not hit through the record"
# What an entry's key names besides the IR names the record: another -O
# level, or a device library changed, finds no record, and never the old key.
hip 0 --explain -O3
assert_grep "source       miss: no record" out
[ "$(runs)" -eq 1 ] || fail "-O3 ran clang $(runs) times, expected 1"
cp -r /usr/lib/x86_64-linux-gnu/amdgcn/bitcode devlibs
cp devlibs/oclc_daz_opt_on.bc devlibs/oclc_daz_opt_off.bc # linked for sinf
: >"$TEST_DIR/clang-runs"
GPUCC_ROCM_DEVICE_LIBS=$PWD/devlibs hip 0 --json
python3 - "$key" <<'PY' || fail "a changed device library was not a miss of the record and the key (above)"
import json, sys
r = json.load(open("out"))["results"][0]
assert r["source"] == "miss: no record" and r["status"] == "compiled" and r["key"] != sys.argv[1], r
PY
[ "$(runs)" -eq 1 ] || fail "a changed device library ran clang $(runs) times, expected 1"
GPUCC_ROCM_DEVICE_LIBS=$PWD/devlibs hip 0 --explain
assert_grep "source       hit: record" out
hip 0 --json
python3 - "$key" <<'PY' || fail "the installed libraries did not hit their own record (above)"
import json, sys
r = json.load(open("out"))["results"][0]
assert r["source"].startswith("hit: record") and r["key"] == sys.argv[1], r
PY
[ "$(runs)" -eq 1 ] || fail "records of either library directory ran clang again"

# ---- every file of a record is checked on a hit, the last one too -------------
mkdir -p last && cd last || fail "no directory last"
printf '#define FIRST 1.0f\n' >first.h
printf '#define LAST 1.0f\n' >last.h
printf '#include <hip/hip_runtime.h>\n#include "first.h"\n#include "last.h"\nextern "C" __global__ void k(float *y) { y[0] = FIRST + LAST; }\n' >last.hip
last() { expect_exit 0 "$GPUCC" compile last.hip -t gfx90a --cache "$TEST_DIR/last-cache" \
	--clang "${last_clang:-$TEST_DIR/clang-counting}" "$@"; }
last_record() { find "$TEST_DIR/last-cache/v1/sources" -name '*.record' 2>/dev/null; }
settle
last -o last1.gpucc
# The check's premise: the record lists last.h last of its files (the
# places its include search found empty follow, as 64 zeros, and the
# directories above them, "dir ...").
[ "$(grep -v '^0\{64\} \|^dir ' "$(last_record)" | tail -1 | cut -d' ' -f2-)" = last.h ] ||
	fail "the record does not list last.h last: $(cat "$(last_record)")"
printf '#define LAST 2.0f\n' >last.h # the same size, other contents
: >"$TEST_DIR/clang-runs"
last --explain -o last2.gpucc
assert_grep "source       miss: 'last.h' changed" out
[ "$(runs)" -eq 1 ] || fail "a change to the record's last file ran clang $(runs) times, expected 1"
cmp -s last1.gpucc last2.gpucc && fail "a change to the record's last file left the image as it was"

# ---- a file that changes while clang runs leaves no record ------------------------
# (The IR may be of either version.)  A clang that rewrites last.h as it starts:
printf '#!/bin/sh\ncase "$1" in --version) ;; *) echo "#define LAST 3.0f" >"%s/last.h" ;; esac\nexec "%s/clang-counting" "$@"\n' \
	"$PWD" "$TEST_DIR" >"$TEST_DIR/clang-rewriting"
chmod +x "$TEST_DIR/clang-rewriting"
rm -rf "$TEST_DIR/last-cache"
: >"$TEST_DIR/clang-runs"
last_clang=$TEST_DIR/clang-rewriting last --explain
assert_grep "not recorded: 'last.h' changed while clang ran" out
[ "$(cat last.h)" = "#define LAST 3.0f" ] || fail "the rewriting clang did not rewrite last.h"
[ -z "$(last_record)" ] || fail "a compile during which last.h changed was recorded: $(last_record)"
last --explain
assert_grep "source       miss: no record" out
[ "$(runs)" -eq 2 ] || fail "after a compile that left no record, clang ran $(runs) times in all, expected 2"
cd .. || fail "cannot leave last"

# ---- gc, clear and verify manage the records -----------------------------------
records() { find "$TEST_DIR/cache/v1/sources" -type f | wc -l; }
expect_exit 0 "$GPUCC" cache verify --cache "$TEST_DIR/cache"
cp "$rec" rec.orig
echo "entry not-a-key 1" >>"$rec"
expect_exit 3 "$GPUCC" cache verify --cache "$TEST_DIR/cache"
assert_grep "source record '$rec' is damaged: a result does not start 'entry <key> <count>'" err
assert_file "$rec"
cp rec.orig "$rec"
expect_exit 0 "$GPUCC" cache verify --cache "$TEST_DIR/cache"
before=$(records)
expect_exit 0 "$GPUCC" cache gc --cache "$TEST_DIR/cache"
[ "$(records)" -eq "$before" ] || fail "gc removed records whose entries are cached ($before, now $(records))"
rm "$TEST_DIR"/cache/v1/??/*.gpucc
expect_exit 0 "$GPUCC" cache gc --cache "$TEST_DIR/cache"
[ "$(records)" -eq 0 ] || fail "gc left $(records) records whose entries are gone"
hip 0
[ "$(records)" -eq 1 ] || fail "a compile wrote $(records) records, expected 1"
expect_exit 0 "$GPUCC" cache clear --cache "$TEST_DIR/cache"
[ -z "$(ls -A "$TEST_DIR/cache/v1/sources")" ] || fail "clear left $(ls -A "$TEST_DIR/cache/v1/sources")"

# ---- flags reach clang and the key ----------------------------------------------
if [ -n "$cuda" ]; then
	expect_exit 5 "$GPUCC" compile ../src/scale.cu -t sm_90 --cache "$TEST_DIR/cache"
	# clang's own lines as it wrote them (editors parse file:line:col), then
	# the job's one line.
	assert_grep "^../src/scale.cu:2:2: error: FACTOR must be defined" err
	[ "$(grep -c '^gpucc compile: ' err)" -eq 1 ] || { cat err >&2; fail "expected one gpucc line"; }
	assert_grep "^gpucc compile: error: ../src/scale.cu: sm_90: clang-19: ../src/scale.cu:2:2: error: FACTOR must be defined" err
	tail -1 err | grep -q "^gpucc compile: error: " || fail "the job's line does not come last"
	expect_exit 0 "$GPUCC" compile ../src/scale.cu -t sm_90 --cache "$TEST_DIR/cache" -D FACTOR=5.0f --json
	k5=$(python3 -c 'import json; print(json.load(open("out"))["results"][0]["key"])')
	expect_exit 0 "$GPUCC" compile ../src/scale.cu -t sm_90 --cache "$TEST_DIR/cache" -DFACTOR=6.0f --json
	k6=$(python3 -c 'import json; print(json.load(open("out"))["results"][0]["key"])')
	[ "$k5" != "$k6" ] || fail "-D FACTOR=5.0f and -DFACTOR=6.0f gave one key"
	# -U comes after every -D.
	expect_exit 5 "$GPUCC" compile ../src/scale.cu -t sm_90 --no-cache -DFACTOR=5.0f -UFACTOR
	assert_grep "FACTOR must be defined" err
fi
mkdir -p sys pre
echo '#define SYS_OFFSET 0.5f' >sys/sys.h
echo '#define PRE 1' >pre/pre.h
cat >flags.hip <<'EOF'
#include <hip/hip_runtime.h>
#include <sys.h>
#if !defined(PRE) || __cplusplus < 202002L || !defined(FROM_CLANG_ARG)
#error flags did not reach clang
#endif
extern "C" __global__ void k(float *y) { y[0] = SYS_OFFSET; }
EOF
expect_exit 0 "$GPUCC" compile flags.hip -t gfx90a --no-cache -isystem sys -include pre/pre.h -std=c++20 \
	--clang-arg=-DFROM_CLANG_ARG
expect_exit 5 "$GPUCC" compile flags.hip -t gfx90a --no-cache -isystem sys -include pre/pre.h
assert_grep "flags did not reach clang" err
# -x names the language of a file of another name.
cp flags.hip flags.device
expect_exit 0 "$GPUCC" compile -x hip flags.device -t gfx90a --no-cache -isystem sys -include pre/pre.h \
	-std=c++20 --clang-arg=-DFROM_CLANG_ARG
expect_exit 5 "$GPUCC" compile flags.device -t gfx90a --no-cache # IR, by its name
expect_exit 129 "$GPUCC" compile -x fortran flags.device -t gfx90a --no-cache

# ---- --link: relocatable device code across sources, per target -------------------
printf '#include <hip/hip_runtime.h>\n__device__ float helper(float x) { return 2.0f * x + 1.0f; }\n' >helper.hip
printf '#include <hip/hip_runtime.h>\n__device__ float helper(float x);\nextern "C" __global__ void k(float *y) { y[0] = helper(y[0]); }\n' >user.hip
expect_exit 5 "$GPUCC" compile helper.hip user.hip -t gfx90a --no-cache
assert_grep "user.hip: gfx90a: unresolvable external call to 'helper(float)'" err
expect_exit 0 "$GPUCC" compile helper.hip user.hip -t gfx90a -t gfx1100 --link --no-cache --json
python3 -c '
import json
r = json.load(open("out"))
assert [(x["module"], x["target"], x["status"]) for x in r["results"]] == [
    ("helper.hip+user.hip", "gfx90a", "compiled"), ("helper.hip+user.hip", "gfx1100", "compiled")], r
assert [k["name"] for k in r["results"][0]["kernels"]] == ["k"], r' || fail "--link of two sources did not give one entry per target"
# Linked sources are not recorded (a linked entry needs every unit's IR):
# clang runs again, and the linked module's key hits.
linked() { expect_exit 0 "$GPUCC" compile helper.hip user.hip -t gfx90a --link --cache "$TEST_DIR/cache" \
	--clang "$TEST_DIR/clang-counting" "$@"; }
linked
: >"$TEST_DIR/clang-runs"
linked --explain
assert_grep "helper.hip+user.hip gfx90a: hit" out
[ "$(runs)" -eq 2 ] || fail "linked sources ran clang $(runs) times, expected 2"

# ---- failures: one line each, naming source and target -------------------------
printf 'extern "C" __global__ void broken(float *y) { y[0] = undeclared; }\n' >broken.hip
expect_exit 5 "$GPUCC" compile broken.hip -t gfx90a -t gfx1100 --no-cache
[ "$(grep -c '^gpucc compile: error: ' err)" -eq 2 ] || { cat err >&2; fail "expected one error line per target"; }
# clang's diagnostic, the same for both targets, is written once.
[ "$(grep -c "^broken.hip:1:54: error: use of undeclared identifier 'undeclared'" err)" -eq 1 ] ||
	{ cat err >&2; fail "clang's diagnostic is not written once, in its own form"; }
if grep -q " error generated" err; then fail "clang's count of errors was not left out"; fi
assert_grep "^gpucc compile: error: broken.hip: gfx90a: clang-19: broken.hip:1:.*error: use of undeclared identifier 'undeclared'" err
expect_exit 5 "$GPUCC" compile broken.hip -t sm_90 --no-cache
assert_grep "HIP sources compile for AMD targets (gfxNNN) only" err
expect_exit 6 "$GPUCC" compile flags.hip -t gfx90a --no-cache --clang "$TEST_DIR/no-such-clang"
assert_one_line err
assert_grep "clang '.*no-such-clang' is not an executable file" err
# A clang that hangs fails its job at --job-timeout, and leaves nothing.
cat >clang-hanging <<'EOF'
#!/bin/sh
case "$1" in --version) exec clang-19 --version ;; esac
echo $$ >hang.pid
exec sleep 300
EOF
chmod +x clang-hanging
expect_exit 5 "$GPUCC" compile flags.hip -t gfx90a --no-cache --clang "$PWD/clang-hanging" --job-timeout 1
assert_grep "clang-hanging ran past the job timeout (1 s)" err
kill -0 "$(cat hang.pid)" 2>/dev/null && fail "the hanging clang outlived its timeout"
[ -z "$(ls "$TMPDIR")" ] || fail "clang's temporary files are left in \$TMPDIR: $(ls "$TMPDIR")"
# Killed while clang runs (the record missed, so gpucc started watching for
# signals just before): clang goes with gpucc, and so do its files.
"$GPUCC" compile flags.hip -t gfx90a --cache hang-cache --clang "$PWD/clang-hanging" >/dev/null 2>&1 &
pid=$!
rm -f hang.pid
for _ in $(seq 300); do [ -s hang.pid ] && break; sleep 0.1; done
[ -s hang.pid ] || fail "the hanging clang never started"
kill -TERM "$pid"
wait "$pid"
[ $? -eq 143 ] || fail "gpucc did not die of SIGTERM"
for _ in $(seq 100); do kill -0 "$(cat hang.pid)" 2>/dev/null || break; sleep 0.1; done
kill -0 "$(cat hang.pid)" 2>/dev/null && fail "clang outlived the gpucc that ran it"
[ -z "$(ls "$TMPDIR")" ] || fail "a killed run left $(ls "$TMPDIR") in \$TMPDIR"
echo ok
