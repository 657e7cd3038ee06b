; testdata/kernels/amdgpu/linkonce_kernels.ll -- kernels with discardable
; linkage, as a producer gives when it marks every function of a module
; linkonce_odr (Numba-style, or C++ inline functions that no one promoted
; the way clang promotes kernels to weak_odr).  Nothing in the module calls
; them, so the optimiser used to drop them and the entry silently lacked
; them; a kernel is an entry point and must stay.
target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-p8:128:128-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9"
target triple = "amdgcn-amd-amdhsa"

define linkonce_odr amdgpu_kernel void @_Z5clearPi(ptr addrspace(1) %p) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %i = zext i32 %tid to i64
  %q = getelementptr inbounds i32, ptr addrspace(1) %p, i64 %i
  store i32 0, ptr addrspace(1) %q, align 4
  ret void
}

define linkonce amdgpu_kernel void @fill_ones(ptr addrspace(1) %p) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %i = zext i32 %tid to i64
  %q = getelementptr inbounds i32, ptr addrspace(1) %p, i64 %i
  store i32 1, ptr addrspace(1) %q, align 4
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()

attributes #0 = { "amdgpu-flat-work-group-size"="1,256" }
