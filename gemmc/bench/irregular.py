"""Irregular batched GEMM (papers 000, 003): gemmc vs a cuBLAS loop in a graph, zero-padded torch.bmm in a graph
and cublasSgemmGroupedBatched, all in one process on the same inputs. GPU machine only:

    python -m gemmc.bench irregular [--quick]      # bench/results/irregular/<date>_<gpu>.json

Cases: the nine Inception modules of paper 000 Table 6 and all of them at once; random batches (fixed seeds) with
M, N in [16, 128] or [16, 512] and K in [16, 128] or [16, 512], batch 8, 64, 256, 1024. Ablations per case:
uniform tiles (the core), load-balanced (paper 000, new TLP), load-balanced with the old TLP (Eq. 3),
coordinated (paper 003); `tile auto` is what gemmc picks by itself.
"""

from __future__ import annotations

import dataclasses
import re
from functools import partial
from statistics import geometric_mean

import gemmc
from gemmc.api import CompiledKernel
from gemmc.bench import baselines, harness, timing
from gemmc.families.simt import planner as simt
from gemmc.families.simt import tiling
from gemmc.model.tlp import default_threshold

# the columns of its table (and of `gemmc bench report`'s)
COLUMNS = ("case", "auto_us", "auto_choice", "uniform_us", "loadbalanced_us", "loadbalanced-oldTLP_us",
           "coordinated_us", "loop_us", "bmm_us", "grouped_us", "speedup", "vs_loop", "tflops", "planner_us",
           "gemmc_err")


def inception_cases() -> list[tuple[str, list[tuple[int, int, int]]]]:
    text = harness.example("inception_all.gs").read_text()
    shapes = [(m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)))
              for m in re.finditer(r"(i\d)_\d+\s+(\d+) x (\d+) x (\d+)", text)]
    cases = []
    for module in sorted({s[0] for s in shapes}):
        cases.append((f"inception-{module[1:]}", [s[1:] for s in shapes if s[0] == module]))
    cases.append((f"inception-all ({len(shapes)})", [s[1:] for s in shapes]))
    return cases


def random_cases(quick: bool) -> list[tuple[str, list[tuple[int, int, int]]]]:
    import numpy as np

    cases = []
    batches = (8, 256) if quick else (8, 64, 256, 1024)
    for mn_max, k_max in ((128, 128), (512, 128), (128, 512), (512, 512)):
        for batch in batches:
            rng = np.random.default_rng(1000 * mn_max + 10 * k_max + batch)
            m = rng.integers(16, mn_max + 1, batch)
            n = rng.integers(16, mn_max + 1, batch)
            k = rng.integers(16, k_max + 1, batch)
            cases.append((f"random MN<={mn_max} K<={k_max} x{batch}", list(zip(m.tolist(), n.tolist(), k.tolist(),
                                                                                strict=True))))
    return cases


def schedule(shapes, tile: str) -> str:
    body = " ".join(f"p{i} {m} x {n} x {k}" for i, (m, n, k) in enumerate(shapes))
    return f"kernel irregular {{ dtype f32 tile {tile} batch {{ {body} }} }}"


def old_tlp_kernel(shapes) -> CompiledKernel:
    """Load-balanced tiling driven by Eq. 3 instead of Eq. 4 (the paper's TLP ablation), built from the planner's
    own functions."""
    base = gemmc.compile_string(schedule(shapes, "auto(loadbalanced)"))["irregular"]
    ir, hw = base.ir, base.target
    t = tiling.loadbalanced(ir.problems, 1, hw, default_threshold(hw), metric="old")
    fresh = simt.plan_from(ir, hw, t)
    plan = simt.with_edges(dataclasses.replace(base.ir.plan, variants=fresh.variants, assignment=fresh.assignment,
                                               min_blocks=fresh.min_blocks, reg_cap=fresh.reg_cap, edges=()))
    return base.with_plan(plan, "<old-tlp>")


def rel_err(outs, As, Bs) -> float:
    return max(float((o.double() - a.double() @ b.double()).norm() / (a.double() @ b.double()).norm())
               for o, a, b in zip(outs, As, Bs, strict=True))


