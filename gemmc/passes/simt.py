"""The SIMT family's planner: tile variants on CUDA cores (FP32/FP64 FMA), one launch for the whole batch.

- `tile BMxBNxBK [threads N]`: one variant for every problem, checked against the target.
- `tile auto(uniform)`: the largest tile of a small catalogue that still gives one wave of blocks (the baseline).
- `tile auto(loadbalanced)`: paper 000's per-problem tiles with per-variant thread counts (passes/tiling.py).
- `tile auto(coordinated)`: paper 003's lockstep tiling with one thread count (passes/tiling.py).
- `tile auto`: all three, each costed by the model of `tiling.estimate`; the cheapest wins.
Batching (paper 003 §4, passes/batching.py) then packs tiles into blocks.
"""

from __future__ import annotations

import dataclasses
from statistics import median

import numpy as np

from gemmc.errors import Diagnostic, GemmcError
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, WorkList
from gemmc.ir.plan_simt import SimtPlan, SimtVariant, micro_tile
from gemmc.ir.types import Batching, DType, TileMode
from gemmc.passes import batching, tiling
from gemmc.passes.tlp import SMEM_RESERVED_PER_BLOCK, coordinated_threshold, default_threshold, occupancy
from gemmc.passes.worklist import Sizes, packed, problem_rows, tile_table

# Uniform catalogue, largest first. 8x8 micro-tiles give 2 FMAs per shared-memory byte read in f32; f64 halves
# the micro-tile to stay under the register file's 255 per thread. K steps: measured on the H100
# (bench/results/2026-11-22_h100_simt_occupancy_call1.log), 128x128 at BK 16 runs 44.1 TFLOP/s at 4096^3 against
# 36.2 at BK 8 even though BK 16 holds one block per SM (203 registers) and BK 8 two (128): the k-tile turnaround
# (staged stores, barrier) costs more than the second block hides. The small tiles are latency-bound, so they
# take long K steps (the same finding as passes/tiling.py's 128-thread levels); 32x32 with 128 threads measured
# 5-8% faster than with 256 on three Inception modules (bench/results/2026-11-22_h100_simt_tiles_call2.log).
UNIFORM_F32 = (SimtVariant(128, 128, 16, 8, 8, 256), SimtVariant(64, 64, 16, 4, 4, 256),
               SimtVariant(32, 32, 32, 2, 4, 128))
UNIFORM_F64 = (SimtVariant(128, 64, 8, 8, 4, 256), SimtVariant(64, 64, 8, 4, 4, 256),
               SimtVariant(32, 32, 8, 2, 2, 256))


def uniform_variant(kernel: Kernel, hw: Hardware, sizes: Sizes | None = None) -> tuple[SimtVariant, str]:
    """The largest catalogue tile that still gives one wave of blocks (>= SM count) over the batch."""
    catalogue = UNIFORM_F64 if kernel.dtype is DType.F64 else UNIFORM_F32
    batch = kernel.count or 1
    s = sizes if sizes is not None else Sizes.of(kernel.problems)
    for v in catalogue:
        tiles = batch * int(tiling.tile_counts(s, v.bm, v.bn).sum())
        if tiles >= hw.sm_count:
            return v, f"largest uniform tile with >= {hw.sm_count} blocks ({tiles} blocks)"
    return catalogue[-1], f"no uniform tile fills {hw.sm_count} SMs; smallest tile"


