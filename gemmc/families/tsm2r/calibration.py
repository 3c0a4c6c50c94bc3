"""TSM2R's calibration table: the thresholds, crossovers and shapes its planner (planner.py) takes from
measurements, each with the GPU, the reason it holds and the results files that show it
(gemmc/families/calibration.py). Times are medians in us; "the roof" is a device-to-device copy of the same bytes
timed in the same process; A is m x k, B k x n."""

from __future__ import annotations

from gemmc.families.calibration import H100, Measured

R = "bench/results/tallskinny/"
RESULTS = "bench/results/"

# --- Row-major A on sm_90's f64 tensor cores (the column kernel, its batches copied by rows) ---------------------

ROW_T3_BATCH = Measured(
    32, H100,
    why="A batch copies a piece of every row of the tile, and longer pieces stream closer to the roof: at m = k = "
        "16384, f64 n = 16 / 32, pieces of 4 k (32 bytes) run at 61% of the roof, of 8 k at 62%, of 16 k at 90%; "
        "pieces of 32 k (256 bytes, one 172 KiB block per SM) take n = 16 from 778 to 727 us at 16384 and from "
        "2720 to 2546 at 30720 (92% -> 98% of the roof). At n = 32, where the batches of four 1-warp slices take "
        "205 KiB, 32 k still wins: 747 / 2649 us at 16384 / 30720 for one slice of 4 warps that share B and "
        "751 / 2707 for 1-warp slices, against 789 / 2780 with 16 k. So every n takes 32.",
    sources=(R + "2026-11-23_h100_tsm2r-rowt3.json", R + "2026-11-23_h100_tsm2r-rowt32.json",
             R + "2026-11-23_h100_tsm2r-rowgroups2.json"),
)
ROW_WIDE_MIN_N = Measured(
    17, H100,
    why="Where the tuning step looks changes at this width. Up to 16 columns the choice that matters is 32 or 64 "
        "rows per warp (at m = k = 8192, where 64-row tiles are fewer than the SMs, 32 rows are 1.8-2.6% faster at "
        "n = 1-16); from 24 columns the shapes that share B or halve the rows per warp are (32 rows in 2-warp "
        "slices: 194 against 212 us for the model's 4-warp slice at 8192, n = 24). 16 and 24 are the nearest "
        "widths measured on either side.",
    sources=(R + "2026-11-23_h100_tsm2r-rowsmall2.json", R + "2026-11-23_h100_tsm2r-rowwide.json",
             R + "2026-11-23_h100_tsm2r-row8192.json"),
)
ROW_MMA_GROUPS = Measured(
    4, H100,
    why="From ROW_WIDE_MIN_N columns the tuning step also times one k slice of 4 warps that share the slice's "
        "batches of B: at its best cluster it is the fastest shape at n = 32 (747 / 2649 us at m = k = 16384 / "
        "30720, against 751 / 2707 for 1-warp slices). The model's cluster for it is not its best (at 8192, "
        "n = 24, clusters of 3 took 212 us where 1-warp slices at cluster 1 took 197; past n = 32 1-warp slices at "
        "cluster 1 are 0-13% faster than the model's pick), so the plan keeps 4 slices of one warp and this "
        "shape is only timed.",
    sources=(R + "2026-11-23_h100_tsm2r-rowgroups2.json", R + "2026-11-23_h100_tsm2r-rowwide.json"),
)
ROW_ALT_GROUPS = Measured(
    2, H100,
    why="The other shape the tuning step times from ROW_WIDE_MIN_N columns: 32 rows per warp in k slices of 2 "
        "warps. At m = k = 8192 / 16384, n = 32, it took 194 / 731 us, against 198 / 741 for 64 rows per warp in "
        "the same slices and 200 / 749 for 1-warp slices.",
    sources=(R + "2026-11-23_h100_tsm2r-row8192.json",),
)
ROW_ALT_MAX_CLUSTER = Measured(
    2, H100,
    why="The tuning step times the other row counts (ROW_ALT_GROUPS, and 32 against 64 rows per warp below "
        "ROW_WIDE_MIN_N) at clusters of 1-2 only, which hold their fastest time in every case measured but one: "
        "at m = k = 8192 / 16384, n = 32, 32-row shapes take 194 / 731 us at clusters of 1-2 and 279 / 941 at 4; "
        "below 17 columns clusters of 4 are 1% ahead once (m = k = 30720, n = 2: 2477 against 2500 us).",
    sources=(R + "2026-11-23_h100_tsm2r-row8192.json", R + "2026-11-23_h100_tsm2r-rowsmall2.json"),
)
ROW_MMA_REGS = Measured(
    232, "sm_90 and sm_80 (ptxas, no GPU)",
    why="A floor on the register estimate of row-major A on the f64 tensor cores, which the column kernel's "
        "formula puts at 68-96 for n < 8. On sm_90 it changes no plan: one or two blocks per SM fit by shared "
        "memory (t3 32 / 16), and ptxas gives 124-254 registers with no spills at n = 1-32. On sm_80 (m8n8k4, "
        "t3 4, untimed) it keeps the request at 2 blocks per SM: without it the plan asks for 5-6 blocks and "
        "ptxas spills 28 bytes at n = 3.",
    sources=(RESULTS + "checks/2026-11-23_devhost_stop15_tsm2_registers.txt",),
)
ROW_MMA_MIN_N = Measured(
    0, H100,
    why="On sm_90 row-major f64 runs on the tensor cores from n = 1: with batches of 32 k they take 707 / 710 us at "
        "m = k = 16384, n = 1 / 2, where the row kernel takes 746 / 759, 2500 against 2598 / 2662 at 30720, and "
        "they tie at 8192 (185-189 us both).",
    sources=(R + "2026-11-23_h100_tsm2r-rowsmall.json",),
)
ROW_MMA_MIN_N_SM80 = Measured(
    2, H100,
    why="Row-major f64 on sm_80's tensor cores (batches of 4 k) from n = 3: with short batches the row kernel is "
        "ahead at n <= 2 (747 / 757 us at m = k = 16384, n = 1 / 2, against 776-780 / 769-777 on the tensor "
        "cores) and behind from n = 4 (862 against 769-773; 1796 against 771 at n = 8). Measured on the H100 with "
        "batches of 16 k, the nearest form to sm_80's; sm_80 itself is untimed.",
    sources=(R + "2026-11-23_h100_tsm2r-rowmma.json",),
)

