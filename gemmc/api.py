"""The Python API: compile a schedule (no GPU needed), inspect what was decided, call kernels on a GPU."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gemmc.api_group import CompiledGroup
from gemmc.codegen import Rendered, render_kernel
from gemmc.concurrent.plan import plan_groups
from gemmc.errors import GemmcError
from gemmc.families.registry import NAMES
from gemmc.grammar.lower import lower
from gemmc.grammar.parser import parse
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import FamilyPlan, Kernel, Program
from gemmc.ir.printer import format_kernel
from gemmc.model.tlp import Occupancy
from gemmc.passes import replan, run_pipeline

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
    def _running(cls, executable: Executable) -> CompiledKernel:
        """The kernel of a plan the runtime made (`Executable.plan_for`), sharing its executable."""
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
        """(M, N, K) of every problem in batch order."""
        return tuple((p.m, p.n, p.k) for p in self.ir.problems) * (self.ir.count or 1)

    def plan_for(self, shapes: Sequence[tuple[int, int, int]]) -> CompiledKernel:
        """This kernel re-planned for a batch of other sizes (same dtype, layouts, knobs), on the host.

        Plans are cached by the multiset of shapes: the batch is planned in sorted order, and a call passes its
        arrays in that order, so any permutation of a batch reuses one plan. A call of this kernel on such a batch
        runs the same plan (its `tuning` is this one's). The planner's own cost is in `.planner_seconds`."""
        exe = self.executable.plan_for(shapes)
        kernel = self._replans.get(exe)
        if kernel is None:
            kept = set(self.executable.plans.values())  # hold no kernel of a plan the runtime has let go
            self._replans = {e: k for e, k in self._replans.items() if e in kept}
            kernel = self._replans[exe] = CompiledKernel._running(exe)
        return kernel

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
                 stream: Any = None) -> None:
        """C_i = alpha * A_i @ B_i + beta * C_i for every problem i, in one launch on the current CuPy stream.

        A list batch whose sizes differ from the schedule's is re-planned on the host (`plan_for`, cached). Where
        the planner offers alternatives to its model's choice (`tile auto`'s tilings, TSM2R's cluster sizes), the
        first call on a GPU times them and keeps the fastest (`tuning`; cached on disk; `GEMMC_TUNE=0` turns it
        off). Needs a GPU and CuPy.

        Args:
            As: the A operands in batch order: a sequence of 2-D device arrays (M x K), or one 3-D array
                (count x M x K) for a `gemm ... count B` kernel. CuPy arrays, torch tensors, or anything with
                `__cuda_array_interface__` or DLPack, densely packed in the schedule's `layout` (a column-major
                M x K array is the transpose of a row-major K x M one) and of its `dtype`.
            Bs: the B operands (K x N), likewise.
            Cs: the outputs (M x N), likewise; read only where beta is not 0.
            alpha: the scalar, required when the schedule says `alpha runtime` and refused otherwise.
            beta: likewise for `beta runtime`.
            stream: the CuPy stream to launch on (for torch's current stream:
                `cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)`); default the current CuPy
                stream.

        Raises:
            GemmcError: (E400) an argument of the wrong count, shape, dtype, device or layout, named, before
                anything is launched; (E303) a kernel planned for sm_90a called on another GPU.
        """
        from gemmc.runtime.launch import launch  # lazy: CuPy is only needed here

        launch(self.executable, As, Bs, Cs, alpha=alpha, beta=beta, stream=stream)

    def __repr__(self) -> str:
        return f"<gemmc kernel {self.name}: {self.ir.family or '?'}, " \
               f"{self.ir.batch_size} problem(s)>"


class CompiledProgram:
    """All kernels and groups of one schedule, planned for one target.

    Index it by name: `prog["inception3"]` is a `CompiledKernel`, `prog["layer"]` a `CompiledGroup`. Iterating
    gives the kernels (a group's members among them, named `<group>_<member>`) in source order.
    """

    def __init__(self, ir: Program, source: str, planner_seconds: dict[str, float] | None = None):
        self.ir = ir
        self.text = source
        seconds = planner_seconds or {}
        self._kernels = {k.name: CompiledKernel(k, ir.target, ir.filename, seconds.get(k.name, 0.0))
                         for k in ir.kernels}
        self._groups = {g.name: CompiledGroup(g, [self._kernels[m] for m in g.members], ir.target, ir.filename)
                        for g in ir.groups}

    @property
    def target(self) -> Hardware:
        """The hardware the program was planned for (the schedule's `target`, or the `target=` argument)."""
        return self.ir.target

    def __getitem__(self, name: str) -> Any:
        """The kernel or the group (`CompiledGroup`) called `name`.

        Raises:
            GemmcError: no kernel or group of that name; the message lists the names the schedule defines.
        """
        if name in self._groups:
            return self._groups[name]
        try:
            return self._kernels[name]
        except KeyError:
            raise GemmcError(f"no kernel or group named '{name}'; this schedule defines: "
                             + ", ".join([*self._kernels, *self._groups])) from None

    @property
    def groups(self) -> tuple[CompiledGroup, ...]:
        """The schedule's concurrent groups, in source order."""
        return tuple(self._groups.values())

    def __iter__(self) -> Iterator[CompiledKernel]:
        return iter(self._kernels.values())

    def __len__(self) -> int:
        return len(self._kernels)

    @property
    def names(self) -> tuple[str, ...]:
        """The names of the kernels, in source order (groups' members included)."""
        return tuple(self._kernels)


def front_end(text: str, *, filename: str = "<string>", target: str | None = None) -> Program:
    """Parse and lower, without running any pass."""
    return lower(parse(text, filename), algorithms=NAMES, filename=filename, source=text, target=target)


def compile_string(text: str, *, filename: str = "<string>", target: str | None = None,
                   verify: bool = False) -> CompiledProgram:
    """Parse, check and plan every kernel and group of a schedule held in a string. No GPU needed.

    Args:
        text: the schedule, in the language of the language reference.
        filename: the name errors give for the text.
        target: overrides the schedule's `target` line: `cuda`, `hip`, or an architecture (`sm_80`, `sm_86`,
            `sm_89`, `sm_90`, `gfx908`, `gfx90a`, `gfx942`).
        verify: check the IR's invariants after every pass (gemmc/passes/verify.py); a broken one raises
            `InternalError`, a gemmc bug. Off by default: it costs planner time.

    Returns:
        The planned program: index it by kernel or group name.

    Raises:
        GemmcError: the schedule has errors; every one found is in `.diagnostics`, and `str(err)` renders them
            as `file:line:col: error[CODE]: message`, the line, a caret and a hint.

    Example:
        ```python
        prog = gemmc.compile_string("kernel k { gemm 512 x 512 x 512 count 8 }")
        print(prog["k"].plan)
        ```
    """
    seconds: dict[str, float] = {}
    program = run_pipeline(front_end(text, filename=filename, target=target), source=text, timings=seconds,
                           verify=verify)
    return CompiledProgram(plan_groups(program), text, seconds)


def compile_file(path: str | Path, *, target: str | None = None, verify: bool = False) -> CompiledProgram:
    """Read a `.gs` file, then parse, check and plan it as `compile_string` does. No GPU needed.

    Args:
        path: the schedule file.
        target: overrides the schedule's `target` line (see `compile_string`).
        verify: check the IR's invariants after every pass (see `compile_string`).

    Returns:
        The planned program: `prog["name"]` is a kernel or a group.

    Raises:
        GemmcError: the file cannot be read, or the schedule has errors (rendered with the file's name and line).
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise GemmcError(f"cannot read {path}: {err.strerror}") from None
    return compile_string(text, filename=str(path), target=target, verify=verify)
