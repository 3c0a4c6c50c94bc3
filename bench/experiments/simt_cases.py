"""The f32 SIMT experiments' cases and measuring loop, shared by simt_pipelined.py and simt_bk.py (GPU machine only:
import them from those scripts, run from the tree's root)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

CASES = [  # m, n, k, layout A, layout B
    (4096, 4096, 4096, "row", "row"),
    (4096, 1024, 2048, "row", "row"),
    (4096, 768, 768, "row", "row"),
    (1024, 1024, 4096, "col", "row"),
    (4096, 1024, 1024, "row", "col"),
    (2048, 128, 8192, "col", "row"),
    (8192, 2048, 128, "row", "col"),
]


def measure(candidate: Callable[[Any, str], Any], names: list[str], odd: list[tuple[Any, str]], cases: list[Any],
            res: dict, path: str) -> None:
    """Check each (case, name) of `odd` against float64 with NaN-poisoned C, then check and time every candidate on
    every case beside cuBLAS (CUDA-graph replays, windows of about 3 ms at cuBLAS's rate), writing `res` to `path`
    after each case."""
    import torch

    from gemmc.bench import timing
    from gemmc.runtime.check import check_kernel

    for case, name in odd:
        err = check_kernel(candidate(case, name), seed=1, time_it=False)["errors"]
        res["odd"].append({"case": list(case), "candidate": name, "rel_fro": err["rel_fro"],
                           "nonfinite": err["nonfinite"]})
        print(f"check {case} {name}: {err['rel_fro']:.1e}, nonfinite {err['nonfinite']}", flush=True)
        assert err["nonfinite"] == 0 and err["rel_fro"] < 1e-5, (case, name, err)
    for case in cases:
        m, n, k, la, lb = case
        A = torch.randn((m, k) if la == "row" else (k, m), device="cuda")
        B = torch.randn((k, n) if lb == "row" else (n, k), device="cuda")
        A = A if la == "row" else A.T
        B = B if lb == "row" else B.T
        C = torch.empty(m, n, device="cuda")
        out_c = torch.empty(m, n, device="cuda")
        flops = 2 * m * n * k
        calls = max(10, min(100, int(3e-3 / (flops / 50e12))))
        cublas = timing.device_seconds(timing.torch_graph(lambda A=A, B=B, c=out_c: torch.mm(A, B, out=c),
                                                          repeat=calls), calls=1) / calls * 1e6
        row = {"case": f"{m}x{n}x{k} A {la} B {lb}", "cublas_us": cublas, "cublas_tflops": flops / cublas / 1e6}
        for name in names:
            kern = candidate(case, name)
            err = check_kernel(kern, seed=1, time_it=False)["errors"]
            assert err["nonfinite"] == 0 and err["rel_fro"] < 1e-5, (case, name, err)
            run = lambda kern=kern, A=A, B=B, C=C: kern([A], [B], [C])  # noqa: E731
            us = timing.device_seconds(timing.gemmc_graph(run), calls=calls) * 1e6
            regs = kern.executable.function.num_regs
            row[name] = {"us": us, "tflops": flops / us / 1e6, "vs_cublas": cublas / us, "rel_err": err["rel_fro"],
                         "regs": regs,
                         "plan": [ln.strip() for ln in kern.plan.splitlines() if "tiling" in ln or "variant" in ln]}
            print(f"{row['case']:28s} {name:8s} {us:9.1f} us {flops / us / 1e6:5.1f} TF/s {cublas / us:5.3f}x cuBLAS "
                  f"({regs} regs, err {err['rel_fro']:.1e})", flush=True)
        res["cases"].append(row)
        with open(path, "w") as f:
            json.dump(res, f, indent=1)
