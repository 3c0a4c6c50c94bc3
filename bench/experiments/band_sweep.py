"""Experiment: the hopper family's raster band (HopperPlan.band: the units, a tile or a multicast pair of m-tiles, a
band holds, walked m-fastest; bands run along N) on bf16 GEMMs of one to many waves, each shape's planned kernel
rebuilt with every band, timed against torch.mm (cuBLAS) in rounds that take every kernel in turn (graph replays, the
DESIGN.md protocol):

    python3 bench/experiments/band_sweep.py OUT.json [--rounds 5] [--set few-waves]

The planner's band is `planner.band_for` (families/hopper/planner.py): BAND_TILES // cluster, or ONE_WAVE_BAND where
every tile runs in the first wave, the rule this sweep's results file gives (`planned_band`: the plan of the tree that
ran it). midsize_sweep.py's one-wave members ran 8-m-tile bands 2-8% faster than 16 in three rounds
(bench/results/half/2026-11-27_h100_midsize-sweep.json); this asks whether that holds over shapes and rounds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# (m, n, k, layout A, layout B): the concurrent suite's one-wave members (qkv, ffn1.dX, ffn1.dW), and GEMMs of about
# 2, 4, 8 and 30 waves
SHAPES = [(2048, 1024, 1024, "row", "row"), (2048, 1024, 4096, "row", "col"), (1024, 4096, 2048, "col", "row"),
          (4096, 2048, 4096, "row", "row"), (4096, 4096, 4096, "row", "col"), (8192, 4096, 4096, "row", "row"),
          (8192, 8192, 8192, "row", "row")]
# --set few-waves: GEMMs of two to four waves, where the planner forms no multicast pair (CLUSTER_MIN_WAVES)
FEW_WAVES = [(4096, 2048, 4096, "row", "row"), (4096, 4096, 4096, "row", "col"), (8192, 1024, 1024, "row", "row"),
             (4096, 3072, 1024, "row", "col"), (2048, 4096, 2048, "col", "row"), (8192, 2048, 1024, "row", "row")]
BANDS = (1, 2, 4, 8, 16, 32)


def kernels(shape: tuple) -> tuple[object, list[tuple[int, object]]]:
    """The planned kernel and (band, kernel) for each band (in clusters' units, as HopperPlan.band counts)."""
    import gemmc

    m, n, k, la, lb = shape
    base = gemmc.compile_string(f"target cuda sm_90\nkernel k {{ dtype bf16 layout A {la}, B {lb} "
                                f"gemm {m} x {n} x {k} }}")["k"]
    plan = base.ir.plan
    return base, [(b, base.with_plan(dataclasses.replace(plan, band=b), f"band {b}")) for b in BANDS]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--set", choices=("default", "few-waves"), default="default")
    args = ap.parse_args(argv)
    shapes = FEW_WAVES if args.set == "few-waves" else SHAPES
    import torch
    from midsize_sweep import compile_all

    from gemmc.bench.timing import device_seconds, gemmc_graph, gpu_name, torch_graph

    t0 = time.time()
    built = [(shape, *kernels(shape)) for shape in shapes]
    compile_all([k.executable.rendered for _, base, ks in built for k in [base] + [kk for _, kk in ks]])
    results = []
    for shape, base, ks in built:
        m, n, k, la, lb = shape
        a = torch.randn(m, k, device="cuda").bfloat16() if la == "row" else \
            torch.randn(k, m, device="cuda").bfloat16().t()
        b = torch.randn(k, n, device="cuda").bfloat16() if lb == "row" else \
            torch.randn(n, k, device="cuda").bfloat16().t()
        c = torch.empty(m, n, device="cuda").bfloat16()
        ref = a.double() @ b.double()
        calls = 100 if m * n * k < 2 ** 36 else 20
        replays = {"cublas": torch_graph(lambda a=a, b=b, c=c: torch.mm(a, b, out=c))}
        plan = base.ir.plan
        errors = {}
        for band, kern in ks:
            c.fill_(float("nan"))
            kern([a], [b], [c])
            torch.cuda.synchronize()
            errors[band] = float((c.double() - ref).norm() / ref.norm())
            replays[f"band {band}"] = gemmc_graph(lambda kern=kern, a=a, b=b, c=c: kern([a], [b], [c]))
        samples: dict[str, list[float]] = {name: [] for name in replays}
        for _ in range(args.rounds):
            for name, replay in replays.items():
                samples[name].append(device_seconds(replay, calls=calls) * 1e6)
        us = {name: statistics.median(v) for name, v in samples.items()}
        tiles = -(-m // 128) * -(-n // plan.bn)
        row = {"m": m, "n": n, "k": k, "layout_a": la, "layout_b": lb, "bn": plan.bn, "cluster": plan.cluster,
               "planned_band": plan.band, "tiles": tiles, "waves": tiles / 132, "us": us, "rounds_us": samples,
               "errors": errors}
        results.append(row)
        best = min((b for b in BANDS), key=lambda b: us[f"band {b}"])
        print(f"{m}x{n}x{k} {la[0]}{lb[0]} N{plan.bn} c{plan.cluster} {tiles} tiles: cuBLAS {us['cublas']:.1f} us; "
              + ", ".join(f"band {b} {us[f'band {b}']:.1f}" for b in BANDS)
              + f"; planned band {plan.band}, best {best}", flush=True)
    out = {"experiment": "band_sweep", "gpu": gpu_name(), "date": time.strftime("%Y-%m-%d"),
           "protocol": f"graph replays, median of {args.rounds} rounds of 7 windows (every kernel each round)",
           "wall_s": time.time() - t0, "shapes": results}
    Path(args.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
