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
import statistics
import sys
import time
from pathlib import Path

import numpy as np

BANDS = (1, 2, 4, 8, 16)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", default="0,1,2,4", help="indices into gemmc.bench.moe_half.CASES")
    args = ap.parse_args(argv)
    import torch

    import gemmc
    from gemmc.bench.dynamic import ROUTINGS, counts, graph_seconds
    from gemmc.bench.moe_half import CASES, MOE
    from gemmc.bench.timing import gpu_name

    t0 = time.time()
    results = []
    for index in (int(i) for i in args.cases.split(",")):
        experts, tokens, n, k = CASES[index]
        base = next(iter(gemmc.compile_string(MOE.format(n=n, k=k))))
        plan = base.ir.plan
        kernels = {b: base if b == plan.band else base.with_plan(dataclasses.replace(plan, band=b), f"band {b}")
                   for b in BANDS}
        A = torch.randn(tokens, k, device="cuda").to(torch.bfloat16)
        W = torch.randn(experts, n, k, device="cuda").to(torch.bfloat16)
        B = W.transpose(1, 2)
        C = torch.empty(tokens, n, device="cuda", dtype=torch.bfloat16)
        for kind in ("uniform", "zipf"):
            rng = np.random.default_rng([experts, tokens, 7])
            pool = [counts(kind, experts, tokens, rng) for _ in range(ROUTINGS)]
            ends = [torch.tensor(np.cumsum(c), dtype=torch.int32, device="cuda") for c in pool]
            ref = torch._grouped_mm(A, B, offs=ends[0])
            errors = {}
            for b, kern in kernels.items():
                C.fill_(float("nan"))
                kern(A, B, C, offsets=ends[0])
                torch.cuda.synchronize()
                errors[b] = float((C.double() - ref.double()).norm() / ref.double().norm())
            fns = {f"band {b}": (lambda i, kern=kern, ends=ends, A=A, B=B, C=C:
                                 kern(A, B, C, offsets=ends[i % ROUTINGS]))
                   for b, kern in kernels.items()}
            fns["grouped_mm"] = lambda i, ends=ends, A=A, B=B: torch._grouped_mm(A, B, offs=ends[i % ROUTINGS])
            samples: dict[str, list[float]] = {name: [] for name in fns}
            for _ in range(args.rounds):
                for name, fn in fns.items():
                    samples[name].append(graph_seconds(fn) * 1e6)
            us = {name: statistics.median(v) for name, v in samples.items()}
            row = {"case": f"E{experts} T{tokens} N{n} K{k}", "routing": kind, "cluster": plan.cluster,
                   "tail_split": plan.tail_split, "planned_band": plan.band, "us": us, "rounds_us": samples,
                   "diff_vs_grouped_mm": errors}
            results.append(row)
            print(f"{row['case']} {kind} c{plan.cluster}: _grouped_mm {us['grouped_mm']:.1f} us; "
                  + ", ".join(f"band {b} {us[f'band {b}']:.1f}" for b in BANDS)
                  + f"; diff {max(errors.values()):.1e}", flush=True)
    out = {"experiment": "bench/experiments/moe_band.py", "gpu": gpu_name(), "date": time.strftime("%Y-%m-%d"),
           "protocol": f"graph replays of 100 calls cycling {ROUTINGS} routings, median of 7 windows; median of "
                       f"{args.rounds} rounds over every kernel in turn",
           "wall_s": time.time() - t0, "rows": results}
    Path(args.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
