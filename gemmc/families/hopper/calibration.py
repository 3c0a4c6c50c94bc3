"""The hopper family's calibration table: the thresholds its planner (planner.py) took from measurements, each with
the GPU, the reason it holds and the results file that shows it (gemmc/families/calibration.py)."""

from __future__ import annotations

from gemmc.families.calibration import H100, Measured

HALF = "bench/results/half/2026-11-26_h100_half.json"  # the kernel with direct stores of C from the accumulators
HALF_TMA_STORE = "bench/results/half/2026-11-26_h100_half-epilogue.json"  # the epilogue through TMA stores
TF32 = "bench/results/precision/2026-11-27_h100_tf32.json"  # `split tf32 x3`, two stages a chain
TF32_SUM1 = "bench/results/precision/2026-11-27_h100_tf32-sum1.json"  # the same, one stage a chain

SUM_STAGES = Measured(
    2, H100,
    why="`split tf32 x3`: the stages whose products (12 a stage) the tensor core sums from zero before the sum is "
        "added to the f32 total. The tensor core's f32 accumulation truncates (docs/PRECISION.md), an error that grows "
        "with the chain; two stages (24 products, 64 k) halve the additions to the total: 106.2 TFLOP/s at 8192^3 "
        "against 100.8 for one stage, error 5.1e-7 against 3.8e-7 (cuBLAS SGEMM 1.6e-6).",
    sources=(TF32, TF32_SUM1),
)

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

BAND_SWEEP = "bench/results/half/2026-11-27_h100_band-sweep.json"  # bands of 1-32 m-tiles, 7 shapes, 5 rounds
BAND_SWEEP_FEW = "bench/results/half/2026-11-27_h100_band-sweep-few-waves.json"  # 6 shapes of 2-4 waves, 7 rounds
MIDSIZE_SWEEP = "bench/results/half/2026-11-27_h100_midsize-sweep.json"  # every configuration of 3 one-wave GEMMs
MIDSIZE_SWEEP_2 = "bench/results/half/2026-11-27_h100_midsize-sweep-qkv-proj.json"  # the same, 3 more GEMMs, 5 rounds
NCU_BANDS = "bench/results/half/2026-11-27_h100_midsize_ncu-bands.csv"  # ffn1.dX in bands of 16 and 8 beside cuBLAS

ONE_WAVE_BAND = Measured(
    8, H100,
    why="The raster band (m-tiles walked m-fastest before the next n-tile) where every tile of the launch runs in the "
        "first wave: all tiles run at once whatever their order, but which blocks read one A or B tile at the same "
        "time is the band's, and with it how many reads the L2 serves (ncu, 2048x1024x4096: 3.9 M L2 read sectors in "
        "bands of 8 against 5.7 M in 16, cuBLAS 3.7 M; 25.7 against 28.1 us, cuBLAS 25.6). bf16 2048x1024x1024 "
        "(128 tiles of 128 x 128) took 8.8-9.0 us with bands of 1-8 m-tiles "
        "and 9.6 us with 16 or 32 in each of 5 rounds (cuBLAS 8.8-9.0); 2048x1024x4096 (B column-major) 26.0-26.5 "
        "with bands of 1-8 against 27.0 (a midsize sweep's three rounds: 26.1 against 28.4); 1024x4096x2048 has 8 "
        "m-tiles, which bands of 8, 16 and 32 walk alike (26.0-26.4 us). From two waves up the measurements disagree "
        "and 16 m-tiles stay: 4096x1024x1024 at tile N 128 (256 tiles, B column-major) took 14.6-14.8 us with bands "
        "of 8 against 16.4-16.7 with 16 in each of 5 rounds, "
        "8192x1024x1024 at N 128 (512 tiles) 29.3 against 30.3, but 4096x2048x4096, 4096x4096x4096 and "
        "8192x1024x1024 at N 256 showed no band ahead beyond the rounds' spread (5-10%), and with clusters of 2 the "
        "pairs' bands of 16 m-tiles were as fast as or faster than 8 at 8192x4096x4096 and 8192^3. Six more shapes "
        "of two to four waves without a pair, seven rounds: the best band was 1 on three, 2, 4 and 8 on one each, "
        "16 within 1% of the best on four (8192x1024x1024 31.1 us against 28.7 with bands of 4, where the midsize "
        "sweep had measured 16 and 8 level: 28.7 and 28.9).",
    sources=(BAND_SWEEP, BAND_SWEEP_FEW, MIDSIZE_SWEEP, MIDSIZE_SWEEP_2, NCU_BANDS),
)

SPLIT_SWEEP = "bench/results/half/2026-11-27_h100_fewtile-sweep.json"  # every (tile N, k-slices), first reduction
SPLIT = "bench/results/half/2026-11-27_h100_fewtile.json"  # the half suite's few-tile shapes, with and without split

SPLIT_KBLOCKS = Measured(
    36, H100,
    why="Split K (clusters of 2-4 blocks sharing a tile's k-blocks, partial sums added through distributed shared "
        "memory) costs about this many k-blocks of the tile, so the model splits only where the tiles leave SMs idle "
        "and K is long. At K 1024 no split beat one block per tile, whatever the slices and tile N: 4096x64x1024 "
        "8.67 us in 3 slices against 6.45, 4096x128x1024 8.72 against 6.42, 512x1024x1024 8.89 against 6.06; the "
        "cluster's wait and reduction add 2-3 us a tile, and the sweep's long-K row 4096x128x4096 ran 17.9 us "
        "either way. From 64 k-blocks up it pays: 4096x64x4096 13.45 us in 3 slices against 16.06, 4096x64x16384 "
        "54.7 against 61.4, 4096x128x16384 57.1 against 67.5 (2 slices). Fitted to the sweep (the first reduction, "
        "whose second arrival also fenced at GPU scope: 10 shapes, every tile N 64/128 and 1-4 slices) the cost is "
        "14-35 k-blocks and any value from 32 up picks every measured winner; on the suite's 9 shapes with the "
        "reduction as built, 10-40 does.",
    sources=(SPLIT, SPLIT_SWEEP),
)
