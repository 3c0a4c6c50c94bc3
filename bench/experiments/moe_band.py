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

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

BANDS = (1, 2, 4, 8, 16)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", default="0,1,2,4", help="indices into gemmc.bench.moe_half.CASES")
    args = ap.parse_args(argv)
    import gemmc
    from gemmc.bench.moe_half import CASES, MOE, side_by_side
    from gemmc.bench.timing import gpu_name

    t0 = time.time()
    results = []
    for index in (int(i) for i in args.cases.split(",")):
        experts, tokens, n, k = CASES[index]
        base = next(iter(gemmc.compile_string(MOE.format(n=n, k=k))))
        plan = base.ir.plan
        kernels = {f"band {b}": base if b == plan.band else base.with_plan(dataclasses.replace(plan, band=b),
                                                                          f"band {b}")
                   for b in BANDS}
        for kind in ("uniform", "zipf"):
            timed = side_by_side(kernels, CASES[index], kind, 7, args.rounds)
            us, errors = timed["us"], timed["diff_vs_grouped_mm"]
            row = {"case": f"E{experts} T{tokens} N{n} K{k}", "routing": kind, "cluster": plan.cluster,
                   "tail_split": plan.tail_split, "planned_band": plan.band, **timed}
            results.append(row)
            print(f"{row['case']} {kind} c{plan.cluster}: _grouped_mm {us['grouped_mm']:.1f} us; "
                  + ", ".join(f"band {b} {us[f'band {b}']:.1f}" for b in BANDS)
                  + f"; diff {max(errors.values()):.1e}", flush=True)
    out = {"experiment": "bench/experiments/moe_band.py", "gpu": gpu_name(), "date": time.strftime("%Y-%m-%d"),
           "protocol": "graph replays of 100 calls cycling 8 routings, median of 7 windows; median of "
                       f"{args.rounds} rounds over every kernel in turn",
           "wall_s": time.time() - t0, "rows": results}
    Path(args.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
