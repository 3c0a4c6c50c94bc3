"""Experiment: the SIMT kernel as planned (`__launch_bounds__(256, 2)`: 128 registers, two blocks per SM) against
the same source with no minimum (ptxas then takes 165 registers: one block per SM). Timed like bench/uniform.py,
on 4096^3 and on the 1024-GEMM random batch (M, N, K <= 512) with uniform tiles.

Prediction (docs/PERFORMANCE-irregular.md): twice the resident warps hide the barrier and shared-memory
latency of the other block: 4096^3 36.6 -> ~43 TFLOP/s; the 1024 batch ~15% faster."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import irregular  # noqa: E402
import timing  # noqa: E402

import gemmc  # noqa: E402
from gemmc.runtime.launch import pointer_table  # noqa: E402


def variant_fn(k, bounds: str | None):
    import cupy as cp

    src = k.source if bounds is None else re.sub(r"__launch_bounds__\([^)]*\)", f"__launch_bounds__({bounds})",
                                                  k.source)
    fn = cp.RawModule(code=src, options=("--std=c++17",)).get_function(k.rendered.entry)
    if k.ir.work.smem_bytes > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = k.ir.work.smem_bytes
    return fn


def time_variant(k, shapes, bounds: str | None) -> tuple[float, float, int]:
    import numpy as np
    import torch

    As = [torch.randn(m, kk, device="cuda") for m, n, kk in shapes]
    Bs = [torch.randn(kk, n, device="cuda") for m, n, kk in shapes]
    Cs = [torch.full((m, n), float("nan"), device="cuda") for m, n, kk in shapes]
    k(As, Bs, Cs)  # uploads tables, checks the arguments
    fn = variant_fn(k, bounds)
    problems, offsets, tiles = k.executable.tables
    ptrs = pointer_table(k.executable, [a.data_ptr() for a in As], [b.data_ptr() for b in Bs],
                         [c.data_ptr() for c in Cs])
    n = len(As)
    w = k.ir.work

    def call():
        fn(w.grid, (w.block, 1, 1), (problems, offsets, tiles, ptrs[:n], ptrs[n:2 * n], ptrs[2 * n:],
                                     np.float32(1), np.float32(0)), shared_mem=w.smem_bytes)

    for c in Cs:
        c.fill_(float("nan"))
    call()
    err = max(float((c.double() - a.double() @ b.double()).norm() / (a.double() @ b.double()).norm())
              for a, b, c in zip(As, Bs, Cs, strict=True))
    return timing.device_seconds(timing.gemmc_graph(call), calls=20), err, fn.num_regs


def main() -> None:
    big = [(4096, 4096, 4096)]
    batch = dict(irregular.random_cases(False))["random MN<=512 K<=512 x1024"]
    cases = [("4096^3", gemmc.compile_string("kernel g { gemm 4096 x 4096 x 4096 }")["g"], big),
             ("4096^3 tile 128x128x16", gemmc.compile_string(
                 "kernel g { gemm 4096 x 4096 x 4096 tile 128x128x16 threads 256 }")["g"], big),
             ("1024 x <=512 uniform", gemmc.compile_string(irregular.schedule(batch, "auto(uniform)"))["irregular"],
              batch)]
    for name, k, shapes in cases:
        for bounds in (None, "256"):
            t, err, regs = time_variant(k, shapes, bounds)
            flops = sum(2 * m * n * kk for m, n, kk in shapes)
            print(f"{name:24s} bounds {bounds or 'as planned':10s} {regs:3d} regs: {t * 1e6:8.1f} us  "
                  f"{flops / t / 1e12:5.1f} TFLOP/s  err {err:.1e}", flush=True)


if __name__ == "__main__":
    main()
