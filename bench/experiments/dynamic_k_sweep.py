"""Where the f32 dynamic kernel's time goes on the MoE step E8 T65536 N512 K512 (uniform routing), the one step of
`python -m gemmc.bench dynamic` below torch._grouped_mm: the same step at K 512 to 4096, gemmc's dynamic kernel beside
torch._grouped_mm (plain calls: its f32 path reads the ends on the host) and a torch.mm loop over the experts (device
times, graphs of CALLS calls), the median of ROUNDS rounds.
GPU machine only, from the tree's root:

    OUT=... python3 bench/experiments/dynamic_k_sweep.py        # $OUT/k-sweep.json

Every case runs 16 rounds of 128 x 128 tiles (2064 tiles, some of them half-height, on 132 blocks: 15.64 rounds) of
K / 16 k-steps each. Time per round against K is a line: its slope is the main loop's time per unit of K, its
intercept what a tile costs besides (first load, epilogue, claim). Prediction: the main loop alone runs at the 4096^3
rate (44.6 TFLOP/s), so an intercept near 4.5 us a round would be what puts K 512 at 40.8 TFLOP/s. Measured
(bench/results/dynamic/2026-11-28_h100_k-sweep.json, its output in
dynamic/2026-11-28_h100_k-sweep.log): 2.7 us a round and a main loop
of 43.7 TFLOP/s of the step's work (the file's main_loop_tflops, 45.1, is the rate of 132 whole 128 x 128 tiles a
round); the torch loop of cuBLAS SGEMMs runs 46.1 TFLOP/s at K 512 and 48.5 at K 4096, so its main loop, not
the tiles' other costs, is most of the gap.
"""

from __future__ import annotations

import json
import os
import statistics

import numpy as np

ROUNDS = 5
CALLS = 20
EXPERTS, TOKENS, N = 8, 65536, 512
KS = (512, 1024, 2048, 4096)


def case(k: int, sizes: np.ndarray) -> dict:
    """One K: gemmc's error against float64, then the three ways' device times."""
    import torch

    import gemmc
    from gemmc.bench import dynamic as d
    from gemmc.bench import timing

    A, W, C, ends, bounds, ref = d.moe_step(EXPERTS, TOKENS, N, k, sizes)
    kern = next(iter(gemmc.compile_string(d.MOE.format(n=N, k=k))))
    kern(A, W, C, offsets=ends)
    error = d.rel_error(C, ref)
    Wt = W.transpose(1, 2)
    runs = {
        "gemmc": lambda i: kern(A, W, C, offsets=ends),
        "torch_loop": lambda i: [torch.mm(A[s:e], W[g].t(), out=C[s:e]) for g, (s, e) in enumerate(bounds)],
    }
    times: dict[str, list[float]] = {name: [] for name in (*runs, "grouped_mm")}
    for _ in range(ROUNDS):
        for name, fn in runs.items():
            times[name].append(d.graph_seconds(fn, calls=CALLS) * 1e6)
        # f32 torch._grouped_mm reads the ends on the host (no graph capture): plain calls, synchronised
        times["grouped_mm"].append(timing.host_seconds(lambda i: torch._grouped_mm(A, Wt, offs=ends)) * 1e6)
    row = {"k": k, "error": error, **{f"{name}_us": statistics.median(t) for name, t in times.items()}}
    flops = 2.0 * TOKENS * N * k
    row.update({f"{name}_tflops": flops / row[f"{name}_us"] / 1e6 for name in times})
    row["gemmc_us_per_round"] = row["gemmc_us"] / 16
    return row


def main() -> None:
    import torch

    from gemmc.bench import dynamic as d

    sizes = d.draws(EXPERTS, TOKENS, "uniform")[0].astype(np.int64)
    rows = []
    for k in KS:
        rows.append(case(k, sizes))
        print(json.dumps(rows[-1]), flush=True)
    x = np.array([r["k"] for r in rows], dtype=float)
    y = np.array([r["gemmc_us_per_round"] for r in rows])
    slope, intercept = np.polyfit(x, y, 1)
    fit = {"us_per_round_per_k": slope, "intercept_us_per_round": intercept,
           "main_loop_tflops": 2.0 * TOKENS * N / 16 / slope / 1e6}  # the step's work per unit of K, a round
    print(json.dumps(fit), flush=True)
    out = os.environ.get("OUT", ".")
    with open(os.path.join(out, "k-sweep.json"), "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "rows": rows, "fit": fit}, f, indent=1)


if __name__ == "__main__":
    main()
