"""The tensor-core family's planner (paper 001 §4): tile choice by the thread-parallelism analytic model, the
split from gemmc/passes/split.py, one tile per block through the standard work list.

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
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, WorkList
from gemmc.ir.plan_tensorcore import Candidate, SplitPlan, TensorCorePlan, TensorCoreVariant
from gemmc.ir.types import DType
from gemmc.passes.split import split_plan
from gemmc.passes.tlp import ceil_div, occupancy
from gemmc.passes.worklist import one_tile_per_block, problem_rows

# Block tiles the template is instantiated with, largest first: (bm, bn, warp tile m, warp tile n).
CATALOGUE = ((128, 128, 64, 32), (128, 64, 64, 32), (64, 64, 32, 32))
BK = 32  # k per shared-memory stage: 2 mma k-steps of 16 (f16/bf16) or 4 of 8 (tf32)

# mma.sync throughput in FLOP per clock per SM, dense, by compute capability major and part type (NVIDIA's
# architecture whitepapers: A100 1024 f16 FMA/clk/SM, H100 2x that per SM; tf32 at half the f16 rate).
MMA_FLOPS_PER_CLOCK = {8: {"f16": 2048, "bf16": 2048, "tf32": 1024},
                       9: {"f16": 4096, "bf16": 4096, "tf32": 2048}}


def mma_shape(split: SplitPlan) -> tuple[int, int, int]:
    return (16, 8, 8) if split.compute == "tf32" else (16, 8, 16)


def tensor_flops(hw: Hardware, compute: str) -> float:
    """Peak dense mma FLOP/s of the device for one part type, from its SM count and clock."""
    major = min(9, int(hw.arch.split("_")[1]) // 10)
    return hw.sm_count * hw.clock_hz * MMA_FLOPS_PER_CLOCK[major][compute]


def make_plan(variant: TensorCoreVariant, split: SplitPlan, stages: int,
              candidates: tuple[Candidate, ...] = (), note: str = "") -> TensorCorePlan:
    elem = 4 if split.compute == "tf32" else 2
    return TensorCorePlan(variant=variant, mma=mma_shape(split), stages=stages, split=split, elem_bytes=elem,
                          pad=16 // elem, candidates=candidates, emulation_note=note)


def weigh(kernel: Kernel, hw: Hardware, split: SplitPlan, stages: int) -> tuple[Candidate, ...]:
    """Every catalogue tile with its TLP, ratio and per-thread load (paper 001 Eqs. 12, 15, 16-17)."""
    out = []
    for bm, bn, wm, wn in CATALOGUE:
        threads = (bm // wm) * (bn // wn) * hw.warp_size
        probe = make_plan(TensorCoreVariant(bm, bn, BK, wm, wn, threads), split, stages)
        occ = occupancy(hw, threads, probe.regs_estimate, probe.smem_bytes)
        blocks = (kernel.count or 1) * sum(ceil_div(p.m, bm) * ceil_div(p.n, bn) for p in kernel.problems)
        resident = max(1, occ.blocks_per_sm) * hw.sm_count
        warps = min(blocks, resident) * (threads // hw.warp_size)
        ratio = 3 * bm * bn / (2 * (bm + bn))
        verdict = "fills the SMs" if blocks >= hw.sm_count else f"only {blocks} blocks for {hw.sm_count} SMs"
        out.append(Candidate(bm, bn, blocks, warps, ratio, (bm + bn) * BK // threads, verdict))
    return tuple(out)


def choose(cands: tuple[Candidate, ...], hw: Hardware) -> Candidate:
    full = [c for c in cands if c.blocks >= hw.sm_count]
    if full:
        return max(full, key=lambda c: (c.ratio, c.warps_active))
    return max(cands, key=lambda c: (c.warps_active, c.ratio))


def emulation_pays(kernel: Kernel, hw: Hardware, split: SplitPlan) -> str:
    """Does the split beat plain f32 on CUDA cores for this kernel? Compares the larger of the split's mma time
    and its memory time (A and B read twice when rows are scaled, C written) with the f32 FMA time. Only a
    report: the schedule asked for this precision, so it is what runs."""
    flops = kernel.flops
    reads = 2 if split.row_scaling else 1
    bytes_moved = (kernel.count or 1) * sum(4 * (reads * (p.m * p.k + p.k * p.n) + p.m * p.n)
                                            for p in kernel.problems)
    t_split = max(len(split.terms) * flops / tensor_flops(hw, split.compute), bytes_moved / hw.mem_bandwidth)
    t_f32 = max(flops / hw.fp32_flops, bytes_moved / reads / hw.mem_bandwidth)
    verdict = "pays" if t_split < t_f32 else "does not pay (plain f32 is as accurate and predicted no slower)"
    return (f"emulation {verdict}: predicted {t_split * 1e6:.1f} us with {len(split.terms)} mma pass(es) vs "
            f"{t_f32 * 1e6:.1f} us in f32 on CUDA cores")


def _explicit(kernel: Kernel, hw: Hardware) -> TensorCoreVariant:
    t = kernel.tile
    assert t is not None
    step = 8 if kernel.precision and kernel.precision.compute is DType.TF32 else 16
    if t.m not in (64, 128) or t.n not in (64, 128) or t.k % step or not 16 <= t.k <= 64:
        raise GemmcError(Diagnostic("E301", f"tensor-core tile {t} is not one the template builds",
                                    kernel.where("tile"), "bm, bn in {64, 128}; bk in {16, 32, 64}"))
    wm, wn = (64, 32) if t.m == 128 else (32, 32)
    threads = (t.m // wm) * (t.n // wn) * hw.warp_size
    if kernel.threads is not None and kernel.threads != threads:
        raise GemmcError(Diagnostic("E301", f"tile {t} on tensor cores takes {threads} threads, not {kernel.threads}",
                                    kernel.where("threads"), "leave `threads` out"))
    return TensorCoreVariant(t.m, t.n, t.k, wm, wn, threads)


def plan(kernel: Kernel, hw: Hardware) -> TensorCorePlan:
    if kernel.stages != 2:
        code = "E900" if kernel.stages in (3, 4) else "E202"
        raise GemmcError(Diagnostic(code, f"pipeline stages {kernel.stages}: the tensor-core family splits f32 in "
                                    "registers and double-buffers shared memory (2 stages)", kernel.where("pipeline"),
                                    "cp.async with 3-4 stages needs f16/bf16 storage, which is not supported yet"))
    assert kernel.precision is not None
    split = split_plan(kernel.precision)
    cands = weigh(kernel, hw, split, kernel.stages)
    if kernel.tile is not None:
        variant = _explicit(kernel, hw)
    else:
        best = choose(cands, hw)
        bm, bn, wm, wn = next(c for c in CATALOGUE if c[:2] == (best.bm, best.bn))
        variant = TensorCoreVariant(bm, bn, BK, wm, wn, (bm // wm) * (bn // wn) * hw.warp_size)
    return make_plan(variant, split, kernel.stages, cands, emulation_pays(kernel, hw, split))


def notes(kernel: Kernel, plan: TensorCorePlan, hw: Hardware) -> tuple[str, ...]:
    v = plan.variant
    why = (f"tile {kernel.tile} from the schedule" if kernel.tile else
           f"tile {v.bm}x{v.bn}: highest compute-to-memory ratio among tiles with >= {hw.sm_count} blocks "
           "(paper 001 Eqs. 12, 15), else most TLP")
    return (why, f"split: {plan.split.describe()}", plan.emulation_note)


def worklist(kernel: Kernel, plan: TensorCorePlan, hw: Hardware) -> WorkList:
    v = plan.variant
    return one_tile_per_block(problem_rows(kernel), ((v.bm, v.bn),), (0,), v.threads, plan.smem_bytes)
