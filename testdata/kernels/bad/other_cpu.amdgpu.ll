; testdata/kernels/bad/other_cpu.amdgpu.ll -- saxpy whose function names
; another processor ("target-cpu"="gfx1030", wave32): LLVM would compile it as
; gfx10 code whatever the target, so any other target is an error.
target triple = "amdgcn-amd-amdhsa"

declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()

define amdgpu_kernel void @saxpy(i32 %n, float %a, ptr addrspace(1) %x, ptr addrspace(1) %y) #0 {
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
  %py = getelementptr inbounds float, ptr addrspace(1) %y, i64 %idx
  %vx = load float, ptr addrspace(1) %px, align 4
  %vy = load float, ptr addrspace(1) %py, align 4
  %ax = fmul float %a, %vx
  %r = fadd float %ax, %vy
  store float %r, ptr addrspace(1) %py, align 4
  br label %done

done:
  ret void
}

attributes #0 = { "amdgpu-flat-work-group-size"="1,256" "target-cpu"="gfx1030" "target-features"="+wavefrontsize32" }
