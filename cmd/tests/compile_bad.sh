# cmd/tests/compile_bad.sh -- bad input to `gpucc compile`: each bad module
# (syntax error, wrong triple, no kernels, unresolvable external call (the
# CUDA driver's printf, malloc, free, assert for an AMD target too), empty
# file, not IR, IR the verifier refuses) gives a clear error naming module and target and exit 5, and
# leaves the cache and an existing image untouched; an unknown target is
# refused (exit 3) before anything compiles; a missing module is exit 2.
# A failure is one line; LLVM's detail comes with --verbose.  Functions
# marked for another processor ("target-cpu", NVPTX +sm_/+ptx features) and
# AMD code objects whose target ID is not the target's are errors.  Only the
# LLD of a job's LLVM (LLD 19 for LLVM 19, LLD 22 for LLVM 22) links its
# code object, and its version is in the key.
# A backend whose LLVM is not the one gpucc was built with is refused.
# A dry run exits as the real run would.  Full debug info (-g) for PTX
# before 7.5 is refused, with or without ptxas.
# A crash inside the backend (fault injection) fails its job alone and
# leaves a cache that verifies, with every other job's entry.  Names PTX cannot spell, NVPTX
# global constructors and allocas outside AMDGPU's stack, on which LLVM
# aborts, are refused.
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
		assert_one_line err
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
# The verifier's first line is the error, the whole of it diagnostics (as
# for parse errors), a line each, shown with --verbose: no escaped newlines
# in the error.
check_bad invalid_module.ll "invalid module: Instruction does not dominate all uses!$"
expect_exit 5 "$GPUCC" compile --verbose --no-cache "$K/bad/invalid_module.ll" -t gfx90a
assert_grep "^gpucc compile: error: .*invalid_module.ll: gfx90a: invalid module: " err
assert_grep "^[^ ]*invalid_module.ll: gfx90a:   %b = add i32 %a, 1$" err
# Each line of the error and the diagnostics reaches stderr in one write, so
# that the lines of compiles sharing it (make -j) stay whole: diagnostics
# went a byte at a time through the speller.
if have strace "compile's error and diagnostics reach stderr one line a write"; then
	no_leak_check strace -f -s 4096 -o write.trace -e trace=write \
		"$GPUCC" compile --verbose --no-cache "$K/bad/invalid_module.ll" -t gfx90a 2>/dev/null
	grep 'write(2, ' write.trace > stderr.writes
	[ "$(wc -l < stderr.writes)" -ge 3 ] || fail "compile wrote $(wc -l < stderr.writes) messages under strace"
	if grep -v '\\n", [0-9]*) *= [0-9]*$' stderr.writes; then
		fail "compile wrote its error or diagnostics in pieces"
	fi
fi
# Full debug info for PTX older than 7.5: refused with what to do, with or
# without ptxas; PTX 7.5, line tables only, or no -g compile.
dbg=$K/nvptx/debug_info.ll
for cubin in "" --no-cubin; do
	expect_exit 5 "$GPUCC" compile --cache c $cubin -g "$dbg" -t sm_80 -o image.gpucc
	assert_one_line err
	assert_grep "^gpucc compile: error: .*debug_info.ll: sm_80:ptx70: full debug info (-g) needs PTX ISA 7.5 or later, and the target asks for 7.0: .*(compile for sm_80:ptx75 or later, or give the module line tables only)$" err
	assert_same image.gpucc image.before
done
sed 's/emissionKind: FullDebug/emissionKind: LineTablesOnly/' "$dbg" > lines_only.ll
expect_exit 0 "$GPUCC" compile --no-cache -g lines_only.ll "$dbg" -t sm_80:ptx75
expect_exit 0 "$GPUCC" compile --no-cache -g lines_only.ll -t sm_80
expect_exit 0 "$GPUCC" compile --no-cache "$dbg" -t sm_80

# The CUDA driver's system calls are externals for NVIDIA targets only
# (compile_outputs.sh); the HIP loader resolves no calls.
expect_exit 5 "$GPUCC" compile --cache c "$K/driver_calls.ll" -t gfx90a -o image.gpucc
assert_grep "^gpucc compile: error: .*driver_calls.ll: gfx90a: unresolvable external calls to 'vprintf', 'malloc', 'free', '__assertfail'$" err
assert_same image.gpucc image.before

