# cmd/tests/conformance_llvm22.sh -- the conformance suites' HIP, CUDA and
# OpenCL C units (testdata/conformance/) for the processors only LLVM 22
# knows: sm_100, sm_103, sm_120, sm_121, gfx950, gfx1151, gfx1201 and
# gfx1250, the IR made by clang-22, compiled by gpucc's LLVM 22 backend with
# default options, and held against clang-22's own end-to-end build as
# conformance_lib.sh holds LLVM 19's against clang-19's (CONF_LLVM=22):
# kernel names and AMD kernel descriptors equal clang-22's, ptxas accepts
# the PTX and its resource counts equal ptxas's of clang-22's PTX.  Every
# pair of the three languages goes into ONE `gpucc compile`.
#
# What clang-22 needs here, beside what the LLVM 19 suites give clang-19:
#   HIP      -D__AMDGCN_WAVEFRONT_SIZE=64 (32 on the wave32 gfx11 and gfx12
#            processors): clang 20 removed the macro HIP 5.2's headers read.
#            Its build links hip.bc itself (-Xclang -mlink-builtin-bitcode):
#            clang-22's driver links only ROCm 6's libraries, and HIP 5.2's
#            __syncthreads calls __atomic_work_item_fence, which only hip.bc
#            defines.  Code object v6, clang-22's default; its driver links
#            oclc_abi_version_600, written into the library directory
#            (conf_rocm_library_dir), gpucc oclc_abi_version_500.
#   CUDA     as clang-19 (CUDA 13 is newer than clang-22 knows too).
#   OpenCL C -mcode-object-version=5 for AMD, in the IR and the reference:
#            libclc-19's AMD library (Debian's libclc-22 conflicts with
#            libclc-19) is code object v5 and links into no v6 module
#            ("linking module flags 'amdhsa_code_object_version': IDs have
#            conflicting values"), as gpucc's own OpenCL C compiles assume.
#
# Which pairs: to keep the suite's time (docs/testing.md), the small units
# (HIP and CUDA kernels, cooperative groups, OpenCL C kernels) run for every
# processor of their vendor; the header-heavy CUDA units, CUB (cub_block)
# and Thrust (thrust_device), for one processor each of the two families
# (sm_100 and sm_120: sm_103 and sm_121 are the same code generator with a
# newer PTX ISA); rocPRIM and rocRAND for every AMD processor, since clang-22
# refuses them in the front end (HIP 5.2's amd_hip_fp16.h calls
# __llvm_amdgcn_rcp_f16, a builtin clang 20 removed), which costs little
# and is listed as skipped with that reason.
#
# gpucc's own compile of sources (gpucc runs clang-22) at code object v6,
# clang-22's default: the HIP unit clang-22 builds (kernels.hip) for every
# AMD processor, in one `gpucc compile --code-object 6`; each entry is v6
# (ELF ABI version 4, option code-object 6) with the kernels, registers,
# shared and scratch bytes of the IR's entry (clang-22's own v6 IR, held
# against clang-22's build above), and a second run hits every key through
# the direct-mode records, without clang or LLVM.  Only that unit: the
# rest of conf_sources (every unit and language, as the LLVM 19 suites run
# it) would add minutes of clang-22 to the suite, for sources whose other
# languages --code-object does not change (CUDA) or that libclc-19's v5
# library cannot link into a v6 module (OpenCL C).
# Skipped, saying why, without LLVM 22's backend, clang-22, or a CUDA
# toolkit (the NVIDIA pairs only).
CONF_LLVM=22
. "$SRCROOT/cmd/tests/lib.sh"
. "$SRCROOT/cmd/tests/conformance_lib.sh"

conf_init llvm22
conf_rocm_library_dir
conf_need_hip_headers
CLC=${GPUCC_LIBCLC_DIR:-/usr/lib/clc}
[ -f "$CLC/amdgcn--amdhsa.bc" ] && [ -f "$CLC/nvptx64--nvidiacl.bc" ] ||
	skip "no libclc in '$CLC' (libclc-19; scripts/setup installs it)"

AMD="gfx950 gfx1151 gfx1201 gfx1250"
NVIDIA="sm_100 sm_103 sm_120 sm_121"
CUDA=${CUDA_PATH:-/usr/local/cuda}
CCCL=$CUDA/include/cccl
[ -f "$CCCL/cub/cub.cuh" ] || CCCL=$CUDA/include
if [ -f "$CUDA/include/cuda_runtime.h" ] && [ -f "$CCCL/cub/cub.cuh" ] && [ -n "$PTXAS" ]; then
	TARGETS="$AMD $NVIDIA"
else
	skip_block "the NVIDIA pairs: no CUDA toolkit with headers, CUB and ptxas in '$CUDA' (set CUDA_PATH; it is not in Debian's archive)"
	TARGETS=$AMD
fi
mkdir -p stub
[ -f "$CUDA/include/texture_fetch_functions.h" ] || : > stub/texture_fetch_functions.h
export CLC CUDA CCCL STUB=$PWD/stub

# Each pair is named LANGUAGE-UNIT: the units of two languages share names.




