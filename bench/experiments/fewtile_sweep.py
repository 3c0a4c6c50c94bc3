"""Experiment: split K and tile N on bf16 GEMMs of few output tiles (hopper family), against cuBLAS (torch.mm in a CUDA
graph), each (tile N, k-slices) variant checked against float64 first and timed on the same inputs (the half suite's
protocol, gemmc/bench/half.py), and run twice to check that C is bitwise the same. The rows calibrate SPLIT_KBLOCKS
(gemmc/families/hopper/calibration.py; bench/results/half/2026-11-27_h100_fewtile-sweep.json).

    python3 bench/experiments/fewtile_sweep.py --out $OUT      # <out>/fewtile_sweep.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

SHAPES = [(4096, 64, 1024), (4096, 128, 1024), (512, 1024, 1024), (4096, 256, 1024), (1024, 1024, 4096),
          (2048, 2048, 1024), (4096, 128, 256), (4096, 128, 512), (4096, 128, 4096), (1024, 512, 2048)]
VARIANTS = [(bn, ks) for bn in (64, 128) for ks in (1, 2, 3, 4)]


def schedule(m: int, n: int, k: int) -> str:
    return f"kernel k {{ dtype bf16 gemm {m} x {n} x {k} }}"


def kernels(m: int, n: int, k: int):
    """(label, kernel): the planner's choice, then every VARIANTS entry with at least one k-block per slice."""
    import gemmc
    from gemmc.families.hopper.planner import with_tile
    from gemmc.ir.hardware import TARGETS

    base = gemmc.compile_string(schedule(m, n, k))["k"]
    out = [("planner", base)]
    for bn, ks in VARIANTS:
        if -(-k // 64) < ks:
            continue
        plan = with_tile(base.ir, base.ir.plan, bn, ks, TARGETS["sm_90"])
        out.append((f"bn {bn} ks {ks}", base.with_plan(plan, f"bn{bn}ks{ks}")))
    return out


def compile_shape(shape: tuple[int, int, int]) -> None:
    from gemmc.runtime.compile import device_function

    for _, kern in kernels(*shape):
        r = kern.executable.rendered
        device_function(r, r.entry)


def main() -> None:
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    import torch

    from gemmc.bench.half import operands, rel_error
    from gemmc.bench.timing import device_seconds, gemmc_graph, torch_graph

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    with ProcessPoolExecutor(16, mp_context=get_context("spawn")) as pool:
        list(pool.map(compile_shape, SHAPES))
    rows = []
    for m, n, k in SHAPES:
        a, b, c, c_ref = operands("bf16", m, n, k, 0)
        mm = torch_graph(lambda a=a, b=b, c_ref=c_ref: torch.mm(a, b, out=c_ref))
        cublas = device_seconds(mm, calls=100)
        for label, kern in kernels(m, n, k):
            plan = kern.ir.plan
            c.fill_(float("nan"))
            kern([a], [b], [c])
            torch.cuda.synchronize()
            err = rel_error(c, a, b)
            first = c.clone()
            c.fill_(float("nan"))
            kern([a], [b], [c])
            torch.cuda.synchronize()
            same = bool(torch.equal(first, c))
            us = device_seconds(gemmc_graph(lambda kern=kern, a=a, b=b, c=c: kern([a], [b], [c])), calls=100)
            row = {"m": m, "n": n, "k": k, "variant": label, "bn": plan.bn, "ksplit": plan.ksplit,
                   "stages": plan.stages, "gemmc_us": us * 1e6, "cublas_us": cublas * 1e6, "ratio": cublas / us,
                   "err": err, "deterministic": same}
            rows.append(row)
            print(f"{m:5}x{n:5}x{k:5} {label:12} bn {plan.bn:3} ks {plan.ksplit} {us * 1e6:7.2f} us  cuBLAS "
                  f"{cublas * 1e6:7.2f} us  ratio {cublas / us:.3f}  err {err:.1e}  same {same}", flush=True)
    Path(args.out, "fewtile_sweep.json").write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "rows": rows},
                                                               indent=1))


if __name__ == "__main__":
    main()
