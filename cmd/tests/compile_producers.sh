# cmd/tests/compile_producers.sh -- `gpucc compile` takes the IR that real GPU
# packages emit: clang -x cuda (template kernels, extern __shared__,
# __constant__, __nvvm_reflect, launch bounds), clang -x hip (the
# amdhsa_code_object_version flag, printf through hostcalls, device
# libraries, extern __shared__) and AMDGPU.jl/Triton-style LDS and scoped
# atomics; as .ll text and as llvm-as-19 bitcode.  Kernels are found and
# named (linkonce ones too), dynamic shared memory (an external addrspace(3)
# array) stays `.extern .shared` / dynamic LDS and is no external, a module's
# own definition of a library function wins, code objects show their
# kernels in llvm-readelf-19 --notes.  CUDA.jl's IR and ptxas, which need
# the CUDA toolkit: compile_producers_cuda.sh.  compile_bad.sh has the producer
# IR gpucc refuses; compile_matches_llc.sh compares bytes with opt-19 |
# llc-19 (| ld.lld-19).
. "$SRCROOT/cmd/tests/lib.sh"

K=$TESTDATA/kernels
command -v python3 >/dev/null || fail "python3 is needed to read --json output"
command -v llvm-readelf-19 >/dev/null || fail "llvm-readelf-19 is missing (scripts/setup installs it)"
command -v llvm-as-19 >/dev/null || fail "llvm-as-19 is missing (scripts/setup installs it)"

# The digest of the one result's PART payload.
payload_digest() { # JSON PART
	python3 -c "import json,sys; [r] = json.load(open(sys.argv[1]))['results']; print([p['sha256'] for p in r['payloads'] if p['part'] == sys.argv[2]][0])" "$1" "$2"
}

# ---- clang -x cuda: template kernel, extern __shared__, __constant__ ---------------
expect_exit 0 "$GPUCC" compile --no-cache "$K/nvptx/cuda_clang.ll" -t sm_80 -o cuda.gpucc --json
cp out cuda.json
key=$(result_key cuda.json _Z6reduceIfEvPKT_PS0_i)
"$GPUCC" cat cuda.gpucc "$key" --part ptx > cuda.ptx
assert_grep "^\.extern \.shared \.align 4 \.b8 smem\[\];$" cuda.ptx
assert_grep "^\.weak \.entry _Z6reduceIfEvPKT_PS0_i($" cuda.ptx
# LLVM 19 writes the three dimensions; LLVM 22 leaves the 1s out.
assert_grep "^\.maxntid 1024\(, 1, 1\)\?$" cuda.ptx
assert_grep "^\.minnctapersm 2$" cuda.ptx
assert_grep "^\.visible \.const \.align 4 \.f32 scale" cuda.ptx
assert_grep "\.shared \.align 4 \.b8 _ZZ6reduceIfEvPKT_PS0_iE5warps\[128\];" cuda.ptx
assert_no_grep "__nvvm_reflect" cuda.ptx
# The same module as bitcode: another key, the same PTX.
llvm-as-19 "$K/nvptx/cuda_clang.ll" -o cuda_clang.bc || fail "llvm-as-19 failed"
expect_exit 0 "$GPUCC" compile --no-cache cuda_clang.bc -t sm_80 --json
[ "$(result_key out _Z6reduceIfEvPKT_PS0_i)" != "$key" ] || fail "bitcode and text have one key"
[ "$(payload_digest out ptx)" = "$(payload_digest cuda.json ptx)" ] || fail "bitcode gives other PTX than text"

# ---- AMDGPU.jl / Triton style: static and dynamic LDS, scoped atomics --------------
expect_exit 0 "$GPUCC" compile --no-cache "$K/amdgpu/lds_atomics.ll" -t gfx90a -o lds.gpucc --json
key=$(result_key out histogram)
"$GPUCC" cat lds.gpucc "$key" --part hsaco > lds.hsaco
llvm-readelf-19 --notes lds.hsaco > notes || fail "llvm-readelf rejects lds_atomics' code object"
assert_grep "^ *\.name: *histogram$" notes
assert_grep "^ *\.symbol: *histogram\.kd$" notes
# Static LDS only: the dynamic part is sized at launch.
assert_grep "^ *\.group_segment_fixed_size: 256$" notes
llvm-readelf-19 --dyn-syms lds.hsaco > syms
assert_no_grep "dynamic_lds" syms

