"""The hopper family's calibration table: the thresholds its planner (planner.py) took from measurements, each with
the GPU, the reason it holds and the results file that shows it (gemmc/families/calibration.py)."""

from __future__ import annotations

from gemmc.families.calibration import H100, Measured

HALF = "bench/results/2026-11-26_h100_half.json"

CLUSTER_MIN_WAVES = Measured(
    4, H100,
    why="Clusters of 2 (B multicast to a pair of m-tiles) only from this many waves of tiles: below it the pair's "
        "lockstep and the multicast's latency cost more than the L2 traffic they save. Each shape timed with both "
        "sizes: cluster 1 ahead at 1024^3 (272 vs 212 TFLOP/s), 2048^3 (546 vs 530) and 4096^3 (647 vs 642, f16 "
        "609 vs 586); cluster 2 ahead at 16384^3 (664 vs 642), 16384 x 8192 x 8192 (663 vs 646) and f16 8192^3 "
        "(641 vs 622); within the run's noise (about 3%) in between.",
    sources=(HALF,),
)
