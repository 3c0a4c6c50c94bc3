"""Experiment: what one output tile of the SIMT kernel costs beyond its k steps (issue 3). GPU machine:

    python3 bench/experiments/simt_pertile.py

One problem of 8 full waves of tiles (1056 tiles of the 128 x 128 shape on 132 SMs; the smaller shapes keep the
same matrix, so more tiles) with K = 16 .. 512: the time per wave against K steps is a line whose slope is one k
step of a tile and whose intercept is what a tile costs besides (block start, the table loads, the first
k-tile's round trip, the epilogue). Each kernel is checked against float64 first.

Why: the 1024-GEMM batches run 4.6 (K <= 128) to 6.5 us (K <= 512) per tile and SM beyond their issued FMAs at
the 4096^3 rate; whether that is the tile's fixed cost (then a block that loads its next tile during the last k
step pays) or the edge tiles' smaller micro-tiles (then it does not) decides what to build next.

Measured (bench/results/2026-11-23_h100_simt-pertile.log): 128x128x16 1.46 us per k step and 3.7 us per tile
besides; 64x128 / 128x64 (2 blocks per SM) 16% and 64x64 45% less efficient per FMA. The intercept is not mostly
load latency: loading the next tile during the last k-tile gained nothing (simt_across.py on branch
wip-simt-across). With every SM in step, a wave's C tiles (8.6 MB at K = 16) are written at once, which alone
takes ~3 us at the H100's bandwidth; that, not a latency, is the likelier part of the intercept.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ["GEMMC_TUNE"] = "0"

import timing  # noqa: E402

import gemmc  # noqa: E402

TILES = ["128x128x16 threads 256", "64x128x16 threads 256", "128x64x16 threads 256", "64x64x16 threads 256"]
KS = [16, 32, 64, 128, 256, 512]
M, N = 128 * 33, 128 * 32  # 1056 tiles of 128 x 128: 8 waves of one block per SM on 132 SMs


def main() -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"gpu: {timing.gpu_name()}, {sms} SMs; M x N = {M} x {N}", flush=True)
    for tile in TILES:
        per_wave = []
        for k in KS:
            kern = gemmc.compile_string(f"kernel g {{ gemm {M} x {N} x {k} tile {tile} batching none }}")["g"]
            As, Bs, Cs = timing.inputs([(M, N, k)])
            us, err = timing.checked_gemmc_us(kern, As, Bs, Cs, label=f"{tile} K {k}")
            blocks = kern.ir.work.grid[0]
            waves = blocks / (sms * max(1, kern.ir.plan.min_blocks))  # resident blocks per SM as bounded
            per_wave.append(us / waves)
            print(f"{tile:24s} K {k:4d}: {us:8.1f} us, {blocks} blocks, {us / waves:6.2f} us per block-wave, "
                  f"{2 * M * N * k / us / 1e6:5.1f} TFLOP/s, err {err:.1e}", flush=True)
        steps = np.array(KS) / 16
        slope, intercept = np.polyfit(steps, per_wave, 1)
        print(f"{tile:24s} fit: {slope:.3f} us per k step of 16, {intercept:.2f} us per tile besides "
              f"(per block-wave, waves = blocks / SMs)", flush=True)


if __name__ == "__main__":
    main()
