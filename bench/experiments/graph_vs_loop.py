"""Experiment: is a TSM2R kernel slower replayed from a one-launch CUDA graph (how bench/tallskinny.py times gemmc)
than launched in a plain loop? Stop 16's benchmark had f64 n = 32 at 2900 us from the graph against 2570 in the
loop right after it, where the tuning step had measured the same kernel at 2526. For each case: tune (as a user
gets it), then ROUNDS passes of (graph, loop, cuBLAS), each the protocol's median of 7 windows of 20 calls.

    python3 bench/experiments/graph_vs_loop.py --out $OUT
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import timing  # noqa: E402

import gemmc  # noqa: E402

CASES = [("f64", 16384, 32), ("f64", 30720, 32), ("f64", 30720, 16)]
ROUNDS = 4


def run_case(dtype: str, m: int, n: int) -> list[dict]:
    import torch

    tdt = torch.float64 if dtype == "f64" else torch.float32
    A = torch.randn(m, m, device="cuda", dtype=tdt).t()  # column-major, as the benchmark lays them out
    B = torch.randn(n, m, device="cuda", dtype=tdt).t()
    C = torch.empty(n, m, device="cuda", dtype=tdt).t()
    out = torch.empty(n, m, device="cuda", dtype=tdt).t()
    kern = gemmc.compile_string(f"kernel t {{ dtype {dtype} layout A col, B col, C col gemm {m} x {n} x {m} "
                                "algorithm tsm2r }")["t"]
    kern([A], [B], [C])
    tuned = kern.tuning.chosen_label if kern.tuning else "-"
    ways = {"graph": timing.gemmc_graph(lambda: kern([A], [B], [C])),
            "loop": lambda: kern([A], [B], [C]),
            "cublas": lambda: torch.mm(A, B, out=out)}
    rows = []
    for r in range(ROUNDS):
        for way, fn in ways.items():
            t = timing.device_seconds(fn, calls=20, windows=7)
            rows.append({"case": f"{dtype} m=k={m} n={n}", "tuned": tuned, "round": r, "way": way, "us": t * 1e6})
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    rows = [row for case in CASES for row in run_case(*case)]
    path = timing.write_results(args.out, "tsm2r-graph-vs-loop", rows)
    print(timing.table(rows, ["case", "tuned", "round", "way", "us"]))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
