; testdata/kernels/nvptx/debug_info.ll -- a kernel with full debug info, as
; clang -g or CUDA.jl with debuginfo=2 emit it.  With -g, LLVM 19 writes
; DWARF name tables into the PTX as label differences, which ptxas and the
; driver's JIT accept only from PTX ISA 7.5: compile refuses -g for older
; PTX (sm_80's default ptx70) with a message, instead of PTX that fails in
; ptxas or, without ptxas here, on the user's GPU.
target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @fill(ptr addrspace(1) %p, float %v) !dbg !5 {
  %i = call i32 @llvm.nvvm.read.ptx.sreg.tid.x(), !dbg !9
  %q = getelementptr inbounds float, ptr addrspace(1) %p, i32 %i, !dbg !9
  store float %v, ptr addrspace(1) %q, align 4, !dbg !10
  ret void, !dbg !11
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3, !4}
!0 = distinct !DICompileUnit(language: DW_LANG_C99, file: !1, producer: "gpucc test", isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug)
!1 = !DIFile(filename: "fill.cu", directory: "/src")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = !{i32 7, !"Dwarf Version", i32 4}
!5 = distinct !DISubprogram(name: "fill", scope: !1, file: !1, line: 1, type: !6, scopeLine: 1, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
!6 = !DISubroutineType(types: !7)
!7 = !{null}
!9 = !DILocation(line: 2, column: 11, scope: !5)
!10 = !DILocation(line: 3, column: 8, scope: !5)
!11 = !DILocation(line: 4, column: 1, scope: !5)
