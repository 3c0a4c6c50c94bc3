"""One error family. A `Diagnostic` points at a schedule line; a `GemmcError` carries one or more of them.

Rendered form (what the CLI prints):

    examples/bad.gs:7:9: error[E201]: tile 256x256x32 needs 131072 bytes of shared memory; sm_90 allows 232448
        tile 256x256x32
             ^
    hint: ...
"""

from __future__ import annotations

from dataclasses import dataclass

from gemmc.span import NO_SPAN, Span

# Stable codes. E1xx: syntax; E2xx: meaning of the schedule; E3xx: hardware limits; E4xx: launch arguments;
# E9xx: not supported yet. Tests and users match on these, so a code never changes meaning.
CODES = {
    "E100": "syntax error",
    "E101": "unknown keyword",
    "E102": "bad number",
    "E200": "duplicate name",
    "E201": "bad size",
    "E202": "bad combination",
    "E203": "unknown target",
    "E204": "bad value",
    "E300": "shared memory",
    "E301": "threads",
    "E302": "registers",
    "E303": "target and GPU differ",
    "E400": "bad argument",
    "E900": "not supported yet",
}


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem: a stable code (`E101`, ...; the language reference lists them), a message, where it is in the
    schedule (`span`: line and column) and an optional hint."""

    code: str
    message: str
    span: Span = NO_SPAN
    hint: str | None = None

    def render(self, filename: str, source: str | None) -> str:
        head = f"{filename}:{self.span.line}:{self.span.column}: error[{self.code}]: {self.message}"
        lines = [head]
        if source is not None and self.span.line > 0:
            text_lines = source.splitlines()
            if self.span.line <= len(text_lines):
                text = text_lines[self.span.line - 1]
                width = max(1, (self.span.end_column or self.span.column + 1) - self.span.column)
                lines.append(f"    {text}")
                lines.append("    " + " " * (self.span.column - 1) + "^" * width)
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


class InternalError(Exception):
    """A broken invariant inside gemmc: a bug in gemmc, never the user's fault. The CLI exits 70."""

    def __init__(self, where: str, message: str):
        super().__init__(f"internal error in {where}: {message}")
        self.where = where
