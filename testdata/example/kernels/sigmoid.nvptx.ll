; testdata/example/kernels/sigmoid.nvptx.ll -- the example package's NVIDIA
; activation kernel: y[i] = 1 / (1 + exp(-x[i])), through libdevice's
; __nv_expf.  `gpucc compile` links libdevice when it is installed.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare float @__nv_expf(float)

define ptx_kernel void @sigmoid(i32 %n, ptr addrspace(1) %x, ptr addrspace(1) %y) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %ctaid, %ntid
  %i = add i32 %base, %tid
  %inside = icmp slt i32 %i, %n
  br i1 %inside, label %body, label %done

body:
  %idx = sext i32 %i to i64
  %px = getelementptr inbounds float, ptr addrspace(1) %x, i64 %idx
  %vx = load float, ptr addrspace(1) %px, align 4
  %neg = fneg float %vx
  %e = call float @__nv_expf(float %neg)
  %den = fadd float %e, 1.0
  %r = fdiv float 1.0, %den
  %py = getelementptr inbounds float, ptr addrspace(1) %y, i64 %idx
  store float %r, ptr addrspace(1) %py, align 4
  br label %done

done:
  ret void
}
