"""Experiment: the 128x128x16 SIMT tile at two blocks per SM (issue 3). GPU machine:

    python3 bench/experiments/simt_twoblocks.py

Unbounded, ptxas gives the 128x128x16 variant 193-199 registers, so one 256-thread block runs per SM and a
tile's prologue (table loads, first k-tile) and epilogue are exposed. `__launch_bounds__(256, 2)` caps it at
128 registers with 168 bytes of spills (one variant) to 512 (with its three edge variants; ptxas -v, sm_90).
Each plan is checked against float64 first (NaN-poisoned outputs), then timed by the benchmark's protocol.

Prediction: the short-K batches gain most (MN <= 512 K <= 128 x1024: at most 8 k steps per tile, so the exposed
prologue is a large share): -10..-15%; MN, K <= 512 x1024 -5..-8% (the 8% of stop 7's BK 8 kernel, less the
spills); 4096^3 slower (spills in the k-loop, nothing exposed to hide).

Measured (bench/results/2026-11-23_h100_simt-twoblocks.log; NVRTC: 221 registers unbounded, 128 bounded): slower
everywhere: K <= 128 x256 / x1024 +24% / +14%, MN, K <= 512 x256 / x1024 +12% / +11%, 4096^3 43.8 -> 36.2
TFLOP/s. The spills cost more than the second block hides; SimtPlan keeps 128x128x16 at one block per SM.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ["GEMMC_TUNE"] = "0"

import timing  # noqa: E402
from irregular import random_cases, schedule  # noqa: E402

import gemmc  # noqa: E402
from gemmc.api import CompiledKernel  # noqa: E402
from gemmc.families.simt import planner as simt  # noqa: E402

CASES = [  # (case regex, tile)
    ("MN<=512 K<=128 x256", "128x128x16 threads 256"),
    ("MN<=512 K<=128 x1024", "128x128x16 threads 256"),
    ("MN<=512 K<=512 x256", "128x128x16 threads 256"),
    ("MN<=512 K<=512 x1024", "128x128x16 threads 256"),
]


def bounded(kern: CompiledKernel, blocks: int) -> CompiledKernel:
    hw = kern.target
    cap = min(hw.max_regs_per_thread, hw.regs_per_sm // (kern.ir.plan.threads * blocks))  # registers that leaves
    plan = dataclasses.replace(kern.ir.plan, min_blocks=blocks, reg_cap=cap)
    return kern.with_plan(plan, f"<{blocks} blocks>")


def main() -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"gpu: {timing.gpu_name()}", flush=True)
    named = dict(random_cases(False))
    rows = [(n, shapes, tile) for case, tile in CASES for n, shapes in named.items() if re.search(case, n)]
    rows.append(("4096^3", [(4096, 4096, 4096)], "128x128x16 threads 256"))
    for name, shapes, tile in rows:
        explicit = gemmc.compile_string(schedule(shapes, tile))["irregular"]
        plain = explicit.with_plan(simt.with_edges(explicit.ir.plan), "<edges>")  # as `tile auto` would
        line = timing.compare(name, shapes, ((f"{blocks}/SM", bounded(plain, blocks)) for blocks in (1, 2)))
        print(f"{name:28s} {tile:24s} {line}", flush=True)


if __name__ == "__main__":
    main()
