"""The tensor-core family's calibration table: the catalogue orders, k per stage, pipeline depths and the default
split method its planner (planner.py, split.py) takes from measurements, each with the GPU, the reason it holds and
the results files that show it (gemmc/families/calibration.py). Rates are TFLOP/s at 8192^3 (f32 in, f32 out)."""

from __future__ import annotations

from types import MappingProxyType

from gemmc.families.calibration import H100, Measured

R = "bench/results/precision/"

CATALOGUE = Measured(
    # mma.sync block tiles (bm, bn, warp tile m, warp tile n), in the order `choose` prefers on a tie
    ((128, 256, 64, 64), (256, 128, 64, 64), (128, 128, 64, 64), (128, 128, 64, 32), (128, 64, 64, 32),
     (64, 64, 32, 32)),
    H100,
    why="128x256 blocks of 8 warps with 64x64 warp tiles first: a 64x64 warp tile reads a third less shared memory "
        "per mma than 64x32, and the split f16 x3 runs 97.3 TFLOP/s with it against 91.0 with 256x128 and 90.7 "
        "with 128x128 in 4 warps of 64x64. One pass is 2% faster with 256x128 (240.5 against 235.4), which comes "
        "second at the same compute-to-memory ratio. The smaller tiles serve where the large ones give too few "
        "blocks or the split's registers do not fit.",
    sources=(R + "2026-11-22_h100_precision_run4_variants.json",),
)
WG_CATALOGUE = Measured(
    # wgmma block tiles (bm, bn), in the order `choose` prefers on a tie
    ((256, 128), (128, 256), (128, 128), (64, 256), (64, 128), (64, 64)),
    H100,
    why="256x128 before 128x256 (equal ratio: the first wins the tie): the split f16 x3 runs 137.2 TFLOP/s with "
        "it against 120.1 (B's three planes are half as wide, so 4 stages fit instead of 3), one pass 407.8 "
        "against 401.2.",
    sources=(R + "2026-11-22_h100_precision_run7_variants.json", R + "2026-11-22_h100_precision_run7.json"),
)
WG_ROW_BYTES = Measured(
    MappingProxyType({1: 128, 2: 64, 3: 64}),  # parts -> bytes of k per shared-memory stage
    H100,
    why="k per stage of the wgmma loop, by parts. One pass takes 128-byte rows (64 f16, 4 k16 steps per barrier): "
        "401.2 TFLOP/s against 391.7 with 64-byte rows at 128x256. Splits take 64-byte rows, so that 3-4 stages "
        "of their planes fit a block; their loop gains nothing from longer rows (mma.sync f16 x3: 94.9 with 2 stages "
        "of 128-byte rows against 95.6 with 4 of 64-byte rows).",
    sources=(R + "2026-11-22_h100_precision_run7_variants.json", R + "2026-11-22_h100_precision_run5_variants.json"),
)
STAGES = Measured(
    (4, 3, 2),
    H100,
    why="cp.async pipeline depths, deepest first: `pipeline stages auto` takes the deepest whose shared memory fits. "
        "At 128x256 the split f16 x3 runs 97.3 TFLOP/s with 4 stages against 93.0 with 3.",
    sources=(R + "2026-11-22_h100_precision_run4_variants.json",),
)
MIN_WARPS_PER_SM = Measured(
    8, H100,
    why="Latency is hidden by resident warps as well as by stages: a block of fewer warps takes the deepest pipeline "
        "that still lets enough blocks share an SM for 8. 8 is the warps of the fastest main loop measured "
        "(128x256, one 8-warp block per SM, 4 stages); the 4-warp 128x128 block under this rule (2 blocks of 3 "
        "stages) runs 7% slower (90.7 against 97.3 TFLOP/s). Other values are not timed.",
    sources=(R + "2026-11-22_h100_precision_run4_variants.json",),
)
DEFAULT_F16X3 = Measured(
    "ootomo", H100,
    why="`split f16 x3` without a method takes Ootomo's round-to-nearest split, which is more accurate than paper "
        "001's truncating one with both kernels (relative Frobenius error at 8192^3, normal inputs: 3.07e-7 "
        "against 5.03e-7 splitting in the main loop, 4.35e-7 against 6.63e-7 with the pre-pass), as the emulator "
        "(tests/test_precision.py) and digest 001 §2.7's simulation predict.",
    sources=(R + "2026-11-22_h100_precision_run3.json", R + "2026-11-22_h100_precision_run4.json"),
)
