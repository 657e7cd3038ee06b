# cmd/tests/compile_memory.sh -- a job past --job-memory: the worker's
# address space is bounded, LLVM runs out of it (a kernel of 60,000
# instructions in 128 MiB) and dies; the job fails with one line, exit 5,
# and nothing stays in $TMPDIR.  With glibc's malloc on huge pages, which
# takes address space 2 MiB at a time, the worker may run out before LLVM
# runs, receiving the job: the same failure, which says so.  Not under a
# sanitizer, whose shadow memory needs more address space than any such
# bound leaves.
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
# glibc's malloc as users have it first (scripts/test gives it huge pages).
expect_exit 5 env -u GLIBC_TUNABLES "$GPUCC" compile --no-cache big.ll -t gfx90a --job-memory 128
assert_one_line err
assert_grep "^gpucc compile: error: big.ll: gfx90a: LLVM crashed (SIG[A-Z]*)" err
[ -z "$(ls tmp)" ] || fail "a job past its memory bound left $(ls tmp) in TMPDIR"
GLIBC_TUNABLES=glibc.malloc.hugetlb=1 \
	expect_exit 5 "$GPUCC" compile --no-cache big.ll -t gfx90a --job-memory 128
assert_one_line err
assert_grep "^gpucc compile: error: big.ll: gfx90a: \(LLVM crashed (SIG[A-Z]*)\|the compile worker ran out of memory: cannot hold a job of 2[0-9]\{6\} bytes$\)" err
[ -z "$(ls tmp)" ] || fail "a job past its memory bound left $(ls tmp) in TMPDIR"
