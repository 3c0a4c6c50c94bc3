"""Where `split f16 x3` at 8192^3 spends its time on the Hopper loop (docs/PERFORMANCE-precision.md), in one GPU
call: the pre-pass alone against its bytes at copy bandwidth, the whole call, and the main loop (the call less the
pre-pass) against the f16 loop's rate on a plain 8192^3 f16 GEMM (its default 128 x 256 tile and the split's 128 x 128
tile, with and without the multicast pair). GPU machine only, from the tree's root:

    python3 bench/experiments/split_profile.py time --out DIR  # CUDA-event times and errors: DIR/split_profile.json
    ncu --profile-from-start off -k regex:gemmc_ --metrics ... python3 bench/experiments/split_profile.py ncu

The split runs as planned and with the multicast pair turned off (`cluster1`); each C is compared with a float64
product, and at an odd size (300 x 196 x 1003) as well. Results, in bench/results/precision/: 2026-11-27_h100_split-
profile.json (the loop with one stage per product, B's third plane and two sweeps of the pre-pass over every line,
with ncu's figures) and 2026-11-27_h100_split-variants.json (the designs measured against it, some no longer in the
tree: the consumer warpgroups taking turns at their chains, k-tiles in pairs with two sums, stages handed back per
product; and the three changes kept: unscaled parts, the pre-pass's lines held in registers, one stage per k-tile of
every plane).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

SIZE = 8192
COPY_TBS = 3.0  # TB/s, device-to-device copy on this H100 (docs/PERFORMANCE-precision.md)


def split_variants(kernel):
    p = kernel.ir.plan
    out = {"planned": p}
    if p.cluster > 1:
        out["cluster1"] = dataclasses.replace(p, cluster=1, band=p.band * p.cluster)
    return {name: kernel.with_plan(plan, name) for name, plan in out.items()}


def half_variants(kernel):
    from gemmc.families.hopper import planner
    from gemmc.ir.hardware import TARGETS

    ir = kernel.ir
    t128 = planner.with_tile(ir, ir.plan, 128, 1, TARGETS["sm_90"])
    return {"f16 default": kernel,
            "f16 128x128 cluster2": kernel.with_plan(dataclasses.replace(t128, cluster=2, band=8), "c2"),
            "f16 128x128 cluster1": kernel.with_plan(dataclasses.replace(t128, cluster=1, band=16), "c1")}


def timed(torch, fn, calls: int = 15, windows: int = 5) -> float:
    """Median over windows of the mean device time (ms) of `calls` back-to-back calls (gemmc.bench.timing's)."""
    from gemmc.bench import timing

    return timing.device_seconds(fn, calls=calls, windows=windows) * 1e3


def prep_call(kernel, a, b):
    """The pre-pass alone, on the current stream, into the kernel's scratch."""
    import cupy as cp
    import numpy as np
    import torch

    exe = kernel.executable
    stream = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    plan = kernel.ir.plan
    base = exe.scratch(stream)
    fn = exe.prologue_function
    args = (np.uint64(a.data_ptr()), np.uint64(b.data_ptr()), np.uint64(base.data.ptr))
    return lambda: fn((plan.prologue[0], 1, 1), (plan.prologue[1], 1, 1), args, stream=stream)


def main() -> None:
    import torch

    import gemmc

    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("time", "ncu"))
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    gen = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn(SIZE, SIZE, device="cuda", generator=gen)
    b = torch.randn(SIZE, SIZE, device="cuda", generator=gen)
    c = torch.full((SIZE, SIZE), float("nan"), device="cuda")
    split = gemmc.compile_string(f"kernel k {{ dtype f32 precision split f16 x3 gemm {SIZE} x {SIZE} x {SIZE} }}",
                                 target="sm_90")["k"]
    half = gemmc.compile_string(f"kernel h {{ dtype f16 gemm {SIZE} x {SIZE} x {SIZE} }}", target="sm_90")["h"]
    sv, hv = split_variants(split), half_variants(half)
    ah, bh = a.half(), b.half()
    ch = torch.empty(SIZE, SIZE, device="cuda", dtype=torch.float16)
    if args.what == "ncu":
        for k in sv.values():  # compile and load outside the profiled range
            k([a], [b], [c])
        for k in hv.values():
            k([ah], [bh], [ch])
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        for k in sv.values():
            k([a], [b], [c])
        for k in hv.values():
            k([ah], [bh], [ch])
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        return
    odd = (300, 196, 1003)  # every tile edge: a check of each variant's masking and padding
    small = gemmc.compile_string(f"kernel s {{ dtype f32 precision split f16 x3 gemm {odd[0]} x {odd[1]} x {odd[2]} }}",
                                 target="sm_90")["s"]
    ao, bo = torch.randn(odd[0], odd[2], device="cuda"), torch.randn(odd[2], odd[1], device="cuda")
    ref_o = ao.double() @ bo.double()
    odd_err = {}
    for name, k in split_variants(small).items():
        co = torch.full((odd[0], odd[1]), float("nan"), device="cuda")
        k([ao], [bo], [co])
        torch.cuda.synchronize()
        odd_err[name] = float(torch.linalg.norm(co.double() - ref_o) / torch.linalg.norm(ref_o))
    print(json.dumps({"odd_size": odd, "rel_error": odd_err}), flush=True)
    flop = 2.0 * SIZE**3
    ref = (a.double() @ b.double())
    ref_norm = float(torch.linalg.norm(ref))
    rows = []
    first = None
    for name, k in sv.items():
        c.fill_(float("nan"))
        k([a], [b], [c])
        torch.cuda.synchronize()
        err = float(torch.linalg.norm(c.double() - ref)) / ref_norm
        same = None if first is None else bool(torch.equal(c, first))
        if first is None:
            first = c.clone()
        call = timed(torch, lambda k=k: k([a], [b], [c]))
        prep = timed(torch, prep_call(k, a, b))
        p = k.ir.plan
        mp, np_, kp = p.pads
        reads = (1 if p.line_regs and p.a_kmajor else 2) + (1 if p.line_regs and p.b_kmajor else 2)  # f32 sweeps
        prep_bytes = reads * 4 * SIZE * SIZE + 2 * (p.a_planes * mp * kp + p.b_planes * np_ * kp)
        rows.append({"variant": name, "call_ms": call, "tflops": flop / call / 1e9, "prep_ms": prep,
                     "prep_bytes": prep_bytes, "prep_tbs": prep_bytes / prep / 1e9,
                     "prep_at_copy_ms": prep_bytes / COPY_TBS / 1e9, "main_ms": call - prep,
                     "main_tflops_3_products": 3 * flop / (call - prep) / 1e9, "rel_error": err,
                     "identical_to_planned": same})
        print(json.dumps(rows[-1]), flush=True)
    for name, k in hv.items():
        ms = timed(torch, lambda k=k: k([ah], [bh], [ch]), calls=30)
        rows.append({"variant": name, "call_ms": ms, "tflops": flop / ms / 1e9, "plan": list(k.ir.plan.lines())})
        print(json.dumps(rows[-1]), flush=True)
    copy_src = torch.empty(SIZE * SIZE * 4, device="cuda")
    copy_dst = torch.empty_like(copy_src)
    ms = timed(torch, lambda: copy_dst.copy_(copy_src))
    rows.append({"variant": "copy 512 MiB", "call_ms": ms, "tbs": 2 * copy_src.numel() * 4 / ms / 1e9})
    print(json.dumps(rows[-1]), flush=True)
    with open(f"{args.out}/split_profile.json", "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "size": SIZE, "rows": rows, "odd_size": odd,
                   "odd_rel_error": odd_err}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
