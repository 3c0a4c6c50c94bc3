"""Probe: compute-sanitizer racecheck and SIMT blocks whose tiles have different thread counts. GPU machine:

    compute-sanitizer --tool racecheck python3 bench/experiments/racecheck_mixed_threads.py VARIANT

Stop 20's racecheck of the GPU test `test_mixed_thread_counts_in_one_launch` (load-balanced tiling, threshold
batching: a block of 256 threads runs a 16x16 tile on 128 of them, then a 128x128 tile on all 256) reported hazards
between a tile's fragment reads and a later tile's k-tile stores, while the results matched float64. Between two
tiles every thread of the block passes `__syncthreads()`; inside a tile its threads sync on named barrier 1 with
the tile's own count (`bar.sync 1, 128` or `bar.sync 1, 256`).

VARIANT:
  synthetic-same  a minimal kernel with that pattern: tiles of 128 and 256 threads, each on barrier 1
  synthetic-own   the same with barrier 1 for 128 threads and barrier 2 for 256
  synthetic-nobar the 128-thread tiles with no barrier (each thread reads back its own word)
  synthetic-all   control: every tile on all 256 threads, barrier 1
  gemmc-same      the test's schedule, gemmc's kernel as generated
  gemmc-own       the same kernel with barrier id 1 + (NT == 256) inside a tile
Each prints whether its results are right, so a wrong result shows as well as a hazard.
"""

from __future__ import annotations

import dataclasses
import sys

import cupy as cp

import gemmc
from gemmc.runtime import compile as nvrtc

SYNTHETIC = r"""
template <int NT, int ID>
__device__ void tile(float* s, float* out, int t) {
  // NT threads write their words, sync on barrier ID, each reads another's and writes it out (ID 0: no barrier,
  // each reads its own word).
  s[threadIdx.x] = (float)(t * 1000 + threadIdx.x);
  if (ID) asm volatile("bar.sync %0, %1;" ::"r"(ID), "r"(NT) : "memory");
  out[(blockIdx.x * 8 + t) * 256 + threadIdx.x] = s[ID ? NT - 1 - threadIdx.x : threadIdx.x];
  if (ID) asm volatile("bar.sync %0, %1;" ::"r"(ID), "r"(NT) : "memory");
}

extern "C" __global__ void probe(float* out, int own) {
  __shared__ float s[256];
  for (int t = 0; t < 8; ++t) {
    if (t) __syncthreads();
    if (t % 2 == 0 && own != 3) {
      if (threadIdx.x < 128) {
        if (own == 2) tile<128, 0>(s, out, t);
        else tile<128, 1>(s, out, t);
      }
    } else if (own == 1) {
      tile<256, 2>(s, out, t);
    } else {
      tile<256, 1>(s, out, t);
    }
  }
}
"""

SHAPES = [(16, 16, 8)] * 30 + [(512, 512, 64)] * 2 + [(33, 17, 5)] * 20


def synthetic(own: int) -> bool:
    kernel = cp.RawKernel(SYNTHETIC, "probe", options=("--std=c++17", "-lineinfo"))
    out = cp.full(4 * 8 * 256, -1, dtype=cp.float32)
    kernel((4,), (256,), (out, cp.int32(own)))
    got = out.reshape(4, 8, 256).get()
    for t in range(8):
        nt = 128 if t % 2 == 0 and own != 3 else 256
        expect = [t * 1000 + (x if own == 2 and nt == 128 else nt - 1 - x) for x in range(nt)]
        if any((got[:, t, :nt] != expect).ravel()):
            return False
    return True


def real(own: bool) -> bool:
    nvrtc.OPTIONS = (*nvrtc.OPTIONS, "-lineinfo")
    body = " ".join(f"p{i} {m} x {n} x {k}" for i, (m, n, k) in enumerate(SHAPES))
    kern = gemmc.compile_string(f"kernel k {{ tile auto(loadbalanced) tlp threshold 4096 batching threshold "
                                f"batch {{ {body} }} }}")["k"]
    if own:
        source = kern.rendered.source
        assert source.count("GEMMC_BARRIER(1, NT)") >= 2
        kern._rendered = dataclasses.replace(  # before the first call builds its executable
            kern.rendered, source=source.replace("GEMMC_BARRIER(1, NT)", "GEMMC_BARRIER(1 + (NT == 256), NT)"))
    rng = cp.random.default_rng(1)
    A = [rng.standard_normal((m, k), dtype=cp.float32) for m, n, k in SHAPES]
    B = [rng.standard_normal((k, n), dtype=cp.float32) for m, n, k in SHAPES]
    C = [cp.full((m, n), cp.nan, dtype=cp.float32) for m, n, k in SHAPES]
    kern(A, B, C)
    cp.cuda.Device().synchronize()
    return all(float(cp.abs(c - a.astype(cp.float64) @ b.astype(cp.float64)).max()) < 1e-3
               for a, b, c in zip(A, B, C, strict=True))


def main(variant: str) -> None:
    kind, ids = variant.split("-")
    if kind == "synthetic":
        ok = synthetic({"same": 0, "own": 1, "nobar": 2, "all": 3}[ids])
    else:
        ok = real(ids == "own")
    print(variant, "correct" if ok else "WRONG", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
