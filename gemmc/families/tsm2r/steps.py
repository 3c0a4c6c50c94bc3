"""The TSM2R family's planning steps, each a pure pass under the name of the pipeline step it implements
(gemmc/passes/planning.py): the kernel's form and shape (t2 by paper 002 §3.1.8's threshold; t1, t3 and the k
slices by §3.1.9's Little's law), the ring of batches in shared memory, the thread-block cluster that splits k.
Between them the kernel carries a Tsm2rDraft; `finish_plan` makes it the Tsm2rPlan. `limits` is what the steps
guarantee of that plan, for the IR verifier.
"""

from __future__ import annotations

import dataclasses

from gemmc.errors import GemmcError
from gemmc.families.streaming import T2_MAX, one_gemm_diagnostics, own_parameters_diagnostic
from gemmc.families.tsm2r import planner, tuning
from gemmc.families.tsm2r.plan import Tsm2rDraft, Tsm2rPlan
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, planned


def check_family(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: a kernel that selected TSM2R. Guarantees: one f32 or f64 GEMM with no tile or thread count of the
    schedule's (the family chooses t1, t2, t3); GemmcError with every problem otherwise."""
    diags = one_gemm_diagnostics(kernel, "tsm2r") + own_parameters_diagnostic(kernel, "tsm2r")
    if diags:
        raise GemmcError(diags)
    return kernel


def choose_tiles(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: a checked TSM2R kernel. Guarantees: a draft with the kernel's form and shape (planner.py:
    tsm2r_shape): t2, the columns per pass, from the t2 threshold (paper 002 §3.1.8), the f64 tensor cores where
    they pay, and the column kernel's rows per lane, batch t3 and k slices, or the row kernel's rows per warp."""
    shape = planner.tsm2r_shape(kernel.problems[0], kernel.dtype, kernel.layout_a, hw)
    return dataclasses.replace(kernel, draft=shape)


def choose_staging(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: the draft's shape. Guarantees: its shared memory: the column kernel's ring of batches per warp, as
    deep as Little's law over the resident warps asks (paper 002 §3.1.9; planner.py: ring_stages) where that costs
    no resident block, and the blocks per SM that leaves; the row kernel's partial sums."""
    draft = kernel.draft_as(Tsm2rDraft, "choose_staging")
    return dataclasses.replace(kernel, draft=planner.tsm2r_staging(draft, kernel.dtype, kernel.layout_a, hw))


def split_k(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: the draft's staging. Guarantees, for the column kernel: the blocks of a thread-block cluster that
    split each row tile's k (1 where the target has no clusters) and the bandwidth the model predicts with them
    (planner.py: choose_cluster: the smallest within 1% of the best prediction, one wave where that comes within
    10%). The row kernel does not split k over blocks."""
    draft = kernel.draft_as(Tsm2rDraft, "split_k")
    if not draft.column:
        return kernel
    return dataclasses.replace(kernel, draft=planner.tsm2r_cluster(draft, kernel.problems[0], hw))


def finish_plan(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: a staged draft (the column kernel's with its cluster). Guarantees: `plan` is the Tsm2rPlan (the row
    kernel's with the bandwidth Little's law predicts), the draft is gone, and the notes say how it stands against
    the t2 threshold and what the first call will time."""
    plan = planner.tsm2r_plan(kernel.draft_as(Tsm2rDraft, "finish_plan"), kernel.problems[0], hw)
    return planned(kernel, plan, tuning.notes(kernel, plan, hw))


STEPS = (
    ("check_family", check_family),
    ("choose_tiles", choose_tiles),
    ("choose_staging", choose_staging),
    ("split_k", split_k),
    ("finish_plan", finish_plan),
)


def limits(kernel: Kernel, plan: Tsm2rPlan, hw: Hardware) -> list[str]:
    """What the steps guarantee of a Tsm2rPlan: 1 to T2_MAX columns per pass; the column kernel's COL_WARPS warps in
    k slices of `row_groups` warps, a ring of STAGES to MAX_STAGES batches and clusters of 1 to MAX_CLUSTER blocks;
    the row kernel's KSLICES warps, unclustered."""
    out = []
    if not 1 <= plan.t2 <= T2_MAX:
        out.append(f"t2 {plan.t2}: a pass computes 1 to {T2_MAX} columns")
    if planner.column_kernel(kernel, plan):
        if plan.t1 != planner.COL_WARPS * hw.warp_size or plan.kslices * plan.row_groups != planner.COL_WARPS:
            out.append(f"the column kernel's block is {planner.COL_WARPS} warps in k slices; this plan has "
                       f"{plan.t1} threads in {plan.kslices} slices of {plan.row_groups} warps")
        if not planner.STAGES <= plan.stages <= planner.MAX_STAGES:
            out.append(f"a ring of {plan.stages} batches; the column kernel takes {planner.STAGES} to "
                       f"{planner.MAX_STAGES}")
        if not 1 <= plan.cluster <= planner.MAX_CLUSTER:
            out.append(f"clusters of {plan.cluster} blocks; the column kernel takes 1 to {planner.MAX_CLUSTER}")
    elif plan.t1 != planner.KSLICES * hw.warp_size or plan.kslices != planner.KSLICES or plan.cluster != 1:
        out.append(f"the row kernel's block is {planner.KSLICES} warps, unclustered; this plan has {plan.t1} "
                   f"threads, {plan.kslices} k slices, clusters of {plan.cluster}")
    return out