# --- Row-major A on the CUDA cores -----------------------------------------------------------------------------

ROW_KERNEL_MAX_N = Measured(
    1, H100,
    why="The row kernel (a warp per group of rows, the lanes splitting k) keeps n = 1 and the column kernel with A "
        "copied by rows takes n >= 2. Copied by rows, n = 2 takes 392 / 1354 us at m = k = 16384 / 30720 where "
        "the row kernel takes 360 / 1285 at n = 1, and 102 us at 8192 where the row kernel takes 124 at n = 1 "
        "(the tuning step times both there); at n = 8 / 16 / 32 the column kernel by rows takes 400 / 505 / 931 "
        "us against the row kernel's 851 / 2321 / 3979.",
    sources=(R + "2026-11-23_h100_tallskinny-tsm2r-f32-rowmajor-n2.json", R + "2026-11-23_h100_tsm2r-rowfma2.json"),
)
ROW_FMA_ROWS = Measured(
    2, H100,
    why="Rows per lane of the column kernel with row-major A on the FMAs: each lane reads its rows as 16-byte "
        "vectors from rows an odd number of vectors apart (no bank conflicts). At m = k = 16384, f32 n = 8 / 16, "
        "2 rows per lane take 400 / 505 us at their best cluster, 4 rows 402 / 569 (more registers: fewer "
        "resident warps).",
    sources=(R + "2026-11-23_h100_tsm2r-rowfma2.json",),
)
ROW_FMA_PIECE = Measured(
    128, H100,
    why="Bytes of each row per batch (32 f32): at m = k = 16384, f32 n = 8 / 16, with 4 rows per lane, 128-byte "
        "pieces take 402 / 569 us and 64-byte pieces 570 / 574. 256-byte pieces are 2-6% faster at n = 4-8, "
        "inside what the tuning step's cluster and row choices move, and slower at n = 16 (2-5% with one row "
        "per lane, 30-40% with two).",
    sources=(R + "2026-11-23_h100_tsm2r-rowfma2.json", R + "2026-11-23_h100_tsm2r-rowfma4-bcrow.json"),
)

# --- The column kernel: rings, clusters, registers -----------------------------------------------------------