def run_case(name: str, shapes, ablations: tuple[str, ...]) -> dict:
    import torch

    As = [torch.randn(m, k, device="cuda") for m, n, k in shapes]
    Bs = [torch.randn(k, n, device="cuda") for m, n, k in shapes]
    Cs = [torch.full((m, n), float("nan"), device="cuda") for m, n, k in shapes]
    flops = sum(2 * m * n * k for m, n, k in shapes)
    row: dict = {"case": name, "batch": len(shapes), "gflop": flops / 1e9}

    kernels = {"auto": gemmc.compile_string(schedule(shapes, "auto"))["irregular"]}
    for mode in ablations:
        if mode == "loadbalanced-oldTLP":
            kernels[mode] = old_tlp_kernel(shapes)
        else:
            kernels[mode] = gemmc.compile_string(schedule(shapes, f"auto({mode})"))["irregular"]
    for label, k in kernels.items():
        k(As, Bs, Cs)
        torch.cuda.synchronize()
        if label == "auto":
            row["gemmc_err"] = rel_err(Cs, As, Bs)
            row["auto_choice"] = row["model_choice"] = f"{k.ir.plan.method}/{k.ir.plan.batching.value}"
            tuning = k.tuning  # the first call's tuning step: the candidates it timed, and the model's miss
            if tuning is not None:
                row.update(auto_choice=tuning.chosen_label, model_slowdown=tuning.model_slowdown,
                           tuning_us=tuning.microseconds)
            row["gemmc_host_us"] = timing.host_seconds(lambda i: kernels["auto"](As, Bs, Cs)) * 1e6
            row["planner_us"] = k.planner_seconds * 1e6  # the pass pipeline on this host (paper 000 Fig. 7)
        row[f"{label}_us"] = timing.device_seconds(timing.gemmc_graph(partial(k, As, Bs, Cs))) * 1e6

    outs = [torch.empty(m, n, device="cuda") for m, n, k in shapes]
    row["loop_us"] = timing.device_seconds(baselines.cublas_loop(As, Bs, outs)) * 1e6
    bmm, _ = baselines.padded_bmm(As, Bs)
    row["bmm_us"] = timing.device_seconds(bmm) * 1e6
    grouped, how = baselines.grouped(As, Bs, outs)
    row["grouped_us"] = timing.device_seconds(grouped) * 1e6
    row["grouped_mode"] = how
    row["grouped_err"] = rel_err(outs, As, Bs)
    best = min(("loop", row["loop_us"]), ("bmm", row["bmm_us"]), ("grouped", row["grouped_us"]), key=lambda x: x[1])
    row["best_baseline"] = best[0]
    row["speedup"] = best[1] / row["auto_us"]
    row["vs_loop"] = row["loop_us"] / row["auto_us"]
    row["tflops"] = flops / row["auto_us"] / 1e6
    row["planner_share"] = row["planner_us"] / row["auto_us"]
    return row


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser("irregular", __doc__)
    parser.add_argument("--quick", action="store_true", help="fewer random cases")
    parser.add_argument("--no-ablations", action="store_true")
    parser.add_argument("--cases", default="", help="regular expression: run only the cases whose name matches")
    parser.add_argument("--ablations", default="uniform,loadbalanced,coordinated,loadbalanced-oldTLP",
                        help="comma-separated subset of the ablations to time")
    args = parser.parse_args(argv)
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    chosen = [(n, s) for n, s in inception_cases() + random_cases(args.quick) if re.search(args.cases, n)]
    ablations = () if args.no_ablations else tuple(args.ablations.split(","))
    timing.precompile([schedule(s, tile) for _, s in chosen
                       for tile in ("auto", *(f"auto({m})" for m in ablations if m != "loadbalanced-oldTLP"))])
    for name, shapes in harness.progress(chosen, "irregular"):
        row = run_case(name, shapes, ablations)
        rows.append(row)
        harness.log(f"{name:32s} auto {row['auto_us']:9.1f} us ({row['auto_choice']}), best baseline "
                    f"{row['best_baseline']} {min(row['loop_us'], row['bmm_us'], row['grouped_us']):9.1f} us: "
                    f"x{row['speedup']:.2f}, {row['tflops']:.1f} TFLOP/s")
    geo = geometric_mean([r["speedup"] for r in rows])
    summary = {"geomean_speedup_vs_best": geo, "min_speedup_vs_best": min(r["speedup"] for r in rows)}
    path = harness.write_results(args.out, "irregular", rows, {"summary": summary}, tag=args.tag)
    harness.table(rows, COLUMNS, "irregular")
    print(f"geomean speedup vs best baseline {geo:.2f}x, min {summary['min_speedup_vs_best']:.2f}x; wrote {path}")


if __name__ == "__main__":
    main()
