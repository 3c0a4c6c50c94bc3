"""The Python API: compile a schedule (no GPU needed), inspect what was decided, call kernels on a GPU.

A program's kernels are `CompiledKernel`s (gemmc/api_kernel.py) and its groups `CompiledGroup`s (gemmc/api_group.py),
each in a module of its own: a group holds kernels, and the program both."""

from __future__ import annotations

import codecs
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gemmc.api_group import CompiledGroup
from gemmc.api_kernel import CompiledKernel
from gemmc.concurrent.plan import plan_groups
from gemmc.errors import Diagnostic, GemmcError, PerformanceWarning, caller_level, printable, source_lines
from gemmc.families.registry import NAMES
from gemmc.grammar.lower import lower
from gemmc.grammar.parser import parse
from gemmc.ir.hardware import Hardware
from gemmc.ir.program import Program
from gemmc.ir.types import Span
from gemmc.passes import run_pipeline

__all__ = ["CompiledGroup", "CompiledKernel", "CompiledProgram", "compile_file", "compile_string", "front_end",
           "slower_path"]


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
    compiled = CompiledProgram(plan_groups(program), text, seconds)
    for item in (*compiled, *compiled.groups):
        note = slower_path(item)
        if note is not None:
            warnings.warn(f"{note[0]}: {note[1]}", PerformanceWarning, stacklevel=caller_level())
    return compiled


def slower_path(item: CompiledKernel | CompiledGroup) -> tuple[str, str] | None:
    """(`file:line:col`, what) where a statement keeps a kernel off the family it would otherwise run with (a bf16
    GEMM kept off the tensor cores), or a `concurrency fused` group's members run on streams instead; else None. What
    `gemmc compile` notes and the Python API warns (PerformanceWarning)."""
    if isinstance(item, CompiledGroup):
        plan = item.group_plan
        if not plan.fallback:
            return None
        at = plan.fallback_span
        return (f"{printable(item.filename)}:{at.line}:{at.column}",
                f"group {item.name} runs on streams, not fused: {plan.fallback}")
    if not item.ir.declined:
        return None
    at = item.ir.declined_span
    return (f"{printable(item.filename)}:{at.line}:{at.column}",
            f"kernel {item.name} runs with the {item.ir.family} family, {item.ir.declined}")


def read_schedule(path: str | Path) -> str:
    """The text of a schedule file: UTF-8 (a leading byte-order mark is dropped). A file that cannot be read, or
    bytes that are not UTF-8, raise GemmcError E103 (the latter at the line and column of the first bad byte)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise GemmcError(Diagnostic("E103", f"cannot read {printable(str(path))}: {err.strerror or err}")) from None
    return decode_schedule(data, str(path))


def decode_schedule(data: bytes, filename: str, fix: str = "save the file as UTF-8") -> str:
    """A schedule's bytes as text: UTF-8 (a leading byte-order mark is dropped); bytes that are not UTF-8 raise
    GemmcError E103 at the line and column of the first bad one, `filename` naming where they came from and `fix`
    the hint."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        start = err.start + (3 if data.startswith(codecs.BOM_UTF8) else 0)
        lines = source_lines(data[:start].decode("utf-8-sig"))  # valid up to the first bad byte
        line, column = len(lines), len(lines[-1]) + 1
        text = data.decode("utf-8-sig", errors="replace")
        raise GemmcError(Diagnostic("E103", f"the schedule is not UTF-8 text (byte 0x{data[start]:02x})",
                                    Span(line, column), fix),
                         filename=filename, source=text) from None


def compile_file(path: str | Path, *, target: str | None = None, verify: bool = False) -> CompiledProgram:
    """Read a `.gs` file, then parse, check and plan it as `compile_string` does. No GPU needed.

    Args:
        path: the schedule file.
        target: overrides the schedule's `target` line (see `compile_string`).
        verify: check the IR's invariants after every pass (see `compile_string`).

    Returns:
        The planned program: `prog["name"]` is a kernel or a group.

    Raises:
        GemmcError: the file cannot be read or is not UTF-8 (E103), or the schedule has errors (rendered with
            the file's name and line).
    """
    text = read_schedule(path)
    return compile_string(text, filename=str(path), target=target, verify=verify)
