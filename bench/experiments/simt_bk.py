"""Experiment (issue 26): k steps of the large f32 SIMT tile. GPU machine:

    python3 bench/experiments/simt_bk.py OUT_DIR        # OUT_DIR/simt_bk.json

Nsight Compute (simt_pipelined_ncu.py) has the 128x128x16 tile issuing 7% more instructions than cuBLAS per FMA and
issuing in fewer cycles; a k-tile's staging (global loads, transposing stores, pointer steps, edge predicates) and its
barrier cost the same whatever its length, so a longer k-tile spreads them over more FMAs (one block per SM either
way: 243 registers, no spill, 66560 B of shared memory at 32). Candidates: the model's plan (tile auto), the same with
the uniform catalogue's 128x128x16 replaced by 128x128x32 (auto32), and explicit 128x128 tiles of k 16, 24 and 32;
each checked against float64 with NaN-poisoned C (and at odd sizes), timed in CUDA graphs beside cuBLAS (TF32 off).

Measured on the H100 (bench/results/uniform/2026-11-27_h100_simt-bk.json), TFLOP/s at 4096^3 (cuBLAS 51.7): k 16
45.0, 24 42.9, 32 44.2; auto32 37.6 (its edge halves take the registers to 255). A longer k-tile is not the missing
issue either. The explicit 128x128x16 tile (205 registers; no edge halves) ran 1.0% faster than tile auto's plan (243:
the same tile and three edge halves that no tile of 4096^3 runs) and 2.6% at 4096x1024x2048, 0.3-0.6% at
4096x1024x1024 and 8192x2048x128; the run of ..._simt-launch-bounds.json had the kernel without the halves 1.1% slower
at 4096^3, so this is within what separates runs.
"""

from __future__ import annotations

import os
import sys

os.environ["GEMMC_TUNE"] = "0"

from simt_cases import CASES, measure

import gemmc
from gemmc.families.simt import planner
from gemmc.families.simt.plan import SimtVariant

ODD = [(1000, 999, 1003, "row", "row"), (1000, 999, 1003, "col", "col"), (333, 129, 7, "col", "row")]
CANDIDATES = {"auto": "auto", "auto32": "auto", "s16": "128x128x16 threads 256", "s24": "128x128x24 threads 256",
              "s32": "128x128x32 threads 256"}
LARGE_K32 = SimtVariant(128, 128, 32, 8, 8, 256)


def candidate(case, name: str):
    m, n, k, la, lb = case
    text = (f"target cuda sm_90\nkernel g {{\n dtype f32\n layout A {la}, B {lb}, C row\n gemm {m} x {n} x {k}\n"
            f" tile {CANDIDATES[name]}\n}}\n")
    catalogue = planner.UNIFORM_F32
    if name == "auto32":
        planner.UNIFORM_F32 = (LARGE_K32, *catalogue[1:])
    try:
        return gemmc.compile_string(text)["g"]
    finally:
        planner.UNIFORM_F32 = catalogue


def build(job) -> None:
    """In a worker process: NVRTC-compile a candidate into the disk cache."""
    candidate(*job).executable.function  # noqa: B018 - compiles


def main() -> None:
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    import torch

    from gemmc.bench import timing

    torch.backends.cuda.matmul.allow_tf32 = False
    out = sys.argv[1]
    odd = [(case, name) for case in ODD for name in ("auto32", "s32", "s24")]
    jobs = [(case, name) for case in CASES for name in CANDIDATES] + odd
    with ProcessPoolExecutor(16, mp_context=get_context("spawn")) as pool:
        list(pool.map(build, jobs))
    res = {"gpu": timing.gpu_name(), "candidates": CANDIDATES, "cases": [], "odd": []}
    measure(candidate, list(CANDIDATES), odd, CASES, res, os.path.join(out, "simt_bk.json"))


if __name__ == "__main__":
    main()
