"""The hopper_grouped family's calibration table: the choices its planner (planner.py) took from measurements, each with
the GPU, the reason it holds and the results file that shows it (gemmc/families/calibration.py)."""

from __future__ import annotations

from gemmc.families.calibration import H100, Measured

MOE = "bench/results/moe_half/2026-11-27_h100.json"  # both cluster sizes side by side, every case and routing
NCU = "bench/results/moe_half/2026-11-27_h100_ncu.csv"
TAIL_SPLIT_RUN = "bench/results/moe_half/2026-11-27_h100_tail-split.json"  # the split and the whole tail side by side
TAIL_NCU = "bench/results/half/2026-11-27_h100_epilogue-skew_ncu.txt"  # the E32 K512 step's SM activity

CLUSTER_MIN_K = Measured(
    4096, H100,
    why="Clusters of 2 (a unit's two tile rows on a pair of blocks, B multicast where they share a group) only from "
        "this depth K: the pair halves the L2 reads of B, which a long main loop is bound by (without clusters the "
        "kernel keeps the L2 at 84-90% of its peak throughput against 54-63% for torch._grouped_mm, ncu), while a "
        "short one pays more for the pair's lockstep than it saves. Graph replays of the bf16 MoE suite, the same "
        "kernel with both sizes: K 4096 (E8 T4096 N4096) 0.93-0.97x the time without clusters; K 7168 (E128 T8192 "
        "N2048), where reading the weights bounds it, 0.97-1.03x; K 2048 1.01-1.07x, K 1024 0.99-1.03x, K 512 "
        "1.05-1.14x.",
    sources=(MOE, NCU),
)

TAIL_SPLIT = Measured(
    True, H100,
    why="Without clusters, a last round of units that fills at most half the blocks runs in column halves (128 x N/2 "
        "per block), so twice as many SMs share it. The groups' partial tile rows put the unit count anywhere in a "
        "round: on E32 T16384 N1024 K512 568 units of 128 x 256 on 132 SMs (4.3 per SM), and under ncu the SMs are "
        "active only 75% of the kernel's cycles. Graph replays of the bf16 MoE suite's cases without clusters, the "
        "same kernel with the tail split and whole: E32 K512 1.05-1.08x faster, E64 T32768 N2048 K1024 0.997-1.024x, "
        "E128 T65536 N1024 K2048 0.992-1.026x (geometric mean 1.029x over the 12 steps).",
    sources=(TAIL_SPLIT_RUN, TAIL_NCU),
)

LIST_TILE_RUN = "bench/results/dynamic/2026-11-27_h100_list-tile-n.json"  # tile N 128 and 256 on the same lists
CONCURRENT_RUN = "bench/results/concurrent/2026-11-27_h100_bf16-capture-staged.json"  # bf16 groups, fused timed

LIST_TILE_N = Measured(
    128, H100,
    why="A `grouped list`'s tile N where the schedule gives none: its sizes arrive with each call, so no waves model "
        "chooses. N 256 took 0.90-0.96x the time of 128 on MoE-like lists of N 1024-2048 (x64 and x512, uniform and "
        "Zipf), but 1.11x on 16 problems of 4096x128x1024 and 1.28x on 16 attention GEMMs of N 64-512; 128 loses "
        "at most 1.12x (x512 Zipf), 256 up to 1.28x.",
    sources=(LIST_TILE_RUN,),
)

FUSE_SHARE = Measured(
    2, H100,
    why="`concurrency auto` fuses a group of bf16/f16 GEMMs into one list launch where every GEMM alone fills at most "
        "1/FUSE_SHARE of the SMs in 128 x 128 tiles (no cost model estimates the list kernel). In the bf16 suite one "
        "launch was the fastest way, or within 1%, for all 7 groups of at most 32 tiles a GEMM (LSTM gates, "
        "4096x128x1024 and 512x1024x1024 instances, 16 attention GEMMs, a mixed group), and 0.4-23% slower than "
        "streams for the 3 QKV groups of 128-512 tiles a GEMM; any cut from 33 to 127 tiles (1/4 to 1/2 of 132 "
        "SMs) fits those groups alike.",
    sources=(CONCURRENT_RUN,),
)
