"""The hopper family's calibration table: the thresholds its planner (planner.py) took from measurements, each with
the GPU, the reason it holds and the results file that shows it (gemmc/families/calibration.py)."""

from __future__ import annotations

from gemmc.families.calibration import H100, Measured

HALF = "bench/results/half/2026-11-26_h100_half.json"  # the kernel with direct stores of C from the accumulators
HALF_TMA_STORE = "bench/results/half/2026-11-26_h100_half-epilogue.json"  # the epilogue through TMA stores

CLUSTER_MIN_WAVES = Measured(
    4, H100,
    why="Clusters of 2 (B multicast to a pair of m-tiles) only from this many waves of tiles: below it the pair's "
        "lockstep and the multicast's latency cost more than the L2 traffic they save. Each shape timed with both "
        "sizes, with the TMA-store epilogue: cluster 1 ahead at 1024^3 (338 vs 245 TFLOP/s), 2048^3 (702 vs 652) "
        "and 4096^3 (705 vs 675, f16 688 vs 669), the tile counts under 4 waves; from 4 waves up the two are within "
        "the run's noise (about 2%: 8192^3 701 vs 695, 16384^3 700 vs 699, 16384 x 8192 x 8192 694 vs 690) but for "
        "16384 x 4096 x 4096 (cluster 1 ahead, 679 vs 661). With the earlier direct-store epilogue the same split "
        "held (cluster 2 ahead at 16384^3, 664 vs 642).",
    sources=(HALF_TMA_STORE, HALF),
)

SPLIT = "bench/results/half/2026-11-27_h100_fewtile-sweep.json"  # every (tile N, k-slices) on shapes of few tiles

SPLIT_KBLOCKS = Measured(
    36, H100,
    why="Split K (clusters of 2-4 blocks sharing a tile's k-blocks, partial sums added through distributed shared "
        "memory) costs about this many k-blocks of the tile per tile, so the model splits only where a tile's K is "
        "long and its tiles leave SMs idle. On 10 bf16 shapes of 16-512 tiles, each timed with tile N 64 and 128 and "
        "1-4 slices, no split beat the best unsplit kernel: 4096x64x1024 10.0 us at 3 slices against 6.7 unsplit, "
        "4096x128x1024 9.9 against 7.2, 512x1024x1024 9.9 against 6.2, 4096x128x4096 17.9 against 17.9. The "
        "kernels are bound by L2-to-SM traffic more than by idle SMs (split K leaves the bytes each tile reads "
        "unchanged and 4096x128x4096 moves about 5.2 TB/s either way), and the cluster's wait and reduction add "
        "about 3 us per tile: fitted to every row, the cost is 14-35 k-blocks, and 36 makes the model pick the "
        "measured winner on every shape.",
    sources=(SPLIT,),
)
