# Tall-and-skinny B: a 16384 x 16384 matrix times 16384 x 8 (paper 002, TSM2R). Memory-bound: A is read once.
# `algorithm auto` would pick TSM2R here too (m and k >= 8192; column-major A: n <= 32; row-major A: f32 n <= 24;
# f64 n <= 128 on sm_90's tensor cores); `gemmc inspect` shows the t1/t2/t3 model.
kernel tsm2r_16k {
  dtype     f32
  layout    A col, B col, C col
  gemm      16384 x 8 x 16384
  algorithm tsm2r
}
