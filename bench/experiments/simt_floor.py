"""Experiment: what the ~6 us floor of the small irregular cases is made of (issue 3). GPU machine:

    python3 bench/experiments/simt_floor.py

Measured as the benchmark measures (graph replays, 100 per window, median of 7; GEMMC_TUNE=0, so the model's
plan runs):
- an empty kernel of 1 and of 132 blocks: what a graph replay of one launch costs with no work;
- Inception module 3 (M = 196, N = 192/16/96/64) with K swept from 1 to 512 under one fixed tile (32x32x32, 128
  threads, the one `tile auto` picks at K = 192): the slope is the cost of one k step of 32 on a lone wave of
  84 blocks, the intercept what every launch pays besides (launch, tables, first load, epilogue);
- one 32x32 tile with K = 32: the least one SIMT launch of gemmc costs.

Prediction (from the 6.1 us of inception-3 at 6 k steps): an empty replay of 2-3 us, a k step of 0.4-0.6 us, so
that splitting K over more warps (84 blocks of 4 warps leave 48 of 132 SMs idle) would save about half the k
steps' time. Measured (bench/results/irregular/2026-11-22_h100_simt-floor.log): 1.9 us, 3.3 us for one k step, 0.54 us
per
k step. The split did not follow: 2 k slices (8 warps per tile) took inception-3 from 5.2 to 5.1 us, 4 slices to
5.5 (..._irregular_sliced.json, `tuning_us`), so a k step is not the warps' issue latency either. Nsight Compute
on the kernel itself (bench/experiments/ncu_case.py; docs/PERFORMANCE-irregular.md, stop 10) then showed why:
the slices shared a saturated shared-memory pipe (16-byte fragment reads at 4 wavefronts each), and the lone
4-warp wave waits on shared-load latency. With 8-byte reads the k step is still 0.54 us unsliced
(..._simt-floor_frag8.log), and the 2-slice tile is now the one kept on the Inception modules.
"""

from __future__ import annotations

import os

import gemmc
from gemmc.bench import timing

INCEPTION_3 = ((196, 192), (196, 16), (196, 96), (196, 64))


def graph_us(fn) -> float:
    return timing.device_seconds(timing.gemmc_graph(fn)) * 1e6


def gemmc_us(shapes, tile: str) -> float:
    import torch

    body = " ".join(f"p{i} {m} x {n} x {k}" for i, (m, n, k) in enumerate(shapes))
    kern = gemmc.compile_string(f"kernel k {{ tile {tile} batch {{ {body} }} }}")["k"]
    As = [torch.randn(m, k, device="cuda") for m, n, k in shapes]
    Bs = [torch.randn(k, n, device="cuda") for m, n, k in shapes]
    Cs = [torch.empty(m, n, device="cuda") for m, n, k in shapes]
    return graph_us(lambda: kern(As, Bs, Cs))


def main() -> None:
    import cupy as cp

    os.environ["GEMMC_TUNE"] = "0"
    print(f"gpu: {timing.gpu_name()}", flush=True)
    empty = cp.RawKernel('extern "C" __global__ void empty() {}', "empty")
    for blocks in (1, 132):
        print(f"empty kernel, {blocks} blocks of 128: {graph_us(lambda b=blocks: empty((b,), (128,), ())):.2f} us",
              flush=True)
    print(f"one 32x32 tile, K = 32: {gemmc_us([(32, 32, 32)], '32x32x32 threads 128'):.2f} us", flush=True)
    for k in (1, 32, 64, 128, 192, 256, 384, 512):
        shapes = [(m, n, k) for m, n in INCEPTION_3]
        fixed = gemmc_us(shapes, "32x32x32 threads 128")
        auto = gemmc_us(shapes, "auto")
        print(f"inception-3 at K = {k:3d} ({-(-k // 32):2d} k steps): 32x32x32 {fixed:6.2f} us, "
              f"tile auto {auto:6.2f} us", flush=True)


if __name__ == "__main__":
    main()
