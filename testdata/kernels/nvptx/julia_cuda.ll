; testdata/kernels/nvptx/julia_cuda.ll -- in the style of CUDA.jl's
; GPUCompiler.jl output: the older NVPTX data layout, kernels marked only by
; !nvvm.annotations "kernel" (no ptx_kernel calling convention), mangled
; kernel names, internal Julia functions whose names PTX cannot spell
; ("julia_#scale#1_1234": LLVM renames local symbols), CuDynamicSharedArray's
; `@shmem` (an external addrspace(3) [0 x i8]: dynamic shared memory, no
; external), a libdevice call, a reqntid annotation, a device function kept
; by llvm.used, a linkonce_odr helper, and a linkonce_odr kernel (nothing
; calls it: the optimiser used to drop it, leaving the entry without it).
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@shmem = external addrspace(3) global [0 x i8], align 32
@"julia_#exception_msg#2" = private unnamed_addr constant [9 x i8] c"overflow\00", align 1
@llvm.used = appending global [1 x ptr] [ptr @julia_probe_77], section "llvm.metadata"

define internal fastcc float @"julia_#scale#1_1234"(float %x, float %y) unnamed_addr #0 {
top:
  %m = fmul float %x, %y
  %e = call float @__nv_expf(float %m)
  ret float %e
}

define linkonce_odr float @julia_clamp_88(float %x) unnamed_addr #0 {
top:
  %lo = call float @llvm.maxnum.f32(float %x, float 0.000000e+00)
  %hi = call float @llvm.minnum.f32(float %lo, float 1.000000e+00)
  ret float %hi
}

define i32 @julia_probe_77() #0 {
top:
  %w = call i32 @llvm.nvvm.read.ptx.sreg.warpsize()
  ret i32 %w
}

define void @_Z6smooth13CuDeviceArrayI7Float32Li1ELi1EES0_({ i64, i32 } %state, { ptr addrspace(1), i64, [1 x i64], i64 } %a, float %f) local_unnamed_addr #0 {
conversion:
  %ptr = extractvalue { ptr addrspace(1), i64, [1 x i64], i64 } %a, 0
  %len = extractvalue { ptr addrspace(1), i64, [1 x i64], i64 } %a, 1
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %bdim = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %b = mul i32 %bid, %bdim
  %g = add i32 %b, %tid
  %i = zext i32 %g to i64
  %ok = icmp ult i64 %i, %len
  br i1 %ok, label %L12, label %L30

L12:
  %src = getelementptr inbounds float, ptr addrspace(1) %ptr, i64 %i
  %v = load float, ptr addrspace(1) %src, align 4
  %t = zext i32 %tid to i64
  %cell = getelementptr inbounds float, ptr addrspace(3) @shmem, i64 %t
  store float %v, ptr addrspace(3) %cell, align 4
  call void @llvm.nvvm.barrier0()
  %n = xor i64 %t, 1
  %other = getelementptr inbounds float, ptr addrspace(3) @shmem, i64 %n
  %w = load float, ptr addrspace(3) %other, align 4
  %s = fadd float %v, %w
  %r = call fastcc float @"julia_#scale#1_1234"(float %s, float %f)
  %c = call float @julia_clamp_88(float %r)
  store float %c, ptr addrspace(1) %src, align 4
  br label %L30

L30:
  ret void
}

define void @_Z4fill13CuDeviceArrayI7Float32Li1ELi1EE({ i64, i32 } %state, { ptr addrspace(1), i64, [1 x i64], i64 } %a) local_unnamed_addr #0 {
conversion:
  %ptr = extractvalue { ptr addrspace(1), i64, [1 x i64], i64 } %a, 0
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %i = zext i32 %tid to i64
  %dst = getelementptr inbounds float, ptr addrspace(1) %ptr, i64 %i
  store float 1.000000e+00, ptr addrspace(1) %dst, align 4
  ret void
}

define linkonce_odr void @_Z5clear13CuDeviceArrayI7Float32Li1ELi1EE({ i64, i32 } %state, { ptr addrspace(1), i64, [1 x i64], i64 } %a) local_unnamed_addr #0 {
conversion:
  %ptr = extractvalue { ptr addrspace(1), i64, [1 x i64], i64 } %a, 0
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %i = zext i32 %tid to i64
  %dst = getelementptr inbounds float, ptr addrspace(1) %ptr, i64 %i
  store float 0.000000e+00, ptr addrspace(1) %dst, align 4
  ret void
}

declare float @__nv_expf(float)
declare float @llvm.maxnum.f32(float, float)
declare float @llvm.minnum.f32(float, float)
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.warpsize()
declare void @llvm.nvvm.barrier0() #1

attributes #0 = { "target-cpu"="sm_80" "target-features"="+ptx70" }
attributes #1 = { convergent nounwind }

!llvm.module.flags = !{!0, !1}
!nvvm.annotations = !{!2, !3, !4, !6}
!julia.kernel = !{!5}

!0 = !{i32 2, !"Dwarf Version", i32 2}
!1 = !{i32 2, !"Debug Info Version", i32 3}
!2 = !{ptr @_Z6smooth13CuDeviceArrayI7Float32Li1ELi1EES0_, !"kernel", i32 1}
!3 = !{ptr @_Z6smooth13CuDeviceArrayI7Float32Li1ELi1EES0_, !"reqntidx", i32 256}
!4 = !{ptr @_Z4fill13CuDeviceArrayI7Float32Li1ELi1EE, !"kernel", i32 1}
!5 = !{ptr @_Z6smooth13CuDeviceArrayI7Float32Li1ELi1EES0_}
!6 = !{ptr @_Z5clear13CuDeviceArrayI7Float32Li1ELi1EE, !"kernel", i32 1}
