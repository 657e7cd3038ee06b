; testdata/kernels/crash/ptx_kernel_notriple.ll -- valid IR that LLVM 19 dies on:
; no triple, the ptx_kernel calling convention, compiled for an AMD target: "Unsupported calling convention", abort.
; gpucc refuses it before LLVM sees it, as NVIDIA's (cmd/tests/compile_llvm_errors.sh).
define ptx_kernel void @k(ptr addrspace(1) %p) {
  store i32 1, ptr addrspace(1) %p
  ret void
}
