"""What a kernel family is: the `KernelFamily` protocol that every package in gemmc/families implements.

A family is everything one kind of kernel needs: when `algorithm auto` takes it (`claim`), the schedule rules it
owns (`check`), its plan type and planning (`plan`, `notes`, `worklist`), the shapes the first call may time
against the model's choice (`alternatives`), and its template with the context that fills it. The pipeline, the
code generator, the tuner and `inspect` reach a family only through this protocol and the registry
(gemmc/families/registry.py); none of them names one.
"""

from __future__ import annotations

from enum import IntEnum
from pathlib import Path
from types import ModuleType
from typing import Protocol

from gemmc.errors import Diagnostic
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import FamilyPlan, Kernel, WorkList


class Claim(IntEnum):
    """How strongly a family claims a kernel under `algorithm auto`. The strongest claim wins; between equal
    claims, the family registered first."""

    DEFAULT = 1  # computes anything its checks allow: taken when no other family claims the kernel
    SHAPE = 2  # its model says this shape runs faster on it than on the default family
    REQUIRED = 3  # the schedule asks for something only this family computes (a tensor-core precision)


class KernelFamily(Protocol):
    """One kernel family. `name` is how schedules (`algorithm NAME`), the IR (`Kernel.family`), `inspect` and the
    generated symbols name it; `folder` holds its templates."""

    @property
    def name(self) -> str: ...

    @property
    def plan_type(self) -> type[FamilyPlan]: ...

    @property
    def folder(self) -> Path: ...

    def claim(self, kernel: Kernel, hw: Hardware) -> tuple[Claim, str] | None:
        """Under `algorithm auto`: how strongly this family claims the kernel and why, or None."""
        ...

    def check(self, kernel: Kernel, hw: Hardware) -> list[Diagnostic]:
        """The schedule rules this family owns (its `algorithm`, its precisions, its knobs), run on every kernel
        before a family is selected: every problem found, located at its statement."""
        ...

    def plan(self, kernel: Kernel, hw: Hardware) -> FamilyPlan:
        """The family's decisions for a checked, normalized kernel that selected it. Raises GemmcError where the
        schedule asks for something this family cannot build."""
        ...

    def notes(self, kernel: Kernel, plan: FamilyPlan, hw: Hardware) -> tuple[str, ...]:
        """Why the plan is what it is, for `gemmc inspect`."""
        ...

    def worklist(self, kernel: Kernel, plan: FamilyPlan, hw: Hardware) -> WorkList:
        """The launch's data: problem table, tiles, blocks, grid."""
        ...

    def alternatives(self, kernel: Kernel, hw: Hardware) -> tuple[tuple[str, Kernel], ...]:
        """Planned kernels (with their work lists) that the first call on a GPU times against the model's choice,
        the model's first, each with a label; empty: nothing to time."""
        ...

    def template(self, kernel: Kernel) -> str:
        """The file name of the family's template (in `folder`) that renders this kernel."""
        ...

    def context(self, kernel: Kernel, hw: Hardware) -> dict:
        """The template's context: plain strings, numbers, booleans and tuples computed from the plan."""
        ...

    def knobs(self, kernel: Kernel) -> list[str]:
        """The family's lines of the generated source's header comment."""
        ...

    def host_templates(self, kernel: Kernel) -> tuple[str, str]:
        """The templates of the standalone file's host launcher and of the C++ header: (launcher, header)."""
        ...


def cbool(flag: bool) -> str:
    """A C++ boolean literal for a template."""
    return "true" if flag else "false"


class PlannerFamily:
    """A family whose planning lives in its `planner` module (`plan`, `notes`, `worklist`) and whose rendering in
    its `codegen` module (`TEMPLATE`, `context`, `knobs`): a package's `__init__` subclasses this, sets the two
    modules, its name, plan type and folder, and writes `claim` (and `check`, `alternatives` where it has them)."""

    planner: ModuleType
    codegen: ModuleType

    def check(self, kernel: Kernel, hw: Hardware) -> list[Diagnostic]:
        return []

    def plan(self, kernel: Kernel, hw: Hardware) -> FamilyPlan:
        plan: FamilyPlan = self.planner.plan(kernel, hw)
        return plan

    def notes(self, kernel: Kernel, plan: FamilyPlan, hw: Hardware) -> tuple[str, ...]:
        return tuple(self.planner.notes(kernel, plan, hw))

    def worklist(self, kernel: Kernel, plan: FamilyPlan, hw: Hardware) -> WorkList:
        work: WorkList = self.planner.worklist(kernel, plan, hw)
        return work

    def alternatives(self, kernel: Kernel, hw: Hardware) -> tuple[tuple[str, Kernel], ...]:
        return ()

    def template(self, kernel: Kernel) -> str:
        return str(self.codegen.TEMPLATE)

    def context(self, kernel: Kernel, hw: Hardware) -> dict:
        return dict(self.codegen.context(kernel, hw))

    def knobs(self, kernel: Kernel) -> list[str]:
        return list(self.codegen.knobs(kernel))

    def host_templates(self, kernel: Kernel) -> tuple[str, str]:
        return "launcher.j2", "header.h.j2"  # templates/: the baked work list and a launcher of pointer arrays
