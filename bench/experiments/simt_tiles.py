"""Experiment: which explicit SIMT tile (and batching) is fastest on the irregular suite's big and small cases,
to set the uniform catalogue and check `tile auto`'s ranking. GPU machine:

    python3 bench/experiments/simt_tiles.py

Prediction: at K <= 128 a block's k-loop is short (<= 8 steps of 16), so the tile's prologue and epilogue
matter and two blocks per SM (128x128x8 at 128 registers, or 128x64x16 at ~113) should beat 128x128x16 at one
block per SM; at K <= 512, 128x128x16 should win as at 4096^3.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import irregular  # noqa: E402
import timing  # noqa: E402

import gemmc  # noqa: E402

BIG = ("128x128x8 threads 256", "128x128x16 threads 256", "128x64x16 threads 256", "64x64x16 threads 256",
       "128x128x8 threads 256 batching threshold", "128x64x16 threads 256 batching threshold")
SMALL = ("32x32x32 threads 256", "32x32x32 threads 128", "16x16x32 threads 128", "32x32x16 threads 128",
         "64x64x16 threads 256", "auto(loadbalanced)")
CASES = {"random MN<=512 K<=128 x1024": BIG, "random MN<=512 K<=128 x256": BIG, "random MN<=512 K<=512 x1024": BIG,
         "random MN<=128 K<=128 x1024": BIG[:4], "inception-2": SMALL, "inception-1": SMALL, "inception-7": SMALL}


def main() -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    all_cases = dict(irregular.inception_cases() + irregular.random_cases(False))
    for name, tiles in CASES.items():
        shapes = all_cases[name]
        As = [torch.randn(m, k, device="cuda") for m, n, k in shapes]
        Bs = [torch.randn(k, n, device="cuda") for m, n, k in shapes]
        Cs = [torch.full((m, n), float("nan"), device="cuda") for m, n, k in shapes]
        flops = sum(2 * m * n * k for m, n, k in shapes)
        for tile in tiles:
            k = gemmc.compile_string(irregular.schedule(shapes, tile))["irregular"]
            for c in Cs:
                c.fill_(float("nan"))
            k(As, Bs, Cs)
            err = irregular.rel_err(Cs, As, Bs)
            t = timing.device_seconds(timing.gemmc_graph(lambda k=k, a=As, b=Bs, c=Cs: k(a, b, c)))
            plan = k.ir.plan
            print(f"{name:30s} {tile:44s} {t * 1e6:8.1f} us {flops / t / 1e12:5.1f} TFLOP/s err {err:.1e} "
                  f"blocks {k.ir.work.grid[0]} bound {plan.min_blocks}/SM", flush=True)


if __name__ == "__main__":
    main()
