; testdata/kernels/amdgpu/prelinked_ocml.ll -- a module that already defines
; one device library function (as after `llvm-link` with a library, or a
; hand-written fast version) and calls another: the module's own
; definition wins (its 3.0 factor, the literal 0x40400000, must be in the
; code); linking the library over it used to fail as "symbol multiply
; defined".
target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-p8:128:128-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9"
target triple = "amdgcn-amd-amdhsa"

define float @__ocml_exp_f32(float %x) {
  %r = fmul float %x, 3.000000e+00
  ret float %r
}

define amdgpu_kernel void @wave(ptr addrspace(1) %p) {
  %v = load float, ptr addrspace(1) %p, align 4
  %e = call float @__ocml_exp_f32(float %v)
  %s = call float @__ocml_sin_f32(float %e)
  store float %s, ptr addrspace(1) %p, align 4
  ret void
}

declare float @__ocml_sin_f32(float)
