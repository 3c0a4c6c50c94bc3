"""The Python API: compile a schedule (no GPU needed), inspect what was decided, call kernels on a GPU."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

from gemmc.codegen import Rendered, render_kernel
from gemmc.errors import GemmcError
from gemmc.grammar.lower import lower
from gemmc.grammar.parser import parse
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel, Program
from gemmc.ir.printer import format_kernel
from gemmc.passes import run_pipeline


class CompiledKernel:
    """One planned kernel: its source, its plan, and (on a GPU) a callable."""

    def __init__(self, ir: Kernel, target: Hardware, filename: str):
        self.ir = ir
        self.target = target
        self.filename = filename
        self._runtime_state: dict[str, Any] = {}  # compiled modules and uploaded tables, owned by gemmc.runtime

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

    def __call__(self, As: Any, Bs: Any, Cs: Any, *, alpha: float | None = None, beta: float | None = None,
                 stream: Any = None) -> None:
        """C_i = alpha * A_i @ B_i + beta * C_i for every problem i, in one launch on the current CuPy stream.

        As, Bs, Cs: sequences of 2-D device arrays in batch order (3-D arrays for a `count` batch), CuPy arrays or
        anything with __cuda_array_interface__ or DLPack. `alpha`/`beta` are required when the schedule says
        `runtime` and refused otherwise."""
        from gemmc.runtime.launch import launch  # lazy: CuPy is only needed here

        launch(self, As, Bs, Cs, alpha=alpha, beta=beta, stream=stream)

    def __repr__(self) -> str:
        return f"<gemmc kernel {self.name}: {self.ir.family.value if self.ir.family else '?'}, " \
               f"{self.ir.batch_size} problem(s)>"


class CompiledProgram:
    """All kernels of one schedule file, planned for one target."""

    def __init__(self, ir: Program, source: str):
        self.ir = ir
        self.text = source
        self._kernels = {k.name: CompiledKernel(k, ir.target, ir.filename) for k in ir.kernels}

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
    return lower(parse(text, filename), filename=filename, source=text, target=target)


def compile_string(text: str, *, filename: str = "<string>", target: str | None = None) -> CompiledProgram:
    """Parse, check and plan every kernel of a schedule. Raises GemmcError on a bad schedule. No GPU needed."""
    program = run_pipeline(front_end(text, filename=filename, target=target), source=text)
    return CompiledProgram(program, text)


def compile_file(path: str | Path, *, target: str | None = None) -> CompiledProgram:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise GemmcError(f"cannot read {path}: {err.strerror}") from None
    return compile_string(text, filename=str(path), target=target)
