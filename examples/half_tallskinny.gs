# Tall-and-skinny GEMMs on bf16/f16 storage (paper 002's TSM2R and TSM2L): memory-bound, so half the bytes of f32
# data is half the time. TSM2R copies A's columns into shared memory as they are (8 halves, 16 bytes, per lane) and
# widens them as the FMAs read them; TSM2L reads rows of A in vectors of 8 halves. On sm_90 `algorithm auto` gives
# these shapes to the hopper family's TMA loop instead, which streams them faster (gemmc/families/streaming.py).
target cuda sm_80

# A large A (column-major, the paper's layout) times a tall-and-skinny B.
kernel tsm2r_bf16 {
  dtype  bf16
  layout A col, B row, C col
  gemm   16384 x 16 x 16384
}

# A tall-and-skinny A times a small B, C in f32.
kernel tsm2l_f16 {
  dtype  A f16, B f16, C f32
  layout A row, B row, C row
  gemm   4000000 x 16 x 16
}
