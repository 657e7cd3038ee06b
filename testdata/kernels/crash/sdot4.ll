; testdata/kernels/crash/sdot4.ll -- valid IR that LLVM 19 dies on:
; a dot-product intrinsic (gfx906+) compiled for gfx803: "Cannot select", abort.
target triple = "amdgcn-amd-amdhsa"
declare i32 @llvm.amdgcn.sdot4(i32, i32, i32, i1)
define amdgpu_kernel void @k(ptr addrspace(1) %p, i32 %a, i32 %b) {
  %r = call i32 @llvm.amdgcn.sdot4(i32 %a, i32 %b, i32 0, i1 false)
  store i32 %r, ptr addrspace(1) %p
  ret void
}
