"""Experiment: would splitting k over more blocks pay for the small, latency-bound cases (issue 3)? GPU machine:

    python3 bench/experiments/simt_splitk_proxy.py

Nsight Compute on inception-3 (bench/results/2026-11-23_h100_ncu-inception3-sliced2_*): 84 blocks of 8 warps on
132 SMs, each scheduler issuing ~2000 instructions at one every 3.1 cycles, a third of the samples before the
first k-tile. Splitting each tile's k over s blocks (reduced afterwards) would put the work on more SMs and
shorten every block's serial chain of k-tiles. Before building that (a cluster's blocks adding their sums
through distributed shared memory, as TSM2R does), a proxy that needs no new code: each GEMM m x n x k replaced
by s GEMMs m x n x ceil(k / s), `tile auto` tuned as a user gets it. The proxy's time is what split-k would
cost without its reduction (s partial tiles per output tile through shared memory: small against the k-loop).

Beside it, the other way to cut the chain: longer k-tiles (BK 64: half the k-tiles and barriers of BK 32) for
the 32x32 tile in 4 and 8 slices, explicit (untuned).

Prediction (written before the run): inception-3 5.3 us -> ~4.3 at s = 2, ~3.8 at s = 3 (more SMs, 2 blocks
per SM, shorter chains); inception-8 (46 tiles) gains most; the 8-GEMM random batches 10-20%; BK 64 -5..-10%.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import timing  # noqa: E402
from irregular import inception_cases, random_cases, schedule  # noqa: E402

import gemmc  # noqa: E402

CASES = ["inception-3$", "inception-8$", "inception-1$", "inception-5$", "inception-all", "MN<=128 K<=128 x8$",
         "MN<=128 K<=512 x8$", "MN<=512 K<=512 x8$", "MN<=128 K<=512 x64$"]
SPLITS = (1, 2, 3, 4)
BK64 = ("32x32x64 kslices 4 threads 256", "32x32x64 kslices 8 threads 256", "32x32x64 kslices 4 threads 128")


def split(shapes, s: int):
    return [(m, n, math.ceil(k / s)) for m, n, k in shapes for _ in range(s)]


def main() -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"gpu: {timing.gpu_name()}", flush=True)
    named = dict(inception_cases() + random_cases(False))
    chosen = [(n, named[n]) for c in CASES for n in named if re.search(c, n)]
    texts = [schedule(split(s, k), "auto") for _, s in chosen for k in SPLITS]
    texts += [schedule(s, t) for n, s in chosen if n.startswith("inception") for t in BK64]
    timing.precompile(texts)
    for name, shapes in chosen:
        cells = []
        for s in SPLITS:
            parts = split(shapes, s)
            kern = gemmc.compile_string(schedule(parts, "auto"))["irregular"]
            As, Bs, Cs = timing.inputs(parts)
            us, _ = timing.checked_gemmc_us(kern, As, Bs, Cs, label=f"{name} split {s}")
            t = kern.tuning
            choice = t.chosen_label if t is not None else "untuned"
            cells.append(f"s{s} {us:6.2f} us [{choice}]")
        print(f"{name:28s} " + " | ".join(cells), flush=True)
        if name.startswith("inception"):
            variants = ((tile, gemmc.compile_string(schedule(shapes, tile))["irregular"]) for tile in BK64)
            print(f"{name:28s} " + timing.compare(name, shapes, variants), flush=True)


if __name__ == "__main__":
    main()
