"""Which f32 kernels with tensor-core products leave this family's loop for the hopper family's TMA + wgmma loop
(sm_90a): one GEMM whose operands TMA can describe, in tf32 or split tf32 x3. TMA reads f32 tiles as they are and
the consumers form the tf32 parts from one load (families/hopper), instead of this family's pre-pass writing the
parts to scratch for a cp.async loop. Everything else stays here, and `inspect` says why."""

from __future__ import annotations

from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import AUTO, DType, Layout

TMA_ALIGN = 16  # bytes: TMA reads lines (global strides) at 16-byte multiples
TERMS = (1, 3)  # tf32 one pass and split tf32 x3


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
    if prec.compute is not DType.TF32 or prec.terms not in TERMS:
        return f"precision {prec}: the Hopper loop takes tf32 and split tf32 x3 so far"
    if kernel.algorithm != AUTO:
        return f"algorithm {kernel.algorithm} in the schedule"
    if kernel.count is not None or len(kernel.problems) != 1:
        return "a batch: the Hopper loop runs one GEMM per kernel so far"
    if kernel.tile is not None or kernel.threads is not None:
        return "the schedule's tile or threads are this family's"
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
