"""Launches TSM2R (the model's plan, untuned) and cuBLAS (torch.mm) on the same column-major operands, three times
each, for Nsight Compute to compare them: DRAM bytes per cycle, issue and stall reasons. gemmc's kernels are named
gemmc_*; cuBLAS's DGEMM / SGEMM kernels carry "gemm" in their names; the inputs are made by other kernels first:

    ncu --kernel-name regex:'gemm' --launch-skip 2 --launch-count 4 --section SpeedOfLight \\
        --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \\
        python3 bench/experiments/ncu_tsm2r.py --dtype f64 --size 30720 --n 32

(--launch-skip 2 skips gemmc's first two launches: the four profiled are gemmc's third and cuBLAS's three.)
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ["GEMMC_TUNE"] = "0"

import torch  # noqa: E402

import gemmc  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dtype", default="f64", choices=("f32", "f64"))
    parser.add_argument("--size", type=int, default=30720, help="m = k")
    parser.add_argument("--n", type=int, default=32)
    args = parser.parse_args()
    m = k = args.size
    tdt = torch.float64 if args.dtype == "f64" else torch.float32
    A = torch.randn(k, m, device="cuda", dtype=tdt).t()  # column-major m x k
    B = torch.randn(args.n, k, device="cuda", dtype=tdt).t()
    C = torch.empty(args.n, m, device="cuda", dtype=tdt).t()
    kern = gemmc.compile_string(f"kernel t {{ dtype {args.dtype} layout A col, B col, C col "
                                f"gemm {m} x {args.n} x {k} algorithm tsm2r }}")["t"]
    print(f"gemmc plan: {kern.ir.plan.lines()[0]}", flush=True)
    for _ in range(3):
        kern([A], [B], [C])
    torch.cuda.synchronize()
    print("then cuBLAS (torch.mm) x3", flush=True)
    out = torch.empty(args.n, m, device="cuda", dtype=tdt).t()
    for _ in range(3):
        torch.mm(A, B, out=out)
    torch.cuda.synchronize()
    print(torch.cuda.get_device_name(), flush=True)


if __name__ == "__main__":
    main()
