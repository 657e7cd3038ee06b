# cmd/tests/compile_memory.sh -- a job past --job-memory: the worker's
# address space is bounded, LLVM runs out of it (a kernel of 60,000
# instructions in 128 MiB) and dies; the job fails with one line, exit 5,
# and nothing stays in $TMPDIR.  Not under a sanitizer, whose shadow memory
# needs more address space than any such bound leaves.
. "$SRCROOT/cmd/tests/lib.sh"

[ "${SANITIZE:-none}" = none ] ||
	skip "under $SANITIZE the worker's shadow memory needs more address space than a bound allows"
mkdir tmp
export TMPDIR=$PWD/tmp
python3 -c "
n = 60000
print('target triple = \"amdgcn-amd-amdhsa\"')
print('define amdgpu_kernel void @big(ptr addrspace(1) %p) {')
print('  %v0 = load i32, ptr addrspace(1) %p')
for i in range(1, n): print(f'  %v{i} = mul i32 %v{i-1}, {i * 7 + 3}')
print(f'  store i32 %v{n-1}, ptr addrspace(1) %p')
print('  ret void')
print('}')" >big.ll
expect_exit 5 "$GPUCC" compile --no-cache big.ll -t gfx90a --job-memory 128
assert_one_line err
assert_grep "^gpucc compile: error: big.ll: gfx90a: LLVM crashed (SIG[A-Z]*)" err
[ -z "$(ls tmp)" ] || fail "a job past its memory bound left $(ls tmp) in TMPDIR"