# ---- clang -x hip: printf (hostcall), ocml, ockl, code object flag ------------------
expect_exit 0 "$GPUCC" compile --no-cache "$K/amdgpu/hip_clang.ll" -t gfx90a -o hip.gpucc --json
cp out hip.json
key=$(result_key hip.json _Z4expsPfj)
"$GPUCC" cat hip.gpucc "$key" --part hsaco > hip.hsaco
llvm-readelf-19 --notes hip.hsaco > notes || fail "llvm-readelf rejects hip_clang's code object"
assert_grep "^ *\.name: *_Z4expsPfj$" notes
assert_grep "\.value_kind: *hidden_hostcall_buffer$" notes
grep -A3 "amdhsa.version:" notes | grep -q -- "- 1$" || fail "hip_clang.ll: not code object v4"
llvm-as-19 "$K/amdgpu/hip_clang.ll" -o hip_clang.bc || fail "llvm-as-19 failed"
expect_exit 0 "$GPUCC" compile --no-cache hip_clang.bc -t gfx90a --json
result_key out _Z4expsPfj >/dev/null
[ "$(payload_digest out hsaco)" = "$(payload_digest hip.json hsaco)" ] || fail "bitcode gives another code object than text"
# clang 19's own default is code object v5: the module says so, and gpucc
# follows it; a --code-object that contradicts it is refused, naming the
# value the module asks for.
sed 's/"amdhsa_code_object_version", i32 400/"amdhsa_code_object_version", i32 500/' \
	"$K/amdgpu/hip_clang.ll" > hip_v5.ll
expect_exit 5 "$GPUCC" compile --no-cache hip_v5.ll -t gfx90a --code-object 4
assert_grep "hip_v5.ll: gfx90a: the module sets amdhsa_code_object_version 500, but code object v4 was asked for: code object v5 (or none asked for, which takes the module's) compiles it$" err
expect_exit 0 "$GPUCC" compile --no-cache hip_v5.ll -t gfx90a -o hip5.gpucc --json
key=$(result_key out _Z4expsPfj)
"$GPUCC" cat hip5.gpucc "$key" --part hsaco > hip5.hsaco
llvm-readelf-19 --notes hip5.hsaco | grep -A3 "amdhsa.version:" | grep -q -- "- 2$" || fail "hip_v5.ll: not code object v5"

# ---- a module that already defines a library function --------------------------------
expect_exit 0 "$GPUCC" compile --no-cache "$K/amdgpu/prelinked_ocml.ll" -t gfx90a -o pre.gpucc --json
key=$(result_key out wave)
"$GPUCC" cat pre.gpucc "$key" --part hsaco > pre.hsaco
if have llvm-objdump-19 "the disassembled code object"; then
	llvm-objdump-19 -d pre.hsaco > pre.s || fail "llvm-objdump-19 rejects prelinked_ocml's code object"
	assert_grep "40400000" pre.s
fi

# ---- kernels with linkonce linkage are entry points all the same -------------------
for level in 0 2; do
	expect_exit 0 "$GPUCC" compile --no-cache -O$level "$K/amdgpu/linkonce_kernels.ll" -t gfx90a -o once.gpucc --json
	key=$(result_key out _Z5clearPi fill_ones)
	"$GPUCC" cat once.gpucc "$key" --part hsaco > once.hsaco
	llvm-readelf-19 --notes once.hsaco > notes || fail "llvm-readelf rejects linkonce_kernels' code object"
	assert_grep "^ *\.symbol: *_Z5clearPi\.kd$" notes
	assert_grep "^ *\.symbol: *fill_ones\.kd$" notes
done
