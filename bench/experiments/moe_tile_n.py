"""Experiment: tile N 128 against the planner's tile N on the bf16 `grouped M` kernel (hopper_grouped) for the MoE
suite's steps (gemmc.bench.moe_half.CASES), each with the planner's own last-round split and cluster size, beside
torch._grouped_mm; routings redrawn every call (a pool of 8 draws cycled), graph replays of 100 calls, every kernel in
each round:

    python3 bench/experiments/moe_tile_n.py OUT.json [--rounds 3] [--cases 0,1,2]

Tile N 128 everywhere took 40.1 against 41.9 us on E32 T16384 N1024 K512 and 296 against 285 us on E64 T32768 N2048
K1024, both with the last round whole (bench/results/half/2026-11-27_h100_epilogue-skew.json); this measures it with
the split last round the planner gives both. Measured on the H100 (bench/results/moe_half/2026-11-28_h100_tile-n.json):
N 128 took 0.1-5.4% longer on every E32 and E64 step, so the planner keeps its tile N.
"""

from __future__ import annotations

import sys
from typing import Any


def tile_n(planned: Any) -> dict[str, Any]:
    """The planner's kernel, and its schedule with `tile 128x128x64`."""
    import gemmc
    from gemmc.bench.moe_half import MOE

    dyn = planned.ir.dynamic
    text = MOE.format(n=dyn.n, k=dyn.k).replace(" }", " tile 128x128x64 }")
    return {f"N {planned.ir.plan.bn} (plan)": planned, "N 128": next(iter(gemmc.compile_string(text)))}


def main(argv: list[str] | None = None) -> int:
    from gemmc.bench.moe_half import compare_plans

    return compare_plans(argv, "bench/experiments/moe_tile_n.py", tile_n, ("uniform", "zipf", "empty", "half"), 11,
                         "0,1,2")


if __name__ == "__main__":
    sys.exit(main())
