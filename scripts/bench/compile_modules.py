#!/usr/bin/env python3
"""scripts/bench/compile_modules.py WORK N FUNCS -- the modules the compile
benchmarks compile: N distinct modules per vendor in WORK/nv and WORK/amd,
FUNCS device functions and 4 kernels each, no library calls (so that the
LLVM tools a peer runs make the same compile)."""
import struct, sys
work, n, funcs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def const(v):
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", v))[0]
heads = {
    "nv": ('target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"\n'
           'target triple = "nvptx64-nvidia-cuda"\n'
           "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n", "ptx_kernel", "@llvm.nvvm.read.ptx.sreg.tid.x"),
    "amd": ('target triple = "amdgcn-amd-amdhsa"\n'
            "declare i32 @llvm.amdgcn.workitem.id.x()\n", "amdgpu_kernel", "@llvm.amdgcn.workitem.id.x"),
}
for vendor, (head, cc, tid) in heads.items():
    for m in range(n):
        out = [head]
        for i in range(funcs):
            call = f"  %c = call float @f{i-1}(float %b)\n  %r = fmul float %c, %a\n" if i else "  %r = fmul float %b, %a\n"
            out.append(f"define internal float @f{i}(float %x) noinline {{\n"
                       f"  %a = fadd float %x, {const(m + i / 8)}\n  %b = fmul float %a, %x\n{call}  ret float %r\n}}\n")
        for k in range(4):
            out.append(f"define {cc} void @m{m}_k{k}(ptr addrspace(1) %p, i32 %n) {{\n"
                       f"entry:\n  %t = call i32 {tid}()\n  %i = zext i32 %t to i64\n"
                       f"  %q = getelementptr inbounds float, ptr addrspace(1) %p, i64 %i\n"
                       f"  %v = load float, ptr addrspace(1) %q, align 4\n  br label %loop\n"
                       f"loop:\n  %j = phi i32 [ 0, %entry ], [ %j1, %loop ]\n  %acc = phi float [ %v, %entry ], [ %r, %loop ]\n"
                       f"  %r = call float @f{(funcs - 1 - k) % funcs}(float %acc)\n  %j1 = add i32 %j, 1\n"
                       f"  %more = icmp slt i32 %j1, %n\n  br i1 %more, label %loop, label %done\n"
                       f"done:\n  store float %r, ptr addrspace(1) %q, align 4\n  ret void\n}}\n")
        open(f"{work}/{vendor}/m{m:03d}.ll", "w").write("".join(out))
