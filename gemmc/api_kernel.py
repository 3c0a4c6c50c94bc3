"""The Python API of one planned kernel: its source and plan without a GPU, a callable on one (through its
runtime side, `gemmc.runtime.executable.Executable`). `gemmc.api` gives the program that holds the kernels."""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gemmc.codegen import Rendered, render_kernel
from gemmc.codegen.svg import render_svg
from gemmc.errors import GemmcError, InternalError
from gemmc.families.preview import SchedulePreview, call_sizes
from gemmc.families.registry import family
from gemmc.ir.dynamic import Grouping
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import FamilyPlan, Kernel
from gemmc.ir.printer import format_kernel
from gemmc.ir.types import counted
from gemmc.model.tlp import Occupancy
from gemmc.passes import replan

if TYPE_CHECKING:
    from gemmc.runtime.executable import Executable, Tuning


class CompiledKernel:
    """One planned kernel: its source, its plan, and (on a GPU) a callable.

    Get one from a compiled program by name (`prog["inception3"]`). Everything but the call and `occupancy` works
    without a GPU. What runs on the GPU, and what the runtime loads and measures for it, is its `executable`
    (gemmc.runtime.executable), built on first use.

    Example:
        ```python
        k = gemmc.compile_file("examples/inception3.gs")["inception3"]
        print(k.plan)        # tiles per problem, TLP, occupancy, decisions
        print(k.shapes)      # ((196, 192, 192), (196, 16, 192), (196, 96, 192), (196, 64, 192))
        k(As, Bs, Cs)        # on a GPU
        ```
    """

    def __init__(self, ir: Kernel, target: Hardware, filename: str, planner_seconds: float = 0.0):
        self.ir = ir
        self.target = target
        self.filename = filename
        self.planner_seconds = planner_seconds  # host time the passes took for this plan (paper 000 Fig. 7)
        self._rendered: Rendered | None = None
        self._executable: Executable | None = None
        self._replans: dict[Executable, CompiledKernel] = {}  # plan_for's kernels, by the plan the runtime keeps

    @classmethod
    def of(cls, executable: Executable) -> CompiledKernel:
        """The kernel of a plan the runtime holds (`Executable.plan_for`'s plans, a group's fused kernel), sharing
        its executable: what a call loads and measures on either shows on both."""
        kernel = cls(executable.ir, executable.target, executable.filename, executable.planner_seconds)
        kernel._executable = executable
        return kernel

    @property
    def name(self) -> str:
        """The kernel's name in the schedule (the C++ launcher is `gemmc_<name>`)."""
        return self.ir.name

    @property
    def rendered(self) -> Rendered:
        if self._rendered is None:
            exe = self._executable
            self._rendered = exe.rendered if exe is not None else render_kernel(self.ir, self.target, self.filename)
        return self._rendered

    @property
    def executable(self) -> Executable:
        """The runtime's side of this kernel: the loaded function, the tables on the device, the tuning. Building it
        loads nothing (and needs no GPU); a call loads what it needs."""
        exe = self._executable
        if exe is None:
            from gemmc.runtime.executable import Executable

            exe = self._executable = Executable(self.ir, self.target, self.filename, self._rendered,
                                                self.planner_seconds)
        return exe

    @property
    def source(self) -> str:
        """The generated kernel source (CUDA or HIP) that the runtime compiles."""
        return self.rendered.source

    @property
    def standalone(self) -> str:
        """The source plus the baked plan and the extern "C" launcher: what `gemmc compile` writes."""
        return self.rendered.standalone

    @property
    def header(self) -> str:
        """The C header `gemmc compile` writes: the declaration of the launcher `gemmc_<name>`."""
        return self.rendered.header

    @property
    def plan(self) -> str:
        """What the passes decided, readable (the same text `gemmc inspect` prints)."""
        return format_kernel(self.ir)

    @property
    def shapes(self) -> tuple[tuple[int, int, int], ...]:
        """(M, N, K) of every problem in batch order; empty for a batch sized at run time (`grouped`), whose sizes
        come with each call."""
        return tuple((p.m, p.n, p.k) for p in self.ir.problems) * (self.ir.count or 1)

    def svg(self) -> str:
        """A picture of the plan as SVG text: each problem's C with its tiles coloured by variant and labelled by the
        block that computes them, the TLP figures, occupancy and waves (what `gemmc inspect --svg` writes)."""
        return render_svg(self.ir, self.target)

    def plan_for(self, shapes: Sequence[tuple[int, int, int]]) -> CompiledKernel:
        """This kernel re-planned for a batch of other sizes (same dtype, layouts, knobs), on the host.

        Plans are cached by the multiset of shapes: the batch is planned in sorted order, and a call passes its
        arrays in that order, so any permutation of a batch reuses one plan. A call of this kernel on such a batch
        runs the same plan (its `tuning` is this one's). The planner's own cost is in `.planner_seconds`.

        Raises:
            GemmcError: (E400) for a batch sized at run time (`grouped`), which has no plan per size
                (`schedule_for` previews what its device scheduler does with given sizes)."""
        if self.ir.dynamic is not None:
            raise GemmcError(f"plan_for: kernel '{self.name}' is a batch sized at run time ({self.ir.dynamic}): its "
                             "tiles are derived on the device from each call's sizes, so there is no plan per size; "
                             "`schedule_for(sizes)` shows what the device scheduler does with given sizes, `plan` "
                             "its size classes")
        exe = self.executable.plan_for(shapes)
        kernel = self._replans.get(exe)
        if kernel is None:
            kept = set(self.executable.plans.values())  # hold no kernel of a plan the runtime has let go
            self._replans = {e: k for e, k in self._replans.items() if e in kept}
            kernel = self._replans[exe] = CompiledKernel.of(exe)
        return kernel

    def schedule_for(self, sizes: Any = None, *, offsets: Any = None, sm_count: int | None = None
                     ) -> SchedulePreview:
        """What the device scheduler of a batch sized at run time (`grouped`) decides for one call's sizes, computed on
        the host by the family's model of it (no GPU needed): each group's size class (the tiles it runs, by shape),
        the level cap and why, the tiles, the persistent grid and its rounds, and whether the last round runs in
        column halves. `print()` it for a table (what `gemmc inspect --sizes` prints).

        Example:
            ```python
            k = gemmc.compile_file("examples/moe.gs")["moe_up"]
            s = k.schedule_for([40, 4000, 0, 12])     # grouped M: each expert's rows
            s.cap, s.tiles, s.rounds, s.groups[1].tiles
            print(k.schedule_for(offsets=[40, 4040, 4040, 4052]))   # the same call's cumulative ends
            ```

        Args:
            sizes: per group, as a call would have them: `grouped M` each group's rows, `grouped K` each group's
                depth, `grouped list` the (m, n, k) of each problem. Zeros are fine (a group of no tiles, or for
                `grouped K` and a list's k 0, tiles that store beta * C).
            offsets: instead of `sizes`, for `grouped M` / `grouped K`: the int32 cumulative group ends a call takes,
                on the host (a list, a NumPy array, a tensor's `.cpu()`).
            sm_count: the SMs of the GPU to preview for; by default the target table's (`k.target.sm_count`).

        Raises:
            GemmcError: (E400) a kernel whose batch is fixed in its schedule (`plan_for` re-plans those); more
                groups than the schedule's `groups`, more rows than its `rows`, a negative size, ends that are not
                cumulative from 0, tiles past the int32 tile numbering, as a call (with `validate=True`) refuses
                them; a size past int32 (the device's tile arithmetic is 32-bit)."""
        if self.ir.dynamic is None:
            raise GemmcError(f"schedule_for: kernel '{self.name}' has a batch fixed in its schedule: its tiles are "
                             "planned on the host, and `plan` shows them (`plan_for(shapes)` for other sizes)")
        hw = self.target
        if sm_count is not None:
            if isinstance(sm_count, bool) or not isinstance(sm_count, numbers.Integral) or sm_count < 1:
                raise GemmcError(f"sm_count: expected a whole number of SMs of at least 1, got {sm_count!r}")
            hw = dataclasses.replace(hw, sm_count=int(sm_count))  # a NumPy integer too (a device query's)
        preview = family(self.ir.family).schedule_for(self.ir, call_sizes(self.ir.dynamic, sizes, offsets), hw)
        if preview is None:
            raise InternalError("api", f"family {self.ir.family} of kernel '{self.name}' previews no schedule")
        return preview

    def with_plan(self, plan: FamilyPlan, label: str = "<plan>") -> CompiledKernel:
        """These problems under another plan of the same family (a shape the planner would not pick by itself),
        the work list rebuilt by the pipeline's own pass: how tests, ablations and experiments run such a plan."""
        return CompiledKernel(replan.with_plan(self.ir, plan, self.target), self.target, label)

    def occupancy(self) -> Occupancy:
        """Resident blocks and warps per SM of the compiled kernel on the current device (paper 000 Eqs. 5-9 in
        CUDA terms): the registers are the compiled kernel's `num_regs`, the limits the device's own; offline,
        `inspect` shows the same model with estimated registers and the target table. Needs a GPU."""
        return self.executable.occupancy()

    @property
    def tuning(self) -> Tuning | None:
        """What the first call's tuning step measured on this GPU (`gemmc.runtime.executable.Tuning`: each
        candidate's time, the one kept, how far the model's choice was from it), or None: nothing tuned (yet)."""
        return self._executable.tuning if self._executable is not None else None

    def __call__(self, As: Any, Bs: Any, Cs: Any, *, alpha: float | None = None, beta: float | None = None,
                 stream: Any = None, offsets: Any = None, validate: bool = False) -> None:
        """C_i = alpha * A_i @ B_i + beta * C_i for every problem i, in one launch on `stream`.

        A list batch whose sizes differ from the schedule's is re-planned on the host (`plan_for`, cached). Where
        the planner offers alternatives to its model's choice (`tile auto`'s tilings, TSM2R's cluster sizes), the
        first call on a GPU times them and keeps the fastest (`tuning`; cached on disk; `GEMMC_TUNE=0` turns it
        off). A batch sized at run time (`grouped`) takes one A, B and C and the cumulative group ends on the
        device (`offsets`), or, for `grouped list`, lists of arrays of any sizes; it never synchronizes, compiles
        or plans after its first call. Needs a GPU and CuPy.

        Args:
            As: the A operands in batch order: a sequence of 2-D device arrays (M x K), or one 3-D array
                (count x M x K) for a `gemm ... count B` kernel, or one array for `grouped M` / `grouped K`. CuPy
                arrays, torch tensors, or anything with `__cuda_array_interface__` or DLPack, densely packed in
                the schedule's `layout` (a column-major M x K array is the transpose of a row-major K x M one)
                and of its `dtype`.
            Bs: the B operands (K x N), likewise.
            Cs: the outputs (M x N), likewise; read only where beta is not 0.
            alpha: the scalar, required when the schedule says `alpha runtime` and refused otherwise.
            beta: likewise for `beta runtime`.
            stream: a CuPy stream, a torch stream or a raw `cudaStream_t` handle; by default torch's current
                stream for torch tensors (so a call inside `torch.cuda.graph` is captured) and CuPy's current
                stream otherwise.
            offsets: `grouped M` / `grouped K` only: int32 cumulative group ends on the device (group g is
                [ends[g-1], ends[g])).
            validate: `grouped M` / `grouped K`: check the ends on the device first (a synchronization) and name
                the first bad group. `grouped list`: check on the host that no C shares a byte with another C or
                with any A or B (every call checks that no C lies at another array's address; this compares their
                bytes, views of one matrix included: tens of microseconds more a call).

        Raises:
            GemmcError: (E400) an argument of the wrong count, shape, dtype, device or layout, named, before
                anything is launched; (E303) a kernel planned for sm_90a called on another GPU.
        """
        if self.ir.dynamic is not None and self.ir.plan is not None and self.ir.plan.tensor_maps:
            if self.ir.dynamic.grouping is Grouping.LIST:  # grouped list of half storage: maps built on the device
                from gemmc.runtime.grouped_list import launch_grouped_list

                launch_grouped_list(self.executable, As, Bs, Cs, offsets=offsets, alpha=alpha, beta=beta,
                                    stream=stream, validate=validate)
                return
            from gemmc.runtime.grouped_tma import launch_grouped_tma  # grouped M, K of half storage (hopper_grouped)

            launch_grouped_tma(self.executable, As, Bs, Cs, offsets=offsets, alpha=alpha, beta=beta, stream=stream,
                               validate=validate)
            return
        if self.ir.dynamic is not None:
            from gemmc.runtime.dynamic import launch_dynamic

            launch_dynamic(self.executable, As, Bs, Cs, offsets=offsets, alpha=alpha, beta=beta, stream=stream,
                           validate=validate)
            return
        if offsets is not None or validate:
            raise GemmcError(f"offsets, validate: kernel '{self.name}' has a batch fixed in its schedule; group ends "
                             "belong to a `grouped` kernel")
        from gemmc.runtime.launch import launch  # lazy: CuPy is only needed here

        launch(self.executable, As, Bs, Cs, alpha=alpha, beta=beta, stream=stream)

    def __repr__(self) -> str:
        size = self.ir.batch_size
        batch = f"a batch sized at run time, {self.ir.dynamic}" if self.ir.dynamic else \
            counted(size, "problem")
        return f"<gemmc kernel {self.name}: {self.ir.family or '?'}, {batch}>"
