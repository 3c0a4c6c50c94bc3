# One Inception module (paper 000, Table 6, module 3): four GEMMs that share M = 196 (14 x 14 output
# positions) and K = 192 input channels. No tile divides 196: the edges are predicated.
target cuda sm_90

kernel inception3 {
  dtype  f32
  layout A row, B row, C row
  alpha  1.0
  beta   0.0

  batch {
    b1x1   196 x 192 x 192
    b3x3r  196 x 16  x 192
    b5x5r  196 x 96  x 192
    pool   196 x 64  x 192
  }

  tile      auto
  threads   auto
  batching  auto
  precision f32
  pipeline  stages 2
  algorithm auto
}
