"""The SIMT family's calibration table: the tile catalogue's measured choices, the cost model's fitted constants and
the thresholds of batching and split k that its planner (planner.py, tiling.py) uses, each with the GPU, the reason
it holds and the results files that show it (gemmc/families/calibration.py). Times are medians in us."""

from __future__ import annotations

from types import MappingProxyType

from gemmc.families.calibration import H100, Measured

R = "bench/results/irregular/"

# --- Tile catalogues ---------------------------------------------------------------------------------------------

UNIFORM_F32 = Measured(
    # (bm, bn, bk, tm, tn, threads), largest first
    ((128, 128, 16, 8, 8, 256), (64, 64, 16, 4, 4, 256), (32, 32, 32, 2, 4, 128)),
    H100,
    why="The uniform f32 catalogue. 8x8 micro-tiles give 2 FMAs per shared-memory byte read. 128x128 takes k steps "
        "of 16 (at 4096^3 44.1-45.0 TFLOP/s in the runs below, each against its own candidates): against 36.2 with "
        "steps of 8, although 16 holds one block per SM (203 registers) and 8 two (128): a k-tile's turnaround "
        "(staged stores, barrier) costs more than the second block hides, and steps of 24 and 32 give 42.9 and "
        "44.2 against 45.0. A loop that keeps two blocks without a spill (k-tiles by cp.async, fragments "
        "double-buffered; 124-128 registers) runs 39.4 (steps of 8) and 42.7 (16) TFLOP/s against 44.6, and 8x16 "
        "micro-tiles (128x256x16) tie: the tile is bound by issue (80.5% of the scheduler cycles, cuBLAS 88%), not "
        "by occupancy. The small tiles are latency-bound and take long k steps; 32x32 with 128 threads is "
        "5-8% faster than with 256 on three Inception modules (8.4-8.5 against 9.1 us).",
    sources=(R + "2026-11-22_h100_simt_occupancy_call1.log", R + "2026-11-22_h100_simt_tiles_call2.log",
             "bench/results/uniform/2026-11-27_h100_simt-pipelined.json",
             "bench/results/uniform/2026-11-27_h100_simt-pipelined-wide.json",
             "bench/results/uniform/2026-11-27_h100_simt-pipelined-ncu.csv",
             "bench/results/uniform/2026-11-27_h100_simt-bk.json"),
)
LOADBALANCED_BK = Measured(
    MappingProxyType({128: 32, 256: 16}),  # block threads -> k per step
    H100,
    why="k per step of the load-balanced ladder's levels, by block threads. The 128-thread levels' blocks are "
        "latency-bound (each k step waits for a global load): 12 k steps of 16 take 8.6 us where 24 steps of 8 "
        "take 15.3, so they take 32, twice the paper's Tk = 16. The 256-thread levels take 16 (128x128 at 4096^3: "
        "44.1 TFLOP/s against 36.2 with 8).",
    sources=(R + "2026-11-22_h100_irregular_quick_run1.json", R + "2026-11-22_h100_simt_occupancy_call1.log"),
)
MIN_SLICE_OUTPUTS = Measured(
    16, H100,
    why="Outputs per thread of a k slice: 4x4 at least. Slices that keep a 2x4 micro-tile (32x32x32 in 2 slices "
        "of 128 threads) wait on the shared-memory instruction queue, 3 shared loads per 8 FMAs however many warps "
        "share them; 4x4 and 4x8 slices run the Inception modules 10-17% faster (all 34: 22.7 -> 15.8 us; "
        "MN, K <= 512 x8: 22.5 -> 19.0).",
    sources=(R + "2026-11-23_h100_simt-slices.log", R + "2026-11-23_h100_ncu-inception3-sliced2_details.txt"),
)

# --- The cost model (tiling.estimate) ------------------------------------------------------------------------------

STEP_OVERHEAD = Measured(
    40, H100,
    why="Instructions per thread per k step besides the FMAs and fragment loads (the k-tile's global loads, staging "
        "stores, barrier, addressing), fitted to the first H100 run of the irregular benchmark. With it the "
        "simulated launch ranks the candidates of gemmc/bench/irregular.py's 26 cases within 2.6% of the fastest "
        "measured (geometric mean; worst 14%; bench/experiments/cost_model.py replays them).",
    sources=(R + "2026-11-22_h100_irregular_quick_run1.json", R + "2026-11-23_h100_irregular_slices.json"),
)
STEP_LATENCY_CYCLES = Measured(
    1000, H100,
    why="One k step of a lone block: a global load's round trip plus a barrier. A lone wave of 32x32x32 tiles "
        "(inception-3's tiles at K = 1 to 512) takes 0.54 us more per k step, about 950 cycles.",
    sources=(R + "2026-11-22_h100_simt-floor.log",),
)
SPLIT_STEPS = Measured(
    5, H100,
    why="A split k's cost beyond its share of the k steps, in k steps: the cluster launch (~1 us), the barrier "
        "where rank 0 waits for the others' sums and its reads of them. 5 ranks the 18 small cases within 7.2% "
        "of the fastest (geometric mean; 1 step: 27%, picking splits up to 1.9x slower) and the 26 cases of the "
        "suite within 4.2% (3 or 4 steps: 4.5%; bench/experiments/cost_model.py replays them).",
    sources=(R + "2026-11-23_h100_simt-split-cost4.log", R + "2026-11-23_h100_irregular_splitk-small.json",
             R + "2026-11-23_h100_irregular_stop14-final.json"),
)

# --- Split k and batching -------------------------------------------------------------------------------------

MAX_KSPLIT = Measured(
    4, H100,
    why="tile auto offers clusters of 2 to 4 blocks per tile for launches of less than a wave. Without the "
        "reduction's cost (each GEMM as s GEMMs of k / s) s = 2-4 runs the small batches 4-35% faster (MN <= 128 "
        "K <= 512 x8: 9.07 / 6.93 / 5.98 / 5.94 us at s = 1-4; the 34 Inception GEMMs in one launch are slower at "
        "every s). The real split pays about 1 us more and wins where K is long (that case 9.3 -> 7.7 us at 2).",
    sources=(R + "2026-11-23_h100_simt-splitk-proxy.log", R + "2026-11-23_h100_simt-split-cost4.log"),
)
BATCHING_MIN_WAVES = Measured(
    24, H100,
    why="Threshold batching pays only on long launches: of 154 tilings timed both ways it is faster for 37, 30 of "
        "them with 24 or more waves of blocks (up to 39% faster; 23 with median K <= 128), the other 7 by at most "
        "6%; on shorter launches it is up to 2.9x slower. With 24 waves the rule is right for 138 of the 154, "
        "with 4 for 109.",
    sources=(R + "2026-11-23_h100_irregular_slices.json",),
)
