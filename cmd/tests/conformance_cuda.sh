# cmd/tests/conformance_cuda.sh -- real CUDA device code through gpucc, held
# against clang-19's own build: hand-written kernels, CUB's block and warp
# templates, Thrust (thrust::complex, and the CUB kernels thrust::reduce
# instantiates) and cooperative groups, all from the CUDA toolkit's headers
# (testdata/conformance/cuda/), for sm_75, sm_80, sm_86, sm_89, sm_90 and
# sm_90a.  Skipped, saying so, without a CUDA toolkit ($CUDA_PATH, else
# /usr/local/cuda): it is not in Debian's archive.
#
# Per (unit, processor), clang-19 -x cuda --cuda-device-only makes
#   ir/UNIT.PROC.ir.bc  -O2 -Xclang -disable-llvm-passes -nocudalib: the front
#                       end's IR, before any optimisation or libdevice, the
#                       input equal to clang's build (conformance_lib.sh);
#   ir/UNIT.PROC.o2.bc  clang's plain -O2 -emit-llvm output, libdevice linked
#                       in, as users most often have it;
#   ref/UNIT.PROC.ptx   clang's end-to-end build (-S, libdevice linked), the
#                       reference.
# clang-19 does not know CUDA 13: -Wno-unknown-cuda-version; an empty
# texture_fetch_functions.h (CUDA 13 removed it, clang's wrapper includes
# it); -isystem <toolkit>/include/cccl for CUB and Thrust; and, with
# -nocudalib, -Xclang -target-sdk-version=12.5 (what the driver sets itself
# when it finds the toolkit), without which Thrust's <<<>>> launch finds no
# cudaConfigureCall.
#
# Then ONE `gpucc compile` of every module for all six targets, default
# options (the PTX ISA is the modules' +ptxNN), and every entry is held
# against clang's PTX: .version, .target and the .entry names; ptxas
# accepts gpucc's PTX for the processor; and the kernels' registers, shared
# and scratch bytes in gpucc's manifest equal what `ptxas -v` says of
# clang's PTX.
. "$SRCROOT/cmd/tests/lib.sh"
. "$SRCROOT/cmd/tests/conformance_lib.sh"

conf_init cuda
CUDA=${CUDA_PATH:-/usr/local/cuda}
[ -f "$CUDA/include/cuda_runtime.h" ] ||
	skip "no CUDA toolkit in '$CUDA' (set CUDA_PATH; it is not in Debian's archive): the CUDA conformance suite needs its headers"
[ -f "$CUDA/nvvm/libdevice/libdevice.10.bc" ] || skip "the CUDA toolkit in '$CUDA' has no libdevice"
[ -n "$PTXAS" ] || skip "the CUDA toolkit in '$CUDA' has no ptxas"
# CUB and Thrust: in include/cccl since CUDA 13, in include before.
CCCL=$CUDA/include/cccl
[ -f "$CCCL/cub/cub.cuh" ] || CCCL=$CUDA/include
[ -f "$CCCL/cub/cub.cuh" ] || skip "the CUDA toolkit in '$CUDA' has no CUB/Thrust headers"
mkdir -p stub
[ -f "$CUDA/include/texture_fetch_functions.h" ] || : > stub/texture_fetch_functions.h
export CUDA CCCL STUB=$PWD/stub

TARGETS="sm_75 sm_80 sm_86 sm_89 sm_90 sm_90a"

# cuda_pair NAME SOURCE PROC: the three builds of one pair (run by xargs).
cuda_pair() {
	local name=$1 src=$2 proc=$3 base=$1.$3
	local cuda=("$CONF_CLANG" -fno-crash-diagnostics -x cuda -std=c++17 --cuda-path="$CUDA" -Wno-unknown-cuda-version
	            -isystem "$STUB" -isystem "$CCCL" --cuda-gpu-arch="$proc" --cuda-device-only -O2)
	"${cuda[@]}" -Xclang -disable-llvm-passes -nocudalib -Xclang -target-sdk-version=12.5 \
		-emit-llvm -c "$src" -o "ir/$base.ir.bc" 2> "log/$base.ir" ||
		{ conf_skip "$name" "$proc" "log/$base.ir"; return 0; }
	"${cuda[@]}" -S "$src" -o "ref/$base.ptx" 2> "log/$base.ref" ||
		{ conf_skip "$name" "$proc" "log/$base.ref"; return 0; }
	"${cuda[@]}" -S "$src" -o "ref/$base.ptx" -### 2> "log/$base.driver" || return 1
	# shellcheck disable=SC2046
	"$CONF_CLANG" -fno-crash-diagnostics -x ir --target=nvptx64-nvidia-cuda -march="$proc" -nogpulib -O2 \
		$(conf_libraries_of "log/$base.driver") \
		-emit-llvm -c "ir/$base.ir.bc" -o "ir/$base.o2.bc" 2> "log/$base.o2" ||
		{ cat "log/$base.o2" >&2; echo "clang-19 -x ir failed on ir/$base.ir.bc" >&2; return 1; }
}

for proc in $TARGETS; do
	for unit in kernels cub_block thrust_device cooperative_groups; do
		conf_add "$unit" "$CONF/cuda/$unit.cu" "$proc"
	done
done
conf_clang_all cuda_pair
conf_report_skips

# shellcheck disable=SC2086
conf_gpucc $TARGETS
conf_check
# The same sources given to gpucc itself (conf_sources).
conf_sources -std=c++17
