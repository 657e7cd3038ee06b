; testdata/kernels/bad/wrong_triple.ll -- a host (x86-64) module: no GPU
; target fits it.
target triple = "x86_64-unknown-linux-gnu"

define void @host(ptr %p) {
  store i32 1, ptr %p, align 4
  ret void
}
