# One large GEMM on CUDA cores, exact FP32.
target cuda sm_90

kernel sgemm4096 {
  dtype f32
  gemm  4096 x 4096 x 4096
}
