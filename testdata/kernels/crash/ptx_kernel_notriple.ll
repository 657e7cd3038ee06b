; testdata/kernels/crash/ptx_kernel_notriple.ll -- valid IR that LLVM 19 dies on:
; no triple, the ptx_kernel calling convention, compiled for an AMD target: "Unsupported calling convention", abort.
define ptx_kernel void @k(ptr addrspace(1) %p) {
  store i32 1, ptr addrspace(1) %p
  ret void
}
