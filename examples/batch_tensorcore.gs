# An irregular batch on tensor cores: FP32 accuracy from the f16 x3 split, every GEMM in one launch through
# the work list (one output tile per block).
target cuda sm_90

kernel tc_batch {
  dtype f32
  precision split f16 x3
  batch {
    g1  1024 x 1024 x 512
    g2  257 x 129 x 1000
    g3  64 x 4096 x 256
    g4  1 x 1 x 1
  }
}
