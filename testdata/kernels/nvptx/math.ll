; testdata/kernels/nvptx/math.ll -- kernels calling libdevice (__nv_sinf,
; __nv_expf, __nv_powf): compiling them links libdevice.10.bc, internalises
; it and keeps only what is used.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare float @__nv_sinf(float)
declare float @__nv_expf(float)
declare float @__nv_powf(float, float)

define ptx_kernel void @sin_exp(ptr addrspace(1) %out, ptr addrspace(1) %in) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %idx = zext i32 %tid to i64
  %pin = getelementptr inbounds float, ptr addrspace(1) %in, i64 %idx
  %x = load float, ptr addrspace(1) %pin, align 4
  %s = call float @__nv_sinf(float %x)
  %e = call float @__nv_expf(float %s)
  %pout = getelementptr inbounds float, ptr addrspace(1) %out, i64 %idx
  store float %e, ptr addrspace(1) %pout, align 4
  ret void
}

define ptx_kernel void @power(ptr addrspace(1) %out, ptr addrspace(1) %in, float %p) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %idx = zext i32 %tid to i64
  %pin = getelementptr inbounds float, ptr addrspace(1) %in, i64 %idx
  %x = load float, ptr addrspace(1) %pin, align 4
  %r = call float @__nv_powf(float %x, float %p)
  %pout = getelementptr inbounds float, ptr addrspace(1) %out, i64 %idx
  store float %r, ptr addrspace(1) %pout, align 4
  ret void
}
