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

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROUTING_KINDS = ("uniform", "zipf", "empty", "half")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", default="0,1,2", help="indices into gemmc.bench.moe_half.CASES")
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
        planned = next(iter(gemmc.compile_string(MOE.format(n=n, k=k))))
        narrow = next(iter(gemmc.compile_string(MOE.format(n=n, k=k).replace(" }", " tile 128x128x64 }"))))
        kernels = {f"N {planned.ir.plan.bn} (plan)": planned, "N 128": narrow}
        A = torch.randn(tokens, k, device="cuda").to(torch.bfloat16)
        B = torch.randn(experts, n, k, device="cuda").to(torch.bfloat16).transpose(1, 2)
        C = torch.empty(tokens, n, device="cuda", dtype=torch.bfloat16)
        for kind in ROUTING_KINDS:
            rng = np.random.default_rng([experts, tokens, 11])
            ends = [torch.tensor(np.cumsum(counts(kind, experts, tokens, rng)), dtype=torch.int32, device="cuda")
                    for _ in range(ROUTINGS)]
            ref = torch._grouped_mm(A, B, offs=ends[0]).double()
            errors = {}
            for name, kern in kernels.items():
                C.fill_(float("nan"))
                kern(A, B, C, offsets=ends[0])
                torch.cuda.synchronize()
                errors[name] = float((C.double() - ref).norm() / ref.norm())
            fns = {name: (lambda i, kern=kern, ends=ends, A=A, B=B, C=C: kern(A, B, C, offsets=ends[i % ROUTINGS]))
                   for name, kern in kernels.items()}
            fns["grouped_mm"] = lambda i, ends=ends, A=A, B=B: torch._grouped_mm(A, B, offs=ends[i % ROUTINGS])
            samples: dict[str, list[float]] = {name: [] for name in fns}
            for _ in range(args.rounds):
                for name, fn in fns.items():
                    samples[name].append(graph_seconds(fn) * 1e6)
            us = {name: statistics.median(v) for name, v in samples.items()}
            row = {"case": f"E{experts} T{tokens} N{n} K{k}", "routing": kind,
                   "plans": {name: {"bn": kern.ir.plan.bn, "cluster": kern.ir.plan.cluster,
                                    "tail_split": kern.ir.plan.tail_split, "stages": kern.ir.plan.stages}
                             for name, kern in kernels.items()},
                   "us": us, "rounds_us": samples, "diff_vs_grouped_mm": errors}
            results.append(row)
            print(f"{row['case']} {kind}: " + ", ".join(f"{name} {v:.1f}" for name, v in us.items())
                  + f"; diff {max(errors.values()):.1e}", flush=True)
    out = {"experiment": "bench/experiments/moe_tile_n.py", "gpu": gpu_name(), "date": time.strftime("%Y-%m-%d"),
           "protocol": f"graph replays of 100 calls cycling {ROUTINGS} routings, median of 7 windows; median of "
                       f"{args.rounds} rounds over every kernel in turn",
           "wall_s": time.time() - t0, "rows": results}
    Path(args.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
