"""Which f32 kernels with tensor-core products leave this family's loop for the hopper family's TMA + wgmma loop
(sm_90a): one GEMM, in tf32 or split tf32 x3 where TMA can describe its operands (TMA reads the f32 tiles as they
are and the consumers form the tf32 parts from one load), or in an f16/bf16 split (`split f16 x3`, `split bf16
x3`, ...) with any strides (this family's pre-pass writes the parts as aligned planes, which TMA streams as half
data). Everything else stays here, and `inspect` says why."""

from __future__ import annotations

from gemmc.families.tma_loop import TMA_ALIGN
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import AUTO, DType, Layout

TERMS = (1, 3)  # tf32 one pass and split tf32 x3
HOPPER = "hopper"  # the family that runs the loop, which a schedule may also name


def candidate(kernel: Kernel, hw: Hardware) -> bool:
    """f32 data with tensor-core products on target cuda sm_90: the kernels the Hopper loop may take."""
    prec = kernel.precision
    return (hw.vendor == "cuda" and hw.arch == "sm_90" and kernel.dtype is DType.F32 and prec is not None
            and prec.tensor_core)


def blocker(kernel: Kernel, hw: Hardware) -> str | None:
    """None where the Hopper loop computes this kernel; otherwise why this family's loop does."""
    if not candidate(kernel, hw):
        return "not f32 data with tensor-core products on target cuda sm_90"
    prec = kernel.precision
    assert prec is not None
    planes = prec.is_split and prec.compute in (DType.F16, DType.BF16)
    if not planes and (prec.compute is not DType.TF32 or prec.terms not in TERMS):
        return f"precision {prec}: the Hopper loop takes tf32, split tf32 x3 and the f16/bf16 splits so far"
    if kernel.algorithm not in (AUTO, HOPPER):
        return f"algorithm {kernel.algorithm} in the schedule"
    if kernel.count is not None or len(kernel.problems) != 1:
        return "a batch: the Hopper loop runs one GEMM per kernel so far"
    if kernel.tile is not None or kernel.threads is not None:
        return "the schedule's tile or threads are this family's"
    if planes:
        return None  # the pre-pass reads any strides and writes planes TMA can describe
    p = kernel.problems[0]
    lines = {"A": p.k if kernel.layout_a is Layout.ROW else p.m, "B": p.n if kernel.layout_b is Layout.ROW else p.k}
    odd = [f"{op} ({ld} f32 per line)" for op, ld in lines.items() if (4 * ld) % TMA_ALIGN]
    if odd:
        return f"the lines of {' and '.join(odd)} are not 16-byte multiples, which TMA cannot describe"
    return None


def note(kernel: Kernel, hw: Hardware) -> str:
    """The inspect line of a candidate kernel that stays in this family ('' for any other kernel)."""
    why = blocker(kernel, hw)
    return f"not the Hopper TMA loop: {why}" if why and candidate(kernel, hw) else ""
