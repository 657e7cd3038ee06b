; testdata/kernels/bad/unresolved_call.ll -- a kernel calling a function that
; nothing defines (neither the module nor a device library).  No triple: it
; fails the same way for NVIDIA and AMD targets.
declare float @not_defined_anywhere(float)

define ptx_kernel void @calls_missing(ptr addrspace(1) %p) {
  %v = load float, ptr addrspace(1) %p, align 4
  %r = call float @not_defined_anywhere(float %v)
  store float %r, ptr addrspace(1) %p, align 4
  ret void
}

define amdgpu_kernel void @calls_missing_amd(ptr addrspace(1) %p) {
  %v = load float, ptr addrspace(1) %p, align 4
  %r = call float @not_defined_anywhere(float %v)
  store float %r, ptr addrspace(1) %p, align 4
  ret void
}
