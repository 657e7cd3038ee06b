# cmd/tests/compile_crash.sh -- nothing a module holds ends gpucc by a
# signal: valid IR on which LLVM 19 aborts or faults (testdata/kernels/crash:
# intrinsics of a newer generation, exotic types) fails its
# own job with one line ("LLVM crashed (SIGABRT): LLVM ERROR: ..."), exit 5,
# while every other job of the run compiles and is cached, and no
# directory is left in $TMPDIR.  A job past --job-timeout fails the same way
# (--job-memory: compile_memory.sh), a tool dies with compile's SIGTERM, and
# a tool whose --version hangs is given up on, killed.  Then modules from
# llvm-stress-19, made kernels for both vendors: every run ends with 0 or 5,
# never by a signal.
. "$SRCROOT/cmd/tests/lib.sh"

C=$TESTDATA/kernels/crash
good_nv=$TESTDATA/kernels/nvptx/vector_add.ll
good_amd=$TESTDATA/kernels/amdgpu/vector_add.ll
mkdir tmp
export TMPDIR=$PWD/tmp

# crash MODULE TARGET... : the module fails on every target, with one line
# each; the good modules compiled in the same run are cached.
crash() {
	module=$1; shift
	args="" goods=""
	for t in "$@"; do
		args="$args -t $t"
		case $t in
		sm_*) goods="$goods $good_nv" ;;
		gfx*) goods="$goods $good_amd" ;;
		esac
	done
	rm -rf cache
	# shellcheck disable=SC2086
	expect_exit 5 "$GPUCC" compile --cache cache --no-cubin --json --llvm 19 "$C/$module" $goods $args
	python3 - out "$module" "$@" <<'PY' || fail "$module: $(cat err)"
import json, sys
d = json.load(open(sys.argv[1]))
module, targets = sys.argv[2], sys.argv[3:]
failed = [r for r in d["results"] if r["status"] == "failed"]
assert sorted(r["target"].split(":")[0] for r in failed) == sorted(targets), failed
for r in failed:
    assert r["module"].endswith(module), r
    assert "LLVM crashed (SIG" in r["error"], r["error"]
ok = [r for r in d["results"] if "vector_add" in r["module"] and r["status"] == "compiled"]
assert len(ok) == len(targets), d["results"]   # each good module, for its vendor's targets
PY
	[ "$(wc -l <err)" -eq "$#" ] || fail "$module: expected $# lines on stderr, got $(cat err)"
	grep -v "^gpucc compile: error: .*$module: [^ ]*: LLVM crashed (SIG[A-Z]*)" err &&
		fail "$module: a line that is not a one-line crash report"
	[ "$(find cache/v1 -name '*.gpucc' | wc -l)" -eq "$#" ] ||
		fail "$module: the other jobs' entries were not all cached"
	[ -z "$(ls tmp)" ] || fail "$module: left $(ls tmp) in TMPDIR"
}

# These are LLVM 19's crashes (a newer LLVM may compile some): pinned to
# its backend, when this gpucc has one.
if has_llvm 19; then
	crash cp_async.ll sm_75
	crash mfma.ll gfx1030 gfx803
	crash fp128_arg.ll sm_90
	crash frem128.ll gfx90a
	crash wmma.ll sm_60
	crash sdot4.ll gfx803
	crash fp128_sin.ll sm_90
else
	skip_block "LLVM 19's known crashes (no LLVM 19 backend)"
fi
# What the older generation cannot do, the newer one compiles.
expect_exit 0 "$GPUCC" compile --no-cache --no-cubin "$C/mfma.ll" -t gfx90a
expect_exit 0 "$GPUCC" compile --no-cache --no-cubin "$C/cp_async.ll" -t sm_80

