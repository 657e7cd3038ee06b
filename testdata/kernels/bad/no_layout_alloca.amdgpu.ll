; testdata/kernels/bad/no_layout_alloca.amdgpu.ll -- a kernel with a stack
; array but no `target datalayout`: its alloca is parsed into address space
; 0, while AMDGPU's stack is address space 5, and LLVM's instruction
; selector aborts the whole process on it ("Cannot select: FrameIndex").
; gpucc refuses the module instead.  (Volatile, so that SROA keeps it.)
target triple = "amdgcn-amd-amdhsa"

declare i32 @llvm.amdgcn.workitem.id.x()

define amdgpu_kernel void @scratch(ptr addrspace(1) %out, i32 %n) {
entry:
  %buf = alloca [16 x i32], align 4
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %i = and i32 %tid, 15
  %p = getelementptr inbounds [16 x i32], ptr %buf, i32 0, i32 %i
  store volatile i32 %n, ptr %p, align 4
  %j = xor i32 %i, 3
  %q = getelementptr inbounds [16 x i32], ptr %buf, i32 0, i32 %j
  %v = load volatile i32, ptr %q, align 4
  store i32 %v, ptr addrspace(1) %out, align 4
  ret void
}
