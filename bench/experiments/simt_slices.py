"""Experiment: k slices with larger micro-tiles for the small cases (issue 3). GPU machine:

    python3 bench/experiments/simt_slices.py

Nsight Compute on the 2-slice 32x32x32 tile that `tile auto` keeps on the Inception modules
(bench/results/2026-11-23_h100_ncu-inception3-sliced2_*): its k-loop waits on the shared-memory instruction
queue (MIO throttle) and on shared-load latency. A 2x4 micro-tile issues 3 shared loads per 8 FMAs: 384 load
instructions per k step of a block against 256 cycles of FMAs per scheduler, however many slices share them.
A 4x4 micro-tile issues 4 loads per 16 FMAs (256 per k step). So: the same 32x32x32 tile with slices of 64
threads (4x4 each) instead of 128 (2x4). Each tile is checked against float64 first (NaN-poisoned outputs).

Prediction: inception-3 4.9 -> ~4.3 us in the tuning's windows (5.8 -> ~5.2 in the benchmark's) with 2 or 4
slices of 64 threads; the unsliced 64-thread tile slower (2 warps per SM: half the schedulers idle).
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

CASES = ["inception-3$", "inception-1$", "inception-8$", "inception-all", "MN<=128 K<=128 x8$", "MN<=128 K<=512 x64",
         "MN<=512 K<=512 x8$"]
TILES = ["32x32x32 threads 128", "32x32x32 kslices 2 threads 256", "32x32x32 threads 64",
         "32x32x32 kslices 2 threads 128", "32x32x32 kslices 4 threads 256", "32x32x32 kslices 4 threads 128"]


def main() -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"gpu: {timing.gpu_name()}", flush=True)
    named = dict(inception_cases() + random_cases(False))
    print(" " * 28 + "".join(f"{t:>34s}" for t in TILES), flush=True)
    for case in CASES:
        [name] = [n for n in named if re.search(case, n)]
        shapes = named[name]
        As, Bs, Cs = timing.inputs(shapes)
        cells = []
        for tile in TILES:
            kern = gemmc.compile_string(schedule(shapes, tile))["irregular"]
            us, _ = timing.checked_gemmc_us(kern, As, Bs, Cs, label=f"{name} {tile}")
            cells.append(f"{us:34.2f}")
        print(f"{name:28s}" + "".join(cells), flush=True)


if __name__ == "__main__":
    main()
