"""The precision-splitting pass: `precision split T xN [method M]` -> parts, terms, scales, rounding, accumulators.

Pure function of the kernel's (normalized) precision; the tensor-core planner stores the result in its plan and
the template renders it. The numpy emulator (gemmc/families/tensorcore/emulate.py) reads the same `SplitPlan`, so CPU
tests check exactly what the kernel computes.
"""

from __future__ import annotations

from gemmc.families.tensorcore import calibration as cal
from gemmc.families.tensorcore.plan import SplitPlan, SplitTerm
from gemmc.ir.types import DType, Precision

# The default method of `split f16 x3`: Ootomo's round-to-nearest split, measured more accurate than paper 001's
# truncating split (calibration.py).
DEFAULT_F16X3 = cal.DEFAULT_F16X3.value


def _terms(pairs: tuple[tuple[int, int], ...], separate_main: bool) -> tuple[SplitTerm, ...]:
    """Products in the order given; the main hi*hi product in accumulator 0, the rest in accumulator 1 (when
    `separate_main`), else everything in accumulator 0."""
    return tuple(SplitTerm(a, b, 1 if separate_main and (a, b) != (0, 0) else 0) for a, b in pairs)


def split_plan(precision: Precision) -> SplitPlan:
    """The parts and products of one precision. Raises KeyError for a split `check` does not accept.

    - f16 x3 le: paper 001 §3 (Eqs. 5-11): hi = truncation, lo = RZ((a - hi) * 2^10), hi*hi + (hi*lo + lo*hi)
      with the cross terms in their own accumulator, combined once: acc0 + acc1 / 2^10.
    - f16 x3 ootomo: hi = RN, lo = RN((a - hi) * 2^11), same three products and accumulators.
    - f16 x4 markidis: hi = RN, lo = RN(a - hi) unscaled (small residuals underflow f16), four products, one
      accumulator.
    - bf16 x3: hi, lo RN (bf16 has the f32 exponent range: no scale); bf16 x6: hi, mid, lo and the six
      products of level <= 2. tf32 x3: hi, lo with cvt.rna, three products.
    """
    c = precision.compute
    if not precision.is_split:
        return SplitPlan(c.value, 1, (SplitTerm(0, 0, 0),), 0, "rna" if c is DType.TF32 else "rn", "rn", 1, (0,),
                         c is DType.F16, "")
    three = ((0, 0), (0, 1), (1, 0))
    method = precision.method or (DEFAULT_F16X3 if (c, precision.terms) == (DType.F16, 3) else None)
    key = (c, precision.terms, method)
    if key == (DType.F16, 3, "le"):
        return SplitPlan("f16", 2, _terms(three, True), 10, "rz", "rz", 2, (0, 1), True, "le")
    if key == (DType.F16, 3, "ootomo"):
        return SplitPlan("f16", 2, _terms(three, True), 11, "rn", "rn", 2, (0, 1), True, "ootomo")
    if key == (DType.F16, 4, "markidis"):
        return SplitPlan("f16", 2, _terms((*three, (1, 1)), False), 0, "rn", "rn", 1, (0,), True, "markidis")
    if key == (DType.BF16, 3, None):
        return SplitPlan("bf16", 2, _terms(three, True), 0, "rn", "rn", 2, (0, 1), False, "")
    if key == (DType.BF16, 6, None):
        six = (*three, (0, 2), (1, 1), (2, 0))
        return SplitPlan("bf16", 3, _terms(six, True), 0, "rn", "rn", 2, (0, 1), False, "")
    if key == (DType.TF32, 3, None):
        return SplitPlan("tf32", 2, _terms(three, True), 0, "rna", "rna", 2, (0, 1), False, "")
    raise KeyError(f"no split {precision}")
