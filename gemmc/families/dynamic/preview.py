"""The dynamic family's schedule for one call's sizes (`KernelFamily.schedule_for`): the NumPy model of the device
scheduler (scheduler.py, which tests compare with the device code) run on the host over the persistent grid the
target table gives: its SMs x the plan's blocks per SM."""

from __future__ import annotations

import numpy as np

from gemmc.families.dynamic import scheduler
from gemmc.families.dynamic.plan import SORT_GROUPS, DynamicPlan
from gemmc.families.preview import CallSizes, GroupSchedule, SchedulePreview, by_shape, tile_numbering
from gemmc.ir.dynamic import Grouping
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import counted


def cap_reason(plan: DynamicPlan, cap: int, tlp: list[int], threshold: int, grid: int) -> str:
    """Why the launch's cap is the level it is (paper 000 Algorithm 1 over whole levels)."""
    levels = plan.levels
    waves = "one wave" if plan.tlp_waves == 1 else f"{plan.tlp_waves} waves"
    source = (f"the schedule's `tlp threshold {plan.tlp_threshold}`" if plan.tlp_threshold else
              f"{waves} of the grid: {grid} blocks x {plan.threads} threads")
    if tlp[cap] < threshold:
        why = (f"cap level 0 ({levels[0]}), the smallest: no level's TLP reaches the threshold {threshold} threads "
               f"({source}); level 0's is {tlp[0]}")
    else:
        top = cap == len(levels) - 1
        why = (f"cap level {cap} ({levels[cap]}), " + ("the top: its" if top else "the largest level whose")
               + f" TLP, {tlp[cap]} threads, reaches the threshold {threshold} ({source})"
               + ("" if top else f"; level {cap + 1}'s ({levels[cap + 1]}) is {tlp[cap + 1]}"))
    each = "problem" if plan.grouping is Grouping.LIST else "group"
    return why + f"; each {each} takes the variant whose tiles weigh least at a level <= the cap"


def schedule_for(kernel: Kernel, plan: DynamicPlan, sizes: CallSizes, hw: Hardware) -> SchedulePreview:
    tile_numbering(sizes, plan.grouping, plan.min_tile)
    m, n, k = sizes.arrays()
    grid = hw.sm_count * plan.blocks_per_sm
    threshold = plan.threshold(grid)
    sched = scheduler.schedule(plan, m, n, threshold, k)
    counts = scheduler.group_tiles(plan, sched.variant, m, n)
    bm, bn = scheduler.column(plan, "bm"), scheduler.column(plan, "bn")
    groups = tuple(GroupSchedule(int(m[g]), int(n[g]), int(k[g]),
                                 by_shape([(int(bm[v]), int(bn[v]), int(counts[g, v])) for v in range(len(bm))]))
                   for g in range(len(m)))
    total = sched.total
    whole = scheduler.whole_claims(total, grid) if plan.tail_split else total
    # the last round's tiles as their claims' halves run them (gemmc_dyn_half): a right half that runs is a split tile;
    # of the others, a tile whose left half runs its own variant has no half-width one, and the rest have their right
    # half past n. `tail_why` names only the reasons that hold.
    last = scheduler.tile_table(plan, sched, m, n, np.arange(whole, total))
    halves = scheduler.half_claims(plan, last, n)
    runs_right, own = halves[1::2, 3] >= 0, halves[0::2, 3] == last[:, 3]
    split = int(runs_right.sum())
    tail_why = ", or ".join(why for why, tiles in (("no half-width variant", own),
                                                   ("the right half past n", ~runs_right & ~own)) if tiles.any())
    tlp = [int(t) for t in sched.tlp]
    order = ("every group's whole-height rows of tiles, then every half-height last row, each kind by "
             "decreasing cost of a tile (weight x k)" if plan.parts > 1 else
             "group by group, by decreasing cost of a tile (weight x k)" if len(m) <= SORT_GROUPS else
             f"group by group in the call's order (more than {SORT_GROUPS} groups are not sorted)")
    form = "problems" if plan.grouping is Grouping.LIST else "groups"
    notes = (f"tiles numbered {order.replace('group', form[:-1])}; block b takes tile b, then the next unclaimed one "
             "from a counter",
             f"grid: {hw.sm_count} SMs x {counted(plan.blocks_per_sm, 'block')} per SM by the occupancy model on the "
             "target table (a call reads the device's SMs and the compiled kernel's occupancy)")
    return SchedulePreview(kernel.name, "dynamic", plan.grouping, groups, grid, total,
                           cap_reason(plan, sched.cap, tlp, threshold, grid), cap=sched.cap, threshold=threshold,
                           tlp=tuple(tlp), tail=total - whole, split=split,
                           tail_why=tail_why,
                           notes=notes)

