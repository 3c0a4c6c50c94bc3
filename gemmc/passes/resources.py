"""The `check_resources` pass: the final plan against the target's per-block limits.

Requires: a kernel with a plan and a work list. Guarantees: the block's threads and shared memory fit the
target; the planner's register estimate fits the register file (the runtime re-checks with the compiled
kernel's real count). Reported at the schedule line that chose the tile or thread count.
"""

from __future__ import annotations

from gemmc.errors import Diagnostic, GemmcError, InternalError
from gemmc.grammar import limits
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel


def check_resources(kernel: Kernel, hw: Hardware) -> Kernel:
    if kernel.plan is None or kernel.work is None:
        raise InternalError("check_resources", "kernel has no plan or work list")
    plan, diags = kernel.plan, []
    where = kernel.where("tile") if kernel.tile else kernel.span
    if plan.threads > hw.max_threads_per_block:
        diags.append(Diagnostic("E301", f"the block needs {plan.threads} threads; {hw.arch} allows "
                                f"{hw.max_threads_per_block}", kernel.where("threads")))
    if plan.smem_bytes > hw.smem_per_block:
        diags.append(Diagnostic("E300", f"the block needs {plan.smem_bytes} bytes of shared memory; {hw.arch} "
                                f"allows {hw.smem_per_block}", where, "use a smaller tile or fewer stages"))
    if plan.regs_estimate > hw.max_regs_per_thread:
        diags.append(Diagnostic("E302", f"about {plan.regs_estimate} registers per thread are needed; "
                                f"{hw.arch} allows {hw.max_regs_per_thread}", where))
    too_big = limits.grid_problem(kernel.work.grid, kernel.work.block, hw)
    if too_big:
        diags.append(Diagnostic("E304", too_big, kernel.problems_span,
                                "use fewer or smaller problems"))
    if kernel.work.blocks < 1:
        raise InternalError("check_resources", "empty work list")
    if diags:
        raise GemmcError(diags)
    return kernel
