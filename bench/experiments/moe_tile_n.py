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
import sys
import time
from pathlib import Path

ROUTING_KINDS = ("uniform", "zipf", "empty", "half")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", default="0,1,2", help="indices into gemmc.bench.moe_half.CASES")
    args = ap.parse_args(argv)
    import gemmc
    from gemmc.bench.moe_half import CASES, MOE, side_by_side
    from gemmc.bench.timing import gpu_name

    t0 = time.time()
    results = []
    for index in (int(i) for i in args.cases.split(",")):
        experts, tokens, n, k = CASES[index]
        planned = next(iter(gemmc.compile_string(MOE.format(n=n, k=k))))
        narrow = next(iter(gemmc.compile_string(MOE.format(n=n, k=k).replace(" }", " tile 128x128x64 }"))))
        kernels = {f"N {planned.ir.plan.bn} (plan)": planned, "N 128": narrow}
        for kind in ROUTING_KINDS:
            timed = side_by_side(kernels, CASES[index], kind, 11, args.rounds)
            row = {"case": f"E{experts} T{tokens} N{n} K{k}", "routing": kind,
                   "plans": {name: {"bn": kern.ir.plan.bn, "cluster": kern.ir.plan.cluster,
                                    "tail_split": kern.ir.plan.tail_split, "stages": kern.ir.plan.stages}
                             for name, kern in kernels.items()}, **timed}
            results.append(row)
            print(f"{row['case']} {kind}: " + ", ".join(f"{name} {v:.1f}" for name, v in timed["us"].items())
                  + f"; diff {max(timed['diff_vs_grouped_mm'].values()):.1e}", flush=True)
    out = {"experiment": "bench/experiments/moe_tile_n.py", "gpu": gpu_name(), "date": time.strftime("%Y-%m-%d"),
           "protocol": "graph replays of 100 calls cycling 8 routings, median of 7 windows; median of "
                       f"{args.rounds} rounds over every kernel in turn",
           "wall_s": time.time() - t0, "rows": results}
    Path(args.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
