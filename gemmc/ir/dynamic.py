"""A batch sized at run time: what a `grouped` statement declares.

Three forms. The sizes of the grouped dimension (or, for the list form, every size) arrive with each call, on the
device; the schedule fixes the rest and bounds the count:

- `grouped M`: the contiguous grouped form of mixture-of-experts layers. A stacks the rows of every group
  (rows x K), B holds one K x N matrix per group, C is rows x N; a device array of cumulative group ends (int32)
  says which rows belong to which group.
- `grouped K`: the weight-gradient form, grouped along the reduction: C_g (M x N) = A_g (M x K_g) @ B_g (K_g x N),
  A is M x rows and B rows x N with the rows split by the same kind of ends, C is groups x M x N.
- `grouped list`: independent problems of any sizes, new ones every call (cuBLAS's grouped GEMM).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from gemmc.ir.types import Span, span_field

INT32_MAX = 2**31 - 1


class Grouping(Enum):
    M = "M"  # rows of A and C split into groups (MoE forward)
    K = "K"  # the reduction split into groups (weight gradient)
    LIST = "list"  # independent problems of any sizes

    @property
    def fixed(self) -> tuple[str, ...]:
        """The dimensions the schedule fixes."""
        return {"M": ("n", "k"), "K": ("m", "n"), "list": ()}[self.value]


@dataclass(frozen=True, slots=True)
class DynamicBatch:
    """The declaration: the grouped dimension, the fixed ones (0 where not fixed), the bound on the number of
    groups (problems, for the list form) and on the rows of A and C (`rows`; INT32_MAX when not given: the ends
    are int32)."""

    grouping: Grouping
    m: int = 0
    n: int = 0
    k: int = 0
    max_groups: int = 1
    max_rows: int = INT32_MAX
    span: Span = span_field()

    @property
    def rows_declared(self) -> bool:
        return self.max_rows != INT32_MAX

    def __str__(self) -> str:
        if self.grouping is Grouping.LIST:
            return f"grouped list of up to {self.max_groups} problems"
        fixed = "  ".join(f"{d} {getattr(self, d)}" for d in self.grouping.fixed)
        rows = f", up to {self.max_rows} rows" if self.rows_declared else ""
        return f"grouped {self.grouping.value}  {fixed}  (up to {self.max_groups} groups{rows})"
