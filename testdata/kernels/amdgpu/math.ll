; testdata/kernels/amdgpu/math.ll -- kernels calling the ROCm device
; libraries (__ocml_sin_f32, __ocml_exp_f32, __ocml_pow_f32): compiling them
; links ocml, ockl and the oclc_* control libraries chosen for the target.
target triple = "amdgcn-amd-amdhsa"

declare i32 @llvm.amdgcn.workitem.id.x()
declare float @__ocml_sin_f32(float)
declare float @__ocml_exp_f32(float)
declare float @__ocml_pow_f32(float, float)

define amdgpu_kernel void @sin_exp(ptr addrspace(1) %out, ptr addrspace(1) %in) {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %idx = zext i32 %tid to i64
  %pin = getelementptr inbounds float, ptr addrspace(1) %in, i64 %idx
  %x = load float, ptr addrspace(1) %pin, align 4
  %s = call float @__ocml_sin_f32(float %x)
  %e = call float @__ocml_exp_f32(float %s)
  %pout = getelementptr inbounds float, ptr addrspace(1) %out, i64 %idx
  store float %e, ptr addrspace(1) %pout, align 4
  ret void
}

define amdgpu_kernel void @power(ptr addrspace(1) %out, ptr addrspace(1) %in, float %p) {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %idx = zext i32 %tid to i64
  %pin = getelementptr inbounds float, ptr addrspace(1) %in, i64 %idx
  %x = load float, ptr addrspace(1) %pin, align 4
  %r = call float @__ocml_pow_f32(float %x, float %p)
  %pout = getelementptr inbounds float, ptr addrspace(1) %out, i64 %idx
  store float %r, ptr addrspace(1) %pout, align 4
  ret void
}
