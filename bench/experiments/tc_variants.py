"""Tensor-core family, one device call: variants of the main loop at one size (tile, warp tile, pipeline depth)
for a few precisions, with the pre-pass timed on its own, the compiled kernel's registers and local memory, and
the error against float64 on normal inputs. Kernels are compiled in parallel processes first (CuPy's disk cache),
so the call spends its time measuring.

    python bench/experiments/tc_variants.py --size 8192 --out $OUT/variants.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import gemmc  # noqa: E402
from bench.timing import device_seconds, gemmc_graph, precompile  # noqa: E402

# mode -> (schedule knobs, plan.chain): chain 2 sums two k-steps' terms on the tensor core per f32 addition (not
# selectable from a schedule; the experiment replaces the plan's field).
# On sm_90 the main loop is wgmma (v5); chain applies to the mma.sync loop only.
VARIANTS = {
    "split f16 x3": [("", 1), ("tile 256x128x32", 1), ("tile 128x128x32", 1)],
    "f16": [("", 1), ("tile 128x256x32", 1), ("tile 256x128x64", 1)],
}


def schedule(mode: str, knobs: str, n: int) -> str:
    return f"kernel k {{ dtype f32 precision {mode} {knobs} gemm {n} x {n} x {n} }}"


def main() -> None:
    import cupy as cp
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--out", default="")
    ap.add_argument("--modes", default="")
    args = ap.parse_args()
    n = args.size
    modes = args.modes.split(",") if args.modes else list(VARIANTS)
    texts = [schedule(m, kn, n) for m in modes for kn, _ in VARIANTS[m]]
    precompile(texts)
    variants = [(schedule(m, kn, n), chain) for m in modes for kn, chain in VARIANTS[m]]
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn((n, n), generator=gen, device="cuda")
    b = torch.randn((n, n), generator=gen, device="cuda")
    ref = a.double() @ b.double()
    flops = 2 * n ** 3
    calls = max(5, min(100, int(2e13 / flops)))
    rows = []
    for text, chain in variants:
        from gemmc.api import CompiledKernel
        from gemmc.runtime.compile import device_function
        from gemmc.runtime.launch import pointer_table

        k = gemmc.compile_string(text)["k"]
        if chain != k.ir.plan.chain:
            ir = dataclasses.replace(k.ir, plan=dataclasses.replace(k.ir.plan, chain=chain))
            k = CompiledKernel(ir, k.target, k.filename)
        c = torch.full((n, n), float("nan"), device="cuda")
        k([a], [b], [c])
        torch.cuda.synchronize()
        err = float(((c.double() - ref).norm() / ref.norm()).item())
        sec = device_seconds(gemmc_graph(lambda k_=k, c_=c: k_([a], [b], [c_])), calls=calls)
        fn = device_function(k.rendered, k.rendered.entry)
        prep = device_function(k.rendered, k.rendered.prologue)
        problems, _, _ = k.executable.tables
        ptrs = pointer_table(k.executable, [a.data_ptr()], [b.data_ptr()], [c.data_ptr()])
        scratch = k.executable.scratch
        grid, block = k.ir.plan.prologue

        def run_prep(prep_=prep, grid_=grid, block_=block, problems_=problems, ptrs_=ptrs, scratch_=scratch):
            prep_((grid_, 1, 1), (block_, 1, 1), (problems_, cp.int32(1), ptrs_[:1], ptrs_[1:2], scratch_))

        prep_sec = device_seconds(gemmc_graph(run_prep), calls=calls)
        plan = k.ir.plan
        v = plan.variant
        row = {"schedule": text, "chain": chain, "tile": f"{v.bm}x{v.bn}x{v.bk}", "warp": f"{v.wm}x{v.wn}",
               "stages": plan.stages,
               "threads": v.threads, "regs": fn.num_regs, "local_bytes": fn.local_size_bytes,
               "prep_regs": prep.num_regs, "smem": plan.smem_bytes, "rel_fro_normal": err, "seconds": sec,
               "tflops": flops / sec / 1e12, "prep_seconds": prep_sec,
               "main_tflops": flops / max(sec - prep_sec, 1e-9) / 1e12}
        rows.append(row)
        print(json.dumps(row), flush=True)
        del k
    if args.out:
        Path(args.out).write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))
    print(f"{'schedule':70s} {'regs':>4s} {'lmem':>4s} {'TFLOP/s':>8s} {'main':>6s} {'prep us':>7s} {'err':>9s}")
    for r in rows:
        name = r["schedule"][20:86] + " c" + str(r["chain"])
        print(f"{name:70s} {r['regs']:4d} {r['local_bytes']:4d} {r['tflops']:8.1f} "
              f"{r['main_tflops']:6.1f} {r['prep_seconds'] * 1e6:7.0f} {r['rel_fro_normal']:9.2e}")


if __name__ == "__main__":
    main()
