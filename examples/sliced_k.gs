# Sliced k (SIMT family): Inception module 3 has only 84 tiles of 32x32, fewer than the H100's 132 SMs, each a
# 4-warp block that waits on shared memory. `kslices 2` with 128 threads splits every k-tile over two slices of
# 64 threads; each slice sums its half of the k-tile over the whole 32x32 tile, in a 4x4 micro-tile per thread
# (3 shared loads per 8 FMAs with 2x4 become 4 per 16), and the two sums meet in shared memory before the
# epilogue. On the H100 this form runs the module in 5.1 us against 5.7-5.8 for the unsliced tile
# (bench/results/irregular/2026-11-23_h100_simt-slices.log); `tile auto` times it and the other slice forms on its first
# call (gemmc.runtime.tune) and keeps the fastest (docs/PERFORMANCE-irregular.md).
target cuda sm_90

kernel sliced_k {
  dtype  f32
  layout A row, B row, C row

  batch {
    b1x1   196 x 192 x 192
    b3x3r  196 x 16  x 192
    b5x5r  196 x 96  x 192
    pool   196 x 64  x 192
  }

  tile      32x32x32 kslices 2
  threads   128
}
