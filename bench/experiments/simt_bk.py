"""Experiment: the 128 x 128 SIMT tile with a k step of 32 instead of 16 (issue 3). GPU machine:

    python3 bench/experiments/simt_bk.py

simt_edgewarps.py and simt_twoblocks.py showed the 128x128x16 tile bound by what its 8 warps per SM can hide (half
the warps per tile: 28% slower; a second block per SM at 128 registers: 10-20% slower with the spills). BK 16
instead of 8 took 4096^3 from 36 to 44 TFLOP/s by halving the k-tile turnarounds (staged stores, barrier); BK 32
halves them again, at 237 registers (ptxas, no spills; still one block per SM) and 66.5 KB of shared memory.
Both with `tile auto`'s edge tiles; each plan checked against float64 first.

Prediction: 4096^3 44 -> ~47 TFLOP/s; the batches with K <= 512 within +-3% (a partial last k-tile of 32 computes
zeros for 16 k on average, 6% of the FMAs at K ~ 264); K <= 128 slower (25% zeros at K ~ 72).

Measured (bench/results/2026-11-23_h100_simt-bk.log): slower everywhere. NVRTC gives BK 32 255 registers (BK 16:
221); 4096^3 43.4 -> 41.8 TFLOP/s, MN, K <= 512 x64 / x256 / x1024 +28% / +23% / +23%, K <= 128 x1024 +49%.
The catalogue keeps BK 16.
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
from gemmc.ir.types import Batching  # noqa: E402

CASES = [  # (case regex, batching)
    ("4096^3", Batching.NONE),
    ("MN<=512 K<=128 x1024", Batching.THRESHOLD),
    ("MN<=512 K<=512 x64", Batching.NONE),
    ("MN<=512 K<=512 x256", Batching.NONE),
    ("MN<=512 K<=512 x1024", Batching.NONE),
]


def edged(shapes, tile: str, mode: Batching) -> CompiledKernel:
    kern = gemmc.compile_string(schedule(shapes, tile))["irregular"]
    return kern.with_plan(dataclasses.replace(simt.with_edges(kern.ir.plan), batching=mode), "<edges>")


def main() -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"gpu: {timing.gpu_name()}", flush=True)
    named = dict(random_cases(False))
    named["4096^3"] = [(4096, 4096, 4096)]
    for case, mode in CASES:
        [name] = [n for n in named if re.search(re.escape(case) if "^" in case else case, n)]
        shapes = named[name]
        line = timing.compare(name, shapes, ((tile, edged(shapes, tile, mode))
                                             for tile in ("128x128x16 threads 256", "128x128x32 threads 256")))
        print(f"{name:28s} {mode.value:9s} | {line}", flush=True)


if __name__ == "__main__":
    main()
