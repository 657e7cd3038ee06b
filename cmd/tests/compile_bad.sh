# cmd/tests/compile_bad.sh -- bad input to `gpucc compile`: each bad module
# (syntax error, wrong triple, no kernels, unresolvable external call, empty
# file, not IR) gives a clear error naming module and target and exit 5, and
# leaves the cache and an existing image untouched; an unknown target is
# refused (exit 3) before anything compiles; a missing module is exit 2.
# A crash inside the backend (fault injection) leaves a cache that verifies,
# with what was compiled before the crash.
. "$SRCROOT/cmd/tests/lib.sh"

K=$TESTDATA/kernels
good=$K/nvptx/vector_add.ll

# An existing image and a cache holding one entry: both must survive.
expect_exit 0 "$GPUCC" compile --cache c "$good" -t sm_90 -o image.gpucc
cp image.gpucc image.before
ls -R c/v1 > cache.before

check_bad() { # MODULE PATTERN
	for t in sm_90 gfx90a; do
		expect_exit 5 "$GPUCC" compile --cache c "$K/bad/$1" -t $t -o image.gpucc
		assert_grep "^gpucc compile: error: .*bad/$1: $t[^ ]*: $2" err
		assert_same image.gpucc image.before
		ls -R c/v1 > cache.after
		assert_same cache.before cache.after
	done
}
check_bad syntax_error.ll "not valid LLVM IR: .*syntax_error.ll:6:3: error: expected value token"
check_bad wrong_triple.ll "module triple 'x86_64-unknown-linux-gnu' does not fit target"
check_bad no_kernels.ll "no kernels"
check_bad unresolved_call.ll "unresolvable external call to 'not_defined_anywhere'"
check_bad empty.ll "empty file"
check_bad not_ir.ll "not valid LLVM IR"

# A bad module among good ones: the good ones are cached, no image is written.
expect_exit 5 "$GPUCC" compile --cache c "$K/nvptx/multi.ll" "$K/bad/no_kernels.ll" -t sm_90 -o mixed.gpucc --json
assert_no_file mixed.gpucc
python3 -c "import json; d = json.load(open('out')); assert d['compiled'] == 1 and d['failed'] == 1 and d['output'] is None, d" ||
	fail "mixed run summary is wrong"

# Unknown targets: refused before anything is read or compiled.
expect_exit 3 "$GPUCC" compile --cache c "$good" -t sm_90 -t sm_99 -o image.gpucc
assert_grep "unknown target 'sm_99'" err
expect_exit 3 "$GPUCC" compile --cache c "$good" -t gfx90a:xnack+:bogus
expect_exit 3 "$GPUCC" compile --cache c "$good" -t gfx1030:xnack+
assert_same image.gpucc image.before
expect_exit 2 "$GPUCC" compile --cache c does-not-exist.ll -t sm_90
assert_grep "does-not-exist.ll" err
expect_exit 129 "$GPUCC" compile --cache c "$good"
expect_exit 129 "$GPUCC" compile --cache c "$good" -t sm_90 -O7

# A crash inside LLVM: the process dies, the cache stays valid and keeps
# what was compiled before the crash.
cp "$K/amdgpu/multi.ll" crash_here.ll
GPUCC_BACKEND_FAULT=abort:crash_here "$GPUCC" compile --cache crash -j1 "$K/amdgpu/vector_add.ll" crash_here.ll -t gfx90a >out 2>err
[ $? -ge 128 ] || fail "fault injection did not abort"
for entry in $(find crash/v1 -name '*.gpucc'); do
	"$GPUCC" verify "$entry" >/dev/null || fail "cache entry $entry does not verify after a crash"
done
[ "$(find crash/v1 -name '*.gpucc' | wc -l)" -eq 1 ] || fail "the entry compiled before the crash is not cached"
expect_exit 0 "$GPUCC" compile --cache crash -j1 "$K/amdgpu/vector_add.ll" crash_here.ll -t gfx90a --json
python3 -c "import json; d = json.load(open('out')); assert d['hits'] == 1 and d['compiled'] == 1, d" ||
	fail "after the crash: expected one hit and one compile"
