# Split k (SIMT family, sm_90): eight small GEMMs with long K give only 70 tiles of 32x32, so most SMs idle while
# each tile walks up to 13 k-tiles, one load round trip after another. `ksplit 3` launches every tile on the 3
# blocks of a thread-block cluster; each sums a third of the tile's k-tiles, and block 0 adds the other two's sums
# through distributed shared memory (in rank order: the result does not depend on timing) and writes C. On the
# H100 this is `tile auto`'s pick for the batch: 6.5 us against 8.5 for the same tile unsplit (tuning windows,
# bench/results/irregular/2026-11-23_h100_irregular_splitk-small.json). Where K is short the cluster's barriers cost more
# than they save, and `tile auto` keeps the unsplit tiles.
target cuda sm_90

kernel split_k {
  dtype  f32
  layout A row, B row, C row

  batch {
    p0  35  x 29  x 366
    p1  108 x 61  x 96
    p2  28  x 112 x 96
    p3  73  x 61  x 252
    p4  113 x 87  x 311
    p5  102 x 123 x 123
    p6  105 x 122 x 412
    p7  44  x 87  x 371
  }

  tile      32x32x32 kslices 2 ksplit 3
  threads   128
}