def explicit_variant(kernel: Kernel, hw: Hardware) -> SimtVariant:
    assert kernel.tile is not None
    t = kernel.tile
    threads = kernel.threads or max(hw.warp_size, min(256, t.m * t.n // 16))
    micro = micro_tile(t.m, t.n, threads)
    if micro is None:
        raise GemmcError(Diagnostic("E301", f"tile {t} cannot be split evenly over {threads} threads",
                                    kernel.where("threads" if kernel.threads else "tile"),
                                    "threads must divide bm*bn into a micro-tile tm x tn with tm | bm, tn | bn"))
    return SimtVariant(t.m, t.n, t.k, micro[0], micro[1], threads)


def check_variants(kernel: Kernel, plan: SimtPlan, hw: Hardware) -> None:
    """Resource limits per variant, reported at the line that chose the tile."""
    diags = []
    where = kernel.where("tile") if kernel.tile else kernel.span
    for v in plan.variants:
        smem = plan.variant_smem(v)
        if smem > hw.smem_per_block:
            diags.append(Diagnostic("E300", f"tile {v.bm}x{v.bn}x{v.bk} needs {smem} bytes of shared memory; "
                                    f"{hw.arch} allows {hw.smem_per_block} per block", where,
                                    "use a smaller tile or fewer pipeline stages"))
        if v.threads > hw.max_threads_per_block:
            diags.append(Diagnostic("E301", f"{v.threads} threads exceed {hw.arch}'s {hw.max_threads_per_block} "
                                    "per block", kernel.where("threads")))
        regs = plan.variant_floor(v)  # what no compiler can go below; the fitted estimates extrapolate past 255
        if regs > hw.max_regs_per_thread:
            diags.append(Diagnostic("E302", f"micro-tile {v.tm}x{v.tn} needs about {regs} registers per thread; "
                                    f"{hw.arch} allows {hw.max_regs_per_thread}", where,
                                    "use more threads or a smaller tile"))
    if diags:
        raise GemmcError(diags)


def bound_blocks(plan: SimtPlan, hw: Hardware) -> tuple[int, int]:
    """(blocks per SM for `__launch_bounds__`, the registers per thread that leaves). Left unconstrained, ptxas
    spends registers freely (the 128x128 variant takes 165: one block, 8 warps per SM); capped at REG_CAP (two
    256-thread blocks) it spills nothing when the variant's arrays leave CAP_HEADROOM registers for the rest.
    Every other plan is bounded just above its estimate, so the estimate is what the SM allocates. The bound
    never asks for more blocks than threads or shared memory allow. HIP: no bound (0, 0)."""
    if hw.vendor != "cuda":
        return 0, 0
    need = max(plan.variant_need(v) for v in plan.variants)
    granule = hw.reg_alloc_unit
    blocks = hw.regs_per_sm // (plan.threads * (-(-need // granule) * granule))
    smem = plan.smem_bytes + SMEM_RESERVED_PER_BLOCK
    blocks = max(1, min(blocks, hw.max_threads_per_sm // plan.threads, hw.smem_per_sm // smem,
                        hw.max_blocks_per_sm))
    cap = min(hw.max_regs_per_thread, hw.regs_per_sm // (plan.threads * blocks) // granule * granule)
    return blocks, cap


def _plan_from(kernel: Kernel, hw: Hardware, t: tiling.Tiling, **fields) -> SimtPlan:
    plan = SimtPlan(variants=t.palette, assignment=tuple(t.choice.tolist()), stages=kernel.stages,
                    elem_bytes=kernel.dtype.nbytes, method=t.method, **fields)
    blocks, cap = bound_blocks(plan, hw)
    return dataclasses.replace(plan, min_blocks=blocks, reg_cap=cap)


def everyone(method: str, v: SimtVariant, problems: int) -> tiling.Tiling:
    """One variant for every problem."""
    return tiling.Tiling(method, (v,), np.zeros(problems, dtype=np.int64), 0, 0)


def candidate_tilings(kernel: Kernel, hw: Hardware, sizes: Sizes) -> list[tiling.Tiling]:
    count = kernel.count or 1
    uniform = everyone("uniform", uniform_variant(kernel, hw, sizes)[0], len(sizes))
    mode = kernel.tile_mode
    out = []
    if mode in (TileMode.AUTO, TileMode.UNIFORM):
        out.append(uniform)
    if mode in (TileMode.AUTO, TileMode.COORDINATED):
        max_outputs = 32 if kernel.dtype is DType.F64 else 64
        out.append(tiling.coordinated(sizes, count, kernel.tlp_threshold or coordinated_threshold(hw), max_outputs))
    if mode in (TileMode.AUTO, TileMode.LOADBALANCED) and (hw.vendor == "cuda" or mode is TileMode.LOADBALANCED):
        threshold = kernel.tlp_threshold or default_threshold(hw)
        rungs = tiling.ladder(sizes)
        new = tiling.loadbalanced(sizes, count, hw, threshold, rungs=rungs)
        if mode is TileMode.AUTO:
            # Algorithm 1 driven by Eq. 3 stops refining earlier (idle warps count). On the H100 it measured
            # faster than Eq. 4 in 5 of 26 cases and within noise (1.2%) in the rest (bench/results/
            # 2026-11-22_h100_irregular.json, docs/PERFORMANCE-irregular.md), so `tile auto` costs both; listed
            # first, it wins ties.
            old = tiling.loadbalanced(sizes, count, hw, threshold, metric="old", rungs=rungs)
            if not old.same_variants(new):
                out.append(old)
        out.append(new)
    return out


def auto_plan(kernel: Kernel, hw: Hardware, sizes: Sizes) -> SimtPlan:
    """Cost every candidate tiling with tiling.estimate and keep the cheapest (ties: the earlier candidate)."""
    scored = []
    for t in candidate_tilings(kernel, hw, sizes):
        probe = _plan_from(kernel, hw, t)
        est = tiling.estimate(t, sizes, kernel.count or 1, hw, probe.regs_estimate, probe.smem_bytes)
        scored.append((est.seconds, t, est))
    seconds, best, est = min(scored, key=lambda s: s[0])
    occ = est.occupancy
    return _plan_from(kernel, hw, best, tlp_threshold=best.threshold or default_threshold(hw),
                      tlp_old=est.tlp_old, tlp_new=est.tlp_new,
                      occupancy=f"{occ.warps_per_sm} warps/SM ({occ.limit})", estimate_us=seconds * 1e6,
                      candidates=tuple((t.method, s * 1e6) for s, t, _ in scored) if len(scored) > 1 else ())


def choose_batching(kernel: Kernel, plan: SimtPlan, hw: Hardware, sizes: Sizes | None = None) -> tuple[Batching, str]:
    """`batching auto`: threshold batching when there are at least 4 waves of blocks and the median K is at most
    theta / 2 (small-K tiles, where a block's prologue is a large share of its work); otherwise none."""
    if kernel.batching is not Batching.AUTO:
        return kernel.batching, f"batching {kernel.batching.value} from the schedule"
    occ = occupancy(hw, plan.threads, plan.regs_estimate, plan.smem_bytes)
    s = sizes if sizes is not None else Sizes.of(kernel.problems)
    chosen = tiling.Tiling(plan.method, plan.variants, np.asarray(plan.assignment, dtype=np.int64), 0, 0)
    blocks = int(chosen.counts(s, kernel.count or 1).sum())
    waves = blocks / max(1, occ.blocks_per_sm * hw.sm_count)
    k_med = median(s.k.tolist())
    if waves >= 4 and k_med <= batching.THETA / 2:
        return Batching.THRESHOLD, f"batching threshold: {waves:.1f} waves of blocks, median K {k_med:g} <= theta/2"
    return Batching.NONE, f"batching none: {waves:.1f} waves of blocks, median K {k_med:g}"


def plan(kernel: Kernel, hw: Hardware) -> SimtPlan:
    if kernel.stages not in (1, 2):
        raise GemmcError(Diagnostic("E202", f"the SIMT family has 1 or 2 pipeline stages, not {kernel.stages}",
                                    kernel.where("pipeline"), "deeper pipelines are the tensor-core family's"))
    sizes = Sizes.of(kernel.problems)
    if kernel.tile is not None:
        result = _plan_from(kernel, hw, everyone("explicit", explicit_variant(kernel, hw), len(kernel.problems)))
    else:
        result = auto_plan(kernel, hw, sizes)
    if hw.vendor == "hip" and len({v.threads for v in result.variants}) > 1:
        raise GemmcError(Diagnostic("E900", "variants with different thread counts in one launch need named "
                                    "barriers, which HIP lacks", kernel.where("tile"),
                                    "use tile auto(coordinated) or tile auto(uniform) for HIP"))
    check_variants(kernel, result, hw)
    mode, _ = choose_batching(kernel, result, hw, sizes)
    theta = batching.THETA if mode in (Batching.THRESHOLD, Batching.BINARY) else 0
    return dataclasses.replace(result, batching=mode, theta=theta,
                               tlp_threshold=result.tlp_threshold or (kernel.tlp_threshold or 0))


def notes(kernel: Kernel, plan: SimtPlan, hw: Hardware) -> tuple[str, ...]:
    if kernel.tile is not None:
        tile_note = f"tile {kernel.tile} from the schedule"
    elif kernel.tile_mode is TileMode.AUTO:
        tile_note = "tile auto: the candidate tilings were costed (padded FLOPs over the busy share of the machine)"
    else:
        tile_note = f"tile auto({kernel.tile_mode.value}) from the schedule"
    return (tile_note, choose_batching(kernel, plan, hw)[1])


def worklist(kernel: Kernel, plan: SimtPlan, hw: Hardware) -> WorkList:
    """Every problem's tiles (worklist.tile_table), grouped into blocks by the plan's batching."""
    rows = problem_rows(kernel)
    s = Sizes.of_rows(rows)
    variant = np.resize(np.asarray(plan.assignment, dtype=np.int64), len(s))  # a `count` batch repeats its entry
    m, n, k = s.m, s.n, s.k
    bm, bn, micro = (np.array([f(v) for v in plan.variants], dtype=np.int64)[variant]
                     for f in (lambda v: v.bm, lambda v: v.bn, lambda v: v.tm * v.tn))
    table = tile_table(m, n, bm, bn, variant)
    problem = table[:, 0]
    threshold = plan.tlp_threshold or coordinated_threshold(hw)
    blocks = batching.group(k[problem], (micro * k)[problem], plan.batching, plan.threads, threshold,
                            plan.theta or batching.THETA)
    return WorkList(problems=rows, tiles=packed(table[blocks.order]), block_offsets=tuple(blocks.offsets.tolist()),
                    grid=(len(blocks.offsets) - 1, 1, 1), block=plan.threads, smem_bytes=plan.smem_bytes)