# llvm22_pair NAME SOURCE PROC: the language's pair function (run by xargs).
llvm22_pair() {
	case $1 in
	hip-*) conf_hip_pair "$@" ;;
	cuda-*) conf_cuda_pair "$@" ;;
	*) conf_opencl_pair "$@" ;;
	esac
}
export -f conf_hip_pair conf_cuda_pair conf_opencl_pair

for proc in $TARGETS; do
	case $proc in
	gfx*)
		for unit in kernels rocprim_block rocrand_generators; do
			conf_add "hip-$unit" "$CONF/hip/$unit.hip" "$proc"
		done ;;
	*)
		units="kernels cooperative_groups"
		case $proc in sm_100 | sm_120) units="$units cub_block thrust_device" ;; esac
		for unit in $units; do
			conf_add "cuda-$unit" "$CONF/cuda/$unit.cu" "$proc"
		done ;;
	esac
	conf_add opencl-kernels "$CONF/opencl/kernels.cl" "$proc"
done
conf_clang_all llvm22_pair

fp16="undeclared identifier '__llvm_amdgcn_rcp_f16'"
expected=()
for proc in $AMD; do
	expected+=("hip-rocprim_block $proc $fp16" "hip-rocrand_generators $proc $fp16")
done
# libclc-19's barrier waits with s_waitcnt, which gfx1250 does not have.
expected+=("opencl-kernels gfx1250 Cannot select: intrinsic %llvm\.amdgcn\.s\.waitcnt")
conf_report_skips "${expected[@]}"

# shellcheck disable=SC2086
conf_gpucc $TARGETS
conf_check

# llvm22_sources_v6: kernels.hip for every AMD processor from the source, at
# code object v6, held against the IR's entries (above).
llvm22_sources_v6() {
	local t0=$SECONDS args=() proc
	for proc in $AMD; do args+=(-t "$proc"); done
	local run=("$GPUCC" compile --cache v6-cache -j "$CONF_JOBS" --json --code-object 6
	           "$CONF/hip/kernels.hip" "${args[@]}")
	"${run[@]}" -o v6.gpucc > v6.json 2> v6.err ||
		{ cat v6.err >&2; fail "gpucc compile --code-object 6 of kernels.hip failed"; }
	echo "gpucc compile --code-object 6: kernels.hip x $(echo "$AMD" | wc -w) targets (clang-22 included) in $((SECONDS - t0)) s"
	expect_exit 0 "${run[@]}"
	python3 -c 'import json, sys
r = json.load(open("out"))
sys.exit(0 if r["hits"] == r["jobs"] and not r["llvm_loaded"] else 1)' ||
		fail "the second compile of kernels.hip at v6 did not hit every key without LLVM"
	GPUCC="$GPUCC" python3 - <<'PY' || fail "gpucc's v6 build of kernels.hip differs from its build of clang-22's IR"
import json, os, subprocess, sys

gpucc = os.environ["GPUCC"]
def run(*args):
    return subprocess.run([gpucc, *args], capture_output=True, check=True).stdout

def kernels(entry):
    return {k["name"]: (k.get("registers"), k.get("shared_bytes"), k.get("scratch_bytes"))
            for k in entry["kernels"]}

ir = {}
for e in json.load(open("list.json")):
    unit, proc, variant, _ = e["module"].rsplit(".", 3)
    if unit == "hip-kernels" and variant == "ir":
        ir[proc] = e
problems = []
results = json.load(open("v6.json"))["results"]
for r in results:
    proc = r["target"].split(":", 1)[0]
    if r["status"] != "compiled":
        problems.append(f"{proc}: {r['status']}: {r.get('error')}")
        continue
    got = json.loads(run("show", "--json", "v6.gpucc", r["key"]))
    if got["options"].get("code-object") != "6":
        problems.append(f"{proc}: option code-object {got['options'].get('code-object')}, not 6")
    if not got["llvm_version"].startswith("22."):
        problems.append(f"{proc}: made by LLVM {got['llvm_version']}")
    hsaco = run("cat", "v6.gpucc", r["key"], "--part", "hsaco")
    if hsaco[:4] != b"\x7fELF" or hsaco[8] != 4:
        problems.append(f"{proc}: the code object's ELF ABI version is {hsaco[8]}, not 4 (v6)")
    want = ir.get(proc)
    if want is None:
        problems.append(f"{proc}: compiled from the source, but its IR was not")
        continue
    want_entry = json.loads(run("show", "--json", "conformance.gpucc", want["key"]))
    if kernels(got) != kernels(want_entry):
        problems.append(f"{proc}: the source's kernels {kernels(got)}, the IR's {kernels(want_entry)}")
if len(results) != len(ir):
    problems.append(f"{len(results)} results from the source, {len(ir)} IR entries")
for p in problems:
    print("MISMATCH: " + p, file=sys.stderr)
print(f"sources at v6: {len(results) - len(problems)} entries of kernels.hip hold the IR's "
      "kernels and resources")
sys.exit(1 if problems else 0)
PY
}
llvm22_sources_v6
