# Double precision: a small irregular batch, mixed layouts.
kernel dgemm_batch {
  dtype  f64
  layout A row, B col, C row
  alpha  2.0
  beta   0.5
  batch {
    p0  1   x 1   x 1
    p1  97  x 13  x 251
    p2  300 x 200 x 100
  }
}