# A job that runs past --job-timeout: a stand-in ld.lld-N (N the major of
# the backend gfx90a gets, the newest) that never returns.  The job fails,
# and the tool dies with its worker.
expect_exit 129 "$GPUCC" compile --no-cache "$good_amd" -t gfx90a --job-timeout x
m=$("$GPUCC" --version | sed -n 's/^  LLVM \([0-9]*\)\..*/\1/p' | tail -1)
cat >stall.sh <<'EOF'
#!/bin/sh
# An ld.lld that never returns: the job must be stopped by its time limit.
[ "$1" = --version ] && exec REAL_LLD --version
exec sleep 3600
EOF
mkdir bin && cp stall.sh bin/ld.lld-$m && chmod +x bin/ld.lld-$m
command -v ld.lld-$m >/dev/null || skip "ld.lld-$m is not installed"
real_lld=$(command -v ld.lld-$m)
sed -i "s|exec REAL_LLD --version|exec $real_lld --version|" bin/ld.lld-$m
start=$(date +%s)
PATH=$PWD/bin:$PATH expect_exit 5 "$GPUCC" compile --no-cache "$good_amd" -t gfx90a --job-timeout 2
[ $(($(date +%s) - start)) -lt 60 ] || fail "--job-timeout 2 did not stop the job"
assert_one_line err
assert_grep "vector_add.ll: gfx90a: LLVM ran past the job time limit (2 s): stopped" err
pgrep -f "sleep 3600" >/dev/null && fail "the stalled tool outlived its job"
[ -z "$(ls tmp)" ] || fail "a stopped job left $(ls tmp) in TMPDIR"

# A job past --job-memory: compile_memory.sh.

# SIGTERM to compile while a tool runs: the tool dies with it (the worker's
# process group is killed when its caller dies), and nothing stays in TMPDIR.
sed -i 's/exec sleep 3600/exec sleep 3602/' bin/ld.lld-$m
PATH=$PWD/bin:$PATH "$GPUCC" compile --no-cache "$good_amd" -t gfx90a >/dev/null 2>&1 &
gpucc_pid=$!
for _ in $(seq 1 300); do pgrep -f "sleep 3602" >/dev/null && break; sleep 0.1; done
pgrep -f "sleep 3602" >/dev/null || fail "the stand-in ld.lld never started"
kill -TERM $gpucc_pid
wait $gpucc_pid
for _ in $(seq 1 100); do pgrep -f "sleep 3602" >/dev/null || break; sleep 0.1; done
pgrep -f "sleep 3602" >/dev/null && fail "ld.lld outlived compile's SIGTERM"
[ -z "$(ls tmp)" ] || fail "compile's SIGTERM left $(ls tmp) in TMPDIR"

# A ptxas whose --version never answers: NVIDIA jobs fail (a tool that
# cannot be keyed, exit 6) after the bounded wait, the tool killed.
mkdir -p hung/bin
printf '#!/bin/sh\nexec sleep 3601\n' >hung/bin/ptxas
chmod +x hung/bin/ptxas
start=$(date +%s)
CUDA_PATH=$PWD/hung expect_exit 6 "$GPUCC" compile --no-cache "$good_nv" -t sm_90
[ $(($(date +%s) - start)) -lt 60 ] || fail "a hung 'ptxas --version' was waited for too long"
assert_one_line err
assert_grep "ptxas --version' did not answer in 10 s" err
pgrep -f "sleep 3601" >/dev/null && fail "the hung ptxas outlived the run"

# ---- llvm-stress: random valid IR, as kernels of both vendors -----------------------
command -v llvm-stress-19 >/dev/null || skip "llvm-stress-19 is not installed (llvm-19)"
for seed in $(seq 1 24); do
	llvm-stress-19 -seed="$seed" -size=$((40 + seed * 10)) -o "s$seed.ll" || fail "llvm-stress-19 -seed=$seed"
	{ echo 'target triple = "nvptx64-nvidia-cuda"'; sed 's/^define void @autogen/define ptx_kernel void @autogen/' "s$seed.ll"; } >"nv$seed.ll"
	{ echo 'target triple = "amdgcn-amd-amdhsa"'; sed 's/^define void @autogen/define amdgpu_kernel void @autogen/' "s$seed.ll"; } >"amd$seed.ll"
done
for vendor in nv amd; do
	targets="-t sm_75 -t sm_90"
	[ $vendor = amd ] && targets="-t gfx803 -t gfx90a -t gfx1100"
	# shellcheck disable=SC2086
	"$GPUCC" compile --no-cache --no-cubin $vendor*.ll $targets >out 2>err
	rc=$?
	[ $rc -eq 0 ] || [ $rc -eq 5 ] || fail "llvm-stress modules ($vendor): exit $rc: $(head -5 err)"
	grep -v "^gpucc compile: " err && fail "llvm-stress modules ($vendor): a line without the prefix"
done
[ -z "$(ls tmp)" ] || fail "llvm-stress runs left $(ls tmp) in TMPDIR"
exit 0
