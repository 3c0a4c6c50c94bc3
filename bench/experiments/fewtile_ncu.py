"""Experiment: one split-K hopper kernel (4096 x 64 x 1024 bf16, clusters of 3) under ncu, after warm-up:

    ncu --section WarpStateStats --section SourceCounters -k regex:gemmc python3 bench/experiments/fewtile_ncu.py
"""

from __future__ import annotations

import sys

import torch

import gemmc
from gemmc.families.hopper.planner import with_tile
from gemmc.ir.hardware import TARGETS

m, n, k, bn, ks = (int(x) for x in (sys.argv[1:] or ["4096", "64", "1024", "64", "3"]))
base = gemmc.compile_string(f"kernel k {{ dtype bf16 gemm {m} x {n} x {k} }}")["k"]
kern = base.with_plan(with_tile(base.ir, base.ir.plan, bn, ks, TARGETS["sm_90"]), "split")
a = torch.randn(m, k, device="cuda").bfloat16()
b = torch.randn(k, n, device="cuda").bfloat16()
c = torch.empty(m, n, device="cuda").bfloat16()
for _ in range(3):
    kern([a], [b], [c])
torch.cuda.synchronize()
