; testdata/kernels/crash/mfma.ll -- valid IR that LLVM 19 dies on:
; a CDNA matrix intrinsic (MFMA) that gfx803 and gfx1030 lack: "Cannot select", abort.
target triple = "amdgcn-amd-amdhsa"
declare <4 x float> @llvm.amdgcn.mfma.f32.4x4x1f32(float, float, <4 x float>, i32, i32, i32)
define amdgpu_kernel void @k(ptr addrspace(1) %p, float %a, float %b) {
  %c = load <4 x float>, ptr addrspace(1) %p
  %r = call <4 x float> @llvm.amdgcn.mfma.f32.4x4x1f32(float %a, float %b, <4 x float> %c, i32 0, i32 0, i32 0)
  store <4 x float> %r, ptr addrspace(1) %p
  ret void
}
