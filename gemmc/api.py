"""The Python API: compile a schedule (no GPU needed), inspect what was decided, call kernels on a GPU."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from gemmc.codegen import Rendered, render_kernel
from gemmc.errors import GemmcError
from gemmc.families.registry import NAMES
from gemmc.grammar.lower import lower
from gemmc.grammar.parser import parse
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import FamilyPlan, Kernel, Problem, Program
from gemmc.ir.printer import format_kernel
from gemmc.passes import run_pipeline

REPLAN_CACHE = 64  # plans kept per kernel for batches whose sizes differ from the schedule's


class CompiledKernel:
    """One planned kernel: its source, its plan, and (on a GPU) a callable."""

    def __init__(self, ir: Kernel, target: Hardware, filename: str, planner_seconds: float = 0.0):
        self.ir = ir
        self.target = target
        self.filename = filename
        self.planner_seconds = planner_seconds  # host time the passes took for this plan (paper 000 Fig. 7)
        self._runtime_state: dict[str, Any] = {}  # compiled modules and uploaded tables, owned by gemmc.runtime
        self._replans: dict[tuple[tuple[int, int, int], ...], CompiledKernel] = {}

    @property
    def name(self) -> str:
        return self.ir.name

    @cached_property
    def rendered(self) -> Rendered:
        return render_kernel(self.ir, self.target, self.filename)

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
        arrays in that order (`order` maps sorted position -> call position), so any permutation of a batch
        reuses one plan. The planner's own cost is in `.planner_seconds`."""
        ordered = tuple(sorted((int(m), int(n), int(k)) for m, n, k in shapes))
        cached = self._replans.get(ordered)
        if cached is not None:
            return cached
        problems = tuple(Problem(f"p{i}", m, n, k) for i, (m, n, k) in enumerate(ordered))
        fresh = dataclasses.replace(self.ir, problems=problems, count=None, family=None, plan=None, work=None,
                                    notes=())
        start = time.perf_counter()
        program = run_pipeline(Program(self.target, (fresh,), self.filename))
        kernel = CompiledKernel(program.kernels[0], self.target, self.filename, time.perf_counter() - start)
        if len(self._replans) >= REPLAN_CACHE:
            self._replans.pop(next(iter(self._replans)))
        self._replans[ordered] = kernel
        return kernel

    def with_plan(self, plan: FamilyPlan, label: str = "<plan>") -> CompiledKernel:
        """These problems under another plan of the same family (a shape the planner would not pick by itself),
        the work list rebuilt by the pipeline's own pass: how tests, ablations and experiments run such a plan."""
        from gemmc.passes import build_worklist

        if type(plan) is not type(self.ir.plan):
            family = self.ir.family or "none"
            raise TypeError(f"with_plan: plan is a {type(plan).__name__}; kernel {self.name!r} (family {family}) "
                            f"takes a {type(self.ir.plan).__name__}")
        ir = build_worklist(dataclasses.replace(self.ir, plan=plan), self.target)
        return CompiledKernel(ir, self.target, label)

    def occupancy(self) -> Any:
        """Resident blocks and warps per SM of the compiled kernel on the current device (paper 000 Eqs. 5-9 in
        CUDA terms): the registers are the compiled kernel's `num_regs`, the limits the device's own; offline,
        `inspect` shows the same model with estimated registers and the target table. Needs a GPU."""
        from gemmc.model.tlp import occupancy
        from gemmc.runtime.device import hardware
        from gemmc.runtime.launch import kernel_function

        work = self.ir.work
        assert work is not None
        return occupancy(hardware(), work.block, kernel_function(self).num_regs, work.smem_bytes)

    @property
    def tuning(self) -> Any:
        """What the first call's tuning step measured on this GPU (`gemmc.runtime.tune.Tuning`: each candidate's
        time, the one kept, how far the model's choice was from it), or None: nothing tuned (yet)."""
        return self._runtime_state.get("tuning")

    def __call__(self, As: Any, Bs: Any, Cs: Any, *, alpha: float | None = None, beta: float | None = None,
                 stream: Any = None, offsets: Any = None, validate: bool = False) -> None:
        """C_i = alpha * A_i @ B_i + beta * C_i for every problem i, in one launch on the current CuPy stream.

        As, Bs, Cs: sequences of 2-D device arrays in batch order (3-D arrays for a `count` batch), CuPy arrays or
        anything with __cuda_array_interface__ or DLPack. `alpha`/`beta` are required when the schedule says
        `runtime` and refused otherwise. A list batch whose sizes differ from the schedule's is re-planned on the
        host (`plan_for`, cached). Where the planner offers alternatives to its model's choice (TSM2R's cluster
        sizes), the first call times them and keeps the fastest (`tuning`; GEMMC_TUNE=0 turns it off).

        A batch sized at run time (`grouped`; gemmc/runtime/dynamic.py) takes one A, B and C and
        the cumulative group ends on the device (`offsets`, int32), or lists of arrays of any sizes; it never
        synchronises, compiles or plans after its first call. `validate=True` checks the ends on the device first
        (a synchronisation) and raises a GemmcError naming the first bad group. `stream`: a CuPy or torch stream or a
        raw handle; by default torch's current stream for torch tensors."""
        if self.ir.dynamic is not None:
            from gemmc.runtime.dynamic import launch_dynamic

            launch_dynamic(self, As, Bs, Cs, offsets=offsets, alpha=alpha, beta=beta, stream=stream, validate=validate)
            return
        if offsets is not None or validate:
            raise GemmcError(f"offsets, validate: kernel '{self.name}' has a batch fixed in its schedule; group ends "
                             "belong to a `grouped` kernel")
        from gemmc.runtime.launch import launch  # lazy: CuPy is only needed here

        launch(self, As, Bs, Cs, alpha=alpha, beta=beta, stream=stream)

    def __repr__(self) -> str:
        return f"<gemmc kernel {self.name}: {self.ir.family or '?'}, " \
               f"{self.ir.batch_size} problem(s)>"


