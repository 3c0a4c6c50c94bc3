"""Probe for compute-sanitizer (GPU machine): one column-major f64 TSM2R kernel with its k slices of GROUPS warps
and its cluster size forced, run once on fresh inputs; prints the plan and the largest error against cupy's
product. Compiled with -lineinfo, so that a hazard names the generated source's lines.

    GEMMC_TUNE=0 compute-sanitizer --tool racecheck python3 bench/experiments/tsm2r_racecheck_probe.py \
        M N K GROUPS CLUSTER
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import cupy as cp  # noqa: E402

import gemmc  # noqa: E402
from gemmc.families.tsm2r import planner as tsm2  # noqa: E402
from gemmc.ir.types import Layout  # noqa: E402
from gemmc.runtime import compile as nvrtc  # noqa: E402


def main(m: int, n: int, k: int, groups: int, cluster: int) -> None:
    nvrtc.OPTIONS = (*nvrtc.OPTIONS, "-lineinfo")
    kern = gemmc.compile_string(f"kernel k {{ dtype f64 layout A col, B col, C col gemm {m} x {n} x {k} "
                                "algorithm tsm2r }")["k"]
    plan = tsm2.tsm2r_params(kern.ir.problems[0], kern.ir.dtype, Layout.COL, kern.target, groups=groups)
    plan = dataclasses.replace(plan, cluster=cluster)
    kern = kern.with_plan(plan, "<probe>")
    print(plan.lines()[0], kern.ir.work.grid, flush=True)
    A = cp.asfortranarray(cp.random.standard_normal((m, k)))
    B = cp.asfortranarray(cp.random.standard_normal((k, n)))
    C = cp.asfortranarray(cp.full((m, n), cp.nan))
    kern([A], [B], [C])
    cp.cuda.Device().synchronize()
    print("max err", float(cp.abs(C - A @ B).max()), flush=True)


if __name__ == "__main__":
    main(*(int(x) for x in sys.argv[1:6]))
