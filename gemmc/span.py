"""Where a piece of the IR came from in the schedule text. The lowest module: the errors and the IR both use
it, so neither imports the other for it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Span:
    """Where a node came from in the schedule text. Equality ignores spans (see `field(compare=False)`)."""

    line: int
    column: int
    end_column: int | None = None


NO_SPAN = Span(0, 0)


def span_field() -> Span:
    return field(default=NO_SPAN, compare=False, repr=False)