# A module whose functions are for another processor than every target of
# the run: LLVM would compile them for that one under the target's label.
# Refused before compiling, naming the target that fits.
expect_exit 5 "$GPUCC" compile --cache c "$K/bad/other_cpu.amdgpu.ll" -t gfx90a -o image.gpucc
assert_grep "^gpucc compile: error: .*other_cpu.amdgpu.ll: gfx90a: the module's functions are for \"target-cpu\" gfx1030, which no target of the run is: compile it for target gfx1030 too$" err
expect_exit 5 "$GPUCC" compile --cache c "$K/bad/other_cpu.nvptx.ll" -t sm_90 -o image.gpucc
assert_grep "other_cpu.nvptx.ll: sm_90:ptx78: the module's functions are for \"target-cpu\" sm_80, which no target of the run is: compile it for target sm_80 too$" err
expect_exit 0 "$GPUCC" compile --no-cache "$K/bad/other_cpu.nvptx.ll" -t sm_80
# A newer PTX ISA than a target that fixes one; sm_90 takes the module's.
expect_exit 5 "$GPUCC" compile --cache c "$K/bad/newer_ptx.nvptx.ll" -t sm_90:ptx78 -o image.gpucc
assert_grep "newer_ptx.nvptx.ll: sm_90:ptx78: the module's functions ask for PTX ISA 8.5 (+ptx85), above the target's: the target sm_90:ptx85 (or sm_90, which takes the module's) compiles it$" err
expect_exit 0 "$GPUCC" compile --no-cache --json "$K/bad/newer_ptx.nvptx.ll" -t sm_90
assert_grep '"target":"sm_90:ptx85"' out
# +xnack: under gfx90a (xnack open) the code object would say
# gfx90a:xnack+, under gfx90a:xnack- LLVM refuses it: both refused up front.
for t in gfx90a gfx90a:xnack-; do
	expect_exit 5 "$GPUCC" compile --cache c "$K/bad/xnack_on.amdgpu.ll" -t $t -o image.gpucc
	assert_one_line err
	assert_grep "xnack_on.amdgpu.ll: $t: the module's functions ask for xnack+, which the target $t does not fix so: the target gfx90a:xnack+ compiles it$" err
done
expect_exit 0 "$GPUCC" compile --no-cache "$K/bad/xnack_on.amdgpu.ll" -t gfx90a:xnack+
assert_same image.gpucc image.before
ls -R c/v1 > cache.after
assert_same cache.before cache.after

# A dry run that fails while planning exits as the real run would.
expect_exit 5 "$GPUCC" compile --no-cache "$TESTDATA/example/kernels/saxpy.nvptx.ll" -t gfx90a -n
assert_grep "does not fit target gfx90a" err
expect_exit 5 "$GPUCC" compile --no-cache "$TESTDATA/example/kernels/saxpy.nvptx.ll" -t gfx90a

# Only the LLD of the job's LLVM links its code object: another ld.lld on
# PATH is refused by name, and LLD's version is part of AMD keys.  gfx90a
# gets the newest backend, LLVM $m.
amd=$K/amdgpu/vector_add.ll
m=$("$GPUCC" --version | sed -n 's/^  LLVM \([0-9]*\)\..*/\1/p' | tail -1)
mkdir -p lld14 lld$m
if [ -x /usr/bin/ld.lld-14 ]; then
	ln -s /usr/bin/ld.lld-14 lld14/ld.lld
else
	printf '#!/bin/sh\necho "LLD 14.0.6 (compatible with GNU linkers)"\n' > lld14/ld.lld
	chmod +x lld14/ld.lld
