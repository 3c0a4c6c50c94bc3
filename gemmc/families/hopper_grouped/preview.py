"""The hopper_grouped family's schedule for one call's sizes (`KernelFamily.schedule_for`): the templates' arithmetic
in Python. `grouped M` (hopper_grouped.cu.j2: gemmc_grp_schedule, the units and the last round's split): each group's
128-row tile rows and its 64-row one, paired on a cluster's blocks, by n-tiles; `grouped K` (hopper_grouped_k.cu.j2):
M x N tiles a group whatever its depth; `grouped list` (hopper_grouped_list.cu.j2: gemmc_list_tiles) each problem's
tile rows by its n-tiles. No GPU test reads the device's schedule back; tests compare this with a plain model of the
tile rows and with the rule the launcher applies to the list form's lines (runtime/grouped_list.py: tma_misfits)."""

from __future__ import annotations

import numpy as np

from gemmc.families.hopper_grouped.plan import HopperGroupedPlan
from gemmc.families.preview import CallSizes, GroupSchedule, SchedulePreview, by_shape, tile_numbering
from gemmc.families.tma_loop import TMA_ALIGN
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel

ARITHMETIC = ("this preview is the kernel template's arithmetic run on the host (families/hopper_grouped/preview.py), "
              "not a read-back of the device")


def tile_rows(m: np.ndarray, bm: int, small_bm: int) -> tuple[np.ndarray, np.ndarray]:
    """Per group of m rows: its bm-row tile rows (the last one partial where more than small_bm rows are left) and its
    small_bm-row one (0 or 1: where small_bm rows or fewer are left)."""
    rest = m % bm
    return m // bm + (rest > small_bm), ((rest > 0) & (rest <= small_bm)).astype(np.int64)


def whole_units(units: int, grid: int) -> int:
    """The units before a last round that runs in column halves (the template's `whole`): all but the units past the
    grid's last whole round where those are at most half the blocks, else all."""
    rest = units % grid if grid > 0 else 0
    return units - rest if rest > 0 and 2 * rest <= grid else units


def unit_rows(u: np.ndarray, rows: int, tiles_n: int, band: int) -> np.ndarray:
    """grouped M without clusters: the tile row of each unit u (gemmc_grp_tile: bands of `band` rows, walked
    rows-fastest before the next n-tile; one row a band: each row's n-tiles in turn)."""
    per_band = band * tiles_n
    first = u // per_band * band
    return first + (u - first * tiles_n) % np.minimum(rows - first, band)


def is_small_row(i: np.ndarray, big_rows: np.ndarray, small: np.ndarray) -> np.ndarray:
    """Whether tile row i (in group order: each group's big rows, then its small one) is a small one
    (gemmc_grp_row)."""
    ends = np.cumsum(big_rows + small)
    g = np.searchsorted(ends, i, side="right")
    before = np.where(g > 0, ends[np.maximum(g - 1, 0)], 0)
    return i - before >= big_rows[g]


def misfit(plan: HopperGroupedPlan, m: int, n: int, k: int) -> str:
    """grouped list: why a call runs this problem on CUDA cores instead (its dense A's or B's lines are not 16-byte
    multiples, so TMA cannot read them in place), "" where it runs here."""
    if min(m, n, k) <= 0:
        return ""
    lines = [("A", k), ("B", k if plan.b_kmajor else n)]
    bad = [f"{name}'s lines of {ld} elements" for name, ld in lines if (ld * plan.elem) % TMA_ALIGN]
    return f"CUDA cores (the dynamic family): TMA cannot read {' and '.join(bad)}" if bad else ""


