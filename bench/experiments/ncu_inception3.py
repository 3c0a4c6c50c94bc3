"""Launches Inception module 3 (32x32x32 tiles, 128 threads) five times, for Nsight Compute:

    ncu --launch-skip 2 --launch-count 1 --set full python3 bench/experiments/ncu_inception3.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ["GEMMC_TUNE"] = "0"

import torch  # noqa: E402

import gemmc  # noqa: E402

SHAPES = [(196, 192, 192), (196, 16, 192), (196, 96, 192), (196, 64, 192)]


def main() -> None:
    body = " ".join(f"p{i} {m} x {n} x {k}" for i, (m, n, k) in enumerate(SHAPES))
    kern = gemmc.compile_string(f"kernel k {{ tile 32x32x32 threads 128 batch {{ {body} }} }}")["k"]
    As = [torch.randn(m, k, device="cuda") for m, n, k in SHAPES]
    Bs = [torch.randn(k, n, device="cuda") for m, n, k in SHAPES]
    Cs = [torch.empty(m, n, device="cuda") for m, n, k in SHAPES]
    for _ in range(5):
        kern(As, Bs, Cs)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
