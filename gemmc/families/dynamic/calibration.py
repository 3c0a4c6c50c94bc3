"""The dynamic family's calibration table: the choices its planner (planner.py) and launchers took from measurements,
each with the GPU, the reason it holds and the results file that shows it (gemmc/families/calibration.py)."""

from __future__ import annotations

from gemmc.families.calibration import H100, Measured
from gemmc.ir.types import DType

DESIGN = "bench/results/dynamic/2026-11-26_h100_dynamic_design-call2.json"
PROFILE = "bench/results/dynamic/2026-11-26_h100_dynamic_profile.json"
SUITE = "bench/results/dynamic/2026-11-27_h100_suite.json"
PARTS_SUITE = "bench/results/dynamic/2026-11-27_h100_suite-parts.json"
TAIL = "bench/results/dynamic/2026-11-27_h100_tail-split.json"
IN_REGISTERS = "bench/results/dynamic/2026-11-27_h100_tail-split-in-registers.log"

MAX_OUTPUTS = Measured(
    {DType.F32: 64, DType.F64: 16}, H100,
    why="Outputs per thread of the largest tile on the ladder (f64 takes twice the registers per output): f32 keeps "
        "the 128 x 128 tile (8 x 8 per thread) on top. With it ptxas gives the fused kernel every register and one "
        "block of 8 warps per SM instead of two, and the MoE steps take 12-26% less time than with 64 x 128 on top "
        "(E8 T65536 N512 K512: 1388 -> 1022 us, E32 T8192 N1024 K512 half-routed: 465 -> 369 us).",
    sources=(DESIGN,),
)

TLP_WAVES = Measured(
    1, H100,
    why="The default TLP threshold (paper 000 Eq. 4) is this many waves of the persistent grid's threads: the cap "
        "on the tile level is the largest level whose tiles still fill one wave. Four waves keeps small steps on "
        "small tiles and runs them up to 2.7x slower (E8 T4096 N512 K512: 458 against 171 us); no threshold at all "
        "(the largest tiles always) times the same as one wave on every case.",
    sources=(DESIGN,),
)

BODY = Measured(
    2, H100,
    why="Rungs of the ladder below the top tile that the one kernel body holds: the top tile's halves and its "
        "quarter, which are also its edge tiles (the static plan's `uniform` tiling with edges). Every variant is "
        "inlined into one body and ptxas allocates registers for the largest path: with the whole ten-variant "
        "ladder (16 x 16 up) the body took 255 registers and spilled in the 128 x 128 main loop (1.5 M local "
        "memory requests on E8 T65536 N512 K512), and ran 1040 us where the same tiles in a body of the top four "
        "variants (237 registers, no spills) ran 870 us and the static plan 836 us; E32 T8192 N1024 K512: 376 "
        "against 338 us.",
    sources=(PROFILE, "bench/results/dynamic/2026-11-26_h100_dynamic_profile_ncu.csv"),
)

PARTS = Measured(
    2, H100,
    why="Parts of a `grouped M` group's tile numbering: its whole-height rows, then (after every group's whole rows) "
        "its last row where that needs at most half the height, so the blocks claim the half-height tiles last and "
        "fill the last wave with them. Device time of the suite's steps with one part a group (SUITE) and with two "
        "(PARTS_SUITE): E32 T8192 N1024 K512 uniform 292 and 273 us (the static plan 240.6 and 240.7 in the two "
        "runs), half-routed 294 and 280; E64 T16384 N1024 K2048 2023 and 1956, 1.06x the static plan in both runs "
        "(1905 and 1838: the runs' spread); E8 T65536 and E8 T4096 the same within 2% (889 and 888, 96 "
        "and 94). The list form's depths differ by problem, and two parts ran its 64-problem list in 224 us against "
        "198 with one (a half-height row of a deep problem outweighs whole tiles of a shallow one): it keeps one, as "
        "does `grouped K`.",
    sources=(SUITE, PARTS_SUITE),
)

TAIL_SPLIT = Measured(
    True, H100,
    why="The tiles claimed after the grid's last whole round, where they are at most half the blocks, run as two "
        "column halves each (the tile's half-width variant of the ladder), so the last round takes about a half "
        "tile's time instead of a whole tile's. E8 T4096 N512 K512 (152 tiles of 128 x 128 on 132 blocks): 85.2-86.1 "
        "us against 97.2-98.4 with whole tiles on the four routings, the static plan 77.7-82.4; the steps whose last "
        "round is more than half the blocks run the same within 1% (E32 T8192 uniform 275.5 and 273.9, E64 T16384 "
        "1950 and 1944, E8 T65536 896 and 888), as does E32 T8192 half-routed, whose last round of 4 tiles splits "
        "(288.6 and 286.5); the lists 207 and 209 (64 problems), 1427 and 1438 (512). The claim "
        "bounds live in shared memory: held in registers across the tile function, the steps without a split ran "
        "1.5-2.7% slower (IN_REGISTERS).",
    sources=(TAIL, IN_REGISTERS),
)

CAP = "bench/results/dynamic/2026-11-27_h100_cap.json"

TILE_COST = Measured(
    {DType.F32: {16: 1.48, 32: 1.22}}, H100,
    why="Issue slots understate the time of a tile with a small micro-tile in the one-block-per-SM body: with the cap "
        "forced to each level, a 64 x 64 tile (4 x 4 outputs a thread) took 0.42-0.43 of a 128 x 128 tile's time "
        "where its issue slots say 0.29, a 128 x 64 or 64 x 128 one (4 x 8) 0.64-0.66 where they say 0.53 (E32 "
        "T8192 N1024 K512 and E64 T16384 N1024 K2048, time per tile of each level; fewer independent FMAs per "
        "fragment load). A variant's weight is its issue slots times this factor of its outputs per thread (none for "
        "the 8 x 8 top).",
    sources=(CAP,),
)

THIN_SUITE = "bench/results/dynamic/2026-11-28_h100_thin.json"
THIN_BEFORE = "bench/results/dynamic/2026-11-28_h100_thin-before.json"

THIN = Measured(
    {DType.F32: True}, H100,
    why="The ladder's lowest rung also holds the quarter's area as a quarter of the top tile's height (32 x 128) and "
        "of its width (128 x 32): a group of 32 rows or fewer takes one row of 32-row tiles instead of half-empty "
        "64-row ones (f32 computation, where the cost factors of TILE_COST were measured). With these variants and "
        "TILE_COST's weights against the ladder without them and issue-slot weights, the suite's two runs one after "
        "the other on one H100: E128 T8192 N2048 K7168 with half the tokens on one expert 9521 against 10212 us "
        "(its other 127 groups hold about 32 rows each), every other MoE step 0.7-2.5% faster, the 64-problem list "
        "201.0 against 197.6 us, the 512-problem list 1433 against 1443.",
    sources=(THIN_SUITE, THIN_BEFORE),
)
