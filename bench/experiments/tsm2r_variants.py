"""Experiment: column-major TSM2R around the planner's choice. For a few cases, time the planned kernel and
variants that change one knob: the depth of each warp's cp.async ring (stages), the cluster size (blocks that
split k), the register request (`__launch_bounds__` min blocks off) and 8 warps per block; with `--study mma`,
f64 n > 16 on the f64 tensor cores (the plan: m16n8k4, passes of 16 columns side by side) against the CUDA cores'
FMAs and one pass of all n columns (run 1; run 1 also compared m8n8k4 and batches of 8 columns). Every variant is
checked against float64. Kernels are compiled in parallel worker processes first (CuPy's disk cache), then
timed in this one.

    python3 bench/experiments/tsm2r_variants.py --out $OUT [--study mma]

Predictions: in docs/PERFORMANCE-tallskinny.md, written before each run.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
from concurrent.futures import ProcessPoolExecutor

from cluster_occupancy import active_clusters

import gemmc
from gemmc.api import CompiledKernel
from gemmc.bench import timing
from gemmc.families.tsm2r import planner as tsm2
from gemmc.model.tlp import occupancy

CASES = [("f32", 8192, 16), ("f32", 8192, 1), ("f32", 8192, 8), ("f32", 8192, 32), ("f64", 8192, 16),
         ("f64", 8192, 32), ("f32", 30720, 16)]
MMA_CASES = [("f64", 8192, 32), ("f64", 30720, 32), ("f64", 8192, 24)]
WIDE_CASES = [("f64", 8192, 32), ("f64", 16384, 32), ("f64", 16384, 16), ("f32", 16384, 16)]
N32_CASES = [("f64", 16384, 32), ("f64", 30720, 32)]
ROWT3_CASES = [("f64", 16384, 16), ("f64", 16384, 32)]
ROWT32_CASES = [("f64", 16384, 16), ("f64", 16384, 32), ("f64", 30720, 16), ("f64", 30720, 32)]
ROWSMALL_CASES = [("f64", 8192, 1), ("f64", 8192, 2), ("f64", 16384, 1), ("f64", 16384, 2), ("f64", 30720, 1),
                  ("f64", 30720, 2)]
GROUPS_CASES = [("f64", 8192, 32), ("f64", 16384, 32), ("f64", 30720, 32), ("f64", 30720, 16)]
ROWGROUPS_CASES = [("f64", 16384, 32), ("f64", 30720, 32)]
ROWFMA_CASES = [("f32", 16384, 8), ("f32", 16384, 16), ("f32", 16384, 32), ("f32", 30720, 16)]
ROW8192_CASES = [("f32", 8192, 8), ("f32", 8192, 16), ("f32", 16384, 16), ("f64", 8192, 1), ("f64", 8192, 32),
                 ("f64", 16384, 32)]
ROWFMA3_CASES = [("f32", 8192, 4), ("f32", 8192, 8), ("f32", 8192, 16), ("f32", 16384, 16)]
# row-major f64 past n = 16: is stop 17's 32-row shape (2 slices of 2 warps) the better default beside n = 32?
ROWWIDE_CASES = [("f64", 8192, 24), ("f64", 8192, 48), ("f64", 8192, 64), ("f64", 16384, 24), ("f64", 16384, 64),
                 ("f64", 16384, 128)]
ROWFMA4_CASES = [("f32", 8192, 4), ("f32", 8192, 8), ("f32", 8192, 16), ("f32", 16384, 8), ("f32", 16384, 16),
                 ("f32", 30720, 16)]
# row-major f64 n <= 16: 32 rows per warp (twice the row tiles) where 64-row tiles leave SMs idle (8192: 128 tiles)
ROWSMALL2_CASES = [("f64", 8192, 1), ("f64", 8192, 2), ("f64", 8192, 4), ("f64", 8192, 8), ("f64", 8192, 16),
                   ("f64", 16384, 1), ("f64", 16384, 8), ("f64", 16384, 16), ("f64", 30720, 2), ("f64", 30720, 16)]
ROWMMA_CASES = [("f64", 16384, 1), ("f64", 16384, 2), ("f64", 16384, 4), ("f64", 16384, 8), ("f64", 30720, 8)]


A_LAYOUT = "col"  # A's layout (row in the row-major studies of STUDIES)
BC_LAYOUT = os.environ.get("TSM2R_BC_LAYOUT", "col")  # B's and C's (the worker processes read it too)
if BC_LAYOUT not in ("row", "col"):
    raise SystemExit(f"TSM2R_BC_LAYOUT must be row or col, not {BC_LAYOUT!r}")


def base(dtype: str, m: int, n: int) -> CompiledKernel:
    return gemmc.compile_string(f"kernel t {{ dtype {dtype} layout A {A_LAYOUT}, B {BC_LAYOUT}, C {BC_LAYOUT} "
                                f"gemm {m} x {n} x {m} "
                                "algorithm tsm2r }")["t"]


def variant(kern: CompiledKernel, **changes) -> CompiledKernel:
    """The planned kernel with some knobs changed; shared memory and the min-blocks request follow. Where the
    rows or columns per pass change, so do the register estimate and (unless given) the planner's cluster."""
    hw = kern.target
    plan = dataclasses.replace(kern.ir.plan, **changes)
    dtype = kern.ir.dtype
    if ("t2" in changes or "rows_per_warp" in changes) and "regs" not in changes:
        plan = dataclasses.replace(plan, regs=tsm2.column_regs(plan.t2, plan.t3, plan.rows_per_warp, dtype))
    smem = tsm2.column_smem(plan.kslices, plan.t2, plan.t3, plan.stages, plan.rows_per_warp, dtype, hw, plan.mma,
                            plan.row_groups, plan.a_by_rows)
    threads = plan.kslices * plan.row_groups * hw.warp_size
    blocks = max(1, occupancy(hw, threads, plan.regs, smem).blocks_per_sm)
    if "cluster" not in changes and ({"t2", "rows_per_warp", "stages", "row_groups"} & changes.keys()):
        p = kern.ir.problems[0]
        cluster, predicted = tsm2.choose_cluster(
            hw, p.k, plan.kslices, plan.t3,
            tsm2.column_row_blocks(p, plan.t2, plan.rows_per_warp, hw, plan.row_groups), blocks,
            tsm2.column_bytes_in_flight(plan.t3, plan.stages, plan.rows_per_warp, dtype.nbytes, hw), plan.row_groups)
        plan = dataclasses.replace(plan, cluster=cluster, predicted_bandwidth=predicted)
    plan = dataclasses.replace(plan, t1=threads, smem=smem,
                               min_blocks=changes.get("min_blocks", blocks))
    return kern.with_plan(plan, "<variant>")


