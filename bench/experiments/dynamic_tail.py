"""The dynamic kernel's last round in column halves (DynamicPlan.tail_split, calibration.TAIL_SPLIT) on the MoE
steps of `python -m gemmc.bench dynamic` and its two lists, f32: each case with the split and without it, the two
alternated over ROUNDS rounds (median), beside gemmc's static plan of the same sizes. Each kernel is checked against
float64 on a NaN-poisoned C first. The NumPy scheduler gives the case's tiles and whether its last round splits.
GPU machine only, from the tree's root:

    OUT=... python3 bench/experiments/dynamic_tail.py        # $OUT/tail-split.json

Each time is a graph of 20 launches (gemmc.bench.dynamic.graph_seconds) on the first draw of the routing.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics

import numpy as np

os.environ.setdefault("GEMMC_TUNE", "0")  # the static plan runs the model's plan

ROUNDS = 5
# launches a graph: a list kernel keeps tables for 256 captured calls a process (2 lists x LIST_ROUNDS x CALLS)
CALLS = 20
LIST_ROUNDS = 3
CASES = [(8, 4096, 512, 512, "uniform"), (8, 4096, 512, 512, "zipf"), (8, 4096, 512, 512, "empty"),
         (8, 4096, 512, 512, "half"), (32, 8192, 1024, 512, "uniform"), (32, 8192, 1024, 512, "half"),
         (64, 16384, 1024, 2048, "uniform"), (8, 65536, 512, 512, "uniform")]


def tiles_of(plan, sizes: np.ndarray, n: int, grid: int) -> dict:
    from gemmc.families.dynamic import scheduler

    m = sizes.astype(np.int64)
    sched = scheduler.schedule(plan, m, np.full_like(m, n), plan.threshold(grid))
    tiles = int(sched.total)
    rest = tiles % grid
    return {"tiles": tiles, "grid": grid, "splits": bool(rest and 2 * rest <= grid)}


def timed(kernels: dict, call, rounds: int = ROUNDS) -> dict:
    """Median over `rounds` rounds of each kernel's time per call (graphs of CALLS calls, the kernels in turn)."""
    from gemmc.bench import dynamic as d

    times: dict[str, list[float]] = {name: [] for name in kernels}
    for _ in range(rounds):
        for name, kern in kernels.items():
            times[name].append(d.graph_seconds(lambda i, kern=kern: call(kern), calls=CALLS) * 1e6)
    return {f"{name}_us": statistics.median(ts) for name, ts in times.items()}


def main() -> None:
    import torch

    import gemmc
    from gemmc.bench import dynamic as d

    grid = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for experts, tokens, nn, kk, kind in CASES:
        sizes = d.draws(experts, tokens, kind)[0].astype(np.int64)
        A, W, C, ends, bounds, ref = d.moe_step(experts, tokens, nn, kk, sizes)
        name = f"moe E{experts} T{tokens} N{nn} K{kk} {kind}"
        split = next(iter(gemmc.compile_string(d.MOE.format(n=nn, k=kk))))
        plan = split.ir.plan
        whole = split.with_plan(dataclasses.replace(plan, tail_split=not plan.tail_split), "toggled")
        kernels = {"split": split, "whole": whole} if plan.tail_split else {"split": whole, "whole": split}
        row = {"case": name, **tiles_of(plan, sizes, nn, grid)}
        for label, kern in kernels.items():
            C.fill_(float("nan"))
            kern(A, W, C, offsets=ends)
            row[f"{label}_error"] = d.rel_error(C, ref)
        row.update(timed(kernels, lambda kern, A=A, W=W, C=C, ends=ends: kern(A, W, C, offsets=ends)))
        row["static_us"] = d.static_seconds(d.static_kernel(nn, kk), A, W, C, bounds, CALLS) * 1e6
        print(f"{name:34} tiles {row['tiles']:5} splits {row['splits']!s:5}  split {row['split_us']:8.1f}  whole "
              f"{row['whole_us']:8.1f}  static {row['static_us']:8.1f} us  errors {row['split_error']:.1e} "
              f"{row['whole_error']:.1e}", flush=True)
        rows.append(row)
    kern = next(iter(gemmc.compile_string(d.LIST)))
    plan = kern.ir.plan
    other = kern.with_plan(dataclasses.replace(plan, tail_split=not plan.tail_split), "toggled")
    kernels = {"split": kern, "whole": other} if plan.tail_split else {"split": other, "whole": kern}
    for problems in (64, 512):
        shapes = d.list_shapes(problems)[0]
        As = [torch.randn(m, k, device="cuda") for m, n, k in shapes]
        Bs = [torch.randn(k, n, device="cuda") for m, n, k in shapes]
        Cs = [torch.full((m, n), float("nan"), device="cuda") for m, n, k in shapes]
        row = {"case": f"list x{problems}"}
        for label, kk_ in kernels.items():
            for c in Cs:
                c.fill_(float("nan"))
            kk_(As, Bs, Cs, alpha=1.0, beta=0.0)
            row[f"{label}_error"] = max(d.rel_error(c, a.double() @ b.double()) for a, b, c in zip(As, Bs, Cs,
                                                                                                   strict=True))
        row.update(timed(kernels, lambda kern, As=As, Bs=Bs, Cs=Cs: kern(As, Bs, Cs, alpha=1.0, beta=0.0), LIST_ROUNDS))
        print(f"{row['case']:34} split {row['split_us']:8.1f}  whole {row['whole_us']:8.1f} us  errors "
              f"{row['split_error']:.1e} {row['whole_error']:.1e}", flush=True)
        rows.append(row)
    out = os.environ.get("OUT", ".")
    with open(os.path.join(out, "tail-split.json"), "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "rounds": ROUNDS, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
