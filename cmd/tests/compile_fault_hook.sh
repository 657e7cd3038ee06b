# cmd/tests/compile_fault_hook.sh -- a crash inside LLVM, injected at a
# chosen module by the backend's test hook (GPUCC_BACKEND_FAULT; built with
# meson -Dtest_hooks=true, as scripts/test builds), fails that job alone:
# one line naming module and target and the signal, exit 5; every other job
# compiles and is cached, the cache verifies, and no directory is left in
# $TMPDIR, the worker's included.  A worker that exits with a status of no
# meaning to its caller fails its job the same way.  (compile_crash.sh does
# the same with IR on which LLVM itself aborts.)
. "$SRCROOT/cmd/tests/lib.sh"

[ "$TEST_HOOKS" = 1 ] || skip "built without the test hooks (meson -Dtest_hooks=true)"
K=$TESTDATA/kernels
cp "$K/amdgpu/multi.ll" crash_here.ll
mkdir crash_tmp
TMPDIR=$PWD/crash_tmp GPUCC_BACKEND_FAULT=abort:crash_here expect_exit 5 "$GPUCC" compile --cache crash \
	-j1 crash_here.ll "$K/amdgpu/vector_add.ll" -t gfx90a -o crash.gpucc
assert_one_line err
assert_grep "^gpucc compile: error: crash_here.ll: gfx90a: LLVM crashed (SIGABRT)" err
[ -z "$(ls crash_tmp)" ] || fail "a crashed worker left $(ls crash_tmp) in TMPDIR"
for entry in $(find crash/v1 -name '*.gpucc'); do
	"$GPUCC" verify "$entry" >/dev/null || fail "cache entry $entry does not verify after a crash"
done
[ "$(find crash/v1 -name '*.gpucc' | wc -l)" -eq 1 ] || fail "the job after the crash was not compiled and cached"
expect_exit 0 "$GPUCC" compile --cache crash -j1 "$K/amdgpu/vector_add.ll" crash_here.ll -t gfx90a --json
python3 -c "import json; d = json.load(open('out')); assert d['hits'] == 1 and d['compiled'] == 1, d" ||
	fail "after the crash: expected one hit and one compile"

# A worker that exits with a status the worker protocol does not define
# (3) mid-job fails that job, exit 5, naming the status; the others compile.
cp "$K/amdgpu/vector_add.ll" exit_here.ll
GPUCC_BACKEND_FAULT=exit:exit_here expect_exit 5 "$GPUCC" compile --cache exited -j1 \
	exit_here.ll "$K/amdgpu/multi.ll" -t gfx90a -o exited.gpucc --keep-going
assert_grep "^gpucc compile: error: exit_here.ll: gfx90a: the compile worker ended (exit 3)$" err
[ "$(grep -c '^gpucc compile: error: ' err)" -eq 1 ] || { cat err >&2; fail "expected one error line"; }
expect_exit 0 "$GPUCC" list exited.gpucc
assert_grep "squares" out
assert_no_grep "vector_add" out
[ "$(find exited/v1 -name '*.gpucc' | wc -l)" -eq 1 ] || fail "the job after the worker's exit was not cached alone"

# A crash inside libnvJitLink (injected within the stretch the backend
# marks as its) is named for it, not for LLVM.
cuda=${CUDA_PATH:-/usr/local/cuda}
if ls "$cuda"/lib64/libnvJitLink.so* >/dev/null 2>&1; then
	cp "$K/nvptx/vector_add.ll" jit_crash.ll
	GPUCC_BACKEND_FAULT=nvjitlink:jit_crash expect_exit 5 "$GPUCC" compile --no-cache -j1 \
		--cubin-with nvjitlink jit_crash.ll -t sm_90
	assert_one_line err
	assert_grep "^gpucc compile: error: jit_crash.ll: sm_90:ptx78: libnvJitLink crashed (SIGABRT)$" err
else
	skip_block "a crash in libnvJitLink (no libnvJitLink in $cuda/lib64)"
fi
