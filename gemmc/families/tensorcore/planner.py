"""The tensor-core family's planner (paper 001 §4): tile choice by the thread-parallelism analytic model, the
split from split.py, the pipeline depth, the pre-pass's scratch, one tile per block through the
standard work list. The pipeline runs it through the family's planning steps (families/tensorcore/steps.py).

The model (paper 001 §4.2, Eqs. 12-17; digest 001 §3.4 for the reading of phi):
- TLP (Eq. 12) in warps: blocks x warps per block, capped by the warps the SMs can hold at this tile's
  occupancy (registers, shared memory, threads: `tlp.occupancy` with the device's limits);
- compute-to-memory ratio (Eq. 15): 3*TM*TN / (2(TM + TN)) for a TM x TN block tile;
- per-thread load (Eqs. 16-17): elements each thread moves from global to shared memory per k-step.
Selection: among the tiles that give at least one block per SM, the highest ratio (ties: more TLP); when none
does, the most TLP. The paper gives no weights or thresholds (digest §3.1); "one block per SM" is ours.
"""

from __future__ import annotations

from gemmc.errors import Diagnostic, GemmcError
from gemmc.families.tensorcore import calibration as cal
from gemmc.families.tensorcore import hopper_loop
from gemmc.families.tensorcore.plan import Candidate, SplitPlan, TensorCorePlan, TensorCoreVariant, scratch_bytes
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, TileTable, WorkList
from gemmc.ir.types import DType, Layout
from gemmc.model import raster
from gemmc.model.tlp import ceil_div, occupancy
from gemmc.model.worklist import one_tile_per_block, problem_rows

# Block tiles the template is instantiated with: (bm, bn, warp tile m, warp tile n), in the order `choose` prefers
# on a tie. A 64x64 warp tile reads 1/3 less shared memory per mma than 64x32 (ldmatrix bytes ~ (wm + wn) /
# (wm * wn)) but needs 128 accumulator registers; a split's fragments come on top (the register estimate filters).
# The order is measured (calibration.py), as are the others below.
CATALOGUE = cal.CATALOGUE.value
# wgmma (sm_90a) block tiles: (bm, bn); one or two warpgroups of 128 threads, each BM / warpgroups rows (one or two
# m64 products) by the whole BN. More warpgroups would cap registers below the split's total + sum (3/4 of BN).
WG_CATALOGUE = cal.WG_CATALOGUE.value
WG_ROW_BYTES = cal.WG_ROW_BYTES.value  # k per stage for wgmma, by parts: one pass 64 f16 (4 k16 per barrier)
ROW_BYTES = 64  # k per shared-memory stage: 64 bytes of a line (32 f16/bf16: 2 mma k-steps; 16 tf32: 2 k-steps)
STAGES = cal.STAGES.value  # cp.async pipeline depths, deepest first: `pipeline stages auto` takes the deepest that fits
MIN_WARPS_PER_SM = cal.MIN_WARPS_PER_SM.value  # warps a block's pipeline depth leaves room for on an SM
PREP_BLOCKS_PER_SM = 8  # the pre-pass is memory-bound: 8 blocks of 256 threads fill an SM's 2048 threads

# mma.sync throughput in FLOP per clock per SM, dense, by compute capability major and part type (NVIDIA's
# architecture whitepapers: A100 1024 f16 FMA/clk/SM, H100 2x that per SM; tf32 at half the f16 rate).
MMA_FLOPS_PER_CLOCK = {8: {"f16": 2048, "bf16": 2048, "tf32": 1024},
                       9: {"f16": 4096, "bf16": 4096, "tf32": 2048}}


def mma_shape(split: SplitPlan) -> tuple[int, int, int]:
    return (16, 8, 8) if split.compute == "tf32" else (16, 8, 16)


