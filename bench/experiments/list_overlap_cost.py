"""Host time of the list form's overlap check (`memory.check_views`: no C sharing a byte with another C or an input),
GPU machine only: for 64 and 512 problems of torch tensors (M, N, K in 8..640, 8 sets cycled, windows of 40 calls,
median of 9), the checks and problem table (`table`), the same with the overlap check left out (`table_unchecked`),
and the overlap check alone on the finished table (`check_views`). Results:
bench/results/dynamic/2026-11-27_h100_list-overlap-cost.json.

    OUT=... python3 bench/experiments/list_overlap_cost.py
"""

from __future__ import annotations

import json
import os

import numpy as np
import torch

import gemmc
from gemmc.bench import timing
from gemmc.runtime import dynamic_list as dl
from gemmc.runtime import memory


def per(fn, n: int = 40, reps: int = 9) -> float:
    """Median over `reps` windows of `n` calls of the host microseconds per call."""
    return round(timing.host_seconds(fn, calls=n, windows=reps, sync=False) * 1e6, 2)


def unchecked(table, fields) -> None:
    """check_views left out."""


def main() -> None:
    k = next(iter(gemmc.compile_string("kernel varlen { alpha runtime beta runtime grouped list problems 512 }")))
    ex = k.executable
    res = {"gpu": torch.cuda.get_device_name(), "problems": {}}
    for problems in (64, 512):
        rng = np.random.default_rng(problems)
        sets = []
        for _ in range(8):
            shapes = rng.integers(8, 641, (problems, 3))
            sets.append(([torch.randn(m, kk, device="cuda") for m, n, kk in shapes],
                         [torch.randn(kk, n, device="cuda") for m, n, kk in shapes],
                         [torch.empty(m, n, device="cuda") for m, n, kk in shapes]))
        k(*sets[0], alpha=1.0, beta=0.0)
        torch.cuda.synchronize()
        tables = [dl.problem_table(ex, *s, 0) for s in sets]
        fields = dl._consts(ex).views
        row = {"table": per(lambda i, s=sets: dl.problem_table(ex, *s[i % 8], 0)),
               "check_views": per(lambda i, t=tables, f=fields: memory.check_views(t[i % 8], f))}
        checked = dl.check_views
        dl.check_views = unchecked
        try:
            row["table_unchecked"] = per(lambda i, s=sets: dl.problem_table(ex, *s[i % 8], 0))
        finally:
            dl.check_views = checked
        res["problems"][problems] = row
        print(problems, row, flush=True)
    with open(os.environ.get("OUT", "/tmp") + "/list_overlap_cost.json", "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
