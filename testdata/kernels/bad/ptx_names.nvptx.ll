; testdata/kernels/bad/ptx_names.nvptx.ll -- a Julia kernel whose name was
; not made PTX-safe (GPUCompiler.jl's safe_name does that): '∇' and '!' are
; not PTX, and LLVM's NVPTX printer aborts the whole process on them
; ("Symbol name with unsupported characters").  gpucc refuses the module
; instead, and compiles the others of the run.  Its local helper's '#' is
; fine: LLVM renames local symbols.
target triple = "nvptx64-nvidia-cuda"

define internal float @"julia_#square#3_17"(float %x) {
top:
  %r = fmul float %x, %x
  ret float %r
}

define void @"julia_∇softmax!_12"(ptr addrspace(1) %p) {
top:
  %v = load float, ptr addrspace(1) %p, align 4
  %s = call float @"julia_#square#3_17"(float %v)
  store float %s, ptr addrspace(1) %p, align 4
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{ptr @"julia_∇softmax!_12", !"kernel", i32 1}
