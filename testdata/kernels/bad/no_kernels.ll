; testdata/kernels/bad/no_kernels.ll -- valid IR, no triple, but no kernel:
; only a device function.
define float @helper(float %x) {
  %r = fmul float %x, 2.0
  ret float %r
}
