# FP32 GEMM on FP16 tensor cores (paper 001): three products of round-to-nearest hi/lo parts (Ootomo's split,
# the default of `split f16 x3`; `method le` gives paper 001's truncating split). 8192^3 on an H100.
target cuda sm_90

kernel split8192 {
  dtype f32
  precision split f16 x3
  gemm  8192 x 8192 x 8192
}
