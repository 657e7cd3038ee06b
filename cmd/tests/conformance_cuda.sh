# cmd/tests/conformance_cuda.sh -- real CUDA device code through gpucc, held
# against clang-19's own build: hand-written kernels, CUB's block and warp
# templates, Thrust (thrust::complex, and the CUB kernels thrust::reduce
# instantiates) and cooperative groups, all from the CUDA toolkit's headers
# (testdata/conformance/cuda/), for sm_75, sm_80, sm_90 and sm_90a, and the
# hand-written kernels for sm_86 and sm_89 too.  Skipped, saying so,
# without a CUDA toolkit ($CUDA_PATH, else /usr/local/cuda): it is not in
# Debian's archive.
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
# clang's PTX.  Then gpucc compiles the sources themselves, for sm_75 and
# sm_90a (conf_sources).
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


# CUB, Thrust and cooperative groups cost seconds of clang per pair: not
# for sm_86 and sm_89, which are sm_80's code generator with another
# .target (kernels.cu covers them).
for proc in $TARGETS; do
	units="kernels cub_block thrust_device cooperative_groups"
	case $proc in sm_86 | sm_89) units=kernels ;; esac
	for unit in $units; do
		conf_add "$unit" "$CONF/cuda/$unit.cu" "$proc"
	done
done
conf_clang_all conf_cuda_pair
conf_report_skips

# shellcheck disable=SC2086
conf_gpucc $TARGETS
conf_check
# The same sources given to gpucc itself (conf_sources), for the oldest
# processor and the arch-specific one: CUB's, Thrust's and cooperative
# groups' headers cost seconds of clang per pair, and what differs between
# processors is their name on clang's command line (the IR's compile above
# covers the others; compile_sources_pch builds kernels.cu's source for
# sm_80 and sm_90 too).
CONF_SOURCE_TARGETS="sm_75 sm_90a" conf_sources -std=c++17
