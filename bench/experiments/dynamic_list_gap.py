"""Where the list form's device time goes against gemmc's static plan of the same sizes (the 64-problem list of
`python -m gemmc.bench dynamic`: docs/PERFORMANCE-dynamic.md), the kernels side by side on the benchmark's draws.
GPU machine only, from the tree's root:

    OUT=... python3 bench/experiments/dynamic_list_gap.py measure
    ncu ... python3 bench/experiments/dynamic_list_gap.py once   # one launch of the list kernel and the static plan
    python3 bench/experiments/dynamic_list_gap.py clock   # the scheduler's steps on block 0's clock

Kernels, each launched on a problem table staged once (the benchmark's `raw`), timed as graph replays of 20 launches
and checked against float64:
- list: the benchmark's schedule (`alpha runtime beta runtime`, 512 problems at most), the TLP sums added to shared
  memory once a warp;
- const: the same without runtime alpha and beta (alpha 1, beta 0 compiled in, as the static plan has them);
- bound64: at most 64 problems (the scheduler's shared tables and scans sized for 64);
- inline: `list`'s source with the variants below the top level inline in the switch (no gemmc_dyn_apart);
- prologue: `list`'s source claiming no tile: every block derives the schedule and ends (its time is the scheduler's
  prologue and the launch; the outputs stay unwritten);
- thread_tlp: `list`'s source with the TLP sums added to shared memory once a thread, not once a warp
  (thread_tlp_prologue: the same claiming no tile). bench/results/dynamic/2026-11-28_h100_list-gap.json was measured
  on the tree of commit 32c77ca, whose kernel added them once a thread: its `list`, `const`, `bound64`,
  `inline`, `prologue` and `round_robin` are this file's with thread_tlp's sums, and its `warp_tlp` is this `list`;
- round_robin: `list`'s source with block b taking claims b, b + grid, ... instead of the counter's next one (no atomic
  round trip per tile; another balance);
- static: gemmc's static plan of the draw's sizes (one tile a block, the tiles in the plan's order).
Results: $OUT/list_gap.json.
"""

from __future__ import annotations

import json
import os
import re
import sys

import numpy as np

SCHEDULES = {
    "list": "kernel varlen { alpha runtime beta runtime grouped list problems 512 }",
    "const": "kernel varlenc { grouped list problems 512 }",
    "bound64": "kernel varlen64 { alpha runtime beta runtime grouped list problems 64 }",
}
APART = re.compile(r"gemmc_dyn_apart<(.*), float, float>\(\n\s*"
                   r"p\.m, p\.n, p\.k, p\.lda, p\.ldb, p\.ldc, m0, n0, (.*), tid\);")
PROBLEMS = 64
DRAWS = 4


CLAIMS = "  for (long long u = blockIdx.x; u < s_claims; u = s_next) {\n"
NEXT = "    if (tid == 0) s_next = (long long)gridDim.x + atomicAdd(&counter[0], 1);\n"


def prologue(source: str) -> str:
    assert source.count(CLAIMS) == 1, "the persistent loop changed"
    return source.replace(CLAIMS, CLAIMS.replace("u < s_claims", "u < 0"))


def round_robin(source: str) -> str:
    assert source.count(NEXT) == 1, "the claim changed"
    return source.replace(NEXT, "    if (tid == 0) s_next = u + gridDim.x;\n")


MARKS = ("  const int cap = gemmc_dyn_cap(s_tlp, tlp_threshold);\n", "  const int P = PARTS * G, per_p",
         "  for (int i = lo_p; i < hi_p; ++i) {\n",
         "  const long long tiles = P ? s_ends[P - 1] : 0;\n", CLAIMS)


TLP_ADD = """#pragma unroll
    for (int c = 0; c < GEMMC_DYN_LEVELS; ++c)
      if (tlp[c]) atomicAdd(&s_tlp[c], (unsigned long long)tlp[c]);
"""
TLP_WARP = """#pragma unroll
    for (int c = 0; c < GEMMC_DYN_LEVELS; ++c) {
      long long sum = tlp[c];
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) sum += GEMMC_SHFL_DOWN(sum, off);
      if ((tid & 31) == 0 && sum) atomicAdd(&s_tlp[c], (unsigned long long)sum);
    }
"""


