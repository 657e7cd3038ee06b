# cmd/tests/compile_llvm_errors.sh -- a job fails loudly, with LLVM's own
# words, whatever stage of LLVM found the defect:
#   - an error LLVM diagnoses and goes on from (AMDGPU's printf lowering
#     drops a call whose format is no constant string) fails the job, exit
#     5, one line carrying LLVM's message; nothing is cached;
#   - a function of an AMD graphics calling convention is refused up
#     front, naming it and its convention; and when LLVM is left to meet it
#     (the test hook "unchecked:"), its crash is one line that carries the
#     error LLVM printed before it;
#   - an intrinsic LLVM does not know is named so; C++ names are demangled,
#     whole; a module written for the other vendor says so.
. "$SRCROOT/cmd/tests/lib.sh"

mkdir tmp
export TMPDIR=$PWD/tmp
command -v clang-19 >/dev/null || skip "clang-19 is not installed"

# one_line_error FILE PATTERN: FILE (stderr) holds exactly one line, the
# error, matching PATTERN.
one_line_error() {
	assert_one_line "$1"
	assert_grep "$2" "$1"
}

# --- an error diagnosed during optimisation --------------------------------
# OpenCL C's printf with a format that is not a constant string: llc-19 and
# opt-19 refuse it ("printf format string must be a trivially resolved
# constant string global variable").
cat >printf.cl <<'EOF'
__kernel void show(__global int *a, __constant char *format) { printf(format, a[0]); }
EOF
clang-19 -x cl -cl-std=CL2.0 -target amdgcn-amd-amdhsa -mcpu=gfx900 -nogpulib -O1 -Xclang -disable-llvm-passes \
	-Xclang -finclude-default-header -emit-llvm -c printf.cl -o printf.bc ||
	fail "clang-19 cannot compile printf.cl"
expect_exit 5 "$GPUCC" compile --cache cache printf.bc -t gfx900
one_line_error err "^gpucc compile: error: printf.bc: gfx900: optimisation failed: in function show .*printf format string must be a trivially resolved constant string"
[ -z "$(find cache -name '*.gpucc' 2>/dev/null)" ] || fail "the failed job was cached"
# --json says the same.
expect_exit 5 "$GPUCC" compile --no-cache --json printf.bc -t gfx900
python3 - out <<'PY' || fail "--json: $(cat out)"
import json, sys
[r] = json.load(open(sys.argv[1]))["results"]
assert r["status"] == "failed", r
assert "printf format string must be" in r["error"], r
PY
# --- AMD graphics calling conventions under HSA -----------------------------
for cc in amdgpu_ps amdgpu_vs amdgpu_gs amdgpu_cs amdgpu_hs amdgpu_ls amdgpu_es amdgpu_gfx; do
	cat >"shader_$cc.ll" <<EOF
target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @kern(ptr addrspace(1) %p) {
  store i32 1, ptr addrspace(1) %p
  ret void
}
define $cc float @shade(float %x) {
  %y = fadd float %x, 1.0
  ret float %y
}
EOF
	expect_exit 5 "$GPUCC" compile --no-cache "shader_$cc.ll" -t gfx90a
	one_line_error err "^gpucc compile: error: shader_$cc.ll: gfx90a: function 'shade' has the graphics calling convention $cc, which amdgcn-amd-amdhsa (HSA) does not run"
done
[ -z "$(ls tmp)" ] || fail "left $(ls tmp) in TMPDIR"

# Left to LLVM (test builds only), the worker dies; the one line names what
# LLVM said before it did.
# LLVM 19 crashes there; a later LLVM may report it and go on, and the job
# then fails on that error, one line too.
if [ "$TEST_HOOKS" = 1 ]; then
	if has_llvm 19; then
		GPUCC_BACKEND_FAULT=unchecked:shader_amdgpu_ps expect_exit 5 "$GPUCC" compile --no-cache \
			--llvm 19 shader_amdgpu_ps.ll -t gfx90a
		one_line_error err "^gpucc compile: error: shader_amdgpu_ps.ll: gfx90a: LLVM crashed (SIG[A-Z]*): in function shade float (float): unsupported non-compute shaders with HSA$"
	fi
	GPUCC_BACKEND_FAULT=unchecked:shader_amdgpu_ps expect_exit 5 "$GPUCC" compile --no-cache \
		shader_amdgpu_ps.ll -t gfx90a
	one_line_error err "^gpucc compile: error: shader_amdgpu_ps.ll: gfx90a: .*in function shade float (float): unsupported non-compute shaders with HSA$"
	[ -z "$(ls tmp)" ] || fail "left $(ls tmp) in TMPDIR after the crash"
