"""The SIMT family's planner: tile variants on CUDA cores (FP32/FP64 FMA), one launch for the whole batch.

`tile auto` here picks one uniform variant for the batch from a small catalogue (the "uniform tiles"
baseline). An explicit `tile BMxBNxBK` (with optional `threads`) gives one variant, checked against the target.
"""

from __future__ import annotations

from gemmc.errors import Diagnostic, GemmcError
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, WorkList
from gemmc.ir.plan_simt import SimtPlan, SimtVariant
from gemmc.ir.types import DType
from gemmc.passes.worklist import ceil_div, one_tile_per_block, problem_rows

# Uniform catalogue, largest first. 8x8 micro-tiles give 2 FMAs per shared-memory byte read in f32; f64 halves
# the micro-tile to stay under the register file's 255 per thread.
UNIFORM_F32 = (SimtVariant(128, 128, 8, 8, 8, 256), SimtVariant(64, 64, 8, 4, 4, 256),
               SimtVariant(32, 32, 8, 2, 2, 256))
UNIFORM_F64 = (SimtVariant(128, 64, 8, 8, 4, 256), SimtVariant(64, 64, 8, 4, 4, 256),
               SimtVariant(32, 32, 8, 2, 2, 256))


def micro_tile(bm: int, bn: int, threads: int) -> tuple[int, int] | None:
    """The most square tm x tn (tn >= tm) with bm/tm * bn/tn == threads, or None when none exists."""
    if (bm * bn) % threads:
        return None
    per_thread = bm * bn // threads
    best = None
    for tm in range(1, per_thread + 1):
        if per_thread % tm or bm % tm:
            continue
        tn = per_thread // tm
        if bn % tn:
            continue
        key = (abs(tm - tn), tm > tn)
        if best is None or key < best[0]:
            best = (key, (tm, tn))
    return best[1] if best else None


def uniform_variant(kernel: Kernel, hw: Hardware) -> tuple[SimtVariant, str]:
    """The largest catalogue tile that still gives one wave of blocks (>= SM count) over the batch."""
    catalogue = UNIFORM_F64 if kernel.dtype is DType.F64 else UNIFORM_F32
    batch = kernel.count or 1
    for v in catalogue:
        tiles = batch * sum(ceil_div(p.m, v.bm) * ceil_div(p.n, v.bn) for p in kernel.problems)
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
        regs = plan.variant_regs(v)
        if regs > hw.max_regs_per_thread:
            diags.append(Diagnostic("E302", f"micro-tile {v.tm}x{v.tn} needs about {regs} registers per thread; "
                                    f"{hw.arch} allows {hw.max_regs_per_thread}", where,
                                    "use more threads or a smaller tile"))
    if diags:
        raise GemmcError(diags)


def plan(kernel: Kernel, hw: Hardware) -> SimtPlan:
    if kernel.stages not in (1, 2):
        raise GemmcError(Diagnostic("E202", f"the SIMT family has 1 or 2 pipeline stages, not {kernel.stages}",
                                    kernel.where("pipeline"), "deeper pipelines are the tensor-core family's"))
    if kernel.tile is not None:
        variant = explicit_variant(kernel, hw)
    else:
        variant, _ = uniform_variant(kernel, hw)
    result = SimtPlan(variants=(variant,), assignment=(0,) * len(kernel.problems), stages=kernel.stages,
                      elem_bytes=kernel.dtype.nbytes)
    check_variants(kernel, result, hw)
    return result


def notes(kernel: Kernel, hw: Hardware) -> tuple[str, ...]:
    if kernel.tile is not None:
        return (f"tile {kernel.tile} from the schedule",)
    return (f"tile: {uniform_variant(kernel, hw)[1]}",)


def worklist(kernel: Kernel, plan: SimtPlan, hw: Hardware) -> WorkList:
    shapes = tuple((v.bm, v.bn) for v in plan.variants)
    return one_tile_per_block(problem_rows(kernel), shapes, plan.assignment, plan.threads, plan.smem_bytes)
