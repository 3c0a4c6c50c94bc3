"""Closed sets of the IR: element types, layouts, batching modes, precisions. Kernel families are an open set: a
kernel names its family (and `algorithm`) by the name it is registered under in gemmc/families."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from gemmc.span import NO_SPAN, Span, span_field  # noqa: F401  (re-exported: the IR's nodes carry spans)


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
        """The CUDA C type that holds one element in memory."""
        return self.ctype_for("cuda")

    def ctype_for(self, vendor: str) -> str:
        """The C type that holds one element in memory in CUDA or HIP code (hip_bfloat16 and _Float16 on HIP)."""
        if vendor == "hip" and self in (DType.F16, DType.BF16):
            return "_Float16" if self is DType.F16 else "hip_bfloat16"
        return {"f32": "float", "f64": "double", "f16": "__half", "bf16": "__nv_bfloat16", "tf32": "float"}[
            self.value
        ]

    @property
    def half(self) -> bool:
        """A 16-bit storage type (f16, bf16)."""
        return self in (DType.F16, DType.BF16)

    @property
    def widened(self) -> DType:
        """The type the CUDA-core families (SIMT, TSM2R, TSM2L) hold values in, in registers and shared memory: f32
        for 16-bit storage (converted as it is loaded; a product of two halves is exact in f32, so f32 FMAs compute
        what a tensor core's f32-accumulated half products do), the storage type otherwise."""
        return DType.F32 if self.half else self


STORAGE_DTYPES = (DType.F32, DType.F64, DType.F16, DType.BF16)


class Layout(Enum):
    ROW = "row"
    COL = "col"


AUTO = "auto"  # `algorithm auto`: the select_family pass chooses among the registered kernel families


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

    @property
    def tensor_core(self) -> bool:
        """The products run on tensor cores: a compute type other than f32 and f64 (f16, bf16, tf32, any split)."""
        return self.compute not in (DType.F32, DType.F64)

    def __str__(self) -> str:
        if not self.is_split:
            return self.compute.value
        text = f"split {self.compute.value} x{self.terms}"
        return f"{text} method {self.method}" if self.method else text


# Splits that exist (paper 001 and its successors): (compute type, terms) -> methods, the first the default.
SPLITS: dict[tuple[DType, int], tuple[str | None, ...]] = {
    (DType.F16, 3): ("ootomo", "le"),
    (DType.F16, 4): ("markidis",),
    (DType.BF16, 3): (None,),
    (DType.BF16, 6): (None,),
    (DType.TF32, 3): (None,),
}


def counted(n: int, noun: str) -> str:
    """`n` and `noun`, plural where n is not 1: "1 GEMM", "4 problems"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
