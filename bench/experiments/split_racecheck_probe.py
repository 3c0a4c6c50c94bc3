"""Probe: run SIMT split-k kernels once each on a tiny batch, for compute-sanitizer (the GPU tests' batches take
minutes under racecheck). GPU machine:

    compute-sanitizer --tool racecheck python3 bench/experiments/split_racecheck_probe.py \
        "16x16x32 kslices 4 ksplit 2 threads 64"

Each argument is a `tile ... threads ...` clause; the line printed per kernel is its largest error against the
product of the same f32 inputs (cupy's matmul), so a hang or a wrong sum shows as well as a hazard.
`--shapes 97x45x1031,5x7x3001` replaces the default batch. Kernels are compiled with -lineinfo, so a reported
hazard names its source lines.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import cupy as cp  # noqa: E402

import gemmc  # noqa: E402
from gemmc.runtime import compile as nvrtc  # noqa: E402

SHAPES = [(17, 9, 70), (5, 7, 100)]  # K = 70: ranks of a split get 2 and 1 k-tiles of 32; K = 100 a partial one


def main(tiles: list[str]) -> None:
    nvrtc.OPTIONS = (*nvrtc.OPTIONS, "-lineinfo")
    body = " ".join(f"p{i} {m} x {n} x {k}" for i, (m, n, k) in enumerate(SHAPES))
    for tile in tiles:
        kern = gemmc.compile_string(f"kernel k {{ tile {tile} batch {{ {body} }} }}")["k"]
        A = [cp.random.standard_normal((m, k), dtype=cp.float32) for m, n, k in SHAPES]
        B = [cp.random.standard_normal((k, n), dtype=cp.float32) for m, n, k in SHAPES]
        C = [cp.full((m, n), cp.nan, dtype=cp.float32) for m, n, k in SHAPES]
        kern(A, B, C)
        cp.cuda.Device().synchronize()
        err = max(float(cp.abs(c - a @ b).max()) for a, b, c in zip(A, B, C, strict=True))
        print(f"{tile} max abs err {err}", flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--shapes"]:
        SHAPES = [tuple(int(x) for x in s.split("x")) for s in args[1].split(",")]
        args = args[2:]
    main(args)
