"""A planned kernel planned again: for a batch of other sizes (`replan`: what a call with such a batch runs), in
another family (`in_family`: what a call its family cannot run takes) and under a plan the planner would not pick by
itself (`with_plan`: how tests, ablations and experiments run one). All run the pipeline's own passes, so such a
plan is checked and built as a schedule's is."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from gemmc.families.registry import family
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import FamilyPlan, Kernel, Problem, unplanned
from gemmc.ir.program import Program
from gemmc.ir.types import Precision
from gemmc.passes import build_worklist, run_pipeline


def replan(kernel: Kernel, hw: Hardware, shapes: Sequence[tuple[int, int, int]], filename: str) -> Kernel:
    """`kernel`'s schedule (dtype, layouts, scalars, knobs) planned from the start for problems of the given
    (M, N, K), in that order, named p0, p1, ...: every pass runs, as for a schedule that wrote this batch. Raises
    GemmcError where the schedule's knobs cannot build these sizes."""
    problems = tuple(Problem(f"p{i}", m, n, k) for i, (m, n, k) in enumerate(shapes))
    fresh = dataclasses.replace(kernel, problems=problems, count=None, family=None, plan=None, work=None, notes=())
    return run_pipeline(Program(hw, (fresh,), filename)).kernels[0]


def in_family(kernel: Kernel, hw: Hardware, algorithm: str, filename: str, precision: Precision | None = None
              ) -> Kernel:
    """`kernel`'s schedule planned from the start with `algorithm` (a family's name) in place of its own, named
    `<kernel>_<algorithm>`, with `precision` where given (the family computes in another type) and the family's own
    tile, threads, stages and batching (the schedule's were chosen for its own family)."""
    fresh = unplanned(kernel, name=f"{kernel.name}_{algorithm}", algorithm=algorithm,
                      precision=precision or kernel.precision)
    return run_pipeline(Program(hw, (fresh,), filename)).kernels[0]


def with_plan(kernel: Kernel, plan: FamilyPlan, hw: Hardware) -> Kernel:
    """`kernel`'s problems under another plan of its own family, the work list rebuilt by the pipeline's
    `build_worklist`. A plan of another family, or one outside the family's limits (what its templates build: such a
    kernel could compute wrong results or never finish), is the caller's mistake, not the schedule's: TypeError,
    ValueError."""
    if type(plan) is not type(kernel.plan):
        name = kernel.family or "none"
        raise TypeError(f"with_plan: plan is a {type(plan).__name__}; kernel {kernel.name!r} (family {name}) "
                        f"takes a {type(kernel.plan).__name__}")
    assert kernel.family is not None  # planned: its plan's type is a family's
    broken = family(kernel.family).limits(kernel, plan, hw)
    if broken:
        raise ValueError(f"with_plan: kernel {kernel.name!r}: the {kernel.family} family cannot build this plan: "
                         + "; ".join(broken))
    return build_worklist(dataclasses.replace(kernel, plan=plan), hw)
