"""One tall-and-skinny point for bf16 storage: gemmc's TSM2R and the hopper family (what `algorithm auto` picks on
sm_90), against torch.mm bf16 (cuBLAS, in a CUDA graph), side by side on the same inputs (gemmc/bench/timing.py's
protocol, fewer windows). Reports device time, the bandwidth of reading A + B and writing C, and the relative error
of each against float64.

    python bench/experiments/half_tsm2_point.py OUT.json
"""

from __future__ import annotations

import json
import sys

import torch

import gemmc
from gemmc.bench.timing import device_seconds, gemmc_graph, gpu_name, torch_graph


def main(out: str, m: int = 16384, n: int = 16, k: int = 16384) -> None:
    gen = torch.Generator(device="cuda").manual_seed(0)
    A = (torch.rand(m, k, generator=gen, device="cuda") * 2 - 1).to(torch.bfloat16).t().contiguous().t()  # col A
    B = (torch.rand(k, n, generator=gen, device="cuda") * 2 - 1).to(torch.bfloat16)
    ref = A.double() @ B.double()
    moved = 2 * (m * k + k * n + m * n)
    rows = []
    C = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    cublas = device_seconds(torch_graph(lambda: torch.mm(A, B, out=C)), calls=20, windows=5)
    err = float((C.double() - ref).norm() / ref.norm())
    rows.append({"who": "torch.mm bf16 (cuBLAS)", "us": cublas * 1e6, "gbs": moved / cublas / 1e9, "err": err})
    for algorithm in ("tsm2r", "hopper"):
        text = f"kernel k {{ dtype bf16 layout A col, B row, C row algorithm {algorithm} gemm {m} x {n} x {k} }}"
        kern = gemmc.compile_string(text)["k"]
        Cg = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        t = device_seconds(gemmc_graph(lambda kern=kern, Cg=Cg: kern([A], [B], [Cg])), calls=20, windows=5)
        err = float((Cg.double() - ref).norm() / ref.norm())
        rows.append({"who": f"gemmc {kern.ir.family}", "us": t * 1e6, "gbs": moved / t / 1e9, "err": err,
                     "vs_cublas": cublas / t})
    result = {"gpu": gpu_name(), "shape": [m, n, k], "layout": "A col, B row, C row", "rows": rows}
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