STAGES = Measured(
    2, H100,
    why="Batches in a warp's shared-memory ring where the resident warps meet Little's law with one in flight "
        "(`ring_stages` deepens it only where they cannot): where an SM holds 12+ warps, each warp's batch loop, "
        "not its bytes in flight, is what limits. At m = k = 8192 / 30720, 2 stages are within 1% of the best "
        "depth timed (2-8), or faster, by up to 9%.",
    sources=(R + "2026-11-22_h100_tsm2r-variants_run2.json",),
)
MAX_STAGES = Measured(
    8, H100,
    why="The deepest ring Little's law may ask for. Deep rings cost resident warps and never run faster: 8 stages "
        "take 3-89% longer than 2 at m = k = 8192 (f64 n = 32 1476 against 781 us), and where few warps are "
        "resident (the f64 tensor cores at n = 32, 2 blocks per SM) 3 and 4 stages are within 1-5% of each "
        "other and 6 up to 17% slower.",
    sources=(R + "2026-11-22_h100_tsm2r-variants_run2.json", R + "2026-11-22_h100_tsm2r-wide_call1.json",
             R + "2026-11-22_h100_tsm2r-n32_call1.json"),
)
CLUSTER_FILL = Measured(
    0.92, H100,
    why="Share of the resident-block slots that clusters can fill where the target has no measured table "
        "(Hardware.cluster_fill): a cluster's blocks share one GPC, so slots of a GPC short of a whole cluster stay "
        "empty. At f32 n = 16, 480 blocks in clusters of 2 for 528 slots run as one wave (m = k = 30720: 1322 "
        "us, 94% of the roof), 512 in clusters of 8 do not (m = k = 8192: 140 us against 115 for 320 blocks in "
        "clusters of 5); the H100's measured fills run from 0.77 to 1.0 by cluster size and occupancy.",
    sources=(R + "2026-11-22_h100_tsm2r-variants_run2.json",
             RESULTS + "irregular/2026-11-23_h100_cluster-occupancy.json"),
)
MAX_CLUSTER = Measured(
    7, H100,
    why="The largest cluster the model and the tuning step consider, one short of the portable 8. Clusters of 8 "
        "were timed only at m = k = 8192 (4-stage rings): slower than the plan's cluster at f32 n = 16 (140 "
        "against 115 us: 512 blocks for 528 slots spill into a second wave) and f64 n = 16 (261 against 234), "
        "faster at f32 n = 32 (271 against 299). The fill does not favour 7: at 1-8 blocks per SM clusters of 8 "
        "fill 0.91-0.94 of the slots, clusters of 7 0.80-0.94.",
    sources=(R + "2026-11-22_h100_tsm2r-variants_run2.json",
             RESULTS + "irregular/2026-11-23_h100_cluster-occupancy.json"),
)

# --- f64 on the tensor cores (column-major A, and row-major A copied by rows) --------------------------------------

MMA_MIN_N = Measured(
    8, H100,
    why="Column-major f64 with n <= 8 streams at 97-101% of the roof on the CUDA cores' FMAs, so only wider B goes "
        "to the tensor cores; at n = 16 the FMAs reach 77% (m = k = 8192) and 91% (30720), the DFMA issue and B's "
        "shared-memory reads then taking most of the SM's issue slots.",
    sources=(R + "2026-11-22_h100_tallskinny-tsm2r-8192.json", R + "2026-11-22_h100_tallskinny-tsm2r-30720.json"),
)
MMA_ACC_REGS = Measured(
    128, H100,
    why="Accumulator registers per lane on the f64 tensor cores: 128 lets n = 32 run in one pass of 64 rows per "
        "warp (2 blocks per SM, the ring deepened to meet Little's law). At m = k = 8192 / 16384 one pass takes "
        "215 / 748 us where two passes of 16 columns (64 registers, 4 blocks per SM) take 259-268 / 906.",
    sources=(R + "2026-11-22_h100_tsm2r-wide_call1.json",),
)
MAX_B_SHARE = Measured(
    0.5, H100,
    why="On the f64 tensor cores a batch of B (read by every warp from L2) may be at most this share of the batch "
        "of A: n = 32 with 64 rows per warp (B half of A) runs at 84-96% of the roof, with 32 rows (B equal to A) "
        "at 18-35%.",
    sources=(R + "2026-11-22_h100_tsm2r-wide_call1.json",),
)
MMA_ROW_GROUPS = Measured(
    2, H100,
    why="Column-major A on sm_90's f64 tensor cores: the block's 4 warps form 2 k slices of 2 warps that own "
        "neighbouring rows and share the slice's batches of B, whose bytes through L2 and shared memory fall from "
        "half of A's to a quarter at n = 32. Against 4 slices of one warp, each at its best cluster, n = 32 runs "
        "2954 -> 2683 us at m = k = 30720 and 789 -> 714 at 16384 (n = 16 even); at 8192 the 128-row tiles leave "
        "too few blocks and 1-warp slices are faster (186 against 204-247 us), which the tuning step times too.",
    sources=(R + "2026-11-23_h100_tsm2r-groups-run2.json", R + "2026-11-23_h100_tsm2r-groups-run3.json"),
)

