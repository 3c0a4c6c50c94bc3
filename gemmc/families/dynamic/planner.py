"""The dynamic family's planner: the size-class table compiled into the persistent kernel, the grid, and the
notes `gemmc inspect` shows (the size classes at the declared fixed sizes).

The ladder is the top of the SIMT family's load-balanced catalogue (families/simt/tiling.py, LOADBALANCED_LEVELS:
paper 000's Table 3 with paper 003's 64x128 and 128x128 on top): the largest tile, its halves and its quarter, which
are also its edge tiles, and for f32 the quarter's area as a quarter of the height or the width (`ladder`). Each
variant's cost weight comes from the SIMT cost model (tiling.step_instructions: FMAs, fragment loads and staging per k
step) times the measured cost of its micro-tile in the one-block-per-SM body (calibration.TILE_COST); a group's cost
counts its edge tiles at their own weight, so that a group of 20 rows takes 32-row tiles, one of 40 rows 64-row tiles
and one of 4000 rows 128 x 128 ones with a 64-row last row where that covers it, as the static planner's `uniform`
tiling with edges would.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from gemmc.errors import Diagnostic, GemmcError
from gemmc.families.dynamic import calibration as cal
from gemmc.families.dynamic import scheduler
from gemmc.families.dynamic.plan import SPLIT_GROUPS, DynamicPlan, SizeClass
from gemmc.families.simt import tiling
from gemmc.families.simt.plan import SimtPlan, SimtVariant, micro_tile
from gemmc.families.simt.planner import bound_blocks, check_variants, explicit_variant
from gemmc.ir.dynamic import Grouping
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, ProblemTable, TileTable, WorkList
from gemmc.ir.types import DType
from gemmc.model.tlp import occupancy

MAX_GROUPS = 4096  # the scheduler keeps 11 bytes per group in shared memory: 44 KiB at this bound (static: 48)
SIZE_TABLE_ROWS = 512  # inspect's size-class table runs up to this many rows per group


def _half(v: SimtVariant, bm: int, bn: int) -> SimtVariant | None:
    """The variant of a bm x bn tile with v's threads and k step (families/simt/planner.py's edge tiles), or None."""
    micro = micro_tile(bm, bn, v.threads) if bm and bn and v.slices == 1 else None
    return SimtVariant(bm, bn, v.bk, micro[0], micro[1], v.threads) if micro else None


def ladder(kernel: Kernel, hw: Hardware) -> list[tuple[int, str, SimtVariant]]:
    """(level, level name, variant) of every size class, level ascending, tall before wide.

    The top level is the load-balanced catalogue's largest tile within MAX_OUTPUTS per thread (paper 003's 128 x 128
    for f32); below it its halves (half the height, half the width) and its quarter (and for f32 the quarter's area
    as a quarter of the height or the width: calibration.THIN), with the same threads and k
    step: the static plan's `uniform` tiling with its edge tiles (families/simt/planner.py: with_edges), the set that
    the static planner picks for these batches. One body holds every variant, so the set is what ptxas allocates
    registers for: the whole paper 000 ladder (ten variants, 16 x 16 up) took 255 registers and spilled in the
    128 x 128 main loop, and the same kernel with the top tile and its halves alone ran 16% faster
    (calibration.BODY: the rungs below the top)."""
    if kernel.tile is not None:
        return [(0, "schedule", explicit_variant(kernel, hw))]
    limit = cal.MAX_OUTPUTS.value.get(kernel.dtype.widened, 32)  # outputs per thread of the top tile
    top = [lv for lv in tiling.LOADBALANCED_LEVELS
           if max(lv.tall.tm * lv.tall.tn, lv.wide.tm * lv.wide.tn) <= limit][-1]
    tops = tuple(dict.fromkeys((top.tall, top.wide)))
    halves = [h for v in tops for h in (_half(v, v.bm, v.bn // 2), _half(v, v.bm // 2, v.bn)) if h]
    quarters = [h for v in tops for h in (_half(v, v.bm // 2, v.bn // 2),) if h]
    if cal.THIN.value.get(kernel.dtype.widened):  # the quarter's area as a quarter of the height or of the width
        quarters += [h for v in tops for h in (_half(v, v.bm // 4, v.bn), _half(v, v.bm, v.bn // 4)) if h]
    names = {(lv.tall.bm, lv.tall.bn): lv.name for lv in tiling.LOADBALANCED_LEVELS}
    names.update({(lv.wide.bm, lv.wide.bn): lv.name for lv in tiling.LOADBALANCED_LEVELS})
    out: list[tuple[int, str, SimtVariant]] = []
    for rung in (quarters, halves, list(tops))[-1 - cal.BODY.value:]:
        rung = list(dict.fromkeys(v for v in rung if all(v != w for _, _, w in out)))
        if not rung:
            continue
        level = out[-1][0] + 1 if out else 0
        name = names.get((rung[0].bm, rung[0].bn), f"{rung[0].bm}x{rung[0].bn}")
        out += [(level, name, v) for v in rung]
    return out


def edges(variants: list[SimtVariant]) -> list[tuple[int, int, int]]:
    """Per variant: the variant its tiles take in a group's last row of tiles when that needs at most half the
    height, in the last column at most half the width, and in the corner needing both (its own index where the
    ladder has no such half): families/simt/planner.py's with_edges, looked up in the ladder."""
    def index(v: SimtVariant, bm: int, bn: int, own: int) -> int:
        half = _half(v, bm, bn)
        return variants.index(half) if half in variants else own

    out = []
    for i, v in enumerate(variants):
        h, w = index(v, v.bm // 2, v.bn, i), index(v, v.bm, v.bn // 2, i)
        both = index(v, v.bm // 2, v.bn // 2, -1)
        out.append((h, w, both if both >= 0 else h if h != i else w))
    return out


def weight(v: SimtVariant, kernel: Kernel, hw: Hardware) -> int:
    """Issue slots one tile of `v` takes per k: step_instructions (per thread and k step) x threads / bk."""
    fma_issue = hw.fp32_flops / hw.f64_flops if kernel.dtype is DType.F64 else 1.0
    slots = v.threads * tiling.step_instructions(v, kernel.dtype.widened.nbytes, fma_issue) / v.bk
    return round(slots * cal.TILE_COST.value.get(kernel.dtype.widened, {}).get(v.tm * v.tn, 1.0))


def parts(kernel: Kernel) -> int:
    """Parts of each group's tile numbering (calibration.PARTS): two for `grouped M` up to SPLIT_GROUPS groups, where
    one depth k makes every half-height tile shorter than every whole one; one for the list form and `grouped K`,
    whose depths differ by group (a half-height row of a deep group outweighs the whole tiles of a shallow one)."""
    dyn = kernel.dynamic
    assert dyn is not None
    assert cal.PARTS.value in (1, 2), "the kernel numbers a group's tiles whole, or whole rows then a half-height one"
    return int(cal.PARTS.value) if dyn.grouping is Grouping.M and dyn.max_groups <= SPLIT_GROUPS else 1


def plan(kernel: Kernel, hw: Hardware) -> DynamicPlan:
    assert kernel.dynamic is not None
    if kernel.stages not in (1, 2):
        raise GemmcError(Diagnostic("E202", f"the dynamic family has 1 or 2 pipeline stages, not {kernel.stages}",
                                    kernel.where("pipeline")))
    rungs = ladder(kernel, hw)
    tiles = SimtPlan(variants=tuple(v for _, _, v in rungs), assignment=(), stages=kernel.stages,
                     elem_bytes=kernel.dtype.widened.nbytes, method="dynamic")  # shared memory holds f32
    blocks, cap = bound_blocks(tiles, hw)
    if len(tiles.variants) > 1 and blocks:
        # One body holds every variant: ptxas needs more than the largest one alone. Under the SIMT estimates' bound
        # of 128 registers the f64 ladder spilled 2 KB a thread (sm_90, nvcc 13); with 255, 72 bytes.
        blocks, cap = 1, hw.max_regs_per_thread
    tiles = dataclasses.replace(tiles, min_blocks=blocks, reg_cap=cap)
    check_variants(kernel, tiles, hw)
    names = tuple(dict.fromkeys(name for _, name, _ in rungs))
    variants = [v for _, _, v in rungs]
    classes = tuple(SizeClass(v, level, name, weight(v, kernel, hw), e)
                    for (level, name, v), e in zip(rungs, edges(variants) if kernel.tile is None
                                                    else [(0, 0, 0)], strict=True))
    # the last round in column halves needs a variant with a half-width one: else each tile past the last whole
    # round would take two claims and run whole in the first
    halves = any(c.edges[1] != i for i, c in enumerate(classes))
    result = DynamicPlan(grouping=kernel.dynamic.grouping, tiles=tiles, classes=classes, levels=names,
                         max_groups=kernel.dynamic.max_groups, tlp_threshold=kernel.tlp_threshold or 0,
                         blocks_per_sm=1, parts=parts(kernel), tail_split=bool(cal.TAIL_SPLIT.value) and halves)
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
        used = scheduler.tile_table(plan, s, m, n)[:, 3]
        area = [c.variant.bm * c.variant.bn for c in plan.classes]
        taken = ", ".join(f"{np.count_nonzero(used == v)} of {name[v]}"
                          for v in sorted(set(used.tolist()), key=lambda v: -area[v]))
        out.append(f"at {dyn.max_rows} rows in {groups} equal groups: cap level {s.cap} ({plan.levels[s.cap]}), "
                   f"{s.total} tiles ({taken}) over a grid of {hw.sm_count * plan.blocks_per_sm} blocks")
    return tuple(out)
