# Two independent GEMMs of a Transformer layer's backward pass (paper 004): the output projection's dX and dW at
# 1024 tokens, hidden 512. `gemmc inspect` shows what `concurrency auto` decided and why; `gemmc compile` writes
# pair.cu / pair.h, a launcher that runs both on the caller's stream (capturable in a CUDA graph), and each member's
# own pair_dX.* and pair_dW.*, which pair.cu does not need (`--kernel pair` writes pair.cu / pair.h alone).
target cuda sm_90

group pair {
  concurrency auto
  gemm dX 1024 x 512 x 512 { layout B col }   # dY (T x H) times W^T
  gemm dW 512 x 512 x 1024 { layout A col }   # X^T (H x T) times dY
}
