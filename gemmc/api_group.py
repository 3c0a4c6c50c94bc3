"""The Python API of a concurrent group: `prog["group"](As, Bs, Cs)` runs every GEMM of the group in one call.

Calling convention: As, Bs, Cs are lists with one 2-D array per GEMM, in the group's order (`.members`: the
members in source order, a member with `copies C` as C consecutive GEMMs). Each array is what the member kernel
takes for its one problem (its layouts and dtype). The outputs must be distinct and must not overlap any operand:
the GEMMs are independent, and the call refuses one whose output another reads.
"""

from __future__ import annotations

import dataclasses
from functools import cached_property
from typing import TYPE_CHECKING, Any

from gemmc.api_kernel import CompiledKernel
from gemmc.errors import GemmcError
from gemmc.ir.group import Group, GroupPlan, Mode, group_lines
from gemmc.ir.hardware import Hardware
from gemmc.ir.types import counted

if TYPE_CHECKING:
    from gemmc.concurrent.render import RenderedGroup
    from gemmc.runtime.concurrent import GoTuning, GroupRun


class CompiledGroup:
    """A planned group: its members (compiled kernels), its plan, the C++ launcher, and (on a GPU) a callable. What
    runs on the GPU, and what the runtime loads and measures for it, is its `group_run`
    (gemmc.runtime.concurrent.GroupRun), built on first use.

    `kernels` says which kernels the streams mode launches: "go" (each member's GO-kernel for the degree, measured
    under contention on the first call) or "isolated" (each member's own kernel: the paper's default).

    A group whose schedule says `concurrency auto` confirms the plan's way on its first call
    (gemmc.runtime.group_floor): it times it against sequential and the members' own kernels on streams and runs the
    fastest from then on; a group made by `with_mode` runs the mode it was given.
    """

    def __init__(self, ir: Group, members: list[CompiledKernel], target: Hardware, filename: str,
                 kernels: str = "go", confirms: bool = True):
        self.ir = ir
        self.members = members
        """The group's GEMMs as `CompiledKernel`s, in the group's order: members in source order, copies consecutive
        (named `<group>_<member>`, `<group>_<member>_<i>`). A call takes one array per member in this order."""
        self.target = target
        self.filename = filename
        self.kernels = kernels
        self.confirms = confirms and ir.mode is Mode.AUTO
        self._group_run: GroupRun | None = None

    @property
    def name(self) -> str:
        """The group's name in the schedule (the C++ launcher is `gemmc_<name>`)."""
        return self.ir.name

    @property
    def group_plan(self) -> GroupPlan:
        assert self.ir.plan is not None
        return self.ir.plan

    @property
    def mode(self) -> Mode:
        """How the group runs: `Mode.SEQUENTIAL`, `Mode.STREAMS` or `Mode.FUSED` (`gemmc.ir.group.Mode`; `.value`
        is the schedule's spelling), as `concurrency` or its `auto` choice says, or as `with_mode` set it."""
        return self.group_plan.mode

    @property
    def degree(self) -> int:
        """How many GEMMs run at once on side streams in the streams mode; 1 for sequential and fused."""
        return self.group_plan.degree

    @property
    def group_run(self) -> GroupRun:
        """The runtime's side of this group: the members' executables (each the member kernel's own), the fused and
        share plans', the GO-kernel tunings, the events. Building it loads nothing (and needs no GPU); one serves
        every mode of the group (`with_mode`)."""
        run = self._group_run
        if run is None:
            from gemmc.runtime.concurrent import GroupRun

            run = self._group_run = GroupRun(self.ir, [k.executable for k in self.members], self.target,
                                             self.filename)
        return run

    @property
    def plan(self) -> str:
        """What the planner decided for the group, readable (the group's part of `gemmc inspect`), and once the
        first call has tuned them, the GO-kernels measured on this GPU."""
        lines = group_lines(self.ir)
        for name, tuning in self.tuning.items():
            lines.append(f"  {name}: " + str(tuning).replace("\n", "\n    "))
        confirmed = self._group_run.confirmed if self._group_run is not None else None
        if confirmed is not None and self.confirms:
            lines.append(f"  auto: {confirmed}")
        return "\n".join(lines)

    @cached_property
    def fused(self) -> CompiledKernel | None:
        """The whole group as one kernel, where the members allow it: the one the fused mode launches."""
        if self.group_plan.fused is None:
            return None
        exe = self.group_run.fused
        assert exe is not None
        return CompiledKernel.of(exe)

    def with_mode(self, mode: str, degree: int = 1, kernels: str = "go") -> CompiledGroup:
        """The same group run another way: mode "sequential", "streams" (with `degree`, and `kernels` "go" for the
        members' GO-kernels or "isolated" for their own kernels) or "fused" (benchmarks and tests time every mode on
        the same inputs). The tuning already measured is shared."""
        ways = (Mode.SEQUENTIAL, Mode.STREAMS, Mode.FUSED)
        try:
            m = Mode(mode)
        except ValueError:
            m = Mode.AUTO  # refused below with the others' names
        if m not in ways:
            raise GemmcError(f"group {self.name}: unknown mode {mode!r}; expected one of "
                             + ", ".join(w.value for w in ways))
        if m is Mode.FUSED and self.group_plan.fused is None:
            why = [n.removeprefix("not fused: ") for n in self.group_plan.notes if n.startswith("not fused: ")]
            raise GemmcError(f"group {self.name} cannot run fused: " + "; ".join(why or self.group_plan.notes))
        plan = dataclasses.replace(self.group_plan, mode=m, degree=degree if m is Mode.STREAMS else 1)
        other = CompiledGroup(dataclasses.replace(self.ir, plan=plan), self.members, self.target, self.filename,
                              kernels, confirms=False)
        other._group_run = self.group_run
        return other

    @cached_property
    def rendered(self) -> RenderedGroup:
        """What `gemmc compile` writes for the group: `.source` (every kernel it launches and the launcher),
        `.header`, `.launcher` (the function's name), `.extension` (`cu` or `hip`) and `.build_flags`."""
        from gemmc.concurrent.render import render_group

        return render_group(self.ir, {k.name: k.ir for k in self.members}, self.target, self.filename)

    @property
    def tuning(self) -> dict[str, GoTuning]:
        """Each member's GO-kernel measurements (gemmc.runtime.concurrent.GoTuning) by member name, once tuned
        (copies of one GEMM share theirs)."""
        return self._group_run.tuning if self._group_run is not None else {}

    def __call__(self, As: Any, Bs: Any, Cs: Any, *, stream: Any = None) -> None:
        """Run every GEMM of the group on `stream` (by default torch's current stream for torch tensors, else
        CuPy's): one after another, forked onto side streams and joined back through events, or in one launch, as
        the plan says. The first call tunes
        (outside a graph capture); later calls, captured or not, launch only."""
        from gemmc.runtime.concurrent import run_group

        mode, degree, kernels = self.mode, self.degree, self.kernels
        if self.confirms:
            from gemmc.runtime.group_floor import confirm

            way = confirm(self.group_run, As, Bs, Cs, stream)
            if way is not None:
                mode, degree, kernels = way.mode, way.degree, way.kernels
        run_group(self.group_run, As, Bs, Cs, mode=mode, degree=degree, kernels=kernels, stream=stream)

    def __repr__(self) -> str:
        gemms = len(self.members)
        return f"<gemmc group {self.name}: {counted(gemms, 'GEMM')}, {self.mode.value}>"
