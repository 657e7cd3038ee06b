; testdata/kernels/nvptx/cuda_clang.ll -- what `clang -x cuda --cuda-device-only
; -emit-llvm` gives for a templated block reduction: a weak_odr ptx_kernel
; (a template instance), dynamic shared memory (`extern __shared__ float
; smem[]`: an external addrspace(3) array, which PTX keeps `.extern .shared`
; and no loader resolves), static shared memory, __constant__ memory kept by
; llvm.compiler.used, a linkonce_odr device function asking __nvvm_reflect,
; warp shuffles, atomics, and a maxntid annotation.  No library calls: its
; PTX must equal opt-19 | llc-19's (compile_matches_llc.sh).
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@smem = external dso_local addrspace(3) global [0 x float], align 4
@_ZZ6reduceIfEvPKT_PS0_iE5warps = internal addrspace(3) global [32 x float] undef, align 4
@scale = dso_local addrspace(4) externally_initialized global float 1.000000e+00, align 4
@.str = private unnamed_addr constant [11 x i8] c"__CUDA_FTZ\00", align 1
@llvm.compiler.used = appending global [1 x ptr] [ptr addrspacecast (ptr addrspace(4) @scale to ptr)], section "llvm.metadata"

define weak_odr dso_local ptx_kernel void @_Z6reduceIfEvPKT_PS0_i(ptr noundef %in, ptr noundef %out, i32 noundef %n) #0 {
entry:
  %tid = call noundef i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ctaid = call noundef i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call noundef i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %ctaid, %ntid
  %i = add i32 %base, %tid
  %inside = icmp slt i32 %i, %n
  br i1 %inside, label %load, label %stage

load:
  %idx = sext i32 %i to i64
  %p = getelementptr inbounds float, ptr %in, i64 %idx
  %x = load float, ptr %p, align 4
  br label %stage

stage:
  %v = phi float [ %x, %load ], [ 0.000000e+00, %entry ]
  %c = load float, ptr addrspace(4) @scale, align 4
  %sv = call float @_Z5flushf(float %v)
  %scaled = fmul contract float %sv, %c
  %t64 = zext i32 %tid to i64
  %slot = getelementptr inbounds [0 x float], ptr addrspace(3) @smem, i64 0, i64 %t64
  store float %scaled, ptr addrspace(3) %slot, align 4
  call void @llvm.nvvm.barrier0()
  %mine = load float, ptr addrspace(3) %slot, align 4
  %s16 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %mine, i32 16, i32 31)
  %a16 = fadd contract float %mine, %s16
  %s8 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %a16, i32 8, i32 31)
  %a8 = fadd contract float %a16, %s8
  %s4 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %a8, i32 4, i32 31)
  %a4 = fadd contract float %a8, %s4
  %s2 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %a4, i32 2, i32 31)
  %a2 = fadd contract float %a4, %s2
  %s1 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %a2, i32 1, i32 31)
  %sum = fadd contract float %a2, %s1
  %lane = and i32 %tid, 31
  %warp = lshr i32 %tid, 5
  %w64 = zext i32 %warp to i64
  %wslot = getelementptr inbounds [32 x float], ptr addrspace(3) @_ZZ6reduceIfEvPKT_PS0_iE5warps, i64 0, i64 %w64
  %leader = icmp eq i32 %lane, 0
  br i1 %leader, label %publish, label %gather

publish:
  store float %sum, ptr addrspace(3) %wslot, align 4
  br label %gather

gather:
  call void @llvm.nvvm.barrier0()
  %first = icmp ult i32 %tid, 32
  br i1 %first, label %total, label %done

total:
  %t = zext i32 %lane to i64
  %tslot = getelementptr inbounds [32 x float], ptr addrspace(3) @_ZZ6reduceIfEvPKT_PS0_iE5warps, i64 0, i64 %t
  %partial = load float, ptr addrspace(3) %tslot, align 4
  %old = atomicrmw fadd ptr %out, float %partial monotonic, align 4
  br label %done

done:
  ret void
}

define linkonce_odr dso_local float @_Z5flushf(float noundef %x) #1 {
entry:
  %ftz = call i32 @__nvvm_reflect(ptr @.str)
  %on = icmp ne i32 %ftz, 0
  %tiny = fcmp olt float %x, 0x3810000000000000
  %both = and i1 %on, %tiny
  %r = select i1 %both, float 0.000000e+00, float %x
  ret float %r
}

declare i32 @__nvvm_reflect(ptr) #2
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x() #3
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x() #3
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x() #3
declare void @llvm.nvvm.barrier0() #4
declare float @llvm.nvvm.shfl.sync.bfly.f32(i32, float, i32, i32) #4

attributes #0 = { convergent mustprogress norecurse nounwind "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_80" "target-features"="+ptx70,+sm_80" "uniform-work-group-size"="true" }
attributes #1 = { convergent inlinehint mustprogress nounwind "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_80" "target-features"="+ptx70,+sm_80" }
attributes #2 = { convergent nounwind "target-cpu"="sm_80" "target-features"="+ptx70,+sm_80" }
attributes #3 = { nocallback nofree nosync nounwind speculatable willreturn memory(none) }
attributes #4 = { convergent nocallback nounwind }

!llvm.module.flags = !{!0, !1, !2, !3}
!nvvm.annotations = !{!4, !8}
!llvm.ident = !{!5, !6}
!nvvmir.version = !{!7}

!0 = !{i32 2, !"SDK Version", [2 x i32] [i32 11, i32 8]}
!1 = !{i32 1, !"wchar_size", i32 4}
!2 = !{i32 4, !"nvvm-reflect-ftz", i32 0}
!3 = !{i32 7, !"frame-pointer", i32 2}
!4 = !{ptr @_Z6reduceIfEvPKT_PS0_i, !"maxntidx", i32 1024}
!5 = !{!"clang version 19.1.7"}
!6 = !{!"clang version 3.8.0 (tags/RELEASE_380/final)"}
!7 = !{i32 2, i32 0}
!8 = !{ptr @_Z6reduceIfEvPKT_PS0_i, !"minctasm", i32 2}
