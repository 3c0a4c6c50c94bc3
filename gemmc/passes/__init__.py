"""The pass pipeline: one ordered list of pure passes `(Kernel, Hardware) -> Kernel`.

The selected family plans a kernel through the pipeline's named planning steps (planning.py: what each decides
and why it comes where it does); the passes around them are every family's. `gemmc inspect --after NAME` prints the
program after any of them, and `--after all` after each, from one run of the pipeline (`run_pipeline`'s `observe`).
`run_pipeline(verify=True)` checks the IR's invariants after every pass (verify.py).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from gemmc.errors import Diagnostic, GemmcError, InternalError
from gemmc.families.base import Pass
from gemmc.families.registry import family
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.program import Program
from gemmc.passes.check import check
from gemmc.passes.normalize import normalize
from gemmc.passes.planning import PLANNING
from gemmc.passes.resources import check_resources
from gemmc.passes.select import select_family
from gemmc.passes.verify import verify as verify_kernel


def build_worklist(kernel: Kernel, hw: Hardware) -> Kernel:
    """Requires: a finished plan. Guarantees: the launch's data, computed by the family from the plan: the problem
    table, the tiles in launch order and the blocks that run them (papers 000 and 003's work lists), or the grid of
    a family that maps blocks to outputs by arithmetic."""
    if kernel.plan is None:
        raise InternalError("build_worklist", "kernel has no plan")
    try:
        work = family(kernel.family).worklist(kernel, kernel.plan, hw)
    except GemmcError as err:  # a limit on the work list (grammar/limits.py): at the statement giving the problems
        raise err.at(kernel.problems_span) from None
    return dataclasses.replace(kernel, work=work)


PIPELINE: tuple[tuple[str, Pass], ...] = (
    ("check", check),  # first: every later pass assumes the schedule's values go together
    ("normalize", normalize),  # before selection: the family depends on the (defaulted) precision
    ("select_family", select_family),
    *PLANNING,  # needs the family: its planning steps, in the order of planning.py
    ("build_worklist", build_worklist),  # needs the finished plan's variants
    ("check_resources", check_resources),  # last: checks the final plan against the target
)

PASS_NAMES = tuple(name for name, _ in PIPELINE)

Observer = Callable[[str, Program], None]


def run_pipeline(program: Program, *, source: str | None = None, stop_after: str | None = None,
                 timings: dict[str, float] | None = None, observe: Observer | None = None,
                 verify: bool = False) -> Program:
    """Run every pass (or those up to `stop_after`) on every kernel, pass by pass. User errors from all kernels are
    collected (a kernel stops at its first failing pass) and raised together, kernel by kernel, rendered against
    the schedule's file. `timings`, when given, receives each kernel's planning time in seconds (the driver
    measures; the passes stay pure). `observe(name, program)`, when given, sees the program after each pass that
    every kernel got through, in order. `verify` checks every kernel's invariants after every pass (verify.py) and
    raises InternalError naming the pass after which one broke."""
    if stop_after is not None and stop_after not in PASS_NAMES:
        raise ValueError(f"no pass named {stop_after!r}; the passes are: {', '.join(PASS_NAMES)}")
    kernels = list(program.kernels)
    diags: list[tuple[Diagnostic, ...]] = [() for _ in kernels]
    failed = [False] * len(kernels)
    seconds = [0.0] * len(kernels)
    for index, (name, fn) in enumerate(PIPELINE):
        for i, kernel in enumerate(kernels):
            if failed[i]:
                continue
            start = time.perf_counter()
            try:
                kernels[i] = fn(kernel, program.target)
            except GemmcError as err:
                diags[i], failed[i] = err.diagnostics, True
            seconds[i] += time.perf_counter() - start
            if verify and not failed[i]:
                verify_kernel(kernels[i], program.target, PASS_NAMES[:index + 1])
        if observe is not None and not any(failed):
            observe(name, dataclasses.replace(program, kernels=tuple(kernels)))
        if name == stop_after:
            break
    if timings is not None:
        timings.update((kernel.name, s) for kernel, s in zip(kernels, seconds, strict=True))
    if any(failed):
        raise GemmcError([d for found in diags for d in found], filename=program.filename, source=source)
    return dataclasses.replace(program, kernels=tuple(kernels))
