"""The consumer warpgroups' skew on sm_90's TMA + wgmma loop (the plan's `skew`, hopper/hopper_device.cuh.j2:
gemmc_skew_open): warpgroup 1 starts each tile only once warpgroup 0 has completed `skew` k-steps of it, so that the
two warpgroups' epilogues fall at different times and each runs while the other's wgmma keeps the tensor core busy.
The planner never picks a skew; this experiment rebuilds gemmc's plans with every skew the ring holds (0: lockstep)
and times single bf16 GEMMs of short and long K (the hopper family) against torch.mm, and bf16 MoE steps
(hopper_grouped) against torch._grouped_mm, side by side in one process on the same inputs, CUDA graphs of 100 calls
for all (DESIGN.md protocol). GPU machine only, from the tree's root:

    python3 bench/experiments/hopper_skew.py [--out DIR] [--profile]

--profile: no timing; each case's kernel at skew 0 and 2, once each between cudaProfilerStart and cudaProfilerStop
(for ncu --profile-from-start off). Results: bench/results/half/2026-11-27_h100_epilogue-skew.json.
"""

from __future__ import annotations

import dataclasses
import json
import sys

import numpy as np

import gemmc
from gemmc.bench.dynamic import graph_seconds
from gemmc.bench.timing import device_seconds, gpu_name, torch_graph

SINGLE = [(8192, 1024, 1024), (4096, 128, 1024), (512, 1024, 1024), (4096, 64, 1024), (4096, 4096, 4096),
          (8192, 8192, 8192)]
MOE = [(32, 16384, 1024, 512, 0), (32, 16384, 1024, 512, 128), (64, 32768, 2048, 1024, 0),
       (64, 32768, 2048, 1024, 128), (8, 4096, 4096, 4096, 0)]  # experts, tokens, N, K, tile N (0: the planner's)
PROFILE_SINGLE = [(8192, 1024, 1024)]
PROFILE_MOE = [(32, 16384, 1024, 512, 0)]


def texts(profile: bool) -> list[str]:
    single = PROFILE_SINGLE if profile else SINGLE
    moes = PROFILE_MOE if profile else MOE
    return ([f"target cuda sm_90\nkernel k {{ dtype bf16 gemm {m} x {n} x {k} }}" for m, n, k in single]
            + [moe_text(n, k, bn) for _, _, n, k, bn in moes])


def moe_text(n: int, k: int, bn: int) -> str:
    tile = f" tile 128x{bn}x64" if bn else ""
    return f"target cuda sm_90\nkernel moe {{ dtype bf16 layout B col grouped M n {n} k {k} groups 128{tile} }}"


def compile_variants(text: str) -> str:
    """In a worker process: NVRTC-compile the schedule's kernel at every skew into the disk caches."""
    from gemmc.runtime.compile import device_function

    kern = next(iter(gemmc.compile_string(text)))
    for s in skews(kern):
        r = kern.with_plan(dataclasses.replace(kern.ir.plan, skew=s), f"skew {s}").executable.rendered
        device_function(r, r.entry)
    return text


def precompile(profile: bool) -> None:
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    with ProcessPoolExecutor(12, mp_context=get_context("spawn")) as pool:
        list(pool.map(compile_variants, texts(profile)))


def skews(kern) -> list[int]:
    plan = kern.ir.plan
    return [s for s in range(0, 4) if s == 0 or s <= plan.stages - 2]


def rel(got, ref) -> float:
    return float((got.double() - ref).norm() / ref.norm())


