"""bf16 `grouped K` (the weight gradient of an MoE layer, dW_g = X_g^T dY_g) against torch._grouped_mm on the tensor
cores, GPU machine only:

    OUT=... python3 bench/experiments/dynamic_half.py [--simt]

On cuda sm_90 the hopper_grouped family computes it (TMA + wgmma, docs/INTERNALS.md "Grouped K in bf16/f16"); `--simt`
adds the dynamic family's kernel (`algorithm dynamic`: the halves widened to f32 on CUDA cores) on the first three
cases. Per case (experts, tokens, M, N) and routing (uniform, Zipf-skewed: gemmc.bench.dynamic.counts), a pool of 8
draws is cycled call by call; device time per call from CUDA-graph replays of 100 calls, the median of 7 windows
(gemmc.bench.dynamic.graph_seconds), both side by side on the same inputs (DESIGN.md protocol); error against float64
on a sample of experts for both. Results: bench/results/dynamic/2026-11-27_h100_gradk.json (and
2026-11-27_h100_gradk-static.json: the same kernel with a static stride over the tiles instead of the tile counter).
"""

from __future__ import annotations

import json
import math
import os
import sys

import numpy as np
import torch

import gemmc
from gemmc.bench.dynamic import counts, graph_seconds

CASES = [  # experts, tokens, m (X's columns), n (dY's columns)
    (8, 4096, 512, 512),
    (32, 8192, 1024, 1024),
    (64, 16384, 512, 1024),
    (8, 16384, 4096, 4096),
    (64, 32768, 2048, 1024),
    (128, 65536, 1024, 2048),
    (128, 8192, 2048, 512),
]
KINDS = ("uniform", "zipf")


def sample_error(W, X, dY, sizes) -> float:
    """Relative Frobenius error against float64 over up to 8 non-empty experts."""
    starts = np.concatenate([[0], np.cumsum(sizes)])
    live = [g for g in range(len(sizes)) if sizes[g]]
    num = den = 0.0
    for g in live[:: max(1, len(live) // 8)]:
        s, e = int(starts[g]), int(starts[g + 1])
        ref = X[s:e].double().t() @ dY[s:e].double()
        num += float(torch.linalg.norm(W[g].double() - ref)) ** 2
        den += float(torch.linalg.norm(ref)) ** 2
    return (num / den) ** 0.5


def case(experts: int, tokens: int, m: int, n: int, kind: str, simt: bool) -> dict:
    """dW_g = X_g^T dY_g over `experts` groups of a routing of `tokens` tokens: gemmc and torch._grouped_mm."""
    text = f"kernel w {{ dtype bf16 layout A col grouped K m {m} n {n} groups {experts} }}"
    kern = gemmc.compile_string(text)["w"]
    X = torch.randn(tokens, m, device="cuda", dtype=torch.bfloat16)  # A = X^T: m x tokens, column-major
    dY = torch.randn(tokens, n, device="cuda", dtype=torch.bfloat16)
    W = torch.empty(experts, m, n, device="cuda", dtype=torch.bfloat16)
    rng = np.random.default_rng([experts, tokens, KINDS.index(kind)])
    pool = [counts(kind, experts, tokens, rng) for _ in range(8)]
    ends = [torch.tensor(np.cumsum(s), dtype=torch.int32, device="cuda") for s in pool]
    kern(X.t(), dY, W, offsets=ends[0])
    err = sample_error(W, X, dY, pool[0])
    ref = torch._grouped_mm(X.t(), dY, offs=ends[0])
    err_t = sample_error(ref, X, dY, pool[0])
    before = gemmc.stats()
    g = graph_seconds(lambda i: kern(X.t(), dY, W, offsets=ends[i % 8]))
    timed_stats = gemmc.stats() == before
    t = graph_seconds(lambda i: torch._grouped_mm(X.t(), dY, offs=ends[i % 8]))
    flops = 2 * tokens * m * n
    out = {"family": kern.ir.family, "tile_n": getattr(kern.ir.plan, "bn", None), "gemmc_us": g * 1e6,
           "grouped_mm_us": t * 1e6, "gemmc_tflops": flops / g / 1e12, "grouped_mm_tflops": flops / t / 1e12,
           "ratio": t / g, "error": err, "grouped_mm_error": err_t, "nothing_compiled_in_timing": timed_stats}
    if simt:
        dyn = gemmc.compile_string(text.replace("grouped K", "algorithm dynamic grouped K"))["w"]
        dyn(X.t(), dY, W, offsets=ends[0])
        s = graph_seconds(lambda i: dyn(X.t(), dY, W, offsets=ends[i % 8]), calls=20)
        out.update(simt_us=s * 1e6, simt_ratio=t / s)
    return out


def main() -> None:
    simt = "--simt" in sys.argv
    out = {}
    for i, (experts, tokens, m, n) in enumerate(CASES):
        for kind in KINDS:
            name = f"grouped K E{experts} T{tokens} M{m} N{n} {kind}"
            out[name] = case(experts, tokens, m, n, kind, simt and i < 3)
            print(name, json.dumps(out[name]), flush=True)
    ratios = [c["ratio"] for c in out.values()]
    summary = {"min_ratio": min(ratios), "max_ratio": max(ratios),
               "geomean_ratio": math.exp(sum(map(math.log, ratios)) / len(ratios))}
    print(json.dumps(summary))
    path = os.path.join(os.environ.get("OUT", "."), "gradk.json")
    with open(path, "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "summary": summary, "cases": out}, f, indent=1)


if __name__ == "__main__":
    main()