def replanned(kern: CompiledKernel, **constants) -> CompiledKernel:
    """`kern` planned afresh with some of the planner's constants (gemmc.families.tsm2r.planner) changed."""
    saved = {name: getattr(tsm2, name) for name in constants}
    try:
        for name, value in constants.items():
            setattr(tsm2, name, value)
        plan = tsm2.tsm2r_params(kern.ir.problems[0], kern.ir.dtype, kern.ir.layout_a, kern.target)
    finally:
        for name, value in saved.items():
            setattr(tsm2, name, value)
    return kern.with_plan(plan, "<variant>")


STUDY = "ring"
ROUNDS = 1  # passes over a case's variants (--rounds)
# study -> (its cases, the results file's suite name, A row-major)
STUDIES = {
    "ring": (CASES, "tsm2r-variants", False), "mma": (MMA_CASES, "tsm2r-mma", False),
    "wide": (WIDE_CASES, "tsm2r-wide", False), "n32": (N32_CASES, "tsm2r-n32", False),
    "groups": (GROUPS_CASES, "tsm2r-groups", False),
    "rowt3": (ROWT3_CASES, "tsm2r-rowt3", True), "rowmma": (ROWMMA_CASES, "tsm2r-rowmma", True),
    "rowt32": (ROWT32_CASES, "tsm2r-rowt32", True), "rowsmall": (ROWSMALL_CASES, "tsm2r-rowsmall", True),
    "rowgroups": (ROWGROUPS_CASES, "tsm2r-rowgroups", True), "rowgroups2": (ROWGROUPS_CASES, "tsm2r-rowgroups2", True),
    "rowfma": (ROWFMA_CASES, "tsm2r-rowfma2", True), "row8192": (ROW8192_CASES, "tsm2r-row8192", True),
    "rowfma3": (ROWFMA3_CASES, "tsm2r-rowfma3", True), "rowfma4": (ROWFMA4_CASES, "tsm2r-rowfma4", True),
    "rowwide": (ROWWIDE_CASES, "tsm2r-rowwide", True), "rowsmall2": (ROWSMALL2_CASES, "tsm2r-rowsmall2", True),
}


