"""The pass pipeline: one ordered list of pure passes `(Kernel, Hardware) -> Kernel`.

`gemmc inspect --after NAME` prints the program after any of them.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from gemmc.errors import Diagnostic, GemmcError, InternalError
from gemmc.families.registry import family
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, Program
from gemmc.passes.check import check
from gemmc.passes.normalize import normalize
from gemmc.passes.resources import check_resources
from gemmc.passes.select import select_family
from gemmc.stats import count

Pass = Callable[[Kernel, Hardware], Kernel]


def plan_family(kernel: Kernel, hw: Hardware) -> Kernel:
    """Run the chosen family's planner (tile variants, split terms, TSM2 parameters, ...)."""
    fam = family(kernel.family)
    plan = fam.plan(kernel, hw)
    return dataclasses.replace(kernel, plan=plan, notes=(*kernel.notes, *fam.notes(kernel, plan, hw)))


def build_worklist(kernel: Kernel, hw: Hardware) -> Kernel:
    """Turn the plan into the launch's data: problem table, tiles, blocks."""
    if kernel.plan is None:
        raise InternalError("build_worklist", "kernel has no plan")
    return dataclasses.replace(kernel, work=family(kernel.family).worklist(kernel, kernel.plan, hw))


PIPELINE: tuple[tuple[str, Pass], ...] = (
    ("check", check),  # first: every later pass assumes the schedule's values go together
    ("normalize", normalize),  # before selection: the family depends on the (defaulted) precision
    ("select_family", select_family),
    ("plan_family", plan_family),  # needs the family
    ("build_worklist", build_worklist),  # needs the plan's variants
    ("check_resources", check_resources),  # last: checks the final plan against the target
)

PASS_NAMES = tuple(name for name, _ in PIPELINE)


def run_pipeline(program: Program, *, source: str | None = None, stop_after: str | None = None,
                 timings: dict[str, float] | None = None) -> Program:
    """Run every pass (or those up to `stop_after`) on every kernel. User errors from all kernels are
    collected and raised together, rendered against the schedule's file. `timings`, when given, receives each
    kernel's planning time in seconds (the driver measures; the passes stay pure)."""
    kernels: list[Kernel] = []
    diags: list[Diagnostic] = []
    for kernel in program.kernels:
        count("plans")
        start = time.perf_counter()
        try:
            for name, fn in PIPELINE:
                kernel = fn(kernel, program.target)
                if name == stop_after:
                    break
        except GemmcError as err:
            diags.extend(err.diagnostics)
        if timings is not None:
            timings[kernel.name] = time.perf_counter() - start
        kernels.append(kernel)
    if diags:
        raise GemmcError(diags, filename=program.filename, source=source)
    return dataclasses.replace(program, kernels=tuple(kernels))
