; testdata/kernels/crash/fp128_sin.ll -- valid IR that LLVM 19 dies on:
; sin on fp128, a libcall NVPTX cannot make: "Undefined external symbol", abort.
declare fp128 @llvm.sin.f128(fp128)
define void @k(ptr addrspace(1) %p) {
  %x = load fp128, ptr addrspace(1) %p
  %y = call fp128 @llvm.sin.f128(fp128 %x)
  store fp128 %y, ptr addrspace(1) %p
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr @k, !"kernel", i32 1}
