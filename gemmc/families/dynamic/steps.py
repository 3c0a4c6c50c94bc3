"""The dynamic family's planning steps, each a pure pass under the name of the pipeline step it implements
(gemmc/passes/planning.py). The sizes arrive at run time, so there is no per-problem decision to stage: one
`finish_plan` compiles the ladder of size classes, the register bound and the persistent grid's occupancy; `limits`
is what it guarantees of the plan, for the IR verifier."""

from __future__ import annotations

from gemmc.families.dynamic import planner
from gemmc.families.dynamic.plan import DynamicPlan
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, planned


def finish_plan(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: a checked kernel with a `grouped` declaration that selected the dynamic family. Guarantees: `plan`
    is the DynamicPlan (the ladder, one size class per variant, the scheduler's bounds, blocks per SM) and the notes
    show the size classes at the declared sizes."""
    plan = planner.plan(kernel, hw)
    return planned(kernel, plan, planner.notes(kernel, plan, hw))


STEPS = (("finish_plan", finish_plan),)


def limits(kernel: Kernel, plan: DynamicPlan, hw: Hardware) -> list[str]:
    """What finish_plan guarantees: one size class per variant of the ladder, levels ascending; the scheduler's
    groups within its shared-memory bound and the declaration's; a persistent grid of at least one block per SM."""
    out = []
    if tuple(c.variant for c in plan.classes) != plan.tiles.variants:
        out.append(f"{len(plan.classes)} size classes for {len(plan.tiles.variants)} variants (one each, same order)")
    levels = [c.level for c in plan.classes]
    if levels != sorted(levels) or (levels and levels[-1] >= len(plan.levels)):
        out.append(f"size-class levels {levels} are not ascending within the {len(plan.levels)} level names")
    dyn = kernel.dynamic
    if dyn is None or plan.grouping is not dyn.grouping or plan.max_groups != dyn.max_groups:
        out.append("the plan's grouping and group bound are not the kernel's `grouped` declaration")
    if plan.max_groups > planner.MAX_GROUPS:
        out.append(f"up to {plan.max_groups} groups; the scheduler keeps at most {planner.MAX_GROUPS} in shared memory")
    if plan.blocks_per_sm < 1:
        out.append(f"{plan.blocks_per_sm} blocks per SM; the persistent grid needs at least one")
    return out
