"""What a kernel family is: the `KernelFamily` protocol that every package in gemmc/families implements.

A family is everything one kind of kernel needs: when `algorithm auto` takes it (`claim`), the schedule rules it
owns (`check`), its plan type and planning steps (`steps`, `worklist`), what its plans must satisfy (`limits`,
`grid_tile`: what the IR verifier checks), the shapes the first call may time against the model's choice
(`alternatives`), what its device scheduler would do with one call's sizes (`schedule_for`, for a batch sized at run
time), how a concurrent group of some family's kernels (`fuses`) runs as one launch of its own (`fuse`,
and `prefer_fused`, its rule for `concurrency auto`), and its template with the context that fills it. The
pipeline, the verifier, the code generator, the tuner and `inspect` reach a family only through this protocol and
the registry (gemmc/families/registry.py); none of them names one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from enum import IntEnum
from pathlib import Path
from types import ModuleType
from typing import NamedTuple, Protocol

from gemmc.errors import Diagnostic
from gemmc.families.cells import Cells, whole_problems
from gemmc.families.preview import CallSizes, SchedulePreview
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import FamilyPlan, Kernel, WorkList
from gemmc.ir.types import NO_SPAN, Span

Pass = Callable[[Kernel, Hardware], Kernel]  # a pure pass: what every pipeline pass and planning step is


class GridTile(NamedTuple):
    """How a grid without a tile table maps blocks to outputs (`KernelFamily.grid_tile`): each grid tile covers `rows`
    x `columns` of C and `sharers` blocks (a cluster splitting its k) compute it. Not persistent: one block per tile
    and sharer. Persistent: blocks (whole clusters of `sharers`) walk every tile by arithmetic, so any grid of at
    most one block per tile and sharer covers them once."""

    rows: int
    columns: int
    sharers: int = 1
    persistent: bool = False


class Fusion(NamedTuple):
    """A concurrent group's members as one launch (`KernelFamily.fuse`): the launch's kernel (unplanned from `fuse`,
    planned once the pipeline has run) and what it is, for `inspect`."""

    kernel: Kernel
    why: str


class NotFused(NamedTuple):
    """Why a concurrent group's members cannot run as one launch, and the schedule line it is about: where one member
    is the reason, its statement or its line (`member_span`); where every member is, the statement they share (a
    group's, which its members take: `Kernel.written`); NO_SPAN where no statement is the reason (a note then points
    at the group's `concurrency` line)."""

    why: str
    span: Span = NO_SPAN


class Declined(NamedTuple):
    """Why a family does not take a kernel it is built for (`KernelFamily.declines`), and the statement that keeps
    the kernel off it (NO_SPAN: the kernel's line)."""

    why: str
    span: Span = NO_SPAN


def member_span(first: Kernel, other: Kernel, stmt: str) -> Span:
    """Where two members that differ in what statement `stmt` sets are told apart: `other`'s statement, else
    `first`'s (`other` takes the default, `first` wrote another value), else `other`'s line."""
    for k in (other, first):
        if any(key == stmt for key, _ in k.stmt_spans):
            return k.where(stmt)
    return other.span


def differing(members: Mapping[str, Kernel], keys: tuple[str, ...]) -> NotFused | None:
    """Why the members (by their names in the group) cannot share one kernel: the first of `keys` (Kernel fields)
    on which they differ, as the language writes it, at the statement that sets it in the first member that differs
    (`member_span`); None where they agree on all."""
    first_name, first = next(iter(members.items()))
    for key in keys:
        mine = getattr(first, key)
        other = next(((name, k) for name, k in members.items() if getattr(k, key) != mine), None)
        if other is not None:
            return NotFused(f"fused needs one {SPELLING.get(key, key)} for every member; {first_name} has "
                            f"{_shown(mine)}, {other[0]} {_shown(getattr(other[1], key))} (split the group, or give "
                            "them one)", member_span(first, other[1], STATEMENT.get(key, key)))
    return None


SPELLING = {"layout_a": "layout A", "layout_b": "layout B", "layout_c": "layout C", "c_dtype": "dtype of C"}
STATEMENT = {"layout_a": "layout", "layout_b": "layout", "layout_c": "layout", "c_dtype": "dtype", "stages": "pipeline"}


def _shown(value: object) -> str:
    return "auto" if value is None else str(getattr(value, "value", value))


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

    @property
    def launcher(self) -> str:
        """The template of the standalone file's host launcher: the shared `launcher.j2` (pointer and problem
        tables), or one in the family's folder."""
        ...

    @property
    def header(self) -> str:
        """The template of the C++ header that declares the launcher: the shared `header.h.j2`, or one in the
        family's folder (a launcher with other arguments declares them in its own header)."""
        ...

    def claim(self, kernel: Kernel, hw: Hardware) -> tuple[Claim, str] | None:
        """Under `algorithm auto`: how strongly this family claims the kernel and why, or None."""
        ...

    def check(self, kernel: Kernel, hw: Hardware) -> list[Diagnostic]:
        """The schedule rules this family owns (its `algorithm`, its precisions, its knobs), run on every kernel
        before a family is selected: every problem found, located at its statement."""
        ...

    def declines(self, kernel: Kernel, hw: Hardware) -> Declined | None:
        """Why this family, built for kernels of this kernel's data on its target (the tensor cores' families for
        bf16/f16 on sm_90), does not claim it, at the statement that keeps it off (`gemmc compile` notes it there);
        None where the family claims it or is not built for it."""
        ...

    @property
    def steps(self) -> tuple[tuple[str, Pass], ...]:
        """The family's planning passes, each under the name of the pipeline's planning step it implements
        (gemmc/passes/planning.py: STEPS), in the pipeline's order. A step the family lacks leaves its kernels as
        they are. Between them a kernel carries the family's decisions so far in `Kernel.draft`; `finish_plan`,
        which every family has, sets `plan` (with the notes that explain it) and clears the draft. A step raises
        GemmcError where the schedule asks for something this family cannot build."""
        ...

    def worklist(self, kernel: Kernel, plan: FamilyPlan, hw: Hardware) -> WorkList:
        """The launch's data: problem table, tiles, blocks, grid."""
        ...

    def limits(self, kernel: Kernel, plan: FamilyPlan, hw: Hardware) -> list[str]:
        """What the family's planning steps guarantee of a finished plan (tile sizes its template builds, thread
        counts its kernels assume), each broken guarantee as a sentence for the IR verifier; empty: all hold."""
        ...

    def grid_tile(self, kernel: Kernel, plan: FamilyPlan, hw: Hardware) -> GridTile | None:
        """For a family whose grid maps blocks to outputs by arithmetic (no tile table): its GridTile, which the IR
        verifier checks the grid against. None: the work list's tile table maps blocks to outputs."""
        ...

    def alternatives(self, kernel: Kernel, hw: Hardware) -> tuple[tuple[str, Kernel], ...]:
        """Planned kernels (with their work lists) that the first call on a GPU times against the model's choice,
        the model's first, each with a label; empty: nothing to time."""
        ...

    def cells(self, kernel: Kernel, hw: Hardware) -> Cells:
        """Which block computes which part of which problem's C in the planned kernel's launch, and the kinds of
        cell a legend names (gemmc/families/cells.py): what `gemmc inspect --svg` draws."""
        ...

    def schedule_for(self, kernel: Kernel, sizes: CallSizes, hw: Hardware) -> SchedulePreview | None:
        """For a planned kernel whose batch is sized at run time: what its device scheduler decides for one call's
        sizes (checked: families/preview.py, call_sizes) over the persistent grid on `hw`, computed on the host by the
        family's model of it (gemmc/families/preview.py); None: the family has no device scheduler."""
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

    @property
    def fuses(self) -> str | None:
        """The family whose kernels this family runs as one launch for a concurrent group (`fuse`), or None."""
        ...

    def fuse(self, members: Mapping[str, Kernel], name: str, span: Span, hw: Hardware) -> Fusion | NotFused:
        """A concurrent group's members (kernels of the `fuses` family, by their names in the group, in call order,
        sharing dtypes, layouts, scalars and precision) as one launch of this family called `name`, or why they
        cannot run as one (at the member that is the reason, where one is)."""
        ...

    def prefer_fused(self, fused: Kernel, members: Sequence[Kernel], hw: Hardware) -> tuple[bool, str]:
        """Under `concurrency auto`: whether a group runs as `fused` (this family's launch from `fuse`, planned)
        rather than as its members' own kernels, and why (the note `inspect` shows)."""
        ...


def cbool(flag: bool) -> str:
    """A C++ boolean literal for a template."""
    return "true" if flag else "false"


def raster_context(kernel: Kernel) -> dict | None:
    """A uniform launch's computed tiles (WorkList.raster) as the templates' `raster` (common.j2: raster_tile,
    each_tile), every number computed here; None where the work list lists its tiles."""
    r = kernel.work.raster if kernel.work is not None else None
    if r is None:
        return None
    return {"tiles_m": r.tiles_m, "tiles_n": r.tiles_n, "per_problem": r.per_problem, "group_m": r.group_m,
            "bm": r.bm, "bn": r.bn, "variant": r.variant, "tiles": r.tiles, "per_block": r.per_block,
            "batched": r.batched, "batched_tiles": r.batched_tiles, "blocks": r.blocks, "cluster": r.cluster}


class PlannerFamily:
    """A family whose planning steps live in its `planning` module (`STEPS`, and `limits`, what they guarantee), its
    model and work list in its `planner` module (`worklist`) and its rendering in its `codegen` module (`TEMPLATE`,
    `context`, `knobs`): a package's `__init__` subclasses this, sets the three modules, its name, plan type and
    folder, and writes `claim` (and `check`, `alternatives`, `grid_tile` where it has them)."""

    planning: ModuleType
    planner: ModuleType
    codegen: ModuleType
    launcher = "launcher.j2"
    header = "header.h.j2"

    def check(self, kernel: Kernel, hw: Hardware) -> list[Diagnostic]:
        return []

    def declines(self, kernel: Kernel, hw: Hardware) -> Declined | None:
        return None

    @property
    def steps(self) -> tuple[tuple[str, Pass], ...]:
        return tuple(self.planning.STEPS)

    def worklist(self, kernel: Kernel, plan: FamilyPlan, hw: Hardware) -> WorkList:
        work: WorkList = self.planner.worklist(kernel, plan, hw)
        return work

    def limits(self, kernel: Kernel, plan: FamilyPlan, hw: Hardware) -> list[str]:
        return list(self.planning.limits(kernel, plan, hw))

    def grid_tile(self, kernel: Kernel, plan: FamilyPlan, hw: Hardware) -> GridTile | None:
        return None

    def alternatives(self, kernel: Kernel, hw: Hardware) -> tuple[tuple[str, Kernel], ...]:
        return ()

    def cells(self, kernel: Kernel, hw: Hardware) -> Cells:
        return whole_problems(kernel)  # a family that says no more: each problem computed by the whole grid

    def schedule_for(self, kernel: Kernel, sizes: CallSizes, hw: Hardware) -> SchedulePreview | None:
        return None

    def template(self, kernel: Kernel) -> str:
        return str(self.codegen.TEMPLATE)

    def context(self, kernel: Kernel, hw: Hardware) -> dict:
        return dict(self.codegen.context(kernel, hw))

    def knobs(self, kernel: Kernel) -> list[str]:
        return list(self.codegen.knobs(kernel))

    fuses: str | None = None

    def fuse(self, members: Mapping[str, Kernel], name: str, span: Span, hw: Hardware) -> Fusion | NotFused:
        return NotFused("this family runs no group as one launch")

    def prefer_fused(self, fused: Kernel, members: Sequence[Kernel], hw: Hardware) -> tuple[bool, str]:
        return False, "not fused: this family runs no group as one launch"
