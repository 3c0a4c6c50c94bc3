"""bf16 storage in the dynamic family (grouped K, the weight gradient of an MoE layer) against
torch._grouped_mm on the tensor cores, GPU machine only:

    OUT=... python3 bench/experiments/dynamic_half.py

The dynamic family widens the halves to f32 and multiplies on CUDA cores: this measures what that costs against the
tensor cores (docs/PERFORMANCE-dynamic.md). Device time per call from CUDA-graph replays of 20 calls cycling 8 routings
(gemmc.bench.dynamic.graph_seconds), both side by side on the same inputs; results:
bench/results/dynamic/2026-11-27_h100_dynamic-half.json.
"""

from __future__ import annotations

import json
import os

import numpy as np
import torch

import gemmc
from gemmc.bench.dynamic import graph_seconds


def case(experts: int, tokens: int, m: int, n: int, rng: np.random.Generator) -> dict:
    """dW_g = X_g^T dY_g over `experts` groups of a routing of `tokens` tokens: gemmc and torch._grouped_mm."""
    text = f"kernel w {{ dtype bf16 layout A col grouped K m {m} n {n} groups {experts} }}"
    kern = gemmc.compile_string(text)["w"]
    X = torch.randn(tokens, m, device="cuda", dtype=torch.bfloat16)  # A = X^T: m x tokens, column-major
    dY = torch.randn(tokens, n, device="cuda", dtype=torch.bfloat16)
    W = torch.empty(experts, m, n, device="cuda", dtype=torch.bfloat16)
    ends = [torch.tensor(np.cumsum(rng.multinomial(tokens, np.full(experts, 1 / experts))), dtype=torch.int32,
                         device="cuda") for _ in range(8)]
    kern(X.t(), dY, W, offsets=ends[0])
    ref = torch._grouped_mm(X.t(), dY, offs=ends[0])
    err = float((W.double() - ref.double()).norm() / ref.double().norm())
    g = graph_seconds(lambda i: kern(X.t(), dY, W, offsets=ends[i % 8]), calls=20)
    t = graph_seconds(lambda i: torch._grouped_mm(X.t(), dY, offs=ends[i % 8]), calls=20)
    flops = 2 * tokens * m * n
    return {"gemmc_us": g * 1e6, "grouped_mm_us": t * 1e6, "gemmc_tflops": flops / g / 1e12,
            "grouped_mm_tflops": flops / t / 1e12, "ratio": t / g, "rel_diff_vs_grouped_mm": err}


def main() -> None:
    out = {}
    rng = np.random.default_rng(0)
    for experts, tokens, m, n in ((8, 4096, 512, 512), (32, 8192, 1024, 1024), (64, 16384, 512, 1024)):
        name = f"grouped K E{experts} T{tokens} M{m} N{n}"
        out[name] = case(experts, tokens, m, n, rng)
        print(name, json.dumps(out[name]))
    path = os.path.join(os.environ.get("OUT", "."), "dynamic-half.json")
    with open(path, "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "cases": out}, f, indent=1)


if __name__ == "__main__":
    main()