def schedule_for(kernel: Kernel, plan: HopperGroupedPlan, sizes: CallSizes, hw: Hardware) -> SchedulePreview:
    dyn = kernel.dynamic
    assert dyn is not None
    if plan.grouped_list:  # the list's calls check the bound the dynamic family's do (grouped M's: only `rows`)
        tile_numbering(sizes, dyn.grouping, min(plan.bm, plan.bn))
    m, n, k = sizes.arrays()
    grid = plan.grid(hw.sm_count)
    bm, small, bn = plan.bm, plan.small_bm, plan.bn
    tiles_n = -(-n // bn)
    big_rows, small_rows = tile_rows(m, bm, small)
    split = 0  # the last round's units in column halves
    classes = f"a {'problem' if plan.grouped_list else 'group'}'s rows in {bm}-row tiles, its last {small} rows or " \
              f"fewer in a {small}-row tile; tile N {bn} is the plan's"
    if plan.grouped_k:
        per_group = -(-int(m[0]) // bm) * int(tiles_n[0]) if len(m) else 0
        groups = tuple(GroupSchedule(int(a), int(b), int(c), by_shape([(bm, bn, per_group)]))
                       for a, b, c in zip(m, n, k, strict=True))
        units, whole = len(m) * per_group, len(m) * per_group
        why = (f"every group's {dyn.m} x {dyn.n} output in {bm} x {bn} tiles whatever its depth (a group of depth 0 "
               "stores beta * C)")
        walk = ("tiles numbered group by group, the deepest first (ties in group order); block b takes tile b, then "
                "the next unclaimed one from a counter")
    elif plan.grouped_list:
        groups = ()
        units = 0
        for g in range(len(m)):
            where = misfit(plan, int(m[g]), int(n[g]), int(k[g]))
            work = int(m[g]) > 0 and int(n[g]) > 0
            runs = by_shape([(bm, bn, int(big_rows[g] * tiles_n[g])), (small, bn, int(small_rows[g] * tiles_n[g]))]) \
                if work and not where else ()
            groups += (GroupSchedule(int(m[g]), int(n[g]), int(k[g]), runs, where),)
            units += sum(c for _, c in runs)
        whole = units
        why = classes + " (fixed when it was compiled: the sizes arrive with each call)"
        walk = ("tiles numbered problem by problem in the call's order; block b takes tile b, then the next unclaimed "
                "one from a counter; a problem of k 0 stores beta * C, one of m or n 0 has no tiles")
    else:
        groups = tuple(GroupSchedule(int(m[g]), int(n[g]), int(k[g]),
                                     by_shape([(bm, bn, int(big_rows[g] * tiles_n[g])),
                                               (small, bn, int(small_rows[g] * tiles_n[g]))]))
                       for g in range(len(m)))
        rows = int(big_rows.sum() + small_rows.sum())
        units = -(-rows // plan.cluster) * int(tiles_n[0]) if len(m) else 0
        whole = whole_units(units, grid) if plan.tail_split else units
        if whole < units:  # a 64-row unit of the last round runs whole, its second half's step empty
            tail = unit_rows(np.arange(whole, units), rows, int(tiles_n[0]), plan.band)
            split = int((~is_small_row(tail, big_rows, small_rows)).sum())
        why = classes
        pairs = f", paired on a cluster's {plan.cluster} blocks," if plan.cluster > 1 else ""
        taker = "cluster" if plan.cluster > 1 else "block"
        raster = (f"in bands of {plan.band} unit rows walked rows-fastest before the next n-tile" if plan.band > 1
                  else "by n-tiles, n fastest")
        walk = (f"units: the tile rows in group order (each group's {bm}-row rows, then its {small}-row one){pairs} "
                f"{raster}; {taker} c takes units c, c + {grid // plan.cluster}, ... (a static stride)")
    notes: tuple[str, ...] = (walk, f"grid: one block per SM ({hw.sm_count} SMs)"
             + (f", in whole clusters of {plan.cluster}" if plan.cluster > 1 else ""), ARITHMETIC)
    if any(g.elsewhere for g in groups):
        notes += ("problems whose dense lines TMA cannot read run first in a launch of the dynamic family; the "
                  "preview assumes 16-byte aligned arrays (a fresh allocation's)",)
    return SchedulePreview(kernel.name, "hopper_grouped", dyn.grouping, groups, grid, units, why,
                           cluster=plan.cluster, tail=units - whole, split=split,
                           tail_why=f"{small}-row units: their two warpgroups take half the columns each",
                           notes=notes)

