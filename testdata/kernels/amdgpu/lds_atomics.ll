; testdata/kernels/amdgpu/lds_atomics.ll -- in the style of AMDGPU.jl and
; Triton: a histogram over LDS, static (`internal addrspace(3)`) and dynamic
; (an `external addrspace(3)` [0 x i32], sized at launch: no external),
; llvm.amdgcn intrinsics, atomics with the "workgroup", "agent" and
; "agent-one-as" sync scopes, amdgpu-flat-work-group-size and
; uniform-work-group-size, and target-features that match the target.  No
; library calls: its code object must equal opt-19 | llc-19 | ld.lld-19's
; (compile_matches_llc.sh).
target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-p8:128:128-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9"
target triple = "amdgcn-amd-amdhsa"

@bins = internal unnamed_addr addrspace(3) global [64 x i32] poison, align 16
@dynamic_lds = external addrspace(3) global [0 x i32], align 16

define amdgpu_kernel void @histogram(ptr addrspace(1) noalias nocapture readonly %data, ptr addrspace(1) noalias nocapture %out, i32 %n) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %gid = call i32 @llvm.amdgcn.workgroup.id.x()
  %slot = getelementptr inbounds [64 x i32], ptr addrspace(3) @bins, i32 0, i32 %tid
  %small = icmp ult i32 %tid, 64
  br i1 %small, label %clear, label %tally

clear:
  store i32 0, ptr addrspace(3) %slot, align 4
  br label %tally

tally:
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %base = shl i32 %gid, 8
  %i = add i32 %base, %tid
  %inside = icmp slt i32 %i, %n
  br i1 %inside, label %bump, label %flush

bump:
  %idx = sext i32 %i to i64
  %p = getelementptr inbounds i32, ptr addrspace(1) %data, i64 %idx
  %v = load i32, ptr addrspace(1) %p, align 4
  %bin = and i32 %v, 63
  %b = getelementptr inbounds [64 x i32], ptr addrspace(3) @bins, i32 0, i32 %bin
  %old = atomicrmw add ptr addrspace(3) %b, i32 1 syncscope("workgroup") monotonic, align 4
  %d = getelementptr inbounds [0 x i32], ptr addrspace(3) @dynamic_lds, i32 0, i32 %tid
  store i32 %old, ptr addrspace(3) %d, align 4
  br label %flush

flush:
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  br i1 %small, label %publish, label %done

publish:
  %count = load i32, ptr addrspace(3) %slot, align 4
  %mine = getelementptr inbounds [0 x i32], ptr addrspace(3) @dynamic_lds, i32 0, i32 %tid
  %seen = load i32, ptr addrspace(3) %mine, align 4
  %total = add i32 %count, %seen
  %t64 = zext i32 %tid to i64
  %q = getelementptr inbounds i32, ptr addrspace(1) %out, i64 %t64
  %prev = atomicrmw add ptr addrspace(1) %q, i32 %total syncscope("agent") monotonic, align 4
  %lanes = call i32 @llvm.amdgcn.mbcnt.lo(i32 -1, i32 0)
  %f = sitofp i32 %lanes to float
  %last = getelementptr inbounds i32, ptr addrspace(1) %out, i64 64
  %r = atomicrmw fadd ptr addrspace(1) %last, float %f syncscope("agent-one-as") monotonic, align 4
  br label %done

done:
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x() #1
declare i32 @llvm.amdgcn.workgroup.id.x() #1
declare i32 @llvm.amdgcn.mbcnt.lo(i32, i32) #1
declare void @llvm.amdgcn.s.barrier() #2

attributes #0 = { nounwind "amdgpu-flat-work-group-size"="1,256" "uniform-work-group-size"="true" "target-cpu"="gfx90a" "target-features"="+wavefrontsize64" }
attributes #1 = { nounwind readnone speculatable willreturn }
attributes #2 = { convergent nounwind willreturn }
