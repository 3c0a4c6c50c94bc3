"""The Python API: compile a schedule (no GPU needed), inspect what was decided, call kernels on a GPU.

A program's kernels are `CompiledKernel`s (gemmc/api_kernel.py) and its groups `CompiledGroup`s (gemmc/api_group.py),
each in a module of its own: a group holds kernels, and the program both."""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gemmc.api_group import CompiledGroup
from gemmc.api_kernel import CompiledKernel
from gemmc.concurrent.plan import plan_groups
from gemmc.errors import Diagnostic, GemmcError, printable, source_lines
from gemmc.families.registry import NAMES
from gemmc.grammar.lower import lower
from gemmc.grammar.parser import parse
from gemmc.ir.hardware import Hardware
from gemmc.ir.program import Program
from gemmc.ir.types import Span
from gemmc.passes import run_pipeline

__all__ = ["CompiledGroup", "CompiledKernel", "CompiledProgram", "compile_file", "compile_string", "front_end"]


class CompiledProgram:
    """All kernels of one schedule file, planned for one target."""

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
        return self.ir.target

    def __getitem__(self, name: str) -> Any:
        """The kernel or the group (`CompiledGroup`) called `name`."""
        if name in self._groups:
            return self._groups[name]
        try:
            return self._kernels[name]
        except KeyError:
            raise GemmcError(f"no kernel or group named '{name}'; this schedule defines: "
                             + ", ".join([*self._kernels, *self._groups])) from None

    @property
    def groups(self) -> tuple[CompiledGroup, ...]:
        return tuple(self._groups.values())

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


def compile_string(text: str, *, filename: str = "<string>", target: str | None = None,
                   verify: bool = False) -> CompiledProgram:
    """Parse, check and plan every kernel of a schedule. Raises GemmcError on a bad schedule. No GPU needed.
    `verify` checks the IR's invariants after every pass (gemmc/passes/verify.py; InternalError: a gemmc bug)."""
    seconds: dict[str, float] = {}
    program = run_pipeline(front_end(text, filename=filename, target=target), source=text, timings=seconds,
                           verify=verify)
    return CompiledProgram(plan_groups(program), text, seconds)


def read_schedule(path: str | Path) -> str:
    """The text of a schedule file: UTF-8 (a leading byte-order mark is dropped). A file that cannot be read, or
    bytes that are not UTF-8, raise GemmcError E103 (the latter at the line and column of the first bad byte)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise GemmcError(Diagnostic("E103", f"cannot read {printable(str(path))}: {err.strerror or err}")) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        start = err.start + (3 if data.startswith(codecs.BOM_UTF8) else 0)
        lines = source_lines(data[:start].decode("utf-8-sig"))  # valid up to the first bad byte
        line, column = len(lines), len(lines[-1]) + 1
        text = data.decode("utf-8-sig", errors="replace")
        raise GemmcError(Diagnostic("E103", f"the schedule is not UTF-8 text (byte 0x{data[start]:02x})",
                                    Span(line, column), "save the file as UTF-8"),
                         filename=str(path), source=text) from None


def compile_file(path: str | Path, *, target: str | None = None, verify: bool = False) -> CompiledProgram:
    text = read_schedule(path)
    return compile_string(text, filename=str(path), target=target, verify=verify)
