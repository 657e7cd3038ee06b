; testdata/kernels/crash/amd_intrinsic_notriple.ll -- valid IR that LLVM 19 dies on:
; no triple, an amdgcn intrinsic, compiled for an NVIDIA target: abort.
; gpucc refuses it before LLVM sees it, as AMD's (cmd/tests/compile_llvm_errors.sh).
declare i32 @llvm.amdgcn.workitem.id.x()
define void @k(ptr addrspace(1) %p) {
  %t = call i32 @llvm.amdgcn.workitem.id.x()
  store i32 %t, ptr addrspace(1) %p
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr @k, !"kernel", i32 1}
