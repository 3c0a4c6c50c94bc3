"""The tile order of the dynamic kernel on MoE steps (docs/PERFORMANCE-dynamic.md, "Tile order"): every group's
half-height last row of tiles numbered after all groups' whole rows (two parts a group, the kernel of `groups 128`)
against one part a group (the same schedule with `groups 2000`, past plan.SPLIT_GROUPS), beside gemmc's static plan of
the same sizes (uniform routings). GPU machine only, from the tree's root:

    OUT=... python3 bench/experiments/dynamic_order.py measure
    ncu --section ... python3 bench/experiments/dynamic_order.py once   # one launch of each kernel, E32 T8192 uniform

Each kernel is timed as graph replays of 20 launches (gemmc.bench.dynamic.graph_seconds) on the first draw of the
routing, and checked against float64. Results: $OUT/order.json (bench/results/dynamic/2026-11-27_h100_order.json).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

os.environ.setdefault("GEMMC_TUNE", "0")  # the static roof runs the model's plan

SCHEDULE = "kernel moe_p{parts} {{ layout B col  grouped M n {n} k {k} groups {groups} }}"
GROUPS = {2: 128, 1: 2000}  # two parts a group up to SPLIT_GROUPS, one past it
CASES = [(32, 8192, 1024, 512, "uniform"), (32, 8192, 1024, 512, "zipf"), (32, 8192, 1024, 512, "half"),
         (8, 4096, 512, 512, "uniform"), (8, 65536, 512, 512, "uniform"), (64, 16384, 1024, 2048, "uniform")]


def kernels(n: int, k: int) -> dict:
    import gemmc

    return {parts: next(iter(gemmc.compile_string(SCHEDULE.format(parts=parts, n=n, k=k, groups=groups))))
            for parts, groups in GROUPS.items()}


def case(experts: int, tokens: int, n: int, k: int, kind: str, with_static: bool = True) -> dict:

    from gemmc.bench import dynamic as d

    counts = d.draws(experts, tokens, kind)[0]
    A, W, C, ends, bounds, ref = d.moe_step(experts, tokens, n, k, counts)
    row: dict = {"case": f"moe E{experts} T{tokens} N{n} K{k}", "routing": kind}
    for parts, kern in kernels(n, k).items():
        C.fill_(float("nan"))
        kern(A, W, C, offsets=ends)
        row[f"rel_error_parts{parts}"] = d.rel_error(C, ref)
        row[f"parts{parts}_us"] = d.graph_seconds(lambda i, kern=kern: kern(A, W, C, offsets=ends), calls=20) * 1e6
    if with_static:
        row["static_us"] = d.static_seconds(d.static_kernel(n, k), A, W, C, bounds, calls=20) * 1e6
        row["parts2_vs_static"] = row["parts2_us"] / row["static_us"]
        row["parts1_vs_static"] = row["parts1_us"] / row["static_us"]
    row["parts2_vs_parts1"] = row["parts2_us"] / row["parts1_us"]
    print(row, flush=True)
    return row


def measure() -> None:
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from gemmc.bench.dynamic import precompile

    jobs = [("dynamic", SCHEDULE.format(parts=parts, n=n, k=k, groups=groups)) for n, k in {c[2:4] for c in CASES}
            for parts, groups in GROUPS.items()] + [("moe", *c[:4]) for c in CASES if c[4] == "uniform"]
    with ProcessPoolExecutor(8, mp_context=get_context("spawn")) as pool:
        list(pool.map(precompile, jobs))  # the disk cache then serves this process

    import torch

    rows = [case(*c, with_static=c[4] == "uniform") for c in CASES]
    out = {"gpu": torch.cuda.get_device_name(), "protocol": "graph replays of 20 launches, median of 7 windows",
           "rows": rows}
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "order.json"), "w") as f:
        json.dump(out, f, indent=1)


def once() -> None:
    """One launch of each kernel (two parts, one part, the static plan) on E32 T8192 uniform, for ncu."""
    import torch

    import gemmc
    from gemmc.bench import dynamic as d

    experts, tokens, n, k, kind = CASES[0]
    counts = d.draws(experts, tokens, kind)[0]
    A, W = torch.randn(tokens, k, device="cuda"), torch.randn(experts, n, k, device="cuda")
    C = torch.empty(tokens, n, device="cuda")
    ends = torch.tensor(np.cumsum(counts), dtype=torch.int32, device="cuda")
    for kern in kernels(n, k).values():
        kern(A, W, C, offsets=ends)
    static = next(iter(gemmc.compile_string(d.STATIC.format(n=n, k=k))))
    bounds = list(zip(np.cumsum(counts) - counts, np.cumsum(counts), strict=True))
    static([A[s:e] for s, e in bounds if e > s], [W[g].t() for g, (s, e) in enumerate(bounds) if e > s],
           [C[s:e] for s, e in bounds if e > s])
    torch.cuda.synchronize()


if __name__ == "__main__":
    {"measure": measure, "once": once}[sys.argv[1]]()
