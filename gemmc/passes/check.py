"""The `check` pass: what the schedule's values mean together. Reports every problem, not just the first.

Requires: a lowered kernel (every value individually valid). Guarantees: dtype, precision, algorithm,
batching and tiling requests are a combination some family can build, on this target.
"""

from __future__ import annotations

from collections.abc import Callable

from gemmc.errors import Diagnostic, GemmcError
from gemmc.families.registry import FAMILIES
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import SPLITS, DType

# Features whose machinery has not landed yet: (statement, predicate, what to say). Each family's issue removes
# its rows as it lands, so a schedule that asks for them gets a clear E900 instead of a wrong kernel.
NotYet = tuple[str, Callable[[Kernel, Hardware], bool], str]
NOT_YET: tuple[NotYet, ...] = ()


def _describe(kernel: Kernel) -> dict[str, str]:
    return {"precision": str(kernel.precision), "dtype": kernel.dtype.value, "algorithm": kernel.algorithm,
            "batching": kernel.batching.value, "tile_mode": kernel.tile_mode.value}


def kernel_diagnostics(kernel: Kernel, hw: Hardware) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    prec = kernel.precision

    def err(code: str, stmt: str, message: str, hint: str | None = None) -> None:
        diags.append(Diagnostic(code, message, kernel.where(stmt), hint))

    if prec is not None:
        if prec.is_split:
            methods = SPLITS.get((prec.compute, prec.terms))
            if methods is None:
                err("E202", "precision", f"there is no {prec.compute.value} x{prec.terms} split",
                    "splits: " + ", ".join(f"split {t.value} x{n}" for t, n in SPLITS))
            elif prec.method is not None and prec.method not in methods:
                err("E202", "precision", f"split {prec.compute.value} x{prec.terms} has no method '{prec.method}'",
                    "methods: " + (", ".join(m for m in methods if m) or "none (leave `method` out)"))
            if kernel.dtype is not DType.F32:
                err("E202", "precision", f"a split emulates f32 products; dtype is {kernel.dtype.value}",
                    "use `dtype f32` with `precision split ...`")
        elif (prec.compute is DType.F64) != (kernel.dtype is DType.F64):
            err("E202", "precision", f"precision {prec.compute.value} does not go with dtype {kernel.dtype.value}",
                "f64 data computes in f64, and only f64 data does")
        elif kernel.dtype.half and prec.compute not in (kernel.dtype, DType.F32):
            err("E202", "precision", f"precision {prec.compute.value} does not go with dtype {kernel.dtype.value}",
                f"{kernel.dtype.value} data multiplies in {kernel.dtype.value} (leave `precision` out)")
    c_type = kernel.c_dtype
    if kernel.dtype.half and c_type not in (kernel.dtype, DType.F32):
        err("E202", "dtype", f"C cannot be {c_type.value} when A and B are {kernel.dtype.value}",
            f"C is {kernel.dtype.value} (the accumulators rounded) or f32 (as accumulated)")
    elif not kernel.dtype.half and c_type is not kernel.dtype:
        err("E202", "dtype", f"C cannot be {c_type.value} when A and B are {kernel.dtype.value}",
            f"{kernel.dtype.value} data writes C in {kernel.dtype.value}; a separate C type is for bf16/f16 A and B")
    if kernel.threads is not None:
        if kernel.threads % hw.warp_size:
            err("E301", "threads", f"threads {kernel.threads} is not a multiple of the warp size ({hw.warp_size})",
                f"use a multiple of {hw.warp_size}")
        if kernel.threads > hw.max_threads_per_block:
            err("E301", "threads", f"threads {kernel.threads} exceeds {hw.arch}'s limit of "
                f"{hw.max_threads_per_block} per block")
    if kernel.count is not None and kernel.count < 1:
        err("E201", "gemm", "count must be at least 1")
    described = _describe(kernel)
    for stmt, applies, message in NOT_YET:
        if applies(kernel, hw):
            err("E900", stmt, message.format(**described))
    for family in FAMILIES:  # the rules each family owns (its algorithm, its precisions, its knobs)
        diags.extend(family.check(kernel, hw))
    return diags


def check(kernel: Kernel, hw: Hardware) -> Kernel:
    """Raise GemmcError with every problem found; return the kernel unchanged when there are none."""
    diags = kernel_diagnostics(kernel, hw)
    if diags:
        raise GemmcError(diags)
    return kernel
