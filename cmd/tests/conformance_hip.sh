# cmd/tests/conformance_hip.sh -- real HIP device code through gpucc, held
# against clang-19's own build: hand-written kernels, rocPRIM's block and
# warp templates and rocRAND's generators (testdata/conformance/hip/), for
# gfx90a, gfx942, gfx1030, gfx1100 and gfx1201, and the hand-written
# kernels for gfx1101 and gfx1200 too.
#
# Per (unit, processor), clang-19 -x hip --cuda-device-only makes
#   ir/UNIT.PROC.ir.bc  -O2 -Xclang -disable-llvm-passes -nogpulib: the front
#                       end's IR, before any optimisation or device library,
#                       the input equal to clang's build (conformance_lib.sh);
#   ir/UNIT.PROC.o2.bc  clang's plain -O2 -emit-llvm output, the ROCm device
#                       libraries linked in, as users most often have it;
#   ref/UNIT.PROC.hsaco clang's end-to-end build (-c --no-gpu-bundle-output,
#                       linked by its lld), the reference.
# clang's reference is built with -mcode-object-version=5: the version its
# IR asks for (module flag amdhsa_code_object_version = 500), with which its
# driver links oclc_abi_version_500, as gpucc does.  Left to itself,
# clang-19's driver picks the libraries for code object v4
# (oclc_abi_version_400) while its code generator writes v5, a mismatch
# gpucc does not copy (for this suite's sources both give the same kernel
# descriptors).  Debian has no oclc_isa_version file for gfx942, gfx11 or
# gfx12, so clang gets a library directory with those written in, as
# gpucc writes them.
#
# Then ONE `gpucc compile` of every module for all seven targets, default
# options (the code object version is the modules'), and every entry is
# held against clang's code object: target, code object version, kernel
# names, and each kernel descriptor (llvm-readelf-19 --notes).  rocPRIM's
# wave reductions use DPP row broadcasts on gfx11 and gfx12, which clang-19
# refuses ("broadcasts are not supported on GFX10+"): those pairs are listed
# as skipped, with clang's reason.
. "$SRCROOT/cmd/tests/lib.sh"
. "$SRCROOT/cmd/tests/conformance_lib.sh"

conf_init hip
conf_rocm_library_dir
conf_need_hip_headers

TARGETS="gfx90a gfx942 gfx1030 gfx1100 gfx1101 gfx1200 gfx1201"


# rocPRIM and rocRAND cost seconds of clang per pair: not for gfx1101 and
# gfx1200, of the families of gfx1100 and gfx1201 (kernels.hip covers them).
for proc in $TARGETS; do
	units="kernels rocprim_block rocrand_generators"
	case $proc in gfx1101 | gfx1200) units=kernels ;; esac
	for unit in $units; do
		conf_add "$unit" "$CONF/hip/$unit.hip" "$proc"
	done
done
conf_clang_all conf_hip_pair

dpp="broadcasts are not supported on GFX10\+"
conf_report_skips "rocprim_block gfx1100 $dpp" "rocprim_block gfx1201 $dpp"

# shellcheck disable=SC2086
conf_gpucc $TARGETS
conf_check
# The same sources given to gpucc itself (conf_sources), for the
# processors whose every unit is above.
CONF_SOURCE_TARGETS="gfx90a gfx942 gfx1030 gfx1100 gfx1201" conf_sources -std=c++17 --code-object 5