fi
PATH=$PWD/lld14 expect_exit 6 "$GPUCC" compile --cache c "$amd" -t gfx90a -t sm_90 -o lld.gpucc
assert_grep "vector_add.ll: gfx90a: no LLD $m on PATH, .*: found '$PWD/lld14/ld.lld' (LLD 14\." err
assert_no_file lld.gpucc
PATH=$PWD/lld14 expect_exit 6 "$GPUCC" compile --cache c "$amd" -t gfx90a -n
PATH=/nonexistent expect_exit 6 "$GPUCC" compile --no-cache "$amd" -t gfx90a
assert_grep "ld.lld-$m was not found on PATH" err
expect_exit 0 "$GPUCC" compile --no-cache -n "$amd" -t gfx90a --explain
assert_grep "^ *ld.lld=$m\.[0-9.]*$" out
real_key=$(head -1 out)
real_lld=$(command -v ld.lld-$m)
printf '#!/bin/sh\n[ "$1" = --version ] && { echo "LLD %s.99.0 (compatible with GNU linkers)"; exit 0; }\nexec %s "$@"\n' "$m" "$real_lld" > lld$m/ld.lld-$m
chmod +x lld$m/ld.lld-$m
PATH=$PWD/lld$m:$PATH expect_exit 0 "$GPUCC" compile --cache lldc "$amd" -t gfx90a --explain
assert_grep "^ *ld.lld=$m\.99\.0$" out
[ "$(head -1 out)" != "$real_key" ] || fail "the ld.lld version does not change the key"
assert_grep "^ld.lld-version	.*	$m\.99\.0	$PWD/lld$m/ld.lld-$m$" lldc/compile-toolchain
# Each backend's jobs take their own LLVM's LLD, and only theirs: without
# LLD 22, LLVM 19's AMD jobs still compile, keyed with LLD 19.
if has_llvm 19 && has_llvm 22 && command -v ld.lld-19 >/dev/null; then
	mkdir -p only19 && ln -s "$(command -v ld.lld-19)" only19/ld.lld-19
	expect_exit 0 "$GPUCC" compile --no-cache -n "$amd" -t gfx90a --llvm 19 --explain
	assert_grep "^ *ld.lld=19\.[0-9.]*$" out
	PATH=$PWD/only19 expect_exit 0 "$GPUCC" compile --no-cache "$amd" -t gfx90a --llvm 19 -o only19.gpucc
	PATH=$PWD/only19 expect_exit 6 "$GPUCC" compile --no-cache "$amd" -t gfx90a --llvm 22
	assert_grep "vector_add.ll: gfx90a: ld.lld-22 was not found on PATH: LLD 22 links LLVM 22's AMDGPU code objects (install lld-22)$" err
	assert_one_line err
else
	skip_block "each backend's own LLD (needs LLVM 19 and 22 backends and ld.lld-19)"
fi

# A worker the dynamic loader cannot start (libLLVM missing: a script that
# says and exits what ld.so would): each job fails with its words.
mkdir -p noworker
: > noworker/libgpucc-llvm.so
printf '#!/bin/sh\necho "$0: error while loading shared libraries: libLLVM.so.19.1: cannot open shared object file: No such file or directory" >&2\nexit 127\n' \
	> noworker/gpucc-compile-worker
chmod +x noworker/gpucc-compile-worker
GPUCC_BACKEND=$PWD/noworker/libgpucc-llvm.so expect_exit 6 "$GPUCC" compile --cache nw "$K/nvptx/multi.ll" -t sm_90 -o nw.gpucc
assert_grep "multi.ll: sm_90:ptx78: the compile worker '$PWD/noworker/gpucc-compile-worker' cannot start: .*libLLVM.so.19.1: cannot open shared object file" err
assert_one_line err
assert_no_file nw.gpucc

# A worker that runs another LLVM than gpucc was built with (the test hook
# GPUCC_TEST_WORKER_LLVM makes it claim one): keys would name the wrong
# one, so nothing is compiled with it, and nothing is cached.
if [ "$TEST_HOOKS" = 1 ]; then
	GPUCC_TEST_WORKER_LLVM=19.0.0-stub expect_exit 6 "$GPUCC" compile --cache stubc "$K/nvptx/multi.ll" \
		"$K/nvptx/vector_add.ll" -t sm_90 -o stub.gpucc
	assert_grep "multi.ll: sm_90:ptx78: the LLVM backend runs LLVM 19.0.0-stub, but gpucc was built with LLVM $(\
		"$GPUCC" --version | sed -n 's/.*LLVM \([0-9.]*\).*/\1/p')" err
	assert_grep "vector_add.ll: sm_90:ptx78: the LLVM backend runs LLVM 19.0.0-stub" err
	assert_no_file stub.gpucc
	expect_exit 0 "$GPUCC" cache stats --cache stubc --json
	python3 -c 'import json, sys; d = json.load(open("out")); sys.exit(d["entries"] != 0)' ||
		fail "a worker running another LLVM cached something: $(cat out)"
