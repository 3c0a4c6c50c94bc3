"""Where the dynamic kernel's device time went (docs/INTERNALS.md, "Dynamic batches"), measured on the kernel of the
tree before the body held only the top tile and its edges (git commit d87e1e4: its whole-ladder body of ten
variants). GPU machine only, from that tree's root:

    python3 bench/experiments/dynamic_profile.py sources   # here: render the kernel and its variants, nvcc -cubin
    OUT=... python3 bench/experiments/dynamic_profile.py  # there; with --ncu under ncu for the profile

Variants of the rendered source, each compiled offline to a cubin (nvcc -arch=sm_90) and timed as graph replays of
20 launches on the first uniform draw of three MoE cases, against gemmc's static plan of the same sizes:
- v0: the kernel as it was (255 registers, 40 bytes of spills in the 128 x 128 main loop);
- ws: tiles taken from an atomic counter (the next unclaimed tile) instead of b, b + grid, ...;
- mfast: tiles numbered m-fastest within a group (the static work list's order);
- top4: the body with the four largest variants only (237 registers, no spills);
- v0_onetile: one tile per block (grid = tiles, the hardware's block scheduler);
- sched: the schedule alone (return before the first tile); empty8 / empty128: every group empty.
Results: bench/results/dynamic/2026-11-26_h100_dynamic_profile.json (+ .log, and _ncu.csv: the ncu sections of v0, ws
and
the static kernel on two cases).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, "dynamic_profile_build")


LOOP = ("  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {\n"
        "    if (t != (long long)blockIdx.x) __syncthreads();"
        "  // the previous tile's last reads of shared memory are done\n")
END = "      default:\n        break;\n    }\n  }\n}"
STEAL = ("  __shared__ long long s_next;\n  int* ctr = (int*)const_cast<gemmc_dyn_problem*>(problems);\n"
         "  for (long long t = blockIdx.x; t < tiles; t = s_next) {\n")
STEAL_END = ("      default:\n        break;\n    }\n    __syncthreads();\n"
             "    if (tid == 0) s_next = (long long)gridDim.x + atomicAdd(ctr, 1);\n    __syncthreads();\n  }\n}")
MFAST = ("    { const gemmc_dyn_class d = gemmc_dyn_class_of(v); const long long tiles_m = (p.m + d.bm - 1) / d.bm;\n"
         "      m0 = (local % tiles_m) * d.bm; n0 = (local / tiles_m) * d.bn; }")


def sources() -> None:
    """Render the two kernels, write the variants and compile them to cubins in BUILD."""
    import gemmc

    os.makedirs(BUILD, exist_ok=True)
    src = next(iter(gemmc.compile_string(
        "target cuda sm_90\nkernel moe { layout B col  grouped M n 1024 k 512 groups 128 }"))).source
    lst = next(iter(gemmc.compile_string(
        "target cuda sm_90\nkernel varlen { alpha runtime beta runtime grouped list problems 512 }"))).source
    assert LOOP in src and src.count(END) == 1
    four = src
    for c in range(6):  # the ten-variant ladder's six smallest variants out of the body
        four = re.sub(rf"      case {c}:.*?break;\n", "", four, count=1, flags=re.S)
    out = {"v0": src, "ws": src.replace(LOOP, STEAL).replace(END, STEAL_END),
           "mfast": src.replace("    gemmc_dyn_tile(local, p.n, v, &m0, &n0);", MFAST), "top4": four,
           "sched": src.replace(LOOP, "  if (tiles >= 0) return;\n" + LOOP), "list": lst}
    for name, text in out.items():
        with open(os.path.join(BUILD, f"{name}.cu"), "w") as f:
            f.write(text)
        subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "--resource-usage", "-o",
                        os.path.join(BUILD, f"{name}.cubin"), os.path.join(BUILD, f"{name}.cu")], check=True)


def measure(ncu: bool) -> None:
    import cupy as cp
    import torch

    os.environ.setdefault("GEMMC_TUNE", "0")
    import gemmc
    from gemmc.bench.dynamic import LIST_STATIC, STATIC, draws, graph_seconds, list_shapes, torch_stream
    from gemmc.families.dynamic import scheduler
    from gemmc.runtime.dynamic_list import problem_table

    fns = {n: cp.RawModule(path=f"{BUILD}/{n}.cubin").get_function(
        "gemmc_varlen_dynamic_f32_rrr" if n == "list" else "gemmc_moe_dynamic_f32_rcr")
        for n in ("v0", "ws", "mfast", "top4", "sched", "list")}
    grid = cp.cuda.Device().attributes["MultiProcessorCount"]
    threshold = grid * 256  # one wave of the persistent grid's threads
    res: dict = {"device": torch.cuda.get_device_name(), "sms": grid}
    ctr = torch.zeros(1, dtype=torch.int32, device="cuda")

    def launcher(name, A, W, C, ends, groups, rows, n, k, blocks=grid):
        args = (np.uint64(A.data_ptr()), np.uint64(W.data_ptr()), np.uint64(C.data_ptr()), np.uint64(ends.data_ptr()),
                np.uint64(ctr.data_ptr()), np.int32(groups), np.int64(rows), np.int64(0), np.int64(n), np.int64(k),
                np.int64(threshold), np.float32(1), np.float32(0))

        def go(i=0):
            if name == "ws":
                ctr.zero_()
            fns[name]((blocks, 1, 1), (256, 1, 1), args, shared_mem=33280, stream=torch_stream())
        return go

    def rel(got, ref):
        return float(torch.linalg.norm(got.double() - ref) / torch.linalg.norm(ref))

    cases = [(8, 65536, 512, 512), (32, 8192, 1024, 512), (8, 4096, 512, 512)][:2 if ncu else 3]
    for E, T, n, k in cases:
        c = draws(E, T, "uniform")[0]
        A, W = torch.randn(T, k, device="cuda"), torch.randn(E, n, k, device="cuda") / k ** 0.5
        C = torch.empty(T, n, device="cuda")
        ends = torch.tensor(np.cumsum(c), dtype=torch.int32, device="cuda")
        bounds = list(zip(np.cumsum(c) - c, np.cumsum(c), strict=True))
        ref = torch.cat([A[s:e].double() @ W[g].double().t() for g, (s, e) in enumerate(bounds)])
        text = f"kernel moe {{ layout B col grouped M n {n} k {k} groups 128 }}"
        plan = next(iter(gemmc.compile_string(text))).ir.plan
        m_, n_, _ = scheduler.group_sizes(plan, scheduler.clamped_starts(np.cumsum(c), T), 0, n, k)
        tiles = scheduler.schedule(plan, m_, n_, threshold).total
        row: dict = {"tiles": int(tiles)}
        variants = [("v0", grid), ("ws", grid)] if ncu else [
            ("v0", grid), ("ws", grid), ("mfast", grid), ("top4", grid), ("v0_onetile", int(tiles)), ("sched", grid)]
        for name, blocks in variants:
            go = launcher(name.split("_")[0], A, W, C, ends, E, T, n, k, blocks)
            C.fill_(float("nan"))
            go()
            torch.cuda.synchronize()
            if name != "sched":
                row[name + "_err"] = rel(C, ref)
            if not ncu:
                row[name + "_us"] = graph_seconds(go, 20) * 1e6
        if not ncu:
            zero = torch.zeros(128, dtype=torch.int32, device="cuda")
            row["empty128_us"] = graph_seconds(launcher("v0", A, W, C, zero, 128, T, n, k), 20) * 1e6
            row["empty8_us"] = graph_seconds(launcher("v0", A, W, C, zero[:8], 8, T, n, k), 20) * 1e6
        static = next(iter(gemmc.compile_string(STATIC.format(n=n, k=k))))
        live = [(s, e, g) for g, (s, e) in enumerate(bounds) if e > s]
        As, Ws, Cs = [A[s:e] for s, e, _ in live], [W[g].t() for _, _, g in live], [C[s:e] for s, e, _ in live]
        C.fill_(float("nan"))
        static(As, Ws, Cs, stream=torch_stream())
        torch.cuda.synchronize()
        row["static_err"] = rel(C, ref)
        if not ncu:
            row["static_us"] = graph_seconds(lambda i, As=As, Ws=Ws, Cs=Cs, static=static: static(
                As, Ws, Cs, stream=torch_stream()), 20) * 1e6
        res[f"E{E} T{T} N{n} K{k}"] = row
        print(f"E{E} T{T} N{n} K{k}", row, flush=True)
    if not ncu:  # the list form, 64 problems
        shapes = list_shapes(64)[0]
        As = [torch.randn(m, k, device="cuda") for m, n, k in shapes]
        Bs = [torch.randn(k, n, device="cuda") for m, n, k in shapes]
        Cs = [torch.empty(m, n, device="cuda") for m, n, k in shapes]
        dk = next(iter(gemmc.compile_string("kernel varlen { alpha runtime beta runtime grouped list problems 512 }")))
        table = torch.from_numpy(problem_table(dk.executable, As, Bs, Cs, 0)).cuda()
        args = (np.uint64(0),) * 4 + (np.uint64(table.data_ptr()), np.int32(64), np.int64(0), np.int64(0),
                                      np.int64(0), np.int64(0), np.int64(threshold), np.float32(1), np.float32(0))

        def go(i=0):
            fns["list"]((grid, 1, 1), (256, 1, 1), args, shared_mem=33280, stream=torch_stream())

        go()
        torch.cuda.synchronize()
        err = max(rel(c, a.double() @ b.double()) for a, b, c in zip(As, Bs, Cs, strict=True))
        st = next(iter(gemmc.compile_string(LIST_STATIC)))
        st(As, Bs, Cs)
        res["list x64"] = {"list_err": err, "list_us": graph_seconds(go, 20) * 1e6,
                           "static_us": graph_seconds(lambda i: st(As, Bs, Cs, stream=torch_stream()), 20) * 1e6}
        print(res["list x64"], flush=True)
    out = os.environ.get("OUT", "/tmp")
    with open(f"{out}/prof{'_ncu' if ncu else ''}.json", "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    if sys.argv[1:2] == ["sources"]:
        sources()
    else:
        measure("--ncu" in sys.argv)
