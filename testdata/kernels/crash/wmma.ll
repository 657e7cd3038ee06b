; testdata/kernels/crash/wmma.ll -- valid IR that LLVM 19 dies on:
; a tensor-core load (wmma, sm_70+) compiled for sm_60: "Cannot select", abort.
target triple = "nvptx64-nvidia-cuda"
declare { <2 x half>, <2 x half>, <2 x half>, <2 x half> } @llvm.nvvm.wmma.m16n16k16.load.c.row.f16.p1(ptr addrspace(1))
define ptx_kernel void @k(ptr addrspace(1) %p) {
  %v = call { <2 x half>, <2 x half>, <2 x half>, <2 x half> } @llvm.nvvm.wmma.m16n16k16.load.c.row.f16.p1(ptr addrspace(1) %p)
  %e = extractvalue { <2 x half>, <2 x half>, <2 x half>, <2 x half> } %v, 0
  store <2 x half> %e, ptr addrspace(1) %p
  ret void
}