def thread_tlp(source: str) -> str:
    """The TLP sums added to shared memory once a thread instead of once a warp (a shuffle reduction)."""
    assert source.count(TLP_WARP) == 1, "the TLP sums changed"
    return source.replace(TLP_WARP, TLP_ADD)


def clocked(source: str) -> str:
    """`prologue` with block 0's thread 0 reading the clock at each step of the schedule (after the TLP sums and the
    cap, the variants and ranks, the tiles' scan, the ends, the claim bounds) and printing the readings at the end."""
    source = prologue(source).replace(
        "  const int tid = threadIdx.x;\n",
        "  const int tid = threadIdx.x;\n  const long long gemmc_t0 = clock64();\n  long long gemmc_at[5];\n")
    for i, mark in enumerate(MARKS):
        mark = mark.replace("u < s_claims", "u < 0")
        assert source.count(mark) == 1, mark
        probe = f"  gemmc_at[{i}] = clock64() - gemmc_t0;\n"
        if i == 4:
            probe += ('  if (blockIdx.x == 0 && tid == 0) printf("steps %lld %lld %lld %lld %lld\\n", gemmc_at[0], '
                      "gemmc_at[1], gemmc_at[2], gemmc_at[3], gemmc_at[4]);\n")
        source = source.replace(mark, probe + mark) if i in (1, 2, 4) else source.replace(mark, mark + probe)
    add = TLP_ADD if TLP_ADD in source else TLP_WARP
    read = '  if (blockIdx.x == 1 && tid == 0) printf("groups read %lld\\n", clock64() - gemmc_t0);\n'
    return source.replace(add, read + add)  # block 1's: block 0's readings stay clear of a printf


def inline(source: str) -> str:
    assert len(APART.findall(source)) >= 1, "the smaller variants' calls changed"
    return APART.sub(lambda m: f"gemmc_simt_tile<{m.group(1)}>(\n              p, m0, n0, {m.group(2)}, tid, 0);",
                     source)


def _sets(torch, shapes_list):
    out = []
    for shapes in shapes_list:
        out.append(([torch.randn(m, k, device="cuda") for m, n, k in shapes],
                    [torch.randn(k, n, device="cuda") for m, n, k in shapes],
                    [torch.empty(m, n, device="cuda") for m, n, k in shapes]))
    return out


def _launcher(fn, st, table, count):
    from gemmc.bench.dynamic import torch_stream

    zero = np.uint64(0)

    def go(i: int = 0) -> None:
        on = torch_stream()
        fn((st.grid, 1, 1), (st.block, 1, 1),
           (zero, zero, zero, zero, np.uint64(table.data_ptr()), np.int32(count), np.int64(0), np.int64(0),
            np.int64(0), np.int64(0), np.int64(st.threshold), np.uint64(st.counter(on.ptr)), np.float32(1.0),
            np.float32(0.0)), shared_mem=st.smem, stream=on)

    return go


def kernels():
    import cupy as cp

    import gemmc
    from gemmc.runtime.compile import OPTIONS

    kerns = {name: next(iter(gemmc.compile_string(text))) for name, text in SCHEDULES.items()}
    base = kerns["list"]
    edited = {name: cp.RawModule(code=edit(base.source), options=OPTIONS).get_function(base.rendered.entry)
              for name, edit in (("inline", inline), ("prologue", prologue), ("round_robin", round_robin),
                                 ("thread_tlp", thread_tlp),
                                 ("thread_tlp_prologue", lambda s: prologue(thread_tlp(s))))}
    return kerns, edited


