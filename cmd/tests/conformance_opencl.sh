# cmd/tests/conformance_opencl.sh -- OpenCL C through gpucc with libclc,
# held against clang-19's own build: kernels calling libclc's builtins
# (work-item functions, math, barriers, atomics; testdata/conformance/opencl/)
# for every target of the suite, both vendors in one run: gfx90a, gfx942,
# gfx1030, gfx1100, gfx1101, gfx1200, gfx1201, and, when clang-19 finds a
# CUDA toolkit ($CUDA_PATH, else /usr/local/cuda), sm_75, sm_80, sm_86,
# sm_89, sm_90 and sm_90a.  Without one clang-19 writes PTX ISA 4.2, which
# no NVIDIA target of the suite takes: those targets are skipped, saying so.
#
# clang-19 has no option that links libclc; its build links libclc-19's
# library the way gpucc does: -Xclang -mlink-builtin-bitcode with
# amdgcn--amdhsa.bc or nvptx64--nvidiacl.bc, and -nogpulib (for AMD, clang
# would otherwise link the ROCm OpenCL libraries instead).  Per (unit,
# processor), clang-19 -x cl -cl-std=CL1.2 makes
#   ir/UNIT.PROC.ir.bc  -O2 -Xclang -disable-llvm-passes, no library: the
#                       front end's IR, the input equal to clang's build
#                       (conformance_lib.sh);
#   ir/UNIT.PROC.o2.bc  clang's -O2 -emit-llvm output with libclc linked in;
#   ref/UNIT.PROC.hsaco clang's end-to-end build, linked by its lld;
#   ref/UNIT.PROC.ptx   or clang's PTX (-S).
# Then ONE `gpucc compile` of every module for every target, default
# options, and every entry is held against clang's: for AMD the kernel
# descriptors (llvm-readelf-19 --notes), for NVIDIA the PTX's .entry names,
# .version and .target, ptxas's acceptance and its resource counts.
. "$SRCROOT/cmd/tests/lib.sh"
. "$SRCROOT/cmd/tests/conformance_lib.sh"

conf_init opencl
CLC=${GPUCC_LIBCLC_DIR:-/usr/lib/clc}
[ -f "$CLC/amdgcn--amdhsa.bc" ] && [ -f "$CLC/nvptx64--nvidiacl.bc" ] ||
	skip "no libclc in '$CLC' (libclc-19; scripts/setup installs it)"
CUDA=${CUDA_PATH:-/usr/local/cuda}
export CLC CUDA

TARGETS="gfx90a gfx942 gfx1030 gfx1100 gfx1101 gfx1200 gfx1201"
if [ -f "$CUDA/include/cuda_runtime.h" ]; then
	TARGETS="$TARGETS sm_75 sm_80 sm_86 sm_89 sm_90 sm_90a"
	[ -n "$PTXAS" ] || skip_block "ptxas checks (no ptxas in the CUDA toolkit at '$CUDA')"
else
	skip_block "the NVIDIA targets: clang-19 finds no CUDA toolkit in '$CUDA' (set CUDA_PATH), so its OpenCL IR asks for PTX ISA 4.2, which sm_75 and later lack"
fi


for proc in $TARGETS; do
	for unit in kernels; do
		conf_add "$unit" "$CONF/opencl/$unit.cl" "$proc"
	done
done
conf_clang_all conf_opencl_pair
conf_report_skips

# shellcheck disable=SC2086
conf_gpucc $TARGETS
conf_check
# The same sources given to gpucc itself (conf_sources).
conf_sources
