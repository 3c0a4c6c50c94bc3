"""The dynamic family's planner: the size-class table compiled into the persistent kernel, the grid, and the
notes `gemmc inspect` shows (the size classes at the declared fixed sizes).

The ladder is paper 000's (Table 3: 16x16 to 64x64, 128 threads up to 32x32 and 256 above) with paper 003's 64x128
and 128x128 on top, in tall and wide orientations: the SIMT family's load-balanced catalogue (families/simt/
tiling.py, LOADBALANCED_LEVELS), whose K steps were measured there. Each variant's cost weight comes from the SIMT
cost model (tiling.step_instructions: FMAs, fragment loads and staging per k step), so that a group of 10 rows takes
a 16-row tile and a group of 4000 rows the 128 x 128 one, as the static planner would.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from gemmc.errors import Diagnostic, GemmcError
from gemmc.families.dynamic import calibration as cal
from gemmc.families.dynamic import scheduler
from gemmc.families.dynamic.plan import DynamicPlan, SizeClass
from gemmc.families.simt import tiling
from gemmc.families.simt.plan import SimtPlan, SimtVariant
from gemmc.families.simt.planner import bound_blocks, check_variants, explicit_variant
from gemmc.ir.dynamic import Grouping
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, ProblemTable, TileTable, WorkList
from gemmc.ir.types import DType
from gemmc.model.tlp import occupancy

MAX_GROUPS = 4096  # the scheduler keeps 9 bytes per group in shared memory: 36 KiB at this bound
SIZE_TABLE_ROWS = 512  # inspect's size-class table runs up to this many rows per group


def ladder(kernel: Kernel, hw: Hardware) -> list[tuple[int, str, SimtVariant]]:
    """(level, level name, variant) of every size class, level ascending, tall before wide. HIP keeps the levels of
    256-thread tiles only: without named barriers every variant of a launch must use the block's threads."""
    if kernel.tile is not None:
        return [(0, "schedule", explicit_variant(kernel, hw))]
    limit = cal.MAX_OUTPUTS.value.get(kernel.dtype, 32)  # outputs per thread of the top tile
    levels = [lv for lv in tiling.LOADBALANCED_LEVELS
              if max(lv.tall.tm * lv.tall.tn, lv.wide.tm * lv.wide.tn) <= limit]
    if hw.vendor == "hip":
        widest = max(lv.tall.threads for lv in levels)
        levels = [lv for lv in levels if lv.tall.threads == lv.wide.threads == widest]
    out: list[tuple[int, str, SimtVariant]] = []
    for i, lv in enumerate(levels):
        for v in dict.fromkeys((lv.tall, lv.wide)):
            out.append((i, lv.name, v))
    return out


def weight(v: SimtVariant, kernel: Kernel, hw: Hardware) -> int:
    """Issue slots one tile of `v` takes per k: step_instructions (per thread and k step) x threads / bk."""
    fma_issue = hw.fp32_flops / hw.f64_flops if kernel.dtype is DType.F64 else 1.0
    return round(v.threads * tiling.step_instructions(v, kernel.dtype.nbytes, fma_issue) / v.bk)


def plan(kernel: Kernel, hw: Hardware) -> DynamicPlan:
    assert kernel.dynamic is not None
    if kernel.stages not in (1, 2):
        raise GemmcError(Diagnostic("E202", f"the dynamic family has 1 or 2 pipeline stages, not {kernel.stages}",
                                    kernel.where("pipeline")))
    rungs = ladder(kernel, hw)
    tiles = SimtPlan(variants=tuple(v for _, _, v in rungs), assignment=(), stages=kernel.stages,
                     elem_bytes=kernel.dtype.nbytes, method="dynamic")
    blocks, cap = bound_blocks(tiles, hw)
    if len(tiles.variants) > 1 and blocks:
        # One body holds every variant: ptxas needs more than the largest one alone. Under the SIMT estimates' bound
        # of 128 registers the f64 ladder spilled 2 KB a thread (sm_90, nvcc 13); with 255, 72 bytes.
        blocks, cap = 1, hw.max_regs_per_thread
    tiles = dataclasses.replace(tiles, min_blocks=blocks, reg_cap=cap)
    check_variants(kernel, tiles, hw)
    names = tuple(dict.fromkeys(name for _, name, _ in rungs))
    classes = tuple(SizeClass(v, level, name, weight(v, kernel, hw)) for level, name, v in rungs)
    result = DynamicPlan(grouping=kernel.dynamic.grouping, tiles=tiles, classes=classes, levels=names,
                         max_groups=kernel.dynamic.max_groups, tlp_threshold=kernel.tlp_threshold or 0,
                         blocks_per_sm=1)
    occ = occupancy(hw, result.threads, result.regs_estimate, result.smem_bytes)
    return dataclasses.replace(result, blocks_per_sm=max(occ.blocks_per_sm, 1))


def worklist(kernel: Kernel, plan: DynamicPlan, hw: Hardware) -> WorkList:
    """No tables: the kernel derives its tiles from the sizes. The grid is the persistent one on the target."""
    return WorkList(problems=ProblemTable(), tiles=TileTable(), block_offsets=(),
                    grid=(hw.sm_count * plan.blocks_per_sm, 1, 1), block=plan.threads, smem_bytes=plan.tile_smem)


def notes(kernel: Kernel, plan: DynamicPlan, hw: Hardware) -> tuple[str, ...]:
    dyn = kernel.dynamic
    assert dyn is not None
    out = [f"batch sized at run time: {dyn}; one persistent launch whatever the sizes, the tiles derived on the "
           "device (no host sync, no re-planning, no compile per size)"]
    threshold = plan.threshold(hw.sm_count * plan.blocks_per_sm)
    name = [f"{c.variant.bm}x{c.variant.bn}" for c in plan.classes]
    if dyn.grouping is Grouping.M:
        runs = scheduler.size_table(plan, dyn.n, SIZE_TABLE_ROWS)
        out.append(f"size classes at n {dyn.n} (top cap): " + ", ".join(
            f"rows {a}-{b} -> {name[v]}" if b < SIZE_TABLE_ROWS else f"rows {a}+ -> {name[v]}" for a, b, v in runs))
    elif dyn.grouping is Grouping.K:
        choice, _ = scheduler.choices(plan, np.array([dyn.m]), np.array([dyn.n]))
        out.append(f"size class of every group's {dyn.m} x {dyn.n} output (top cap): {name[int(choice[-1, 0])]}")
    else:
        out.append("size classes per problem by its m x n, at the launch's cap")
    if dyn.rows_declared and dyn.grouping is not Grouping.LIST:
        groups = dyn.max_groups
        starts = scheduler.clamped_starts(np.arange(1, groups + 1) * (dyn.max_rows // groups), dyn.max_rows)
        m, n, _ = scheduler.group_sizes(plan, starts, dyn.m, dyn.n, dyn.k)
        s = scheduler.schedule(plan, m, n, threshold)
        out.append(f"at {dyn.max_rows} rows in {groups} equal groups: cap level {s.cap} ({plan.levels[s.cap]}), "
                   f"{s.total} tiles over a grid of {hw.sm_count * plan.blocks_per_sm} blocks")
    return tuple(out)
