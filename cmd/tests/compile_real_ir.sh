# cmd/tests/compile_real_ir.sh -- `gpucc compile` on the IR clang-19 makes
# from HIP, CUDA and OpenCL C sources (made here, by clang, from small
# sources): default options compile it; wave64 on gfx10+ gives wave64 code
# (the device library's ISA agrees with the code object's metadata); an
# option that contradicts the module is refused up front naming the one
# that works; hip.bc serves __syncthreads; gfx11, gfx12 and gfx942 get their
# ISA version; a module for another processor is skipped, so one run
# builds a multi-architecture image; --link links relocatable device code;
# a processor the ptxas present lacks gives PTX and one warning; clang -O0
# output draws a warning; a failure is one line, LLVM's detail only with
# --verbose.
. "$SRCROOT/cmd/tests/lib.sh"

command -v clang-19 >/dev/null || skip "clang-19 is not installed"
command -v llvm-objdump-19 >/dev/null || skip "llvm-objdump-19 is not installed (llvm-19)"
command -v llvm-readelf-19 >/dev/null || skip "llvm-readelf-19 is not installed (llvm-19)"
[ -f /usr/include/hip/hip_runtime.h ] || skip "HIP headers are not installed (libamdhip64-dev)"
ROCM_BC=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode
[ -f "$ROCM_BC/ocml.bc" ] || skip "the ROCm device libraries are not installed (rocm-device-libs)"
export GPUCC_CACHE_DIR=$PWD/cache

