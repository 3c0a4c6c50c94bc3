"""Mixture-of-experts steps in bf16 with the routing redrawn every call: gemmc's `grouped M` on the
Hopper TMA + wgmma loop (the hopper_grouped family) against torch._grouped_mm with device offsets, in one process, on
the same inputs (the protocol of docs/PERFORMANCE.md). GPU machine only (sm_90):

    python -m gemmc.bench moe_half [--cases 0,1] [--kinds uniform,zipf]

Per case (experts, tokens, N, K) and routing (uniform, Zipf-skewed, a quarter of the experts empty, one expert with
half the tokens), a pool of ROUTINGS draws is cycled so that every call has other group sizes than the one before;
A is tokens x K, the weights experts x N x K (each expert's K x N matrix column-major, torch._grouped_mm's
`w.transpose(1, 2)`), C tokens x N, all bf16; the ends int32 on the device.
- device_us: graph replays of 100 calls cycling the ends (the median of 7 windows), gemmc and torch._grouped_mm;
  host_us: plain calls, wall time per call synchronised once per window; issue_us: gemmc's host time per call (plain
  calls not synchronised).
- the roof of a case: the larger of a dense bf16 GEMM of the same FLOPs (tokens x N x K, torch.mm in a graph: cuBLAS)
  and the bytes of A, the non-empty experts' weights and C at the copy bandwidth (a 1 GiB device copy), both measured
  in the same run; roof_fraction = roof / gemmc's device time.
- cluster, other_cluster_device_us: the plan's cluster size (calibration.CLUSTER_MIN_K), and the same kernel with the
  other size (1: no multicast of B; 2: B multicast to a pair), graph replays, for the cluster's effect.
- tail_split, other_tail_split_device_us (plans without clusters): whether the plan runs a last round of units that
  fills at most half the blocks in column halves, and the same kernel with the other choice, graph replays.
- error: gemmc's C against float64 on a sample of experts; torch._grouped_mm's against the same.
- compiles, tuning runs and plans during the timed calls (gemmc.stats()).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from statistics import geometric_mean
from typing import Any

import numpy as np

import gemmc
from gemmc.bench import harness, timing
from gemmc.bench.dynamic import KINDS, ROUTINGS, counts, graph_seconds
from gemmc.families.hopper_grouped.plan import HopperGroupedPlan

MOE = "target cuda sm_90\nkernel moe_half {{ dtype bf16 layout B col grouped M n {n} k {k} groups 128 }}"
CASES = [  # experts, tokens, n, k
    (32, 16384, 1024, 512),
    (64, 32768, 2048, 1024),
    (128, 65536, 1024, 2048),
    (128, 8192, 2048, 7168),  # DeepSeek-like: reading 3.8 GB of weights bounds it
    (8, 4096, 4096, 4096),
]
COPY_BYTES = 1 << 30
COLUMNS = ("case", "routing", "cluster", "gemmc_device_us", "other_cluster_device_us", "tail_split",
           "other_tail_split_device_us", "grouped_mm_device_us",
           "speedup_device", "dense_us", "bytes_us", "roof_fraction", "grouped_mm_roof_fraction", "gemmc_host_us",
           "grouped_mm_host_us", "gemmc_issue_us", "error")


def side_by_side(kernels: dict[str, Any], case: tuple[int, int, int, int], kind: str, seed: int,
                 rounds: int) -> dict[str, Any]:
    """Kernels of one schedule's variants (name -> compiled `grouped M` kernel) and torch._grouped_mm ("grouped_mm")
    on MoE step `case` (experts, tokens, n, k) with a pool of ROUTINGS draws of routing `kind` cycled: each kernel's
    C against torch._grouped_mm's on the first draw ("diff_vs_grouped_mm", relative), and graph replays of every
    kernel in turn, `rounds` times ("rounds_us", and their medians "us"). For the experiments that compare plans."""
    import statistics

    import torch

    experts, tokens, n, k = case
    A = torch.randn(tokens, k, device="cuda").to(torch.bfloat16)
    B = torch.randn(experts, n, k, device="cuda").to(torch.bfloat16).transpose(1, 2)
    C = torch.empty(tokens, n, device="cuda", dtype=torch.bfloat16)
    rng = np.random.default_rng([experts, tokens, seed])
    ends = [torch.tensor(np.cumsum(counts(kind, experts, tokens, rng)), dtype=torch.int32, device="cuda")
            for _ in range(ROUTINGS)]
    ref = torch._grouped_mm(A, B, offs=ends[0]).double()
    errors = {}
    for name, kern in kernels.items():
        C.fill_(float("nan"))
        kern(A, B, C, offsets=ends[0])
        torch.cuda.synchronize()
        errors[name] = float((C.double() - ref).norm() / ref.norm())
    def call(kern: Any) -> Callable[[int], Any]:
        return lambda i: kern(A, B, C, offsets=ends[i % ROUTINGS])

    fns = {name: call(kern) for name, kern in kernels.items()}
    fns["grouped_mm"] = lambda i: torch._grouped_mm(A, B, offs=ends[i % ROUTINGS])
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            samples[name].append(graph_seconds(fn) * 1e6)
    return {"us": {name: statistics.median(v) for name, v in samples.items()}, "rounds_us": samples,
            "diff_vs_grouped_mm": errors}


def compare_plans(argv: list[str] | None, experiment: str, variants: Callable[[Any], dict[str, Any]],
                  kinds: tuple[str, ...], seed: int, cases: str) -> int:
    """The command line of an experiment that times variants of the bf16 `grouped M` kernel's plan beside
    torch._grouped_mm (`side_by_side`) on CASES: `OUT.json [--rounds R] [--cases i,j]`. `variants(kernel)` names the
    kernels to time from the planner's kernel of a case; each row records every kernel's plan and its timings."""
    import argparse
    import json
    from pathlib import Path

    ap = argparse.ArgumentParser(prog=experiment)
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", default=cases, help="indices into gemmc.bench.moe_half.CASES")
    args = ap.parse_args(argv)
    t0 = time.time()
    rows = []
    for index in (int(i) for i in args.cases.split(",")):
        experts, tokens, n, k = CASES[index]
        kernels = variants(next(iter(gemmc.compile_string(MOE.format(n=n, k=k)))))
        plans = {name: {field: getattr(kern.ir.plan, field) for field in ("bn", "cluster", "tail_split", "band",
                                                                          "stages")}
                 for name, kern in kernels.items()}
        for kind in kinds:
            timed = side_by_side(kernels, CASES[index], kind, seed, args.rounds)
            rows.append({"case": f"E{experts} T{tokens} N{n} K{k}", "routing": kind, "plans": plans, **timed})
            print(f"{rows[-1]['case']} {kind}: " + ", ".join(f"{name} {v:.1f}" for name, v in timed["us"].items())
                  + f" us; diff {max(timed['diff_vs_grouped_mm'].values()):.1e}", flush=True)
    out = {"experiment": experiment, "gpu": timing.gpu_name(), "date": time.strftime("%Y-%m-%d"),
           "protocol": f"graph replays of 100 calls cycling {ROUTINGS} routings, median of 7 windows; median of "
                       f"{args.rounds} rounds over every kernel in turn",
           "wall_s": time.time() - t0, "rows": rows}
    Path(args.out).write_text(json.dumps(out, indent=1))
    return 0


def dense_seconds(tokens: int, n: int, k: int) -> float:
    """A dense bf16 GEMM of the same FLOPs at cuBLAS speed (torch.mm in a graph)."""
    import torch

    a = torch.randn(tokens, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(k, n, device="cuda").to(torch.bfloat16)
    c = torch.empty(tokens, n, device="cuda", dtype=torch.bfloat16)
    return graph_seconds(lambda i: torch.mm(a, b, out=c))


def sample_error(got: Any, A: Any, W: Any, sizes: np.ndarray) -> float:
    """Relative Frobenius error against float64 over up to 8 non-empty experts."""
    import torch

    starts = np.concatenate([[0], np.cumsum(sizes)])
    live = [g for g in range(len(sizes)) if sizes[g]]
    num = den = 0.0
    for g in live[:: max(1, len(live) // 8)]:
        s, e = int(starts[g]), int(starts[g + 1])
        ref = A[s:e].double() @ W[g].double().t()
        num += float(torch.linalg.norm(got[s:e].double() - ref)) ** 2
        den += float(torch.linalg.norm(ref)) ** 2
    return (num / den) ** 0.5


def case(experts: int, tokens: int, n: int, k: int, kinds: tuple[str, ...], bandwidth: float) -> list[dict]:
    import torch

    kern = next(iter(gemmc.compile_string(MOE.format(n=n, k=k))))
    plan = kern.ir.plan
    assert isinstance(plan, HopperGroupedPlan)
    # the other cluster size (1 or 2); a plan with clusters splits no last round
    other = kern.with_plan(dataclasses.replace(plan, cluster=3 - plan.cluster, tail_split=False))
    # without clusters, the same plan with the last round of units split in column halves or not (the other choice)
    toggled = kern.with_plan(dataclasses.replace(plan, tail_split=not plan.tail_split)) if plan.cluster == 1 else None
    A = torch.randn(tokens, k, device="cuda").to(torch.bfloat16)
    W = torch.randn(experts, n, k, device="cuda").to(torch.bfloat16)  # each expert's K x N, column-major
    C = torch.empty(tokens, n, device="cuda", dtype=torch.bfloat16)
    D = torch.empty(tokens, n, device="cuda", dtype=torch.bfloat16)
    B = W.transpose(1, 2)
    dense = dense_seconds(tokens, n, k)
    flops = 2.0 * tokens * n * k
    rows = []
    for kind in kinds:
        rng = np.random.default_rng([experts, tokens, KINDS.index(kind)])
        pool = [counts(kind, experts, tokens, rng) for _ in range(ROUTINGS)]
        ends = [torch.tensor(np.cumsum(c), dtype=torch.int32, device="cuda") for c in pool]
        t0 = time.perf_counter()
        kern(A, B, C, offsets=ends[0])  # the first call (compile from the disk cache, load, checks)
        torch.cuda.synchronize()
        first_ms = (time.perf_counter() - t0) * 1e3
        other(A, B, C, offsets=ends[0])  # its first call (compile, load) before the timed calls
        if toggled is not None:
            toggled(A, B, C, offsets=ends[0])
        C.fill_(float("nan"))
        kern(A, B, C, offsets=ends[0])
        D.copy_(torch._grouped_mm(A, B, offs=ends[0]))
        torch.cuda.synchronize()
        err = sample_error(C, A, W, pool[0])
        err_ref = sample_error(D, A, W, pool[0])
        before = gemmc.stats()

        def ours(i: int, ends=ends) -> None:
            kern(A, B, C, offsets=ends[i % ROUTINGS])

        def theirs(i: int, ends=ends) -> None:
            torch._grouped_mm(A, B, offs=ends[i % ROUTINGS])

        gemmc_dev, torch_dev = graph_seconds(ours), graph_seconds(theirs)
        other_dev = graph_seconds(lambda i, ends=ends: other(A, B, C, offsets=ends[i % ROUTINGS]))
        toggled_dev = graph_seconds(lambda i, ends=ends: toggled(A, B, C, offsets=ends[i % ROUTINGS])) \
            if toggled is not None else None
        gemmc_host, torch_host = timing.host_seconds(ours), timing.host_seconds(theirs)
        gemmc_issue = timing.host_seconds(ours, sync=False)  # the host's own time per call
        after = gemmc.stats()
        live = float(np.mean([np.count_nonzero(c) for c in pool]))
        nbytes = 2.0 * (tokens * k + live * n * k + tokens * n)
        roof = max(dense, nbytes / bandwidth)
        row = {"case": f"E{experts} T{tokens} N{n} K{k}", "routing": kind, "experts": experts, "tokens": tokens,
               "n": n, "k": k, "largest_group": int(max(c.max() for c in pool)), "live_experts": live,
               "gemmc_device_us": gemmc_dev * 1e6, "grouped_mm_device_us": torch_dev * 1e6,
               "gemmc_host_us": gemmc_host * 1e6, "grouped_mm_host_us": torch_host * 1e6,
               "gemmc_issue_us": gemmc_issue * 1e6,
               "speedup_device": torch_dev / gemmc_dev, "speedup_host": torch_host / gemmc_host,
               "dense_us": dense * 1e6, "bytes_us": nbytes / bandwidth * 1e6, "roof_us": roof * 1e6,
               "roof_fraction": roof / gemmc_dev, "grouped_mm_roof_fraction": roof / torch_dev,
               "gemmc_tflops": flops / gemmc_dev / 1e12, "dense_tflops": flops / dense / 1e12,
               "error": err, "grouped_mm_error": err_ref, "first_call_ms": first_ms,
               "timed_compiles": {key: after[key] - before[key] for key in after}}
        row.update(cluster=plan.cluster, other_cluster_device_us=other_dev * 1e6,
                   tail_split=plan.tail_split,
                   other_tail_split_device_us=None if toggled_dev is None else toggled_dev * 1e6)
        harness.log(f"{row['case']} {kind}: gemmc {row['gemmc_device_us']:.1f} us, _grouped_mm "
                    f"{row['grouped_mm_device_us']:.1f} us ({row['speedup_device']:.2f}x), roof "
                    f"{row['roof_us']:.1f} us ({row['roof_fraction']:.2f}), error {err:.2e}")
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser("moe_half", __doc__)
    parser.add_argument("--cases", default="", help="comma-separated indices into CASES (default: all)")
    parser.add_argument("--kinds", default=",".join(KINDS), help="routings (default: %(default)s)")
    args = parser.parse_args(argv)
    cases = [CASES[int(i)] for i in args.cases.split(",")] if args.cases else CASES
    kinds = tuple(args.kinds.split(","))
    bandwidth = timing.copy_roof(COPY_BYTES, calls=20)
    print(f"copy bandwidth {bandwidth / 1e12:.2f} TB/s", flush=True)
    rows: list[dict] = []
    for experts, tokens, n, k in cases:
        rows += case(experts, tokens, n, k, kinds, bandwidth)
        harness.write_results(args.out, "moe_half", rows, {"partial": True}, tag=args.tag)
    speedups = [r["speedup_device"] for r in rows]
    fractions = [r["roof_fraction"] for r in rows]
    summary = {"copy_bandwidth_tbs": bandwidth / 1e12,
               "geomean_speedup_device": geometric_mean(speedups),
               "min_speedup_device": min(speedups),
               "geomean_speedup_host": geometric_mean([r["speedup_host"] for r in rows]),
               "min_roof_fraction": min(fractions), "max_error": max(r["error"] for r in rows),
               "median_issue_us": float(np.median([r["gemmc_issue_us"] for r in rows]))}
    path = harness.write_results(args.out, "moe_half", rows, {"summary": summary}, tag=args.tag)
    harness.table(rows, list(COLUMNS), "moe_half")
    print(summary)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