fi

# A ptxas that gives no version fails the NVIDIA jobs, each named, as a
# missing LLD fails the AMD ones: the AMD jobs still compile and are
# cached, and --json still reports every job (the whole run failed, with
# one line naming neither module nor target, and no --json output).
mkdir -p badcuda/bin
printf '#!/bin/sh\necho broken\nexit 1\n' > badcuda/bin/ptxas
chmod +x badcuda/bin/ptxas
CUDA_PATH=$PWD/badcuda expect_exit 6 "$GPUCC" compile --cache bp "$good" "$amd" -t sm_90 -t gfx90a -o bp.gpucc --json
assert_grep "^gpucc compile: error: $good: sm_90:ptx78: '$PWD/badcuda/bin/ptxas --version' printed no version$" err
assert_one_line err
assert_no_file bp.gpucc
python3 -c "import json; d = json.load(open('out')); assert d['compiled'] == 1 and d['failed'] == 1 and d['skipped'] == 2, d" ||
	fail "a broken ptxas: expected the AMD job compiled, the NVIDIA one failed"
[ "$(find bp/v1 -name '*.gpucc' | wc -l)" -eq 1 ] || fail "a broken ptxas kept the AMD entry out of the cache"

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

# Producer IR that LLVM would answer by aborting the whole process, with
# every other job of the run: a kernel name PTX cannot spell (a Julia name
# not made PTX-safe), global constructors for NVPTX, an alloca outside
# AMDGPU's stack address space (a module without `target datalayout`).
# gpucc refuses the module, compiles the others and caches them.
expect_exit 5 "$GPUCC" compile --cache c2 -j1 "$K/bad/ptx_names.nvptx.ll" "$K/nvptx/vector_add.ll" -t sm_90 --json
assert_grep "^gpucc compile: error: .*bad/ptx_names.nvptx.ll: sm_90:ptx78: function 'julia_∇softmax!_12' has a name PTX cannot spell (PTX allows letters, digits, '_' and '\$', and no leading digit): rename it$" err
python3 -c "import json; d = json.load(open('out')); assert d['compiled'] == 1 and d['failed'] == 1, d" ||
	fail "ptx_names.nvptx.ll: the good module was not compiled"
for level in 0 2; do
	expect_exit 5 "$GPUCC" compile --cache c2 -j1 -O$level "$K/bad/global_ctor.nvptx.ll" "$K/nvptx/multi.ll" -t sm_90 --json
	assert_grep "^gpucc compile: error: .*bad/global_ctor.nvptx.ll: sm_90:ptx78: the module has global constructors (1), which PTX cannot run at load: initialise device variables with constants, or from a kernel$" err
	python3 -c "import json; d = json.load(open('out')); assert d['compiled'] == 1 and d['failed'] == 1, d" ||
		fail "global_ctor.nvptx.ll -O$level: the good module was not compiled"
	expect_exit 5 "$GPUCC" compile --cache c2 -j1 -O$level "$K/bad/no_layout_alloca.amdgpu.ll" "$K/amdgpu/vector_add.ll" -t gfx90a --json
	# LLVM 19 parses it, and gpucc refuses it; LLVM 22's parser does.
	assert_grep "^gpucc compile: error: .*bad/no_layout_alloca.amdgpu.ll: gfx90a: \(function 'scratch' allocates in address space 0, but the stack of gfx90a is address space 5: the module's data layout (none) is not the target's; write the target's \`target datalayout\`\|invalid module: alloca on amdgpu must be in addrspace(5)\)$" err
	python3 -c "import json; d = json.load(open('out')); assert d['compiled'] == 1 and d['failed'] == 1, d" ||
		fail "no_layout_alloca.amdgpu.ll -O$level: the good module was not compiled"
done
