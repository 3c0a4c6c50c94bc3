"""Experiment: the hopper family's kernels launched with programmatic stream serialization (gemmc/runtime/pdl.py)
against the plain launch, side by side with cuBLAS (torch.mm in a CUDA graph), bf16: single GEMMs of few and many
tiles (100 back-to-back calls of one kernel in a graph, the half suite's protocol) and the bf16 concurrent suite's
Transformer groups one GEMM after another (`concurrency sequential`). Each kernel is first checked against float64
on NaN-poisoned C, and a chain of dependent GEMMs (each reads the C the one before wrote, and writes the A the one
before read) must give bitwise the same result with and without the attribute. Where the kernels signal their
dependents was chosen from these runs: bench/results/concurrent/2026-11-27_h100_pdl-trigger.json. Its "loads",
"epilogue" and "start" runs had hopper/hopper.cu.j2 execute `griddepcontrol.launch_dependents` once a block's
producer had issued its last TMA loads, once a consumer warpgroup had finished its last tile's main loop, or right
after the block's `gemmc_grid_wait()`; to compare again, add that line at one of those places and run this script
(its "exit" runs are the tree as it is).

    python3 bench/experiments/hopper_pdl.py --out $OUT      # <out>/hopper_pdl.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from functools import partial
from pathlib import Path

SHAPES = [(8192, 1024, 1024), (8192, 1024, 2048), (4096, 128, 1024), (512, 1024, 1024), (4096, 256, 1024),
          (1024, 1024, 1024), (2048, 2048, 2048), (1024, 1024, 4096), (4096, 1024, 1024)]
REPS = 7
GROUPS = ["bf16 QKV H1024 T2048", "bf16 QKV H768 T4096", "bf16 QKV H1024 T8192", "bf16 FFN1 dX+dW H1024 T2048",
          "bf16 FFN2 dX+dW H1024 T2048", "bf16 proj dX+dW H1024 T4096"]


def kernel(m: int, n: int, k: int):
    import gemmc

    return gemmc.compile_string(f"kernel k {{ dtype bf16 gemm {m} x {n} x {k} }}")["k"]


def both(fn, repeat: int = 1) -> tuple[float, float]:
    """Device seconds of one call of `fn`, `repeat` calls in a CUDA graph, with the attribute and without, alternated
    REPS times (the median of each)."""
    from gemmc.bench.timing import device_seconds, gemmc_graph
    from gemmc.runtime import pdl

    on, off = [], []
    for _ in range(REPS):
        for flag, out in ((True, on), (False, off)):
            pdl.ENABLED = flag
            out.append(device_seconds(gemmc_graph(fn, repeat=repeat), calls=max(1, 100 // repeat)) / repeat)
    pdl.ENABLED = True
    return statistics.median(on), statistics.median(off)


def chain(n: int = 2048, steps: int = 24) -> bool:
    """X <- X W, ping-ponging between two buffers, in one graph: bitwise the same with and without the attribute."""
    import torch

    from gemmc.bench.timing import gemmc_graph
    from gemmc.runtime import pdl

    kern = kernel(n, n, n)
    w = (torch.rand(n, n, device="cuda") / n * 2).to(torch.bfloat16)
    results = []
    for flag in (True, False):
        pdl.ENABLED = flag
        x0 = torch.rand(n, n, device="cuda", generator=torch.Generator("cuda").manual_seed(1)).to(torch.bfloat16)
        x1 = torch.full_like(x0, float("nan"))

        def run(x0=x0, x1=x1) -> None:
            for s in range(steps):
                src, dst = (x0, x1) if s % 2 == 0 else (x1, x0)
                kern([src], [w], [dst])

        graph = gemmc_graph(run)
        graph()
        torch.cuda.synchronize()
        results.append(x0.clone())
    pdl.ENABLED = True
    return bool(torch.equal(results[0], results[1])) and bool(torch.isfinite(results[0]).all())


def main() -> None:
    import torch

    from gemmc.bench import concurrent as conc
    from gemmc.bench.half import operands, rel_error
    from gemmc.bench.timing import device_seconds, torch_graph

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    parser.add_argument("--groups-only", action="store_true")
    args = parser.parse_args()
    out: dict = {"gpu": torch.cuda.get_device_name(), "chain_bitwise_same": chain(), "single": [], "groups": []}
    print("chain bitwise the same:", out["chain_bitwise_same"], flush=True)
    for m, n, k in [] if args.groups_only else SHAPES:
        kern = kernel(m, n, k)
        a, b, c, c_ref = operands("bf16", m, n, k, 0)
        c.fill_(float("nan"))
        kern([a], [b], [c])
        torch.cuda.synchronize()
        err = rel_error(c, a, b)
        cublas = device_seconds(torch_graph(lambda a=a, b=b, c_ref=c_ref: torch.mm(a, b, out=c_ref)), calls=100)
        on20, off20 = both(partial(kern, [a], [b], [c]), 20)
        cublas20 = device_seconds(torch_graph(lambda a=a, b=b, c_ref=c_ref: torch.mm(a, b, out=c_ref), repeat=20),
                                  calls=5) / 20
        row = {"m": m, "n": n, "k": k, "cublas_us": cublas * 1e6, "pdl_us_20_in_graph": on20 * 1e6,
               "plain_us_20_in_graph": off20 * 1e6, "cublas_us_20_in_graph": cublas20 * 1e6, "err": err}
        out["single"].append(row)
        print(f"{m:5}x{n:5}x{k:5}  cuBLAS one a graph {cublas * 1e6:7.2f} | 20 a graph: pdl {on20 * 1e6:7.2f}  plain "
              f"{off20 * 1e6:7.2f}  cuBLAS {cublas20 * 1e6:7.2f} us  err {err:.1e}", flush=True)
    for suite, name, gemms in conc.bf16_cases(quick=True):
        if name not in GROUPS:
            continue
        As, Bs, Cs = conc.operands(gemms, "bf16")
        group = __import__("gemmc").compile_string(conc.schedule(gemms, suite))["c"].with_mode("sequential")
        err = conc.check(partial(group, As, Bs, Cs), As, Bs, Cs, name)
        seq = device_seconds(torch_graph(
            lambda As=As, Bs=Bs, Cs=Cs: [torch.mm(a, b, out=c) for a, b, c in zip(As, Bs, Cs, strict=True)]))
        on, off = both(partial(group, As, Bs, Cs))
        out["groups"].append({"case": name, "pdl_us": on * 1e6, "plain_us": off * 1e6, "cublas_seq_us": seq * 1e6,
                              "err": err})
        print(f"{name:32} sequential: pdl {on * 1e6:7.2f}  plain {off * 1e6:7.2f}  cuBLAS seq {seq * 1e6:7.2f} us  "
              f"ratio pdl {seq / on:.3f} plain {seq / off:.3f}", flush=True)
    Path(args.out, "hopper_pdl.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
