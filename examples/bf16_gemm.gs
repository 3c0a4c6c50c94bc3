# bf16 storage on the Hopper TMA + wgmma loop (the hopper family), f32 accumulation: a 128 x 256 tile per block, a
# producer warp feeding two consumer warpgroups through 4 shared-memory stages, B multicast to clusters of 2.
# Build the generated .cu with -gencode=arch=compute_90a,code=sm_90a and link with -lcuda.
target cuda sm_90

kernel bf16_8192 {
  dtype bf16
  gemm  8192 x 8192 x 8192
}

# f16 inputs, an f32 C (the accumulators as they are), B column-major (K contiguous), beta at call time.
kernel f16_to_f32 {
  dtype  A f16, B f16, C f32
  layout A row, B col, C row
  alpha  1.0
  beta   runtime
  gemm   4096 x 14336 x 4096
}

# A GEMM of few output tiles and long K (a 4096 x 64 output is 32 tiles of 128 x 64 on 132 SMs): clusters of 3 blocks
# split each tile's 64 k-blocks and add their partial sums through distributed shared memory.
kernel gate_split_k {
  dtype bf16
  gemm  4096 x 64 x 4096
}
