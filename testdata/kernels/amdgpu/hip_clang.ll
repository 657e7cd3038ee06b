; testdata/kernels/amdgpu/hip_clang.ll -- what `clang -x hip
; --cuda-device-only -emit-llvm` gives for a kernel that calls printf and
; the device libraries: a protected amdgpu_kernel, the
; amdhsa_code_object_version module flag (400: code object v4, gpucc's
; default), printf through the ockl hostcall functions (whose inline asm
; needs the AMDGPU assembler), __ocml_exp_f32 and __ockl_get_local_id,
; extern __shared__ memory (an external addrspace(3) [0 x float]: dynamic
; LDS, no external), and clang's full target-features list for gfx90a.
target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-p8:128:128-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9"
target triple = "amdgcn-amd-amdhsa"

@dyn = external addrspace(3) global [0 x float], align 4
@.str = private unnamed_addr addrspace(4) constant [12 x i8] c"x[%u] = %f\0A\00", align 1

define protected amdgpu_kernel void @_Z4expsPfj(ptr addrspace(1) noundef %x, i32 noundef %n) #0 {
entry:
  %lid = call i64 @__ockl_get_local_id(i32 noundef 0) #2
  %i = trunc i64 %lid to i32
  %inside = icmp ult i32 %i, %n
  br i1 %inside, label %body, label %done

body:
  %p = getelementptr inbounds float, ptr addrspace(1) %x, i64 %lid
  %v = load float, ptr addrspace(1) %p, align 4
  %e = call contract float @__ocml_exp_f32(float noundef %v) #2
  %cell = getelementptr inbounds [0 x float], ptr addrspace(3) @dyn, i32 0, i32 %i
  store float %e, ptr addrspace(3) %cell, align 4
  store float %e, ptr addrspace(1) %p, align 4
  %d = fpext float %e to double
  %bits = bitcast double %d to i64
  %h0 = call i64 @__ockl_printf_begin(i64 0) #2
  %fmt = addrspacecast ptr addrspace(4) @.str to ptr
  %h1 = call i64 @__ockl_printf_append_string_n(i64 %h0, ptr %fmt, i64 12, i32 0) #2
  %arg = zext i32 %i to i64
  %h2 = call i64 @__ockl_printf_append_args(i64 %h1, i32 2, i64 %arg, i64 %bits, i64 0, i64 0, i64 0, i64 0, i64 0, i32 1) #2
  br label %done

done:
  ret void
}

declare i64 @__ockl_get_local_id(i32 noundef) #1
declare float @__ocml_exp_f32(float noundef) #1
declare i64 @__ockl_printf_begin(i64) #1
declare i64 @__ockl_printf_append_string_n(i64, ptr, i64, i32) #1
declare i64 @__ockl_printf_append_args(i64, i32, i64, i64, i64, i64, i64, i64, i64, i32) #1

attributes #0 = { convergent mustprogress norecurse nounwind "amdgpu-flat-work-group-size"="1,1024" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="gfx90a" "target-features"="+16-bit-insts,+atomic-buffer-global-pk-add-f16-insts,+atomic-fadd-rtn-insts,+ci-insts,+dl-insts,+dot1-insts,+dot10-insts,+dot2-insts,+dot3-insts,+dot4-insts,+dot5-insts,+dot6-insts,+dot7-insts,+dpp,+gfx8-insts,+gfx9-insts,+gfx90a-insts,+gws,+image-insts,+mai-insts,+s-memrealtime,+s-memtime-inst,+wavefrontsize64" "uniform-work-group-size"="true" }
attributes #1 = { convergent nounwind "target-cpu"="gfx90a" }
attributes #2 = { convergent nounwind }

!llvm.module.flags = !{!0, !1, !2}
!opencl.ocl.version = !{!3}
!llvm.ident = !{!4}

!0 = !{i32 1, !"amdhsa_code_object_version", i32 400}
!1 = !{i32 1, !"amdgpu_printf_kind", !"hostcall"}
!2 = !{i32 1, !"wchar_size", i32 4}
!3 = !{i32 2, i32 0}
!4 = !{!"clang version 19.1.7"}