def single(m: int, n: int, k: int, profile: bool) -> dict:
    import torch

    kern = gemmc.compile_string(f"target cuda sm_90\nkernel k {{ dtype bf16 gemm {m} x {n} x {k} }}")["k"]
    a = (torch.rand(m, k, device="cuda") * 2 - 1).to(torch.bfloat16)
    b = (torch.rand(k, n, device="cuda") * 2 - 1).to(torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    c_ref = torch.empty_like(c)
    rows = slice(None) if m <= 4096 else slice(0, None, m // 2048)
    ref = a[rows].double() @ b.double()
    plan = kern.ir.plan
    variants = {s: kern.with_plan(dataclasses.replace(plan, skew=s), f"skew {s}") for s in skews(kern)}
    if profile:
        for s in (0, 2):
            variants[s]([a], [b], [c])
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        for s in (0, 2):
            variants[s]([a], [b], [c])
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        return {}
    flops = 2.0 * m * n * k
    cublas = device_seconds(torch_graph(lambda: torch.mm(a, b, out=c_ref)))
    row = {"case": f"{m}x{n}x{k}", "bn": plan.bn, "stages": plan.stages, "cluster": plan.cluster,
           "planned_skew": plan.skew, "cublas_us": cublas * 1e6}
    for s, v in variants.items():
        c.fill_(float("nan"))
        v([a], [b], [c])
        torch.cuda.synchronize()
        err = rel(c[rows], ref)
        t = graph_seconds(lambda i, v=v: v([a], [b], [c]))
        row[f"skew{s}_us"] = t * 1e6
        row[f"skew{s}_tflops"] = flops / t / 1e12
        row[f"skew{s}_ratio"] = cublas / t
        row[f"skew{s}_err"] = err
    print(json.dumps(row), flush=True)
    return row


def moe(experts: int, tokens: int, n: int, k: int, bn: int, profile: bool) -> dict:
    import torch

    kern = next(iter(gemmc.compile_string(moe_text(n, k, bn))))
    rng = np.random.default_rng([experts, tokens, 0])
    sizes = rng.multinomial(tokens, np.full(experts, 1.0 / experts))
    ends = torch.tensor(np.cumsum(sizes), dtype=torch.int32, device="cuda")
    A = (torch.rand(tokens, k, device="cuda") * 2 - 1).to(torch.bfloat16)
    W = (torch.rand(experts, n, k, device="cuda") * 2 - 1).to(torch.bfloat16)
    B = W.transpose(1, 2)
    C = torch.empty(tokens, n, device="cuda", dtype=torch.bfloat16)
    plan = kern.ir.plan
    variants = {s: kern.with_plan(dataclasses.replace(plan, skew=s), f"skew {s}") for s in skews(kern)}
    if profile:
        for s in (0, 2):
            variants[s](A, B, C, offsets=ends)
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        for s in (0, 2):
            variants[s](A, B, C, offsets=ends)
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        return {}
    grouped = device_seconds(torch_graph(lambda: torch._grouped_mm(A, B, offs=ends)))
    Wd = (torch.rand(k, n, device="cuda") * 2 - 1).to(torch.bfloat16)
    Cd = torch.empty(tokens, n, device="cuda", dtype=torch.bfloat16)
    dense = device_seconds(torch_graph(lambda: torch.mm(A, Wd, out=Cd)))
    starts = np.concatenate([[0], np.cumsum(sizes)])
    row = {"case": f"E{experts} T{tokens} N{n} K{k}", "bn": plan.bn, "stages": plan.stages, "cluster": plan.cluster,
           "planned_skew": plan.skew, "grouped_mm_us": grouped * 1e6, "dense_us": dense * 1e6}
    for s, v in variants.items():
        C.fill_(float("nan"))
        v(A, B, C, offsets=ends)
        torch.cuda.synchronize()
        num = den = 0.0
        for g in range(0, experts, max(1, experts // 8)):
            lo, hi = int(starts[g]), int(starts[g + 1])
            ref = A[lo:hi].double() @ W[g].double().t()
            num += float((C[lo:hi].double() - ref).norm()) ** 2
            den += float(ref.norm()) ** 2
        t = graph_seconds(lambda i, v=v: v(A, B, C, offsets=ends))
        row[f"skew{s}_us"] = t * 1e6
        row[f"skew{s}_speedup"] = grouped / t
        row[f"skew{s}_roof"] = dense / t
        row[f"skew{s}_err"] = (num / den) ** 0.5
        row[f"skew{s}_finite"] = bool(torch.isfinite(C).all())
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    profile = "--profile" in sys.argv
    precompile(profile)
    out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else ""
    rows = [single(*s, profile) for s in (PROFILE_SINGLE if profile else SINGLE)]
    rows += [moe(*c, profile) for c in (PROFILE_MOE if profile else MOE)]
    if out and not profile:
        with open(f"{out}/hopper_skew.json", "w") as f:
            json.dump({"gpu": gpu_name(), "protocol": "CUDA events, 100 back-to-back graph replays per window, median "
                       "of 7 windows, after warm-up", "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
