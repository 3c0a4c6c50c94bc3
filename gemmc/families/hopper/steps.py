"""The hopper family's planning steps, each a pure pass under the name of the pipeline step it implements
(gemmc/passes/planning.py). Its plan has few decisions and they depend on each other (tile N, then the cluster
that multicasts B, then the stages that fit), so one `finish_plan` makes them; `limits` is what it guarantees of
the plan, for the IR verifier."""

from __future__ import annotations

from gemmc.families.hopper import planner
from gemmc.families.hopper.plan import BK, BK_F32, BM, HopperPlan
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, planned
from gemmc.ir.types import Layout


def finish_plan(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: a checked kernel of half storage that selected the hopper family. Guarantees: `plan` is the
    HopperPlan (tile N by the waves model, the cluster, the deepest ring that fits) and the notes say why."""
    plan = planner.plan(kernel, hw)
    return planned(kernel, plan, planner.notes(kernel, plan, hw))


STEPS = (("finish_plan", finish_plan),)


def limits(kernel: Kernel, plan: HopperPlan, hw: Hardware) -> list[str]:
    """What finish_plan guarantees: 128 x N x 64 tiles (128 x N x 32 for tf32 products) with N one the template
    builds (N <= 128 for f32 storage), a ring of at least 2 stages, clusters of 1 or 2 (1 for tf32 products), TMA
    stores of C only where C is row-major (TMA's boxes are rows of C; never for tf32 products) with C's element
    size."""
    out = []
    bk, sizes = (BK_F32, planner.TILE_N_F32) if plan.parts else (BK, planner.TILE_N_F32 if plan.split else
                                                                  planner.TILE_N)
    if (plan.bm, plan.bk) != (BM, bk) or plan.bn not in sizes:
        out.append(f"tile {plan.bm} x {plan.bn} x {plan.bk}; the template builds {BM} x N x {bk}, N in {sizes}")
    if plan.parts and plan.cluster != 1:
        out.append(f"clusters of {plan.cluster}; tf32 products run without")
    if plan.stages < 2:
        out.append(f"{plan.stages} pipeline stages; the TMA ring needs 2 or more")
    if plan.cluster not in (1, 2):
        out.append(f"clusters of {plan.cluster}; the kernel multicasts B to pairs")
    if plan.tma_store and kernel.layout_c is not Layout.ROW:
        out.append("TMA stores of a column-major C; the epilogue's boxes are rows of a row-major C")
    if plan.ksplit not in planner.KSPLITS:
        out.append(f"split K over {plan.ksplit} blocks; the template builds {planner.KSPLITS}")
    if plan.ksplit > 1 and (plan.cluster != 1 or plan.tma_store or plan.parts or plan.split):
        out.append("split K with a multicast pair, TMA stores of C or f32 storage; the k-slices' cluster stores C from "
                   "its sums, for half storage")
    if plan.c_bytes != kernel.c_dtype.nbytes:
        out.append(f"C elements of {plan.c_bytes} bytes; C is {kernel.c_dtype.value}")
    return out
