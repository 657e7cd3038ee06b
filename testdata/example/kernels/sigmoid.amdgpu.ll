; testdata/example/kernels/sigmoid.amdgpu.ll -- the example package's AMD
; activation kernel: y[i] = 1 / (1 + exp(-x[i])), through the ROCm device
; libraries' __ocml_exp_f32.
target triple = "amdgcn-amd-amdhsa"

declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare float @__ocml_exp_f32(float)

define amdgpu_kernel void @sigmoid(i32 %n, ptr addrspace(1) %x, ptr addrspace(1) %y) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %gid = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %gid, 256
  %i = add i32 %base, %tid
  %inside = icmp slt i32 %i, %n
  br i1 %inside, label %body, label %done

body:
  %idx = sext i32 %i to i64
  %px = getelementptr inbounds float, ptr addrspace(1) %x, i64 %idx
  %vx = load float, ptr addrspace(1) %px, align 4
  %neg = fneg float %vx
  %e = call float @__ocml_exp_f32(float %neg)
  %den = fadd float %e, 1.0
  %r = fdiv float 1.0, %den
  %py = getelementptr inbounds float, ptr addrspace(1) %y, i64 %idx
  store float %r, ptr addrspace(1) %py, align 4
  br label %done

done:
  ret void
}

attributes #0 = { "amdgpu-flat-work-group-size"="1,256" }
