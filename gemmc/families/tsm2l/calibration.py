"""TSM2L's calibration table: the block size, the launch's waves and the `algorithm auto` bounds its planner
(planner.py) uses, each with the GPU, the reason it holds and the results files that show it
(gemmc/families/calibration.py). None of them was swept: each entry says what the benchmark shows with it. A is
m x k (m large), B k x n; "the roof" is a device-to-device copy of the same bytes timed in the same process."""

from __future__ import annotations

from gemmc.families.calibration import H100, Measured

R = "bench/results/tallskinny/"
STAGED = (R + "2026-11-23_h100_tallskinny-tsm2l-colmajor-staged.json",
          R + "2026-11-23_h100_tallskinny-tsm2l-rowmajor-staged.json")

T1 = Measured(
    256, H100,
    why="Threads per block (the paper's t1, which its brute force puts at 128 on the V100). Not swept on the H100: "
        "with 256 the benchmark's cases (k = n = 8 and 16, f32 and f64, either layout) stream at 86-99% of the "
        "roof for m >= 1e6; blocks are halved only where their staging rows would not fit shared memory.",
    sources=STAGED,
)
WAVES = Measured(
    4, H100,
    why="A thread takes more rows (tcf) only once the launch has about this many waves of resident threads, so "
        "that rows in flight come from many threads before they come from long ones: on the H100 tcf stays 1 "
        "below 2.2e6 rows (2 x 4 waves of 270336 threads). Not swept: with it the benchmark streams at 86-99% "
        "of the roof at m = 1e6 (tcf 1) and 1e7 (tcf 4-8).",
    sources=STAGED,
)
AUTO_TSM2L_MAX_KN = Measured(
    16, H100,
    why="algorithm auto takes TSM2L for k, n <= 16: the widths benchmarked (8 and 16), where TSM2L runs 1.15-5.7x "
        "cuBLAS at m = 1e5 to 1e7 in either layout. Not timed against the SIMT family, nor at k or n between 16 "
        "and TSM2L's limit of 32.",
    sources=(R + "2026-11-22_h100_tallskinny_run1.json", *STAGED),
)
AUTO_TSM2L_MIN_M = Measured(
    65536, H100,
    why="algorithm auto takes TSM2L from m = 65536 rows: the benchmark's smallest m, 1e5, already runs 1.5-5.7x "
        "cuBLAS (its 6-26 MB stay in the 50 MB L2 between calls). 65536 itself, below the smallest m measured, "
        "is not timed.",
    sources=(R + "2026-11-22_h100_tallskinny_run1.json", *STAGED),
)