# --- algorithm auto: which shapes go to TSM2R ------------------------------------------------------------------

AUTO_TSM2R_MIN_MK = Measured(
    8192, H100,
    why="The smallest m and k TSM2R is benchmarked at: at m = k = 8192 its column kernel runs f32 n <= 16 at "
        "86-96% of the roof and f64 n <= 8 at 97-101% (1.36-1.39x cuBLAS at f32 n = 2-16), and f64 on the "
        "tensor cores beats SIMT 1.6-2.2x at n = 32-128.",
    sources=(R + "2026-11-22_h100_tallskinny-tsm2r-8192.json",
             R + "2026-11-23_h100_tallskinny-tsm2r-8192-n32-f64-crossover.json"),
)
AUTO_TSM2R_MAX_N = Measured(
    32, H100,
    why="Column-major A on the CUDA cores: at m = k = 16384, f32, TSM2R is 2.8-3.0x faster than the SIMT family at "
        "n <= 8, 2.5x at 16, 2.0x at 32 and 1.2-1.5x at 48-64 (two passes over A), so auto takes it up to 32, "
        "where the margin is 2x or more.",
    sources=(R + "2026-11-22_h100_tallskinny-tsm2r-8192_run2.json",),
)
AUTO_TSM2R_MAX_N_ROW_A = Measured(
    4, H100,
    why="Row-major A where neither the f64 tensor cores nor the f32 rule below apply (HIP; f64 on GPUs without "
        "full-rate f64 tensor cores), measured on the row kernel, which is near the roof only for the narrowest "
        "B: at m = k = 16384 it beats SIMT at n <= 4 (f32 446 against 561 us, f64 882 against 1161) and loses "
        "from n = 8 (f32 889 against 561, f64 1561 against 1163), by 5-6x at n = 32.",
    sources=(R + "2026-11-23_h100_tallskinny-tsm2r-16384-rowmajor3.json",),
)
AUTO_TSM2R_MAX_N_ROW_FMA = Measured(
    24, H100,
    why="Row-major f32 on CUDA runs the column kernel with A copied by rows from n = 2: with every operand "
        "row-major, at m = k = 16384, n = 8 / 16 / 24 / 32 take 396 / 409 / 438 / 581 us against SIMT's 563 / "
        "568 / 569 / 570, so auto takes TSM2R up to n = 24.",
    sources=(R + "2026-11-23_h100_tallskinny-tsm2r-f32-rowmajor-byrows.json",),
)
AUTO_TSM2R_MAX_N_F64_MMA = Measured(
    128, H100,
    why="f64 on sm_90's f64 tensor cores (either layout of A; passes of 32 columns above n = 32) beats SIMT at every "
        "n measured: at m = k = 16384, n = 32 / 48 / 64 / 96 / 128, column-major 714 / 1320 / 1480 / 2040 / "
        "2470 us against 1420 / 1920 / 1960 / 3360 / 3820, row-major 782 / 1120 / 1180 / 1740 / 2180 against "
        "1580 / 1970 / 1990 / 3610 / 3920; at 8192 1.6-2.2x in both layouts. 128 is the largest n measured.",
    sources=(R + "2026-11-23_h100_tallskinny-tsm2r-16384-n32-f64-crossover.json",
             R + "2026-11-23_h100_tallskinny-tsm2r-16384-n32-f64-rowmajor-crossover.json",
             R + "2026-11-23_h100_tallskinny-tsm2r-8192-n32-f64-crossover.json",
             R + "2026-11-23_h100_tallskinny-tsm2r-8192-n32-f64-rowmajor-crossover.json"),
)
