; testdata/kernels/bad/invalid_module.ll -- parses, but is not valid IR: each
; instruction uses the other before it is defined, which LLVM's verifier
; reports over three lines.  No triple, so it fails the same way for every
; target.

define void @k() {
  %a = add i32 %b, 1
  %b = add i32 %a, 1
  ret void
}
