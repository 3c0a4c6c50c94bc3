"""The hopper_grouped family's planning steps (gemmc/passes/planning.py): one `finish_plan`, as the hopper and dynamic
families have (the tile N, then the stages that fit beside the scheduler), and `limits`, what it guarantees."""

from __future__ import annotations

from gemmc.families.hopper_grouped import planner
from gemmc.families.hopper_grouped.plan import HopperGroupedPlan
from gemmc.ir.dynamic import Grouping
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, planned


def finish_plan(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: a checked `grouped M` or `grouped K` kernel of half storage that selected the hopper_grouped family.
    Guarantees: `plan` is the HopperGroupedPlan (tile N by the waves model, the deepest ring that fits) and the notes
    say why."""
    plan = planner.plan(kernel, hw)
    return planned(kernel, plan, planner.notes(kernel, plan, hw))


STEPS = (("finish_plan", finish_plan),)


def limits(kernel: Kernel, plan: HopperGroupedPlan, hw: Hardware) -> list[str]:
    """What finish_plan guarantees: 128 x N x 64 tiles with N in TILE_N, at least 2 stages, the declaration's group
    bound within the scheduler's, no cluster with grouped K or a split last round, raster bands of 1 or more unit rows
    (grouped M alone walks them), and the block's shared memory within the target's."""
    out = []
    if (plan.bm, plan.bk) != (128, 64) or plan.bn not in planner.TILE_N:
        out.append(f"tile {plan.bm} x {plan.bn} x {plan.bk}; the template builds 128 x N x 64, N in {planner.TILE_N}")
    if plan.cluster not in (1, 2):
        out.append(f"clusters of {plan.cluster}; a unit is one or two tile rows")
    if plan.stages < 2:
        out.append(f"{plan.stages} pipeline stages; the TMA ring needs 2 or more")
    dyn = kernel.dynamic
    if dyn is None or plan.max_groups != dyn.max_groups or plan.max_groups > planner.MAX_GROUPS:
        out.append(f"up to {plan.max_groups} groups: not the declaration's, or past {planner.MAX_GROUPS}")
    if dyn is not None and plan.grouped_k != (dyn.grouping is Grouping.K):
        out.append(f"a plan of grouped {'K' if plan.grouped_k else 'M'} for {dyn}")
    if plan.grouped_k and plan.cluster != 1:
        out.append("grouped K with clusters; its kernel has none")
    if dyn is not None and plan.grouped_list != (dyn.grouping is Grouping.LIST):
        out.append(f"a plan of {'grouped list' if plan.grouped_list else 'grouped M or K'} for {dyn}")
    if plan.grouped_list and (plan.cluster != 1 or plan.tail_split):
        out.append("grouped list with clusters or a tail split; its kernel has neither")
    if plan.band < 1 or (plan.band > 1 and (plan.grouped_k or plan.grouped_list)):
        out.append(f"raster bands of {plan.band} unit rows; grouped M walks bands of 1 or more, the others none")
    if plan.tail_split and plan.cluster != 1:
        out.append("a last round split in column halves with clusters; a cluster's blocks share a unit's rows")
    if plan.c_bytes != kernel.c_dtype.nbytes:
        out.append(f"C elements of {plan.c_bytes} bytes; C is {kernel.c_dtype.value}")
    return out
