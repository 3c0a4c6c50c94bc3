"""Experiment: does a register cap for two resident blocks per SM (`__launch_bounds__(256, 2)`) pay for the
128x128x8 SIMT variant, despite ptxas spilling ~76 bytes per thread? Same source otherwise; timed like
bench/uniform.py. Prediction: 8 -> 16 warps per SM hides more shared-memory latency, up to ~10% faster, unless
the spills (local memory in the inner loop) cost more."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import timing  # noqa: E402

import gemmc  # noqa: E402
from gemmc.runtime.launch import plan_tables, pointer_table  # noqa: E402


def variant_fn(k, bounds: str):
    import cupy as cp

    src = k.source.replace("__launch_bounds__(256)", f"__launch_bounds__({bounds})")
    return cp.RawModule(code=src, options=("--std=c++17",)).get_function(k.rendered.entry)


def time_variant(text: str, shapes, bounds: str) -> tuple[float, float]:
    import torch

    k = next(iter(gemmc.compile_string(text)))
    As = [torch.randn(m, kk, device="cuda") for m, n, kk in shapes]
    Bs = [torch.randn(kk, n, device="cuda") for m, n, kk in shapes]
    Cs = [torch.full((m, n), float("nan"), device="cuda") for m, n, kk in shapes]
    k(As, Bs, Cs)  # uploads tables, checks the arguments
    fn = variant_fn(k, bounds)
    problems, offsets, tiles = plan_tables(k)
    ptrs = pointer_table(k, [a.data_ptr() for a in As], [b.data_ptr() for b in Bs], [c.data_ptr() for c in Cs])
    n = len(As)
    w = k.ir.work
    import numpy as np

    def call():
        fn(w.grid, (w.block, 1, 1), (problems, offsets, tiles, ptrs[:n], ptrs[n:2 * n], ptrs[2 * n:],
                                     np.float32(1), np.float32(0)), shared_mem=w.smem_bytes)

    call()
    err = max(float((c.double() - a.double() @ b.double()).norm() / (a.double() @ b.double()).norm())
              for a, b, c in zip(As, Bs, Cs, strict=True))
    return timing.device_seconds(timing.gemmc_graph(call), calls=20), err


def main() -> None:
    cases = [("kernel g { gemm 4096 x 4096 x 4096 }", [(4096, 4096, 4096)]),
             ("kernel g { gemm 512 x 512 x 512 count 64 tile 128x128x8 threads 256 }", None)]
    for text, shapes in cases:
        if shapes is None:
            continue
        for bounds in ("256", "256, 2"):
            t, err = time_variant(text, shapes, bounds)
            flops = sum(2 * m * n * kk for m, n, kk in shapes)
            print(f"{text[:40]:40s} launch_bounds({bounds}): {t * 1e6:8.1f} us  {flops / t / 1e12:5.1f} TFLOP/s  "
                  f"err {err:.1e}")


if __name__ == "__main__":
    main()
