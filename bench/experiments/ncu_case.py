"""Launches one benchmark case's kernel five times with a given tile, for Nsight Compute. Only gemmc's kernels
are named gemmc_*, so filter on that (the inputs are made by other kernels first):

    ncu --kernel-name regex:gemmc_ --launch-skip 2 --launch-count 1 --set full --import-source yes -o prof \\
        python3 bench/experiments/ncu_case.py --case 'inception-3$' --tile '32x32x32 threads 128'
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ["GEMMC_TUNE"] = "0"

import torch  # noqa: E402
from irregular import inception_cases, random_cases, schedule  # noqa: E402

import gemmc  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", required=True, help="regular expression naming one case of bench/irregular.py")
    parser.add_argument("--tile", required=True, help="what follows `tile` in the schedule")
    args = parser.parse_args()
    [(name, shapes)] = [(n, s) for n, s in inception_cases() + random_cases(False) if re.search(args.case, n)]
    kern = gemmc.compile_string(schedule(shapes, args.tile))["irregular"]
    As = [torch.randn(m, k, device="cuda") for m, n, k in shapes]
    Bs = [torch.randn(k, n, device="cuda") for m, n, k in shapes]
    Cs = [torch.empty(m, n, device="cuda") for m, n, k in shapes]
    print(f"{name}: {len(shapes)} GEMMs, tile {args.tile}", flush=True)
    for _ in range(5):
        kern(As, Bs, Cs)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
