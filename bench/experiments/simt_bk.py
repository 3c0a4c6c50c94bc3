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

import json
import os
import sys

os.environ["GEMMC_TUNE"] = "0"

import gemmc
from gemmc.families.simt import planner
from gemmc.families.simt.plan import SimtVariant

CASES = [  # m, n, k, layout A, layout B (simt_pipelined.py's)
    (4096, 4096, 4096, "row", "row"),
    (4096, 1024, 2048, "row", "row"),
    (4096, 768, 768, "row", "row"),
    (1024, 1024, 4096, "col", "row"),
    (4096, 1024, 1024, "row", "col"),
    (2048, 128, 8192, "col", "row"),
    (8192, 2048, 128, "row", "col"),
]
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
    from gemmc.runtime.check import check_kernel

    torch.backends.cuda.matmul.allow_tf32 = False
    out = sys.argv[1]
    odd = [(case, name) for case in ODD for name in ("auto32", "s32", "s24")]
    jobs = [(case, name) for case in CASES for name in CANDIDATES] + odd
    with ProcessPoolExecutor(16, mp_context=get_context("spawn")) as pool:
        list(pool.map(build, jobs))
    res = {"gpu": timing.gpu_name(), "candidates": CANDIDATES, "cases": [], "odd": []}
    for case, name in odd:
        err = check_kernel(candidate(case, name), seed=1, time_it=False)["errors"]
        res["odd"].append({"case": list(case), "candidate": name, "rel_fro": err["rel_fro"],
                           "nonfinite": err["nonfinite"]})
        assert err["nonfinite"] == 0 and err["rel_fro"] < 1e-5, (case, name, err)
    for case in CASES:
        m, n, k, la, lb = case
        A = torch.randn((m, k) if la == "row" else (k, m), device="cuda")
        B = torch.randn((k, n) if lb == "row" else (n, k), device="cuda")
        A = A if la == "row" else A.T
        B = B if lb == "row" else B.T
        C = torch.empty(m, n, device="cuda")
        out_c = torch.empty(m, n, device="cuda")
        flops = 2 * m * n * k
        calls = max(10, min(100, int(3e-3 / (flops / 50e12))))  # windows of ~3 ms at cuBLAS's rate
        cublas = timing.device_seconds(timing.torch_graph(lambda A=A, B=B, c=out_c: torch.mm(A, B, out=c),
                                                          repeat=calls), calls=1) / calls * 1e6
        row = {"case": f"{m}x{n}x{k} A {la} B {lb}", "cublas_us": cublas, "cublas_tflops": flops / cublas / 1e6}
        for name in CANDIDATES:
            kern = candidate(case, name)
            err = check_kernel(kern, seed=1, time_it=False)["errors"]
            assert err["nonfinite"] == 0 and err["rel_fro"] < 1e-5, (case, name, err)
            run = lambda kern=kern, A=A, B=B, C=C: kern([A], [B], [C])  # noqa: E731
            us = timing.device_seconds(timing.gemmc_graph(run), calls=calls) * 1e6
            regs = kern.executable.function.num_regs
            row[name] = {"us": us, "tflops": flops / us / 1e6, "vs_cublas": cublas / us, "rel_err": err["rel_fro"],
                         "regs": regs,
                         "plan": [ln.strip() for ln in kern.plan.splitlines() if "tiling" in ln or "variant" in ln]}
            print(f"{row['case']:28s} {name:7s} {us:9.1f} us {flops / us / 1e6:5.1f} TF/s {cublas / us:5.3f}x cuBLAS "
                  f"({regs} regs, err {err['rel_fro']:.1e})", flush=True)
        res["cases"].append(row)
        json.dump(res, open(os.path.join(out, "simt_bk.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
