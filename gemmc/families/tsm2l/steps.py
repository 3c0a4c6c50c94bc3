"""The TSM2L family's planning steps, each a pure pass under the name of the pipeline step it implements
(gemmc/passes/planning.py): the rows each thread keeps in registers (paper 002 §3.2's tcf), then the block and its
shared memory. Between them the kernel carries a Tsm2lDraft; `finish_plan` makes it the Tsm2lPlan. `limits` is what
the steps guarantee of that plan, for the IR verifier.
"""

from __future__ import annotations

import dataclasses

from gemmc.errors import Diagnostic, GemmcError
from gemmc.families.streaming import T2_MAX, one_gemm_diagnostics, own_parameters_diagnostic
from gemmc.families.tsm2l import planner
from gemmc.families.tsm2l.plan import Tsm2lDraft, Tsm2lPlan
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, planned


def check_family(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: a kernel that selected TSM2L. Guarantees: one GEMM whose rows of A fit a thread's
    registers (k <= TSM2L_MAX_K) with at most T2_MAX columns, and no tile or thread count of the schedule's;
    GemmcError with every problem otherwise."""
    diags = one_gemm_diagnostics(kernel, "tsm2l")
    p = kernel.problems[0]
    if p.k > planner.TSM2L_MAX_K:
        diags.append(Diagnostic("E202", f"TSM2L keeps a row of A in registers: k = {p.k} exceeds "
                                f"{planner.TSM2L_MAX_K}", kernel.where("algorithm"), "use algorithm tsm2r or simt"))
    if p.n > T2_MAX:
        diags.append(Diagnostic("E202", f"TSM2L computes n <= {T2_MAX} columns, not {p.n}",
                                kernel.where("algorithm"), "use algorithm simt"))
    diags += own_parameters_diagnostic(kernel, "tsm2l")
    if diags:
        raise GemmcError(diags)
    return kernel


def choose_tiles(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: a checked TSM2L kernel. Guarantees: a draft with tcf, the rows of A each thread keeps in registers
    (paper 002 §3.2: about WAVES waves of resident threads, then more rows per thread; planner.py: tsm2l_rows)."""
    return dataclasses.replace(kernel, draft=planner.tsm2l_rows(kernel.problems[0], kernel.dtype, hw))


def choose_staging(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: the draft's tcf. Guarantees: the block and its shared memory: B, and the rows through which
    row-major A and C pass, in blocks of T1 threads halved until they fit (planner.py: tsm2l_staging)."""
    draft = kernel.draft_as(Tsm2lDraft, "choose_staging")
    staged = planner.tsm2l_staging(draft, kernel.problems[0], kernel.dtype, hw, kernel.layout_a, kernel.layout_c,
                                   c_dtype=kernel.c_dtype)
    return dataclasses.replace(kernel, draft=staged)


def finish_plan(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: a staged draft. Guarantees: `plan` is the Tsm2lPlan with the bandwidth Little's law predicts, the
    draft is gone, and the notes say how n stands against the t2 threshold."""
    plan = planner.tsm2l_plan(kernel.draft_as(Tsm2lDraft, "finish_plan"), kernel.problems[0], kernel.dtype, hw)
    return planned(kernel, plan, planner.notes(kernel, plan, hw))


STEPS = (
    ("check_family", check_family),
    ("choose_tiles", choose_tiles),
    ("choose_staging", choose_staging),
    ("finish_plan", finish_plan),
)


def limits(kernel: Kernel, plan: Tsm2lPlan, hw: Hardware) -> list[str]:
    """What the steps guarantee of a Tsm2lPlan: tcf one of TCF_CHOICES, blocks of whole warps up to T1 threads."""
    out = []
    if plan.tcf not in planner.TCF_CHOICES:
        out.append(f"tcf {plan.tcf} is not one of {planner.TCF_CHOICES}")
    if plan.t1 % hw.warp_size or not hw.warp_size <= plan.t1 <= planner.T1:
        out.append(f"blocks of {plan.t1} threads; TSM2L's are whole warps, {hw.warp_size} to {planner.T1}")
    return out
