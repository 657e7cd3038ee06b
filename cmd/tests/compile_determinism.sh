# cmd/tests/compile_determinism.sh -- results do not depend on the number of
# threads or on the cache: -j1 and -j2 give byte-identical images, a warm run
# (every key cached) gives the same image as the cold run and never loads
# LLVM (it succeeds with the backend made unfindable), options change keys,
# --explain prints every key component, --dry-run compiles nothing, and
# device library digests are remembered in the cache directory.  A hit is
# written under the module name of the run that hits, as a compile would
# write it.  A library function named only in a comment links nothing.
. "$SRCROOT/cmd/tests/lib.sh"

K=$TESTDATA/kernels
MODULES="$K/nvptx/vector_add.ll $K/nvptx/multi.ll $K/nvptx/math.ll $K/amdgpu/vector_add.ll $K/amdgpu/multi.ll $K/amdgpu/math.ll"
T="-t sm_90 -t gfx90a"

expect_exit 0 "$GPUCC" compile --no-cache -j1 $T $MODULES -o j1.gpucc
expect_exit 0 "$GPUCC" compile --no-cache -j2 $T $MODULES -o j2.gpucc
assert_same j1.gpucc j2.gpucc

# Cold, then warm through a cache.
expect_exit 0 "$GPUCC" compile --cache c -j2 $T $MODULES -o cold.gpucc --json
python3 -c "import json; d = json.load(open('out')); assert d['compiled'] == 6 and d['hits'] == 0 and d['llvm_loaded'], d" ||
	fail "cold run summary is wrong"
assert_same j1.gpucc cold.gpucc
assert_file c/compile-toolchain
assert_grep "^sha256	.*libdevice.10.bc$" c/compile-toolchain
assert_grep "^sha256	.*ocml.bc$" c/compile-toolchain
GPUCC_BACKEND=/nonexistent/libgpucc-llvm.so expect_exit 0 "$GPUCC" compile --cache c $T $MODULES -o warm.gpucc --json
python3 -c "import json; d = json.load(open('out')); assert d['hits'] == 6 and d['compiled'] == 0 and not d['llvm_loaded'], d" ||
	fail "warm run summary is wrong"
assert_same cold.gpucc warm.gpucc
if have strace "a warm run that hits loads no LLVM"; then
	no_leak_check strace -f -e trace=openat -o trace "$GPUCC" compile --cache c $T $MODULES >/dev/null 2>&1 ||
		fail "warm run under strace failed"
	assert_no_grep "libLLVM" trace
	assert_no_grep "libgpucc-llvm" trace
fi

# A miss with the backend unfindable: a clear error, exit 6, nothing written.
GPUCC_BACKEND=/nonexistent/libgpucc-llvm.so expect_exit 6 "$GPUCC" compile --cache c -O3 $T "$K/nvptx/vector_add.ll" -o none.gpucc
assert_grep "vector_add.ll: sm_90:ptx78: GPUCC_BACKEND names '/nonexistent/libgpucc-llvm.so'" err
assert_no_file none.gpucc

# Options are part of the key; threads and paths are not.
key_of() { python3 -c "import json; print(json.load(open('out'))['results'][0]['key'])"; }
expect_exit 0 "$GPUCC" compile --no-cache -n "$K/nvptx/vector_add.ll" -t sm_90 --json; base=$(key_of)
cp "$K/nvptx/vector_add.ll" elsewhere.ll
expect_exit 0 "$GPUCC" compile --no-cache -n elsewhere.ll -t sm_90 -j1 --json; [ "$(key_of)" = "$base" ] || fail "path or -j changed the key"
for flag in -O3 --fast-math --ftz -g "-t sm_90:ptx80"; do
	expect_exit 0 "$GPUCC" compile --no-cache -n "$K/nvptx/vector_add.ll" -t sm_90 $flag --json
	k=$(python3 -c "import json; print(json.load(open('out'))['results'][-1]['key'])")
	[ "$k" != "$base" ] || fail "$flag does not change the key"