def tensor_flops(hw: Hardware, compute: str) -> float:
    """Peak dense mma FLOP/s of the device for one part type, from its SM count and clock."""
    major = min(9, hw.compute_capability // 10)
    return hw.sm_count * hw.clock_hz * MMA_FLOPS_PER_CLOCK[major][compute]


def uses_wgmma(hw: Hardware, split: SplitPlan) -> bool:
    """wgmma (warpgroup MMA from shared memory, sm_90a) on sm_90 for f16/bf16 parts; tf32 (k8, K-major operands
    only) and every other architecture keep mma.sync."""
    return hw.arch == "sm_90" and split.compute != "tf32"


def wg_variant(bm: int, bn: int, bk: int) -> TensorCoreVariant:
    groups = min(bm // 64, 2)
    return TensorCoreVariant(bm, bn, bk, bm // groups, bn, groups * 128)


def make_plan(kernel: Kernel, hw: Hardware, variant: TensorCoreVariant, split: SplitPlan, stages: int,
              candidates: tuple[Candidate, ...] = (), note: str = "") -> TensorCorePlan:
    elem = 4 if split.compute == "tf32" else 2
    wg = uses_wgmma(hw, split)
    b_planes = split.parts + (1 if wg and split.premul_bits else 0)
    rows = tuple((p.m, p.n, p.k) for p in kernel.problems) * (kernel.count or 1)
    units = sum(ceil_div(m, variant.bm) * variant.bm // 8 + ceil_div(n, variant.bn) * variant.bn // 8
                for m, n, _ in rows)  # an upper bound on the pre-pass's units (8 lines of k-contiguous operands)
    return TensorCorePlan(variant=variant, mma=mma_shape(split), stages=stages, split=split, elem_bytes=elem,
                          pad=0 if wg else 16 // elem, a_kcontig=kernel.layout_a is Layout.ROW,
                          b_kcontig=kernel.layout_b is Layout.COL, wgmma=wg,
                          scratch=scratch_bytes(rows, variant.bm, variant.bn, variant.bk, split.parts, elem,
                                                b_planes),
                          prep_blocks=max(1, min(units, PREP_BLOCKS_PER_SM * hw.sm_count)),
                          candidates=candidates, emulation_note=note)


def deepest(plan: TensorCorePlan, hw: Hardware) -> int | None:
    """The most cp.async stages (of STAGES) whose shared memory fits one block, or None. A block of fewer than
    MIN_WARPS_PER_SM warps takes the deepest pipeline that still lets enough blocks share an SM for that many
    (latency hiding comes from warps as well as from stages)."""
    fits = [s for s in STAGES if s * plan.stage_bytes + plan.smem_align <= hw.smem_per_block]
    blocks = -(-MIN_WARPS_PER_SM // (plan.threads // hw.warp_size))
    shared = [s for s in fits if blocks * (s * plan.stage_bytes + plan.smem_align) <= hw.smem_per_sm]
    best = shared or fits
    return best[0] if best else None


def bk_of(split: SplitPlan, wgmma: bool = False) -> int:
    if wgmma:
        return WG_ROW_BYTES[split.parts] // 2
    return ROW_BYTES // (4 if split.compute == "tf32" else 2)


def weigh(kernel: Kernel, hw: Hardware, split: SplitPlan) -> tuple[Candidate, ...]:
    """Every catalogue tile that fits (registers, shared memory with >= 2 stages) with its TLP, ratio and
    per-thread load (paper 001 Eqs. 12, 15, 16-17)."""
    out = []
    wg = uses_wgmma(hw, split)
    tiles = [(bm, bn, 0, 0) for bm, bn in WG_CATALOGUE] if wg else CATALOGUE
    for bm, bn, wm, wn in tiles:
        v = catalogue_variant(hw, split, bm, bn, wm, wn)
        wm, wn, threads = v.wm, v.wn, v.threads
        if kernel.threads is not None and threads != kernel.threads:
            continue  # `threads N` with `tile auto`: only the tiles that run with N threads
        probe = make_plan(kernel, hw, v, split, 2)
        if probe.regs_estimate > hw.max_regs_per_thread or deepest(probe, hw) is None:
            continue
        stages = deepest(probe, hw) or 2
        occ = occupancy(hw, threads, probe.regs_estimate, stages * probe.stage_bytes)
        blocks = (kernel.count or 1) * sum(ceil_div(p.m, bm) * ceil_div(p.n, bn) for p in kernel.problems)
        resident = max(1, occ.blocks_per_sm) * hw.sm_count
        warps = min(blocks, resident) * (threads // hw.warp_size)
        ratio = 3 * bm * bn / (2 * (bm + bn))
        verdict = "fills the SMs" if blocks >= hw.sm_count else f"only {blocks} blocks for {hw.sm_count} SMs"
        out.append(Candidate(bm, bn, blocks, warps, ratio, (bm + bn) * v.bk // threads, verdict, wm, wn))
    return tuple(out)


def catalogue_variant(hw: Hardware, split: SplitPlan, bm: int, bn: int, wm: int, wn: int) -> TensorCoreVariant:
    """A catalogue tile as the template builds it: wgmma warpgroups on sm_90, else wm x wn warp tiles."""
    if uses_wgmma(hw, split):
        return wg_variant(bm, bn, bk_of(split, True))
    return TensorCoreVariant(bm, bn, bk_of(split), wm, wn, (bm // wm) * (bn // wn) * hw.warp_size)


def choose(cands: tuple[Candidate, ...], hw: Hardware) -> Candidate:
    full = [c for c in cands if c.blocks >= hw.sm_count]
    if full:
        return max(full, key=lambda c: (c.ratio, c.warps_active))
    return max(cands, key=lambda c: (c.warps_active, c.ratio))


def emulation_pays(kernel: Kernel, hw: Hardware, split: SplitPlan) -> str:
    """Does the split beat plain f32 on CUDA cores for this kernel? Compares the split's mma time plus its
    pre-pass (A and B read twice when lines are scaled, the parts written) with the larger of the f32 FMA time
    and its memory time. Only a report: the schedule asked for this precision, so it is what runs."""
    flops = kernel.flops
    elem = 4 if split.compute == "tf32" else 2
    reads = 2 if split.row_scaling else 1
    io = (kernel.count or 1) * sum(4 * (p.m * p.k + p.k * p.n + p.m * p.n) for p in kernel.problems)
    operands = (kernel.count or 1) * sum(p.m * p.k + p.k * p.n for p in kernel.problems)
    prep = operands * (4 * reads + elem * split.parts) / hw.mem_bandwidth
    t_split = prep + max(len(split.terms) * flops / tensor_flops(hw, split.compute), io / hw.mem_bandwidth)
    t_f32 = max(flops / hw.fp32_flops, io / hw.mem_bandwidth)
    verdict = "pays" if t_split < t_f32 else "does not pay (plain f32 is as accurate and predicted no slower)"
    return (f"emulation {verdict}: predicted {t_split * 1e6:.1f} us with {len(split.terms)} mma pass(es) and the "
            f"pre-pass vs {t_f32 * 1e6:.1f} us in f32 on CUDA cores")


def explicit_variant(kernel: Kernel, hw: Hardware, split: SplitPlan) -> TensorCoreVariant:
    """The schedule's tile as the template builds it; GemmcError (E301) where it builds no such tile or the
    schedule's threads do not match it."""
    t = kernel.tile
    assert t is not None
    step = 8 if kernel.precision and kernel.precision.compute is DType.TF32 else 16
    sizes = (64, 128, 256)
    if t.m not in sizes or t.n not in sizes or t.m * t.n > 128 * 256 or t.k % step or not 16 <= t.k <= 64:
        raise GemmcError(Diagnostic("E301", f"tensor-core tile {t} is not one the template builds",
                                    kernel.where("tile"), "bm, bn in {64, 128, 256}, bm * bn <= 128 * 256; "
                                    "bk in {16, 32, 64}"))
    if uses_wgmma(hw, split):
        wm, wn, threads = (v := wg_variant(t.m, t.n, t.k)).wm, v.wn, v.threads
    else:
        wm, wn = (32, 32) if min(t.m, t.n) == 64 else (64, 64) if split.parts < 3 else (64, 32)
        threads = (t.m // wm) * (t.n // wn) * hw.warp_size
    if kernel.threads is not None and kernel.threads != threads:
        raise GemmcError(Diagnostic("E301", f"tile {t} on tensor cores takes {threads} threads, not {kernel.threads}",
                                    kernel.where("threads"), "leave `threads` out"))
    return TensorCoreVariant(t.m, t.n, t.k, wm, wn, threads)


def notes(kernel: Kernel, plan: TensorCorePlan, hw: Hardware) -> tuple[str, ...]:
    v = plan.variant
    why = (f"tile {kernel.tile} from the schedule" if kernel.tile else
           f"tile {v.bm}x{v.bn}: highest compute-to-memory ratio among tiles with >= {hw.sm_count} blocks "
           "(paper 001 Eqs. 12, 15), else most TLP")
    stages = (f"{plan.stages} stages from the schedule" if kernel.stages_written else
              f"{plan.stages} stages: the deepest of {'/'.join(map(str, STAGES))} whose shared memory fits a block "
              f"(and {MIN_WARPS_PER_SM} warps per SM)")
    hopper = hopper_loop.note(kernel, hw)
    return (why, stages, f"split: {plan.split.describe()}", plan.emulation_note, *((hopper,) if hopper else ()))


def worklist(kernel: Kernel, plan: TensorCorePlan, hw: Hardware) -> WorkList:
    v = plan.variant
    rows = problem_rows(kernel)
    if raster.uniform(kernel):  # one tile a block, computed on the device
        r = raster.raster(kernel, v.bm, v.bn, 0)
        return WorkList(problems=rows, tiles=TileTable(), block_offsets=(), grid=raster.raster_grid(r, v.threads, hw),
                        block=v.threads, smem_bytes=plan.smem_bytes, raster=r)
    return one_tile_per_block(rows, ((v.bm, v.bn),), (0,), v.threads, plan.smem_bytes)
