"""One error family. A `Diagnostic` points at a schedule line; a `GemmcError` carries one or more of them.

Rendered form (what the CLI prints):

    examples/bad.gs:7:9: error[E201]: tile 256x256x32 needs 131072 bytes of shared memory; sm_90 allows 232448
        tile 256x256x32
             ^
    hint: ...
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from dataclasses import dataclass, replace
from types import FrameType

from gemmc.span import NO_SPAN, Span

# Stable codes. E1xx: syntax; E2xx: meaning of the schedule; E3xx: hardware limits; E4xx: launch arguments;
# E9xx: not supported yet. Tests and users match on these, so a code never changes meaning.
CODES = {
    "E100": "syntax error",
    "E101": "unknown keyword",
    "E102": "bad number",
    "E103": "unreadable schedule",
    "E200": "duplicate name",
    "E201": "bad size",
    "E202": "bad combination",
    "E203": "unknown target",
    "E204": "bad value",
    "E205": "out of range",
    "E206": "reserved name",
    "E300": "shared memory",
    "E301": "threads",
    "E302": "registers",
    "E303": "target and GPU differ",
    "E304": "grid",
    "E400": "bad argument",
    "E401": "no GPU",
    "E900": "not supported yet",
}


# The line breaks of a schedule: the parser counts lines by exactly these (parser.py turns \r\n and \r into \n
# first), so the rendered line is the one a span's line number means. Form feeds, vertical tabs and U+2028 are
# whitespace inside a line.
LINE_BREAK = re.compile(r"\r\n|\r|\n")
TAB_WIDTH = 8


def source_lines(source: str) -> list[str]:
    return LINE_BREAK.split(source)


def printable(text: str) -> str:
    """`text` with every control or format character (a newline, an escape, U+2028) written as its Python escape,
    so that a file name shows on one line and cannot drive the terminal."""
    return "".join(c.encode("unicode_escape").decode("ascii") if _invisible(c) else c for c in text)


def _invisible(c: str) -> bool:
    return unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def _cells(c: str, at: int) -> tuple[str, int]:
    """How character `c` shows at display column `at` (0-based): its text and its width in columns."""
    if c == "\t":
        width = TAB_WIDTH - at % TAB_WIDTH
        return " " * width, width
    if _invisible(c):
        return " ", 1  # one column, as the parser counts it
    if unicodedata.combining(c):
        return c, 0
    return c, 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1


def caret_line(text: str, column: int, end_column: int | None) -> tuple[str, str]:
    """The source line as displayed (tabs expanded, invisible characters as spaces) and a caret line under the
    characters [column, end_column) (1-based, in characters as the parser counts them; at least one caret)."""
    shown: list[str] = []
    starts: list[int] = []  # display column where each character starts
    at = 0
    for c in text:
        starts.append(at)
        cell, width = _cells(c, at)
        shown.append(cell)
        at += width

    def display(col: int) -> int:  # 0-based character index -> display column; past the end, one per character
        return starts[col] if col < len(starts) else at + col - len(starts)

    first = display(column - 1)
    last = display((end_column or column + 1) - 1)
    return "".join(shown), " " * first + "^" * max(1, last - first)


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem: a stable code (`E101`, ...; the language reference lists them), a message, where it is in the
    schedule (`span`: line and column) and an optional hint."""

    code: str
    message: str
    span: Span = NO_SPAN
    hint: str | None = None

    def render(self, filename: str, source: str | None) -> str:
        head = f"{printable(filename)}:{self.span.line}:{self.span.column}: error[{self.code}]: {self.message}"
        lines = [head]
        if source is not None and self.span.line > 0:
            text_lines = source_lines(source)
            if self.span.line <= len(text_lines):
                text, carets = caret_line(text_lines[self.span.line - 1], self.span.column, self.span.end_column)
                lines.append(f"    {text}")
                lines.append(f"    {carets}")
        if self.hint:
            lines.append(f"hint: {self.hint}")
        return "\n".join(lines)


class GemmcError(Exception):
    """A problem in a schedule or in a kernel's arguments, reported to the user (not a gemmc bug).

    Raised by `compile_file` / `compile_string` for a bad schedule (every problem found, not just the first) and by
    a kernel call for a bad argument, before anything is launched. `str(err)` is the compiler-style rendering the
    CLI prints, with the schedule line and a caret:

        bad.gs:3:3: error[E101]: unknown statement 'tiles'
            tiles 64x64x8
            ^^^^^
        hint: did you mean 'tile'?

    Attributes:
        diagnostics: every problem found, as `Diagnostic`s (code, message, span, hint).
        code: the first problem's code; codes never change meaning, so a program may match on them.
        filename: the schedule's file name (`<string>` for `compile_string` without one).
    """

    def __init__(self, diagnostics: Diagnostic | list[Diagnostic] | tuple[Diagnostic, ...] | str,
                 *, filename: str = "<string>", source: str | None = None, code: str = "E400"):
        if isinstance(diagnostics, str):
            diagnostics = [Diagnostic(code, diagnostics)]
        elif isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics = tuple(diagnostics)
        self.filename = filename
        self.source = source
        super().__init__(self.render())

    @property
    def code(self) -> str:
        return self.diagnostics[0].code

    def render(self) -> str:
        if all(d.span == NO_SPAN for d in self.diagnostics) and self.filename == "<string>":
            return "\n".join(f"error[{d.code}]: {d.message}" + (f"\nhint: {d.hint}" if d.hint else "")
                             for d in self.diagnostics)
        return "\n".join(d.render(self.filename, self.source) for d in self.diagnostics)

    def __str__(self) -> str:
        return self.render()

    def at(self, span: Span) -> GemmcError:
        """This error with every diagnostic that has no position pointed at `span` (a check that knows the numbers
        but not the schedule line, reported by the caller that knows the line)."""
        diags = [replace(d, span=span) if d.span == NO_SPAN else d for d in self.diagnostics]
        return GemmcError(diags, filename=self.filename, source=self.source)


class NoGpuError(GemmcError):
    """Running a kernel needs CuPy and a GPU, and there is none (E401). The CLI exits 3."""

    def __init__(self, message: str):
        super().__init__(Diagnostic("E401", message))


class InternalError(Exception):
    """A broken invariant inside gemmc: a bug in gemmc, never the user's fault. The CLI exits 70."""

    def __init__(self, where: str, message: str):
        super().__init__(f"internal error in {where}: {message}")
        self.where = where


class PerformanceWarning(UserWarning):
    """A schedule compiles, but a statement keeps a kernel off the fast path it would otherwise take (a bf16 GEMM
    kept off the tensor cores, a `concurrency fused` group run on streams): `compile_string` and `compile_file` warn
    with the statement's line, as `gemmc compile` notes it."""


def caller_level() -> int:
    """warnings.warn's stacklevel, for the function that calls this one, of the first frame outside the gemmc package:
    the user's line, however many of gemmc's calls lie between."""
    root = os.path.dirname(os.path.abspath(__file__))
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(root + os.sep):
        frame, level = frame.f_back, level + 1
    return level
