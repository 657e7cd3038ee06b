; testdata/kernels/crash/cp_async.ll -- valid IR that LLVM 19 dies on:
; an sm_80 intrinsic (cp.async) that LLVM 19 cannot select for sm_75: "Cannot select", abort.
target triple = "nvptx64-nvidia-cuda"
declare void @llvm.nvvm.cp.async.ca.shared.global.4(ptr addrspace(3), ptr addrspace(1))
@s = internal addrspace(3) global [64 x i32] undef
define ptx_kernel void @k(ptr addrspace(1) %p) {
  call void @llvm.nvvm.cp.async.ca.shared.global.4(ptr addrspace(3) @s, ptr addrspace(1) %p)
  ret void
}