done
expect_exit 0 "$GPUCC" compile --no-cache -n "$K/amdgpu/vector_add.ll" -t gfx90a --json; amd=$(key_of)
expect_exit 0 "$GPUCC" compile --no-cache -n "$K/amdgpu/vector_add.ll" -t gfx90a --code-object 5 --json
[ "$(key_of)" != "$amd" ] || fail "--code-object does not change the key"

# --explain: every component, and hit or miss.
expect_exit 0 "$GPUCC" compile --cache c --explain -n "$K/nvptx/math.ll" "$K/nvptx/multi.ll" -t sm_90 -O1
assert_grep "math.ll sm_90:ptx78: miss [0-9a-f]\{64\}$" out
for c in schema gpucc llvm device-libs target options module; do
	assert_grep "^  $c " out
done
assert_grep "libdevice.10.bc [0-9a-f]\{64\}" out
assert_grep "opt-level=1" out
expect_exit 0 "$GPUCC" compile --cache c --explain -n "$K/nvptx/math.ll" -t sm_90
assert_grep "math.ll sm_90:ptx78: hit " out

# A hit writes what a compile would: the module name is this run's, not
# that of the run that filled the cache.
cp "$TESTDATA/example/kernels/saxpy.nvptx.ll" foo.ll
cp foo.ll bar.ll
expect_exit 0 "$GPUCC" compile --cache names foo.ll -t sm_90 -t gfx90a
expect_exit 0 "$GPUCC" compile --cache names bar.ll -t sm_90 -o warm-bar.gpucc --json
python3 -c "import json; d = json.load(open('out')); assert d['hits'] == 1, d" || fail "bar.ll did not hit"
expect_exit 0 "$GPUCC" compile --no-cache bar.ll -t sm_90 -o cold-bar.gpucc
assert_same warm-bar.gpucc cold-bar.gpucc
"$GPUCC" list --json warm-bar.gpucc > list.json
python3 -c "import json; assert [e['module'] for e in json.load(open('list.json'))] == ['bar.ll']" ||
	fail "the hit kept the module name of the run that filled the cache"

# A library function named in a comment (or in a string) is not a call: no
# library is linked or keyed.  A reference (@__ocml_...) still is.
{ echo "; avoids @__ocml_exp_f32 and __nv_expf on purpose"; cat "$K/amdgpu/vector_add.ll"; } > mention.ll
expect_exit 0 "$GPUCC" compile --no-cache -n --explain mention.ll -t gfx90a -t sm_90
assert_grep "^  device-libs  (none)$" out
assert_no_grep "ocml.bc\|libdevice" out
expect_exit 0 "$GPUCC" compile --no-cache -n --explain "$K/amdgpu/math.ll" -t gfx90a
assert_grep "ocml.bc [0-9a-f]\{64\}" out

# Bitcode input: the triple is read without LLVM, so mixed runs skip it too.
if have llvm-as-19 "bitcode input in mixed runs"; then
	llvm-as-19 "$K/amdgpu/vector_add.ll" -o va.bc
	expect_exit 0 "$GPUCC" compile --no-cache va.bc $T --json
	python3 -c "import json; d = json.load(open('out')); assert d['compiled'] == 1 and d['skipped'] == 1, d" ||
		fail "bitcode triple not recognised"
fi

# A module's PTX does not depend on what the process compiled before it
# (NVPTX numbers call sites from one process-wide counter; gpucc renumbers).
expect_exit 0 "$GPUCC" compile --no-cache -j1 "$K/nvptx/large.ll" "$K/nvptx/multi.ll" -t sm_90 -o after.gpucc
expect_exit 0 "$GPUCC" compile --no-cache -j1 "$K/nvptx/multi.ll" -t sm_90 -o alone.gpucc --json
key=$(python3 -c "import json; print(json.load(open('out'))['results'][0]['key'])")
"$GPUCC" cat after.gpucc "$key" --part ptx > after.ptx
"$GPUCC" cat alone.gpucc "$key" --part ptx > alone.ptx
assert_same after.ptx alone.ptx
