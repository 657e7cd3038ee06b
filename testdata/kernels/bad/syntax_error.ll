; testdata/kernels/bad/syntax_error.ll -- not valid IR: a load without its
; pointer operand.  No triple, so it fails the same way for every target.

define ptx_kernel void @broken(ptr addrspace(1) %p) {
  %v = load float, ptr addrspace(1)
  ret void
}
