"""Closed sets of the IR: element types, layouts, algorithms, kernel families, batching modes."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class DType(Enum):
    F32 = "f32"
    F64 = "f64"
    F16 = "f16"
    BF16 = "bf16"
    TF32 = "tf32"  # a compute type only (precision tf32, split tf32 x3), never a storage type

    @property
    def nbytes(self) -> int:
        return {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "tf32": 4}[self.value]

    @property
    def ctype(self) -> str:
        """The C type that holds one element in memory."""
        return {"f32": "float", "f64": "double", "f16": "__half", "bf16": "__nv_bfloat16", "tf32": "float"}[
            self.value
        ]


STORAGE_DTYPES = (DType.F32, DType.F64, DType.F16, DType.BF16)


class Layout(Enum):
    ROW = "row"
    COL = "col"


class Algorithm(Enum):
    """What the schedule asked for; `auto` leaves the choice to the select_family pass."""

    AUTO = "auto"
    SIMT = "simt"
    TENSORCORE = "tensorcore"
    TSM2R = "tsm2r"
    TSM2L = "tsm2l"


class Family(Enum):
    """A kernel family: one template in templates/, one context builder in gemmc/codegen/."""

    SIMT = "simt"
    TENSORCORE = "tensorcore"
    TSM2R = "tsm2r"
    TSM2L = "tsm2l"


class Batching(Enum):
    AUTO = "auto"
    NONE = "none"
    THRESHOLD = "threshold"
    BINARY = "binary"


class TileMode(Enum):
    """How `tile auto` chooses: by the model, or forced to one planner (paper 000 or paper 003)."""

    AUTO = "auto"
    UNIFORM = "uniform"
    LOADBALANCED = "loadbalanced"
    COORDINATED = "coordinated"


@dataclass(frozen=True, slots=True)
class Span:
    """Where a node came from in the schedule text. Equality ignores spans (see `field(compare=False)`)."""

    line: int
    column: int
    end_column: int | None = None


NO_SPAN = Span(0, 0)


def span_field(default: Span = NO_SPAN) -> Span:
    return field(default=default, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Precision:
    """How products are computed.

    `compute` is the type the multiply runs in (f32, f64, tf32, f16, bf16). `terms` is 1 for a single pass
    and 3, 4 or 6 for a split (paper 001); `method` names the split (le, ootomo, markidis) or is None.
    """

    compute: DType
    terms: int = 1
    method: str | None = None

    @property
    def is_split(self) -> bool:
        return self.terms > 1

    def __str__(self) -> str:
        if not self.is_split:
            return self.compute.value
        text = f"split {self.compute.value} x{self.terms}"
        return f"{text} method {self.method}" if self.method else text
