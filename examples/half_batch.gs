# bf16/f16 storage in the SIMT family: halves read in 16-byte vectors and widened to f32, f32 FMAs (a product of two
# halves is exact in f32), C rounded to its type as it is stored. It runs on every target (here sm_80, which has
# neither TMA nor wgmma) and computes a whole batch in one launch.
target cuda sm_80

# An irregular batch of bf16 GEMMs (the layers of a small model), B column-major.
kernel bf16_batch {
  dtype  bf16
  layout A row, B col, C row
  batch {
    qkv   197 x 2304 x 768
    proj  197 x 768  x 768
    up    197 x 3072 x 768
    down  197 x 768  x 3072
  }
}

# A uniform batch of f16 GEMMs with an f32 C (the accumulators as they are), beta at call time.
kernel f16_count {
  dtype  A f16, B f16, C f32
  beta   runtime
  gemm   384 x 384 x 64 count 48
}
