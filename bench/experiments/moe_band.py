"""Experiment: the order in which the bf16 `grouped M` kernel (hopper_grouped) walks its units, on the MoE suite's
steps (gemmc.bench.moe_half.CASES): bands of 1 (each tile row's n-tiles in turn, the planner's order), 2, 4, 8 and 16
unit rows walked rows-fastest (HopperGroupedPlan.band), beside torch._grouped_mm, uniform and Zipf routings redrawn
every call (a pool of 8 draws cycled), graph replays of 100 calls, every kernel in each round:

    python3 bench/experiments/moe_band.py OUT.json [--rounds 3] [--cases 0,1,2,4]

The hopper family's one-wave GEMMs took 8-12% less time in bands of 8 m-tiles than 16 at K 1024
(bench/results/half/2026-11-27_h100_band-sweep.json); a grouped step's order decides which blocks read one A row
and one expert's B at the same time in the same way.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

BANDS = (1, 2, 4, 8, 16)


def bands(planned: Any) -> dict[str, Any]:
    """The planner's kernel in every band of BANDS."""
    plan = planned.ir.plan
    return {f"band {b}": planned if b == plan.band else planned.with_plan(dataclasses.replace(plan, band=b),
                                                                          f"band {b}")
            for b in BANDS}


def main(argv: list[str] | None = None) -> int:
    from gemmc.bench.moe_half import compare_plans

    return compare_plans(argv, "bench/experiments/moe_band.py", bands, ("uniform", "zipf"), 7, "0,1,2,4")


if __name__ == "__main__":
    sys.exit(main())
