; testdata/kernels/crash/fp128_arg.ll -- valid IR that LLVM 19 dies on:
; an fp128 kernel argument: SIGSEGV in NVPTX's SelectionDAG (LLVM 19).
target triple = "nvptx64-nvidia-cuda"
define ptx_kernel void @k(fp128 %x, ptr addrspace(1) %p) {
  store fp128 %x, ptr addrspace(1) %p
  ret void
}
