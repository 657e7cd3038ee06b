; testdata/kernels/amdgpu/multi.ll -- several kernels sharing a device
; function, one using LDS (group segment) memory.
target triple = "amdgcn-amd-amdhsa"

@tile = internal addrspace(3) global [256 x float] undef, align 4

declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()

define internal float @square(float %x) noinline {
  %r = fmul float %x, %x
  ret float %r
}

define amdgpu_kernel void @scale(ptr addrspace(1) %p, float %s) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %idx = zext i32 %tid to i64
  %ptr = getelementptr inbounds float, ptr addrspace(1) %p, i64 %idx
  %v = load float, ptr addrspace(1) %ptr, align 4
  %r = fmul float %v, %s
  store float %r, ptr addrspace(1) %ptr, align 4
  ret void
}

define amdgpu_kernel void @squares(ptr addrspace(1) %p) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %idx = zext i32 %tid to i64
  %ptr = getelementptr inbounds float, ptr addrspace(1) %p, i64 %idx
  %v = load float, ptr addrspace(1) %ptr, align 4
  %r = call float @square(float %v)
  store float %r, ptr addrspace(1) %ptr, align 4
  ret void
}

define amdgpu_kernel void @reverse_block(ptr addrspace(1) %p) #0 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %idx = zext i32 %tid to i64
  %ptr = getelementptr inbounds float, ptr addrspace(1) %p, i64 %idx
  %v = load float, ptr addrspace(1) %ptr, align 4
  %slot = getelementptr inbounds [256 x float], ptr addrspace(3) @tile, i64 0, i64 %idx
  store float %v, ptr addrspace(3) %slot, align 4
  call void @llvm.amdgcn.s.barrier()
  %ridx = sub i64 255, %idx
  %rslot = getelementptr inbounds [256 x float], ptr addrspace(3) @tile, i64 0, i64 %ridx
  %w = load float, ptr addrspace(3) %rslot, align 4
  %sq = call float @square(float %w)
  store float %sq, ptr addrspace(1) %ptr, align 4
  ret void
}

attributes #0 = { "amdgpu-flat-work-group-size"="1,256" }
