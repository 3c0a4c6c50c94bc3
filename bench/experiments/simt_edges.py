"""Experiment: edge tiles (issue 3). GPU machine:

    python3 bench/experiments/simt_edges.py

A plan's tiles in a problem's last row (column) that need at most half the tile's rows (columns) take the
variant of half the height (width), same threads (passes/simt.py: with_edges). Over the benchmark's random sizes
up to 512 this cuts the FMAs that 128 x 128 tiles issue by a fifth (65% -> 80% useful) and 64 x 64 tiles' by a
tenth (MN <= 512) to a quarter (MN <= 128). Each plan, with and without edge tiles, is checked against float64
(NaN-poisoned outputs) and timed by the benchmark's protocol (graph replays, 100 calls, median of 7 windows).

Prediction: the time falls with the issued FMAs, less what the smaller edge micro-tiles lose in efficiency:
MN, K <= 512 x1024 with 128x128x16 1510 -> ~1300 us; MN <= 128 cases with 64x64x16 -10..-20%; the Inception
modules (M = 196: 4 rows in the last 32-row tile) a few percent. Measured (bench/results/
2026-11-22_h100_simt-edges.log): -9..-18% on the large batches, 0-5% on the Inception modules, slower for
sliced tiles. `python3 bench/experiments/simt_edges.py kslices` runs only the sliced tiles, with edge tiles for
them too (`with_edges(sliced=True)`; ..._simt-edges-sliced*.log: 4x8 slices with 4x4 halves 1-38% slower in two
runs, so the planner leaves sliced tiles without).
"""

from __future__ import annotations

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
from gemmc.families.simt import planner as simt  # noqa: E402

CASES = [  # (case regex, tile)
    ("inception-1$", "32x32x32 kslices 4 threads 128"),
    ("inception-3$", "32x32x32 kslices 4 threads 128"),
    ("inception-all", "32x32x32 kslices 4 threads 128"),
    ("MN<=128 K<=512 x1024", "32x32x32 kslices 4 threads 128"),
    ("MN<=512 K<=512 x8", "32x32x32 kslices 4 threads 128"),
    ("MN<=128 K<=512 x64", "64x64x16 kslices 4 threads 256"),
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
    return kern.with_plan(simt.with_edges(kern.ir.plan, sliced=True), "<edges>")


def main() -> None:
    only = sys.argv[1] if len(sys.argv) > 1 else ""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"gpu: {timing.gpu_name()}", flush=True)
    named = dict(inception_cases() + random_cases(False))
    for case, tile in CASES:
        if only not in tile:
            continue
        [name] = [n for n in named if re.search(case, n)]
        shapes = named[name]
        plain = gemmc.compile_string(schedule(shapes, tile))["irregular"]
        line = timing.compare(name, shapes, (("plain", plain), ("edges", edged(plain))))
        print(f"{name:28s} {tile:32s} {line}", flush=True)


if __name__ == "__main__":
    main()
