# Tall-and-skinny A: 10^7 x 16 times 16 x 16 (paper 002, TSM2L), row-major, f64.
kernel tsm2l_10m {
  dtype     f64
  gemm      10000000 x 16 x 16
  algorithm tsm2l
}
