; testdata/kernels/driver_calls.ll -- a kernel calling what the CUDA driver
; provides to every module it loads: printf (vprintf), device-side malloc
; and free, and assert's __assertfail -- what CUDA C's printf and assert and
; CUDA.jl's @cuprintf and @cuassert compile to.  It also reads a variable
; nothing defines.  No triple: for NVIDIA targets these are externals the
; driver binds at load; for AMD targets the calls are unresolvable (HIP's
; printf goes through the device libraries' hostcalls instead).
@fmt = private unnamed_addr addrspace(1) constant [12 x i8] c"n = %d, %p\0A\00"
@file = private unnamed_addr addrspace(1) constant [17 x i8] c"driver_calls.ll\00\00"
@limit = external addrspace(1) global i32

declare i32 @vprintf(ptr, ptr)
declare ptr @malloc(i64)
declare void @free(ptr)
declare void @__assertfail(ptr, ptr, i32, ptr, i64)

define ptx_kernel void @report(i32 %n) {
  %args = alloca { i32, ptr }, align 8
  %buf = call ptr @malloc(i64 64)
  store i32 %n, ptr %args, align 8
  %slot = getelementptr inbounds { i32, ptr }, ptr %args, i32 0, i32 1
  store ptr %buf, ptr %slot, align 8
  %f = addrspacecast ptr addrspace(1) @fmt to ptr
  %r = call i32 @vprintf(ptr %f, ptr %args)
  call void @free(ptr %buf)
  %lim = load i32, ptr addrspace(1) @limit, align 4
  %bad = icmp sgt i32 %n, %lim
  br i1 %bad, label %fail, label %done
fail:
  %file = addrspacecast ptr addrspace(1) @file to ptr
  call void @__assertfail(ptr %f, ptr %file, i32 28, ptr %file, i64 1)
  br label %done
done:
  ret void
}

define amdgpu_kernel void @report_amd(i32 %n) {
  %f = addrspacecast ptr addrspace(1) @fmt to ptr
  %r = call i32 @vprintf(ptr %f, ptr null)
  ret void
}