def measure() -> None:
    import torch

    os.environ.setdefault("GEMMC_TUNE", "0")
    import gemmc
    from gemmc.bench import dynamic as d
    from gemmc.runtime.dynamic import state
    from gemmc.runtime.dynamic_list import problem_table

    kerns, edited = kernels()
    static = next(iter(gemmc.compile_string(d.LIST_STATIC)))
    sets = _sets(torch, d.list_shapes(PROBLEMS)[:DRAWS])
    dev = torch.cuda.current_device()
    res: dict = {"gpu": torch.cuda.get_device_name(), "problems": PROBLEMS, "kernels": {}, "rows": []}
    for draw, (As, Bs, Cs) in enumerate(sets):
        refs = [a.double() @ b.double() for a, b in zip(As, Bs, strict=True)]
        row: dict = {"draw": draw}
        launches = {}
        for name, kern in kerns.items():
            kern(As, Bs, Cs, **({"alpha": 1.0, "beta": 0.0} if "runtime" in SCHEDULES[name] else {}))  # the state
            st = state(kern.executable)
            table = torch.from_numpy(problem_table(kern.executable, As, Bs, Cs, dev)).cuda()
            launches[name] = (_launcher(st.fn, st, table, len(As)), st.fn)
            if name == "list":
                for other, fn in edited.items():
                    launches[other] = (_launcher(fn, st, table, len(As)), fn)
        launches["static"] = (lambda i=0, a=As, b=Bs, c=Cs: static(a, b, c, stream=d.torch_stream()), None)
        for name, (go, fn) in launches.items():
            for c in Cs:
                c.fill_(float("nan"))
            go()
            torch.cuda.synchronize()
            row[name + "_err"] = max(d.rel_error(c, r) for c, r in zip(Cs, refs, strict=True))
            row[name + "_us"] = d.graph_seconds(go, 20) * 1e6
            if fn is not None and draw == 0:
                res["kernels"][name] = {"registers": fn.num_regs, "local_bytes": getattr(fn, "local_size_bytes", None)}
        print(row, flush=True)
        res["rows"].append(row)
    names = [k for k in res["rows"][0] if k.endswith("_us")]
    res["geomean_vs_static"] = {n: float(np.exp(np.mean([np.log(r[n] / r["static_us"]) for r in res["rows"]])))
                                for n in names}
    print(res["kernels"], res["geomean_vs_static"], flush=True)
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "list_gap.json"), "w") as f:
        json.dump(res, f, indent=1)


def clock() -> None:
    """The schedule's steps timed on the device clock (`clocked`), on the first draw, launched five times."""
    import cupy as cp
    import torch

    os.environ.setdefault("GEMMC_TUNE", "0")
    import gemmc
    from gemmc.bench import dynamic as d
    from gemmc.runtime.compile import OPTIONS
    from gemmc.runtime.dynamic import state
    from gemmc.runtime.dynamic_list import problem_table

    kern = next(iter(gemmc.compile_string(SCHEDULES["list"])))
    fns = {name: cp.RawModule(code=clocked(edit(kern.source)), options=OPTIONS).get_function(kern.rendered.entry)
           for name, edit in (("current", lambda s: s), ("thread_tlp", thread_tlp))}
    As, Bs, Cs = _sets(torch, d.list_shapes(PROBLEMS)[:1])[0]
    kern(As, Bs, Cs, alpha=1.0, beta=0.0)
    st = state(kern.executable)
    table = torch.from_numpy(problem_table(kern.executable, As, Bs, Cs, torch.cuda.current_device())).cuda()
    for name, fn in fns.items():
        go = _launcher(fn, st, table, len(As))
        for _ in range(3):
            go()
            torch.cuda.synchronize()
            print("---", name, flush=True)


def once() -> None:
    import torch

    os.environ.setdefault("GEMMC_TUNE", "0")
    import gemmc
    from gemmc.bench import dynamic as d

    kern = next(iter(gemmc.compile_string(SCHEDULES["list"])))
    static = next(iter(gemmc.compile_string(d.LIST_STATIC)))
    As, Bs, Cs = _sets(torch, d.list_shapes(PROBLEMS)[:1])[0]
    kern(As, Bs, Cs, alpha=1.0, beta=0.0)
    static(As, Bs, Cs, stream=d.torch_stream())
    torch.cuda.synchronize()


if __name__ == "__main__":
    {"once": once, "clock": clock}.get(sys.argv[1], measure)()