def grouped(kern: CompiledKernel) -> list[tuple[str, CompiledKernel]]:
    """The f64 tensor cores' column kernel with k slices of one or several warps (sharing B's batches): (rows
    per lane, warps per slice, slices per block, clusters). Run 1 (before stop 16's planner change) had 4 slices
    of one warp as its plan and 32 rows per warp with synchronous copies; run 2 the slices' named barriers; run 3
    the block barrier. 64 rows per warp keep the plan's register estimate (2
    blocks per SM); 32 rows have 64 fewer accumulator registers (ptxas: 150-168, sm_90), so 3 blocks of 4 warps
    per SM, 12 warps, as cuBLAS's kernel holds."""
    plan = kern.ir.plan
    out = []
    for rows, groups, slices, clusters in ((2, 1, 4, (1, 2)), (2, 2, 2, (1, 2)), (2, 4, 1, (2, 4)), (1, 4, 1, (2, 4))):
        changes = dict(rows_per_warp=rows, row_groups=groups, kslices=slices)
        changes.update(regs=plan.regs) if rows == 2 else changes.update(regs=160, min_blocks=3)
        for c in clusters:
            out.append((f"r{rows} {groups}x{slices} warps cluster {c}", variant(kern, cluster=c, **changes)))
    return out


def variants(dtype: str, m: int, n: int, study: str | None = None) -> list[tuple[str, CompiledKernel]]:
    kern = base(dtype, m, n)
    plan = kern.ir.plan
    out = [("plan", kern)]
    if (study or STUDY) == "rowt3":  # row-major A on the f64 tensor cores: longer pieces of each row per batch
        out += [(f"t3 {t3} stages {st} cluster {c}", variant(kern, t3=t3, stages=st, cluster=c))
                for t3, st in ((8, 3), (16, 2)) for c in sorted({1, plan.cluster})]
        return out
    if (study or STUDY) == "rowt32":  # row-major A, f64 n = 16-32: 256-byte pieces of each row per batch
        out += [(f"t3 32 cluster {c}", variant(kern, t3=32, stages=2, cluster=c)) for c in sorted({1, 2, plan.cluster})]
        out += [(f"t3 32 2 warps cluster {c}", variant(kern, t3=32, stages=2, kslices=2, cluster=c)) for c in (1, 2)]
        out += [(f"t3 16 cluster {c}", variant(kern, cluster=c)) for c in (1, 2) if c != plan.cluster]
        return out
    if (study or STUDY) == "rowfma":  # row-major A on the CUDA cores: the column kernel, batches copied by rows
        for rows, t3 in ((4, 16), (4, 32), (2, 32)):
            if rows * n > 64:
                continue
            regs = tsm2.column_regs(n, 16 // (4 if dtype == "f32" else 8), rows, kern.ir.dtype)
            out += [(f"by rows r{rows} t3 {t3} cluster {c}",
                     variant(kern, a_by_rows=True, mma=0, kslices=4, row_groups=1, rows_per_warp=rows, t3=t3, stages=2,
                             t2=n, regs=regs, cluster=c)) for c in (1, 2, 4)]
        return out
    # row-major: rows per warp, slices, clusters
    if (study or STUDY) in ("row8192", "rowfma3", "rowfma4", "rowwide", "rowsmall2"):
        if dtype == "f32":  # the column kernel by rows: 1 or 2 rows per lane (32 or 64 rows per warp)
            for rows in (1, 2):
                regs = tsm2.column_regs(n, 4, rows, kern.ir.dtype)  # as the planner: 16-byte vectors
                out += [(f"by rows r{rows} cluster {c}",
                         variant(kern, rows_per_warp=rows, regs=regs, cluster=c)) for c in (1, 2, 3)]
            if (study or STUDY) == "rowfma4":  # 256-byte pieces of each row (t3 64), as row-major f64 reads them
                out += [(f"by rows r{rows} t3 64 cluster {c}",
                         variant(kern, rows_per_warp=rows, t3=64, regs=tsm2.column_regs(n, 4, rows, kern.ir.dtype),
                                 cluster=c)) for rows in (1, 2) for c in (1, 2)]
            return out
        shapes = ((2, 1, 4, (1, 2, 3)), (1, 1, 4, (1, 2, 4))) if n <= 16 else \
            ((2, 4, 1, (3, 4)), (2, 2, 2, (1, 2)), (2, 1, 4, (1, 2)), (1, 4, 1, (2, 4)), (1, 2, 2, (1, 2)))
        for rows, groups, slices, clusters in shapes:
            changes = dict(rows_per_warp=rows, row_groups=groups, kslices=slices, t3=32, stages=2)
            changes.update(regs=plan.regs) if rows == 2 else changes.update(regs=160, min_blocks=3)
            out += [(f"r{rows} {groups}x{slices} warps cluster {c}", variant(kern, cluster=c, **changes))
                    for c in clusters]
        return out
    if (study or STUDY) == "rowgroups2":  # row-major f64 n = 32: slices sharing B, and 256-byte row pieces (t3 32)
        for groups, slices, t3, clusters in ((1, 4, 16, (1, 2)), (1, 4, 32, (1, 2)), (2, 2, 16, (1, 2)),
                                             (2, 2, 32, (1, 2, 4)), (4, 1, 32, (2, 4))):
            out += [(f"{groups}x{slices} warps t3 {t3} cluster {c}",
                     variant(kern, row_groups=groups, kslices=slices, t3=t3, stages=2, cluster=c)) for c in clusters]
        return out
    if (study or STUDY) in ("groups", "rowgroups"):  # f64 n = 16-32: B shared by the warps of a k slice
        out += [(f"cluster {c}", variant(kern, cluster=c)) for c in (1, 2) if c != plan.cluster]
        return out + grouped(kern)
    if (study or STUDY) == "rowsmall":  # row-major f64, n <= 2: the row kernel (the plan) against the tensor cores
        out.append(("tensor cores", replanned(kern, ROW_MMA_MIN_N=0)))
        return out
    if (study or STUDY) == "rowmma":  # row-major f64, n <= 8: the tensor cores' column kernel against the row kernel
        out += [(f"cluster {c}", variant(kern, cluster=c)) for c in (1, 2, 4) if c != plan.cluster]
        out.append(("row kernel", replanned(kern, ROW_MMA_MIN_N=tsm2.MMA_MIN_N)))
        return out
    if (study or STUDY) == "n32":  # f64 n = 32: ring depth at the clusters the tuning step picked, graph vs loop
        out += [(f"stages {st} cluster {c}", variant(kern, stages=st, cluster=c)) for st in (3, 4, 6) for c in (1, 2)
                if (st, c) != (plan.stages, plan.cluster)]
        return out
    if (study or STUDY) == "wide":  # f64 n = 32 in one pass, and the n = 16 cases that missed at m = 16384
        def clustered(label: str, **changes) -> list[tuple[str, CompiledKernel]]:
            """The variant with the planner's cluster for it, and with clusters of 4 and 7 blocks."""
            auto = variant(kern, **changes)
            more = [(f"{label} cluster {c}", variant(kern, cluster=c, **changes))
                    for c in (4, 7) if c != auto.ir.plan.cluster]
            return [(f"{label} cluster {auto.ir.plan.cluster}", auto)] + more

        out += [(f"stages {s} cluster {plan.cluster}", variant(kern, stages=s, cluster=plan.cluster)) for s in (3, 4)]
        if dtype == "f64" and n == 32:
            for s in (2, 4, 6):
                out += clustered(f"one pass r1 stages {s}", t2=n, rows_per_warp=1, stages=s)
            for s in (3, 4):
                out += clustered(f"one pass r2 stages {s}", t2=n, rows_per_warp=2, stages=s)
            return out
        out += [(f"cluster {c}", variant(kern, cluster=c)) for c in (1, 2, 4, 5, 6, 7) if c != plan.cluster]
        return out
    if (study or STUDY) == "mma":
        out.append(("fma", variant(kern, mma=0)))
        if n > plan.t2:  # the run-1 plan: one pass of n columns, 1 row per lane
            out.append(("one pass", variant(kern, t2=n, rows_per_warp=1)))
        return out
    out += [(f"stages {s}", variant(kern, stages=s)) for s in (2, 4, 8) if s != plan.stages]
    out += [(f"cluster {c}", variant(kern, cluster=c)) for c in (1, 2, 4, 8) if c != plan.cluster]
    out.append(("no min blocks", variant(kern, min_blocks=0)))
    out.append(("8 warps", variant(kern, kslices=8, cluster=max(1, plan.cluster // 2))))
    return out


def max_active_clusters(kern: CompiledKernel) -> int:
    """How many of the kernel's clusters the GPU holds at once (clusters of one block: its resident blocks). An SM
    of a GPC that cannot hold a whole cluster stays idle, so this can be less than SMs x blocks per SM / cluster."""
    return active_clusters(kern.executable.function, kern.ir.plan.cluster, kern.ir.work.block, kern.ir.work.smem_bytes)


def compile_one(args: tuple[str, str, int, int, str]) -> str:
    from gemmc.runtime.compile import device_function

    label, dtype, m, n, study = args
    global A_LAYOUT
    A_LAYOUT = "row" if STUDIES[study][2] else "col"  # a worker process starts from the module's defaults
    kern = dict(variants(dtype, m, n, study))[label]
    device_function(kern.rendered, kern.rendered.entry)
    return label


def time_case(dtype: str, m: int, n: int) -> list[dict]:
    import torch

    tdt = torch.float32 if dtype == "f32" else torch.float64
    k = m
    A = torch.randn(m, k, device="cuda", dtype=tdt)  # row-major m x k, or column-major below
    A = A if A_LAYOUT == "row" else torch.randn(k, m, device="cuda", dtype=tdt).t()
    B = torch.randn(n, k, device="cuda", dtype=tdt).t() if BC_LAYOUT == "col" else torch.randn(k, n, device="cuda",
                                                                                                 dtype=tdt)
    ref = A.double() @ B.double()
    nbytes = (m * k + k * n + m * n) * A.element_size()
    out = torch.empty(n, m, device="cuda", dtype=tdt).t() if BC_LAYOUT == "col" else torch.empty(m, n, device="cuda",
                                                                                                   dtype=tdt)
    kerns = variants(dtype, m, n)
    rows, graphs = [], []
    for label, kern in kerns:
        C = torch.full((n, m), float("nan"), device="cuda", dtype=tdt).t() if BC_LAYOUT == "col" else \
            torch.full((m, n), float("nan"), device="cuda", dtype=tdt)
        kern([A], [B], [C])
        err = float((C.double() - ref).norm() / ref.norm())
        graphs.append(timing.gemmc_graph(lambda kern=kern, C=C: kern([A], [B], [C])))
        loop = timing.device_seconds(lambda kern=kern, C=C: kern([A], [B], [C]), calls=20, windows=5)
        plan = kern.ir.plan
        rows.append({"case": f"{dtype} m=k={m} n={n} B, C {BC_LAYOUT}", "variant": label, "mma": plan.mma,
                     "t3": plan.t3, "stages": plan.stages, "cluster": plan.cluster,
                     "warps": plan.kslices, "groups": plan.row_groups, "rows": plan.rows_per_warp,
                     "min_blocks": plan.min_blocks, "regs": int(kern.executable.function.num_regs),
                     "blocks": kern.ir.work.grid[0], "max_clusters": max_active_clusters(kern),
                     "loop_us": loop * 1e6, "predicted_tbs": plan.predicted_bandwidth / 1e12, "err": err})
    # ROUNDS passes over the variants and cuBLAS, each timed from its graph in turn; the median per variant (the
    # power cap moves a kernel's time by 5-10% from window to window).
    times: list[list[float]] = [[] for _ in kerns]
    cublas = []
    for _ in range(ROUNDS):
        for i, graph in enumerate(graphs):
            times[i].append(timing.device_seconds(graph, calls=20, windows=5))
        cublas.append(timing.device_seconds(lambda: torch.mm(A, B, out=out), calls=20, windows=5))
    t_cublas = statistics.median(cublas)
    # The references of gemmc/bench/tallskinny.py in the same process: cuBLAS (torch.mm) and a copy of the same bytes.
    src = torch.empty(nbytes // 4, device="cuda", dtype=torch.float32).uniform_()
    dst = torch.empty_like(src)
    roof = 2 * nbytes / timing.device_seconds(lambda: dst.copy_(src), calls=20, windows=5)
    for row, ts in zip(rows, times, strict=True):
        t = statistics.median(ts)
        row.update(us=t * 1e6, rounds_us=[round(x * 1e6, 1) for x in ts], tbs=nbytes / t / 1e12,
                   cublas_us=t_cublas * 1e6, vs_cublas=t_cublas / t, of_roof=nbytes / t / roof)
        print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    import torch

    os.environ["GEMMC_TUNE"] = "0"  # the variants are timed as planned, not replaced by the tuning step's choice

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="bench/results")
    parser.add_argument("--jobs", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=1, help="time every variant this many times in turn")
    parser.add_argument("--study", choices=tuple(STUDIES), default="ring")
    args = parser.parse_args()
    global STUDY, ROUNDS
    STUDY, ROUNDS = args.study, args.rounds
    cases, suite, row_a = STUDIES[args.study]
    global A_LAYOUT
    A_LAYOUT = "row" if row_a else "col"
    jobs = [(label, dtype, m, n, args.study) for dtype, m, n in cases for label, _ in variants(dtype, m, n)]
    import multiprocessing

    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(compile_one, jobs))
    rows = []
    for dtype, m, n in cases:
        rows += time_case(dtype, m, n)
        torch.cuda.empty_cache()
    path = timing.write_results(args.out, suite if BC_LAYOUT == "col" else f"{suite}-bc{BC_LAYOUT}", rows)
    print(timing.table(rows, ["case", "variant", "mma", "t3", "stages", "cluster", "warps", "groups", "rows",
                              "min_blocks", "regs", "us",
                              "loop_us", "tbs", "predicted_tbs", "of_roof", "vs_cublas", "err"]))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
