"""Experiment: edge tiles (issue 3). GPU machine:

    python3 bench/experiments/simt_edges.py

A plan's tiles in a problem's last row (column) that need at most half the tile's rows (columns) take the
variant of half the height (width), same threads (passes/simt.py: with_edges). Over the benchmark's random sizes
up to 512 this cuts the FMAs that 128 x 128 tiles issue by a fifth (65% -> 80% useful) and 64 x 64 tiles' by a
tenth (MN <= 512) to a quarter (MN <= 128). Each plan, with and without edge tiles, is checked against float64
(NaN-poisoned outputs) and timed by the benchmark's protocol (graph replays, 100 calls, median of 7 windows).

Prediction: the time falls with the issued FMAs, less what the smaller edge micro-tiles lose in efficiency:
MN, K <= 512 x1024 with 128x128x16 1510 -> ~1300 us; MN <= 128 cases with 64x64x16 -10..-20%; the Inception
modules (M = 196: 4 rows in the last 32-row tile) a few percent.
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
from irregular import inception_cases, random_cases, schedule  # noqa: E402

import gemmc  # noqa: E402
from gemmc.api import CompiledKernel  # noqa: E402
from gemmc.passes import simt  # noqa: E402

CASES = [  # (case regex, tile)
    ("inception-3$", "32x32x32 threads 128"),
    ("inception-all", "32x32x32 threads 128"),
    ("MN<=128 K<=128 x1024", "64x64x16 threads 256"),
    ("MN<=128 K<=512 x1024", "64x64x16 threads 256"),
    ("MN<=128 K<=512 x64", "32x32x32 kslices 2 threads 256"),
    ("MN<=512 K<=128 x256", "auto(coordinated)"),
    ("MN<=512 K<=128 x1024", "auto(coordinated)"),
    ("MN<=512 K<=512 x8", "32x32x32 kslices 2 threads 256"),
    ("MN<=512 K<=512 x64", "128x128x16 threads 256"),
    ("MN<=512 K<=512 x256", "128x128x16 threads 256"),
    ("MN<=512 K<=512 x1024", "128x128x16 threads 256"),
    ("MN<=512 K<=512 x1024", "64x64x16 threads 256"),
]


def edged(kern: CompiledKernel) -> CompiledKernel:
    plan = simt.with_edges(kern.ir.plan)
    planned = dataclasses.replace(kern.ir, plan=plan)
    return CompiledKernel(dataclasses.replace(planned, work=simt.worklist(planned, plan, kern.target)), kern.target,
                          "<edges>")


def main() -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"gpu: {timing.gpu_name()}", flush=True)
    named = dict(inception_cases() + random_cases(False))
    for case, tile in CASES:
        [name] = [n for n in named if re.search(case, n)]
        shapes = named[name]
        As = [torch.randn(m, k, device="cuda") for m, n, k in shapes]
        Bs = [torch.randn(k, n, device="cuda") for m, n, k in shapes]
        ref = [a.double() @ b.double() for a, b in zip(As, Bs, strict=True)]
        flops = sum(2 * m * n * k for m, n, k in shapes)
        plain = gemmc.compile_string(schedule(shapes, tile))["irregular"]
        times = []
        for label, kern in (("plain", plain), ("edges", edged(plain))):
            Cs = [torch.full((m, n), float("nan"), device="cuda") for m, n, k in shapes]
            kern(As, Bs, Cs)
            torch.cuda.synchronize()
            err = max(float((c.double() - r).norm() / r.norm()) for c, r in zip(Cs, ref, strict=True))
            assert err < 1e-5, (name, label, err)
            us = timing.device_seconds(timing.gemmc_graph(lambda k=kern, A=As, B=Bs, C=Cs: k(A, B, C))) * 1e6
            times.append(f"{label} {us:8.1f} us ({flops / us / 1e6:5.1f} TFLOP/s, err {err:.1e})")
        print(f"{name:28s} {tile:32s} " + " | ".join(times), flush=True)


if __name__ == "__main__":
    main()
