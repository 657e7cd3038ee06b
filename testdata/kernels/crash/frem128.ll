; testdata/kernels/crash/frem128.ll -- valid IR that LLVM 19 dies on:
; frem on fp128 for AMDGPU: "unsupported libcall legalization", abort.
target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @k(ptr addrspace(1) %p) {
  %x = load fp128, ptr addrspace(1) %p
  %y = frem fp128 %x, 0xL00000000000000004000000000000000
  store fp128 %y, ptr addrspace(1) %p
  ret void
}
