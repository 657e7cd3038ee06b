; testdata/kernels/bad/global_ctor.nvptx.ll -- a device variable with a
; dynamic initialiser, as clang emits for C++ device code whose constructor
; it cannot fold (llvm.global_ctors calling _GLOBAL__sub_I_...).  PTX has no
; way to run it at load, and LLVM's NVPTX printer aborts the whole process
; on a non-empty llvm.global_ctors ("Module has a nontrivial global ctor");
; gpucc refuses the module.  (The clock read keeps the optimiser from
; folding the constructor into a constant initialiser.)
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@seed = dso_local addrspace(1) externally_initialized global i64 0, align 8
@llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 65535, ptr @_GLOBAL__sub_I_seed.cu, ptr null }]

define internal void @_GLOBAL__sub_I_seed.cu() {
entry:
  %t = call i64 @llvm.nvvm.read.ptx.sreg.globaltimer()
  store i64 %t, ptr addrspace(1) @seed, align 8
  ret void
}

define ptx_kernel void @_Z4drawPm(ptr addrspace(1) %out) {
entry:
  %s = load i64, ptr addrspace(1) @seed, align 8
  store i64 %s, ptr addrspace(1) %out, align 8
  ret void
}

declare i64 @llvm.nvvm.read.ptx.sreg.globaltimer()
