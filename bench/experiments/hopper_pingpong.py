"""Ping-pong consumers on the hopper family's TMA + wgmma loop (hopper.cu.j2, `pingpong`): each consumer warpgroup
takes whole 128 x N tiles and the two take turns in the main loop, so that one's epilogue runs under the other's
wgmma, against the cooperative consumers (both warpgroups on one tile, 64 rows each) at the planner's tile N and at
N 128, and against cuBLAS (torch.mm), single bf16 GEMMs of short and long K, side by side in one process on the same
inputs, CUDA graphs of 100 calls for all (DESIGN.md protocol). GPU machine only, from the tree's root:

    python3 bench/experiments/hopper_pingpong.py [--out DIR]

Results: bench/results/half/2026-11-27_h100_epilogue-pingpong.json (the GPU tests beside it:
bench/results/checks/2026-11-27_h100_epilogue-pingpong_gpu-tests.log).
"""

from __future__ import annotations

import dataclasses
import json
import sys

import gemmc
from gemmc.bench.dynamic import graph_seconds
from gemmc.bench.timing import gpu_name

SHAPES = [(8192, 1024, 512), (8192, 1024, 1024), (8192, 1024, 2048), (8192, 1024, 4096), (4096, 128, 1024),
          (512, 1024, 1024), (4096, 64, 1024), (4096, 4096, 4096), (8192, 8192, 8192), (4096, 14336, 4096),
          (16384, 4096, 4096), (2048, 2048, 2048)]  # 8192 x 1024 at K 512..4096: a tile's fixed cost (intercept)


def text(m: int, n: int, k: int) -> str:
    return f"target cuda sm_90\nkernel k {{ dtype bf16 gemm {m} x {n} x {k} }}"


def variants(kern) -> dict:
    """label -> kernel: the planner's plan, cooperative at N 128, ping-pong at N 128 and 64."""
    from gemmc.families.hopper.planner import stages_for
    from gemmc.ir.hardware import TARGETS

    plan = kern.ir.plan
    hw = TARGETS["sm_90"]
    out = {f"coop{plan.bn}": kern}
    if plan.bn != 128:
        out["coop128"] = kern.with_plan(dataclasses.replace(
            plan, bn=128, stages=stages_for(128, hw, plan.tma_store, plan.c_bytes)), "coop128")
    for bn in (128, 64):
        out[f"pp{bn}"] = kern.with_plan(dataclasses.replace(
            plan, bn=bn, pingpong=True, stages=stages_for(bn, hw, plan.tma_store, plan.c_bytes, 0, True)), f"pp{bn}")
    return out


def compile_variants(t: str) -> str:
    from gemmc.runtime.compile import device_function

    for v in variants(gemmc.compile_string(t)["k"]).values():
        r = v.executable.rendered
        device_function(r, r.entry)
    return t


def shape(m: int, n: int, k: int) -> dict:
    import torch

    kern = gemmc.compile_string(text(m, n, k))["k"]
    a = (torch.rand(m, k, device="cuda") * 2 - 1).to(torch.bfloat16)
    b = (torch.rand(k, n, device="cuda") * 2 - 1).to(torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    c_ref = torch.empty_like(c)
    rows = slice(None) if m <= 4096 else slice(0, None, m // 2048)
    ref = a[rows].double() @ b.double()
    flops = 2.0 * m * n * k
    cublas = graph_seconds(lambda i: torch.mm(a, b, out=c_ref))
    row = {"case": f"{m}x{n}x{k}", "cluster": kern.ir.plan.cluster, "cublas_us": cublas * 1e6,
           "cublas_tflops": flops / cublas / 1e12}
    for label, v in variants(kern).items():
        c.fill_(float("nan"))
        v([a], [b], [c])
        torch.cuda.synchronize()
        err = float((c[rows].double() - ref).norm() / ref.norm())
        t = graph_seconds(lambda i, v=v: v([a], [b], [c]))
        row[f"{label}_us"] = t * 1e6
        row[f"{label}_ratio"] = cublas / t
        row[f"{label}_err"] = err
    print(json.dumps({k: round(x, 4) if isinstance(x, float) else x for k, x in row.items()}), flush=True)
    return row


def main() -> None:
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else ""
    with ProcessPoolExecutor(12, mp_context=get_context("spawn")) as pool:
        list(pool.map(compile_variants, [text(*s) for s in SHAPES]))
    rows = [shape(*s) for s in SHAPES]
    if out:
        with open(f"{out}/hopper_pingpong.json", "w") as f:
            json.dump({"gpu": gpu_name(), "protocol": "CUDA graphs of 100 back-to-back calls, median of 7 replays, "
                       "after warm-up", "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
