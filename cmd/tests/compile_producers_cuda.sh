# cmd/tests/compile_producers_cuda.sh -- `gpucc compile` takes the IR of
# CUDA.jl's GPUCompiler.jl (kernels in !nvvm.annotations only, the older
# data layout, '#' in local names, CuDynamicSharedArray's @shmem, libdevice)
# and ptxas accepts what it makes of it and of clang -x cuda's IR, with
# the cubin's resources in the summary.  Needs the CUDA toolkit (libdevice,
# ptxas): skipped, whole, without it.  compile_producers.sh has the rest.
. "$SRCROOT/cmd/tests/lib.sh"

K=$TESTDATA/kernels
command -v python3 >/dev/null || fail "python3 is needed to read --json output"
LIBDEVICE=${CUDA_PATH:-/usr/local/cuda}/nvvm/libdevice/libdevice.10.bc
PTXAS=${CUDA_PATH:-/usr/local/cuda}/bin/ptxas
[ -x "$PTXAS" ] || PTXAS=$(command -v ptxas || true)
[ -f "$LIBDEVICE" ] && [ -n "$PTXAS" ] && [ -x "$PTXAS" ] || skip "no CUDA toolkit (libdevice, ptxas) here"

# clang -x cuda's kernel, as compile_producers.sh compiles it.
expect_exit 0 "$GPUCC" compile --no-cache "$K/nvptx/cuda_clang.ll" -t sm_80 -o cuda.gpucc --json
cp out cuda.json
key=$(result_key cuda.json _Z6reduceIfEvPKT_PS0_i)
"$GPUCC" cat cuda.gpucc "$key" --part ptx > cuda.ptx

# ---- CUDA.jl (GPUCompiler.jl): annotations, @shmem, libdevice ---------------------
julia_kernels="_Z6smooth13CuDeviceArrayI7Float32Li1ELi1EES0_ _Z4fill13CuDeviceArrayI7Float32Li1ELi1EE _Z5clear13CuDeviceArrayI7Float32Li1ELi1EE"
for level in 0 2; do
	expect_exit 0 "$GPUCC" compile --no-cache -O$level "$K/nvptx/julia_cuda.ll" -t sm_80 -o julia$level.gpucc --json
	key=$(result_key out $julia_kernels)
	"$GPUCC" cat julia$level.gpucc "$key" --part ptx > julia$level.ptx
	assert_grep "^\.extern \.shared \.align 32 \.b8 shmem\[\];$" julia$level.ptx
	assert_grep "^\.reqntid 256\(, 1, 1\)\?$" julia$level.ptx # LLVM 22 leaves the 1s out
	# Kept by llvm.used, though nothing calls it.
	assert_grep "^\.visible \.func  (\.param \.b32 func_retval0) julia_probe_77()$" julia$level.ptx
	assert_no_grep "call.*__nv_" julia$level.ptx
	# The linkonce_odr kernel is kept, as weak.
	assert_grep "^\.weak \.entry _Z5clear13CuDeviceArrayI7Float32Li1ELi1EE($" julia$level.ptx
done
# Without inlining, LLVM renames the local "julia_#scale#1_1234" for PTX.
assert_grep "^\.func  (\.param \.b32 func_retval0) julia__\$_scale_\$_1_1234($" julia0.ptx

# ---- ptxas accepts all of it ----------------------------------------------------------
for ptx in cuda.ptx julia0.ptx julia2.ptx; do
	"$PTXAS" -arch=sm_80 "$ptx" -o k.cubin 2> ptxas.err || { cat ptxas.err >&2; fail "ptxas rejects $ptx"; }
done
# gpucc ran ptxas too: the cubin exists, and its shared memory is the static
# part only (dynamic shared memory is sized at launch).
python3 - cuda.json <<'PY' || fail "cuda_clang.ll: wrong cubin or resources"
import json, sys
[r] = json.load(open(sys.argv[1]))["results"]
assert "cubin" in [p["part"] for p in r["payloads"]], r
assert [k["shared_bytes"] for k in r["kernels"]] == [128], r
PY
