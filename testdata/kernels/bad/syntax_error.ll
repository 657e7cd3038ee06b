; testdata/kernels/bad/syntax_error.ll -- not valid IR: a missing operand.
target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @broken(ptr addrspace(1) %p) {
  %v = load float, ptr addrspace(1)
  ret void
}
