# Sliced k (SIMT family): Inception module 3 has only 84 tiles of 32x32, fewer than the H100's 132 SMs, each a
# 4-warp block. `kslices 2` gives each tile 8 warps: two slices of 128 threads, each summing half of every k-tile
# over the whole 32x32 tile (its own 2x4 micro-tile), added up in shared memory before the epilogue. `tile auto`
# times this form on its first call (gemmc.runtime.tune) and keeps it where it is faster; on the H100 that is
# batches of few tiles with long K (10-11% there), 1-2% on this module (docs/PERFORMANCE-irregular.md).
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
  threads   256
}