else
	skip_block "LLVM's own crash on a graphics shader: the build has no test hooks"
fi

# --- names in messages --------------------------------------------------------
# An intrinsic this LLVM does not know is named as such, not as a call
# nothing defines.
cat >intrinsic.ll <<'LL'
target triple = "nvptx64-nvidia-cuda"
declare float @llvm.nvvm.no.such.intrinsic.f32(float)
define ptx_kernel void @k(ptr %p) {
  %x = load float, ptr %p
  %y = call float @llvm.nvvm.no.such.intrinsic.f32(float %x)
  store float %y, ptr %p
  ret void
}
LL
expect_exit 5 "$GPUCC" compile --no-cache intrinsic.ll -t sm_90
one_line_error err "^gpucc compile: error: intrinsic.ll: sm_90:ptx[0-9]*: call to 'llvm.nvvm.no.such.intrinsic.f32', an intrinsic LLVM [0-9][0-9]*\.[0-9.]* does not know"

# C++ names are demangled, whole however long: a name of 40 nested
# namespaces demangles to 1,000 characters, and the line is longer still.
long=$(python3 -c 'print("_ZN" + "".join("23namespace_component_%03d" % i for i in range(40)) + "4longEv")')
want=$(python3 -c 'print("::".join("namespace_component_%03d" % i for i in range(40)) + "::long()")')
cat >mangled.ll <<LL
target triple = "nvptx64-nvidia-cuda"
declare i32 @_Z6ext_fni(i32)
declare void @$long()
define ptx_kernel void @k(ptr %p) {
  %x = load i32, ptr %p
  %y = call i32 @_Z6ext_fni(i32 %x)
  store i32 %y, ptr %p
  call void @$long()
  ret void
}
LL
expect_exit 5 "$GPUCC" compile --no-cache mangled.ll -t sm_90
assert_one_line err
grep -qF "unresolvable external calls to 'ext_fn(int)', '$want'" err ||
	fail "names not demangled whole: $(cat err)"

# A module written for the other vendor says so: by its triple, and without
# one, by a kernel's calling convention or an intrinsic (where LLVM aborted).
expect_exit 5 "$GPUCC" compile --no-cache "$TESTDATA/kernels/nvptx/vector_add.ll" -t gfx942
one_line_error err "vector_add.ll: gfx942: module triple 'nvptx64-nvidia-cuda' does not fit target gfx942 (amdgcn-amd-amdhsa): the module is written for NVIDIA targets (sm_XY)$"
expect_exit 5 "$GPUCC" compile --no-cache "$TESTDATA/kernels/amdgpu/vector_add.ll" -t sm_90
one_line_error err "vector_add.ll: sm_90:ptx[0-9]*: module triple 'amdgcn-amd-amdhsa' does not fit target sm_90:ptx[0-9]* (nvptx64-nvidia-cuda): the module is written for AMD targets (gfxNNN)$"
expect_exit 5 "$GPUCC" compile --no-cache "$TESTDATA/kernels/crash/ptx_kernel_notriple.ll" -t gfx90a
one_line_error err "ptx_kernel_notriple.ll: gfx90a: function '[^']*' has the calling convention ptx_kernel, NVIDIA's: the module is written for NVIDIA targets (sm_XY), not for gfx90a$"
expect_exit 5 "$GPUCC" compile --no-cache "$TESTDATA/kernels/crash/amd_intrinsic_notriple.ll" -t sm_90
one_line_error err "amd_intrinsic_notriple.ll: sm_90:ptx[0-9]*: the module calls 'llvm.amdgcn.[a-z.]*', an intrinsic of AMD's: it is written for AMD targets (gfxNNN), not for sm_90"
[ -z "$(ls tmp)" ] || fail "left $(ls tmp) in TMPDIR"
