; testdata/kernels/nvptx/multi.ll -- several kernels sharing a device
; function, one using static shared memory, one marked a kernel through
; !nvvm.annotations instead of the ptx_kernel calling convention.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@tile = internal addrspace(3) global [256 x float] undef, align 4

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare void @llvm.nvvm.barrier0()

define internal float @square(float %x) noinline {
  %r = fmul float %x, %x
  ret float %r
}

define ptx_kernel void @scale(ptr addrspace(1) %p, float %s) {
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %idx = zext i32 %tid to i64
  %ptr = getelementptr inbounds float, ptr addrspace(1) %p, i64 %idx
  %v = load float, ptr addrspace(1) %ptr, align 4
  %r = fmul float %v, %s
  store float %r, ptr addrspace(1) %ptr, align 4
  ret void
}

define ptx_kernel void @squares(ptr addrspace(1) %p) {
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %idx = zext i32 %tid to i64
  %ptr = getelementptr inbounds float, ptr addrspace(1) %p, i64 %idx
  %v = load float, ptr addrspace(1) %ptr, align 4
  %r = call float @square(float %v)
  store float %r, ptr addrspace(1) %ptr, align 4
  ret void
}

define ptx_kernel void @reverse_block(ptr addrspace(1) %p) {
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %idx = zext i32 %tid to i64
  %ptr = getelementptr inbounds float, ptr addrspace(1) %p, i64 %idx
  %v = load float, ptr addrspace(1) %ptr, align 4
  %slot = getelementptr inbounds [256 x float], ptr addrspace(3) @tile, i64 0, i64 %idx
  store float %v, ptr addrspace(3) %slot, align 4
  call void @llvm.nvvm.barrier0()
  %ridx = sub i64 255, %idx
  %rslot = getelementptr inbounds [256 x float], ptr addrspace(3) @tile, i64 0, i64 %ridx
  %w = load float, ptr addrspace(3) %rslot, align 4
  %sq = call float @square(float %w)
  store float %sq, ptr addrspace(1) %ptr, align 4
  ret void
}

define void @annotated(ptr addrspace(1) %p) {
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %idx = zext i32 %tid to i64
  %ptr = getelementptr inbounds i32, ptr addrspace(1) %p, i64 %idx
  store i32 %tid, ptr addrspace(1) %ptr, align 4
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{ptr @annotated, !"kernel", i32 1}