class CompiledProgram:
    """All kernels of one schedule file, planned for one target."""

    def __init__(self, ir: Program, source: str, planner_seconds: dict[str, float] | None = None):
        self.ir = ir
        self.text = source
        seconds = planner_seconds or {}
        self._kernels = {k.name: CompiledKernel(k, ir.target, ir.filename, seconds.get(k.name, 0.0))
                         for k in ir.kernels}

    @property
    def target(self) -> Hardware:
        return self.ir.target

    def __getitem__(self, name: str) -> CompiledKernel:
        try:
            return self._kernels[name]
        except KeyError:
            raise GemmcError(f"no kernel named '{name}'; this schedule defines: "
                             + ", ".join(self._kernels)) from None

    def __iter__(self) -> Iterator[CompiledKernel]:
        return iter(self._kernels.values())

    def __len__(self) -> int:
        return len(self._kernels)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._kernels)


def front_end(text: str, *, filename: str = "<string>", target: str | None = None) -> Program:
    """Parse and lower, without running any pass."""
    return lower(parse(text, filename), algorithms=NAMES, filename=filename, source=text, target=target)


def compile_string(text: str, *, filename: str = "<string>", target: str | None = None) -> CompiledProgram:
    """Parse, check and plan every kernel of a schedule. Raises GemmcError on a bad schedule. No GPU needed."""
    seconds: dict[str, float] = {}
    program = run_pipeline(front_end(text, filename=filename, target=target), source=text, timings=seconds)
    return CompiledProgram(program, text, seconds)


def compile_file(path: str | Path, *, target: str | None = None) -> CompiledProgram:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise GemmcError(f"cannot read {path}: {err.strerror}") from None
    return compile_string(text, filename=str(path), target=target)