hip_ir() { # SOURCE ARCH OUT [CLANG-ARGS...]
	src=$1 arch=$2 out=$3; shift 3
	clang-19 -x hip --offload-arch="$arch" --cuda-device-only -nogpulib -D__HIP_PLATFORM_AMD__ \
		-emit-llvm -c -O2 "$@" "$src" -o "$out" || fail "clang-19 could not compile $src for $arch"
}
# hsaco IMAGE TARGET: the code object of IMAGE's entry for TARGET, as file TARGET.hsaco.
hsaco() {
	key=$("$GPUCC" list --json "$1" | python3 -c '
import json, sys
for e in json.load(sys.stdin):
    if e["target"] == sys.argv[1]:
        print(e["key"])' "$2")
	[ -n "$key" ] || fail "no entry for $2 in $1"
	"$GPUCC" cat "$1" "$key" --part hsaco >"$2.hsaco" || fail "no code object for $2"
}

# ---- wave64 on gfx10: the device library follows the module ------------------------
cat >lanes.hip <<'EOF'
extern "C" __attribute__((device)) unsigned __ockl_activelane_u32(void);
extern "C" __attribute__((device)) unsigned long __ockl_get_local_id(unsigned);
extern "C" __attribute__((global)) void lanes(unsigned *out) {
  out[__ockl_get_local_id(0)] = __ockl_activelane_u32();
}
EOF
hip_ir lanes.hip gfx1030 lanes64.bc -nogpuinc -mwavefrontsize64
hip_ir lanes.hip gfx1030 lanes32.bc -nogpuinc
expect_exit 0 "$GPUCC" compile lanes64.bc -t gfx1030 -o w64.gpucc
expect_exit 0 "$GPUCC" compile lanes32.bc -t gfx1030 -o w32.gpucc
hsaco w64.gpucc gfx1030 && mv gfx1030.hsaco w64.hsaco
hsaco w32.gpucc gfx1030 && mv gfx1030.hsaco w32.hsaco
llvm-readelf-19 --notes w64.hsaco | grep -q '\.wavefront_size: *64' || fail "wave64 module: metadata is not wave64"
llvm-readelf-19 --notes w32.hsaco | grep -q '\.wavefront_size: *32' || fail "wave32 module: metadata is not wave32"
llvm-objdump-19 -d w64.hsaco >w64.s
llvm-objdump-19 -d w32.hsaco >w32.s
# The active-lane count of a wave of 64 counts the high half of exec too.
grep -q 'v_mbcnt_hi_u32_b32' w64.s || fail "wave64: __ockl_activelane_u32 does not count exec's high half"
grep -q 'exec_hi' w64.s || fail "wave64: no 64-bit exec in the active-lane count"
grep -q 'v_mbcnt_hi_u32_b32' w32.s && fail "wave32: the active-lane count reads exec's high half"
# The library functions are compiled as the module's: inlined, no call left.
for s in w64.s w32.s; do
	grep -q 's_swappc' "$s" && fail "$s: a device library function stayed an out-of-line call"
done

# ---- defaults follow the module; a contradiction names the option that works --------
cat >sync.hip <<'EOF'
#include <hip/hip_runtime.h>
__global__ void scale(float *p, float a) {
  __shared__ float s[256];
  s[threadIdx.x] = p[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  __threadfence();
  p[blockIdx.x * blockDim.x + threadIdx.x] = a * sinf(s[255 - threadIdx.x]);
}
EOF
for arch in gfx90a gfx942 gfx1100 gfx1201; do
	hip_ir sync.hip "$arch" "sync.$arch.bc"
done
grep -q amdhsa_code_object_version <(llvm-dis-19 -o - sync.gfx90a.bc) ||
	fail "clang-19 wrote no amdhsa_code_object_version: this test's premise"
# One run, every architecture: each module is skipped for the others.
expect_exit 0 "$GPUCC" compile --json sync.gfx90a.bc sync.gfx942.bc sync.gfx1100.bc sync.gfx1201.bc \
	-t gfx90a -t gfx942 -t gfx1100 -t gfx1201 -o sync.gpucc
python3 - out <<'PY' || fail "one run for four architectures did not give four entries"
import json, sys
d = json.load(open(sys.argv[1]))
got = [(r["module"], r["target"], r["status"]) for r in d["results"]]
compiled = sorted((m, t) for m, t, s in got if s == "compiled")
assert compiled == [("sync.gfx1100.bc", "gfx1100"), ("sync.gfx1201.bc", "gfx1201"),
                    ("sync.gfx90a.bc", "gfx90a"), ("sync.gfx942.bc", "gfx942")], compiled
assert sum(1 for _, _, s in got if s == "skipped") == 12, got
PY
"$GPUCC" show --json sync.gpucc "$("$GPUCC" list --json sync.gpucc | python3 -c '
import json, sys; print(json.load(sys.stdin)[0]["key"])')" >show.json
grep -q '"code-object": *"5"' show.json || grep -q '"code-object":"5"' show.json ||
	fail "the entry does not record code object v5, the module's"
hsaco sync.gpucc gfx1201
llvm-readelf-19 --notes gfx1201.hsaco | grep -q 'amdhsa.version' || fail "gfx1201: no code object metadata"
# Entries of code object v5 (clang's): a HIP 5 runtime does not load them,
# and devices says so; HIP 6 does.
expect_exit 2 "$GPUCC" devices --image sync.gpucc --target gfx90a --hip-version 5.2
assert_grep "code object v5, which a HIP runtime loads from HIP 6 on" out
expect_exit 0 "$GPUCC" devices --image sync.gpucc --target gfx90a --hip-version 6.2
# The ISA version library is written for the processor (none ships for gfx942/gfx1100).
expect_exit 0 "$GPUCC" compile --explain --dry-run sync.gfx942.bc -t gfx942
assert_grep 'oclc_isa_version_942.ll' out
assert_grep 'hip.bc' out
expect_exit 5 "$GPUCC" compile --no-cache sync.gfx90a.bc -t gfx90a --code-object 4
assert_one_line err
assert_grep "amdhsa_code_object_version 500.*code object v5" err
# The module's processor is no target of the run: an error naming it.
expect_exit 5 "$GPUCC" compile --no-cache sync.gfx90a.bc -t gfx1030
assert_one_line err
assert_grep "\"target-cpu\" gfx90a.*compile it for target gfx90a too" err
# xnack fixed by the module, left open or fixed otherwise by the target.
hip_ir sync.hip gfx90a:xnack+ sync.xnack.bc
for t in gfx90a gfx90a:xnack-; do
	expect_exit 5 "$GPUCC" compile --no-cache sync.xnack.bc -t "$t"
	assert_one_line err
	assert_grep "xnack+.*the target gfx90a:xnack+ compiles it" err
done
expect_exit 0 "$GPUCC" compile --no-cache sync.xnack.bc -t gfx90a:xnack+

# ---- OpenCL C with libclc, for both vendors; the cache keeps what it links -----------
if [ -f /usr/lib/clc/amdgcn--amdhsa.bc ]; then
	cat >ocl.cl <<'EOF'
kernel void wave(global float *p) { size_t i = get_global_id(0); p[i] = sin(p[i]) * exp(p[i]); }
EOF
	clang-19 -x cl -cl-std=CL1.2 --target=amdgcn-amd-amdhsa -mcpu=gfx90a -nogpulib -O2 \
		-Xclang -disable-llvm-passes -emit-llvm -c ocl.cl -o ocl.gfx90a.bc || fail "clang-19 -x cl"
	clang-19 -x cl -cl-std=CL1.2 --target=nvptx64-nvidia-cuda -march=sm_80 -nogpulib -O2 \
		-Xclang -disable-llvm-passes -emit-llvm -c ocl.cl -o ocl.sm_80.bc || fail "clang-19 -x cl"
	expect_exit 0 "$GPUCC" compile --no-cubin ocl.gfx90a.bc ocl.sm_80.bc -t gfx90a -t sm_80 -o ocl.gpucc
	"$GPUCC" list ocl.gpucc | grep -c wave | grep -qx 2 || fail "OpenCL: not one entry per vendor"
	expect_exit 0 "$GPUCC" compile --explain --dry-run --no-cubin ocl.gfx90a.bc ocl.sm_80.bc -t gfx90a -t sm_80
	assert_grep "amdgcn--amdhsa.bc" out
	assert_grep "nvptx64--nvidiacl.bc" out
	# prune judges libclc and the written ISA library as this toolchain's: nothing goes.
	expect_exit 0 "$GPUCC" cache prune --json
	python3 -c "import json,sys; d=json.load(open('out')); assert d['removed_entries'] == 0 and d['entries'] >= 2, d" ||
		fail "cache prune removed entries this toolchain makes: $(cat out)"
else
	skip_block "OpenCL C with libclc (libclc-19 is not installed)"
fi

# ---- relocatable device code: --link ------------------------------------------------
cat >kernel.hip <<'EOF'
#include <hip/hip_runtime.h>
__device__ float twice(float x);
__global__ void apply(float *p) { p[threadIdx.x] = twice(p[threadIdx.x]); }
EOF
cat >helper.hip <<'EOF'
#include <hip/hip_runtime.h>
__device__ float twice(float x) { return 2 * x + cosf(x); }
EOF
hip_ir kernel.hip gfx90a kernel.bc -fgpu-rdc
hip_ir helper.hip gfx90a helper.bc -fgpu-rdc
expect_exit 5 "$GPUCC" compile --no-cache kernel.bc -t gfx90a
assert_one_line err
assert_grep "twice" err
expect_exit 0 "$GPUCC" compile --json --link kernel.bc helper.bc -t gfx90a -o rdc.gpucc
assert_grep '"module":"kernel.bc+helper.bc"' out
"$GPUCC" list rdc.gpucc | grep -q apply || fail "--link: the kernel is not in the image"
# The key follows every member: another helper is another entry.
sed 's/2 \* x/3 * x/' helper.hip >helper3.hip
hip_ir helper3.hip gfx90a helper3.bc -fgpu-rdc
expect_exit 0 "$GPUCC" compile --json --link kernel.bc helper3.bc -t gfx90a
assert_grep '"status":"compiled"' out

# ---- clang -O0 output: a warning --------------------------------------------------
clang-19 -x hip --offload-arch=gfx90a --cuda-device-only -nogpulib -D__HIP_PLATFORM_AMD__ \
	-emit-llvm -c -O0 sync.hip -o sync.O0.bc || fail "clang-19 -O0"
expect_exit 0 "$GPUCC" compile --no-cache sync.O0.bc -t gfx90a
assert_grep "^gpucc compile: warning: sync.O0.bc: gfx90a: the module.s functions are optnone" err
expect_exit 0 "$GPUCC" compile --no-cache sync.O0.bc -t gfx90a -O0
assert_no_grep "optnone" err

# ---- CUDA: the module's PTX ISA; a processor ptxas lacks ---------------------------
cat >axpy.cu <<'EOF'
extern "C" __attribute__((global)) void axpy(float a, const float *x, float *y) {
  unsigned i = __nvvm_read_ptx_sreg_tid_x();
  y[i] = a * x[i] + y[i];
}
EOF
for sm in sm_70 sm_90; do
	clang-19 -x cuda --cuda-gpu-arch=$sm --cuda-device-only -nocudainc -nocudalib \
		-Wno-unknown-cuda-version -emit-llvm -c -O2 axpy.cu -o "axpy.$sm.bc" ||
		fail "clang-19 could not compile axpy.cu for $sm"
done
ptx=$(llvm-dis-19 -o - axpy.sm_90.bc | grep -o '+ptx[0-9]*' | sort -u | tail -1)
[ -n "$ptx" ] || fail "clang-19 wrote no +ptxNN: this test's premise"
expect_exit 0 "$GPUCC" compile --json --no-cubin axpy.sm_70.bc axpy.sm_90.bc -t sm_70 -t sm_90 -o cu.gpucc
"$GPUCC" list cu.gpucc | grep -q "sm_90:${ptx#+}" || fail "sm_90 did not take the module's PTX ISA ($ptx)"
expect_exit 5 "$GPUCC" compile --no-cache --no-cubin axpy.sm_90.bc -t sm_90:ptx78
assert_one_line err
assert_grep "ask for PTX ISA .*the target sm_90:${ptx#+} (or sm_90" err
PTXAS=""
for p in "${CUDA_PATH:-/usr/local/cuda}/bin/ptxas" "$(command -v ptxas || true)"; do
	[ -n "$p" ] && [ -x "$p" ] && PTXAS=$p && break
done
# CUDA 13's ptxas refuses -arch=sm_70 even with --version.
if [ -n "$PTXAS" ] && ! "$PTXAS" -arch=sm_70 --version >/dev/null 2>&1; then
	expect_exit 0 "$GPUCC" compile --json --no-cache --cubin-with ptxas axpy.sm_70.bc -t sm_70 -o old.gpucc
	assert_one_line err
	assert_grep "^gpucc compile: warning: axpy.sm_70.bc: sm_70[^ ]*: ptxas .* does not compile for this target.*PTX only" err
	"$GPUCC" list old.gpucc | grep -q "cubin" && fail "sm_70: a cubin from a ptxas that lacks sm_70?"
	"$GPUCC" list old.gpucc | grep -q "ptx:" || fail "sm_70: no PTX"
else
	skip_block "the PTX-only fallback (no ptxas lacking sm_70 here: CUDA 13's)"
fi

# ---- AMDGPU: a code object is a whole program ----------------------------------------
# The module's own functions but kernels become internal, as clang's HIP
# driver asks (-amdgpu-internalize-symbols): one no kernel calls is not
# compiled, and none is exported; variables (a host program reads them by
# name) and what @llvm.used names stay.  At -O0 nothing is dropped.
cat >whole.hip <<'EOF'
extern "C" __attribute__((device, noinline)) int unreached_helper(int x) { return x * 3 + 1; }
extern "C" __attribute__((device, noinline)) int reached_helper(int x) { return x * 5 + 2; }
extern "C" __attribute__((device, used)) int kept_helper(int x) { return x * 7 + 3; }
extern "C" __attribute__((device)) int visible_counter;
__attribute__((device)) int visible_counter = 0;
extern "C" __attribute__((global)) void whole(int *p) { p[0] = reached_helper(p[0]) + visible_counter; }
EOF
hip_ir whole.hip gfx90a whole.bc -nogpuinc -Xclang -disable-llvm-passes
llvm-dis-19 whole.bc -o - | grep -q '^define .*@unreached_helper' || fail "clang-19 dropped unreached_helper: this test's premise"
expect_exit 0 "$GPUCC" compile --no-cache whole.bc -t gfx90a -o whole.gpucc
hsaco whole.gpucc gfx90a && mv gfx90a.hsaco whole.hsaco
llvm-readelf-19 --syms whole.hsaco > whole.syms
assert_grep ' whole$' whole.syms
assert_grep ' visible_counter$' whole.syms
assert_grep ' kept_helper$' whole.syms
assert_no_grep 'unreached_helper' whole.syms
! grep ' reached_helper$' whole.syms | grep -q GLOBAL || fail "reached_helper is still exported"
expect_exit 0 "$GPUCC" compile --no-cache -O0 whole.bc -t gfx90a -o whole0.gpucc
hsaco whole0.gpucc gfx90a && mv gfx90a.hsaco whole0.hsaco
llvm-readelf-19 --syms whole0.hsaco | grep -q ' unreached_helper$' || fail "-O0 dropped unreached_helper"

# ---- a backend failure: one line; the detail with --verbose -----------------------
cat >bad.ll <<'EOF'
target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @k(ptr addrspace(1) %p) {
  %v = call i32 @undefined_function()
  store i32 %v, ptr addrspace(1) %p
  ret void
}
declare i32 @undefined_function()
EOF
expect_exit 5 "$GPUCC" compile --no-cache bad.ll -t gfx90a
assert_one_line err
assert_grep "^gpucc compile: error: bad.ll: gfx90a: " err
exit 0
