# Column-major operands (BLAS convention), alpha and beta given at call time.
kernel colmajor {
  dtype  f32
  layout A col, B col, C col
  alpha  runtime
  beta   runtime
  gemm   1000 x 777 x 333
}
