"""Bit-exact numpy emulator of the tensor-core splits (paper 001 §3, Ootomo & Yokota, Markidis; bf16/tf32).

It reads the same `SplitPlan` the template renders, so CPU tests check what the kernel computes: the parts are
rounded exactly as the device rounds them (cvt.rn/rz.f16.f32, cvt.rn.bf16.f32, cvt.rna.tf32.f32), the rows of A
and columns of B get the kernel's power-of-two scales, and products of parts are exact in float64 (a part has at
most 11 significant bits). Only the accumulation differs: float64 here, f32 on the device.
No CuPy: this module runs anywhere.
"""

from __future__ import annotations

import numpy as np

from gemmc.families.tensorcore.plan import F16_TOP, SplitPlan


def round_f16(x: np.ndarray, mode: str) -> np.ndarray:
    """f32 -> f16 -> float64. "rn": nearest even (numpy's cast); "rz": toward zero (cvt.rz: overflow gives
    the largest finite value, never inf)."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(over="ignore"):
        h = x.astype(np.float16)
    if mode == "rz":
        away = np.abs(h.astype(np.float32)) > np.abs(x)
        h = np.where(away, np.nextafter(h, np.float16(0)), h)
    elif mode != "rn":
        raise ValueError(f"f16 rounding {mode}")
    return h.astype(np.float64)


def round_bf16(x: np.ndarray, mode: str = "rn") -> np.ndarray:
    """f32 -> bf16 (nearest even, as cvt.rn.bf16.f32) -> float64."""
    if mode != "rn":
        raise ValueError(f"bf16 rounding {mode}")
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + np.uint64(0x7FFF) + ((bits >> np.uint64(16)) & np.uint64(1))) & np.uint64(0xFFFF0000)
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


def round_tf32(x: np.ndarray, mode: str = "rna") -> np.ndarray:
    """f32 -> tf32 (10 fraction bits, nearest with ties away from zero, as cvt.rna.tf32.f32) -> float64."""
    if mode != "rna":
        raise ValueError(f"tf32 rounding {mode}")
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + np.uint64(0x1000)) & np.uint64(0xFFFFE000)
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


def rounder(compute: str):
    return {"f16": round_f16, "bf16": round_bf16, "tf32": round_tf32}[compute]


def split(a: np.ndarray, plan: SplitPlan) -> list[np.ndarray]:
    """The parts of f32 values as the kernel stores them (part p scaled by 2^(p * scale_bits)), as float64."""
    a = np.asarray(a, dtype=np.float32)
    r = rounder(plan.compute)
    hi = r(a, plan.hi_round)
    if plan.parts == 1:
        return [hi]
    rest = (a.astype(np.float64) - hi).astype(np.float32)  # exact: hi is a rounding of a
    if plan.parts == 2:
        return [hi, r(rest * np.float32(2.0 ** plan.scale_bits), plan.lo_round)]
    mid = r(rest, plan.lo_round)
    return [hi, mid, r((rest.astype(np.float64) - mid).astype(np.float32), plan.lo_round)]


def scale_shifts(x: np.ndarray, axis: int, top: int = F16_TOP) -> np.ndarray:
    """The pre-pass's power-of-two shift per row (axis=1) or column (axis=0): the largest |value| goes to
    [2^(top-1), 2^top); zero or non-finite lines keep 0; shifts clamped to +-126 (docs/PRECISION.md)."""
    m = np.max(np.abs(np.asarray(x, dtype=np.float64)), axis=axis)
    _, e = np.frexp(m)
    ok = (m > 0) & np.isfinite(m)
    return np.where(ok, np.clip(top - e, -126, 126), 0).astype(np.int64)


def emulate_gemm(a: np.ndarray, b: np.ndarray, plan: SplitPlan) -> np.ndarray:
    """A @ B as the tensor-core kernel computes it, with float64 accumulation (exact products). The kernel sums a
    k-step's terms at one level (B's hi part times 2^premul_bits); in exact arithmetic that is this sum."""
    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    if plan.row_scaling:
        sa, sb = scale_shifts(a, 1), scale_shifts(b, 0, plan.top_b)
        a = np.ldexp(a, sa[:, None].astype(np.int32)).astype(np.float32)
        b = np.ldexp(b, sb[None, :].astype(np.int32)).astype(np.float32)
    pa, pb = split(a, plan), split(b, plan)
    accs = [np.zeros((a.shape[0], b.shape[1])) for _ in range(plan.accumulators)]
    for t in plan.terms:
        accs[t.acc] += pa[t.a] @ pb[t.b]
    out = np.zeros((a.shape[0], b.shape[1]))
    for c in sorted(range(plan.accumulators), key=lambda c: -plan.acc_levels[c]):
        out = out + np.ldexp(accs[c], -plan.acc_levels[c] * plan.scale_bits)
    if plan.row_scaling:
        out = np.ldexp(np.ldexp(out, -sa[:, None]), -sb[None, :])
    return out


def error_metrics(out: np.ndarray, ref: np.ndarray) -> dict[str, float]:
    """Relative Frobenius error, the paper's max error (largest absolute difference, paper 001 §6) and MRED
    (mean relative error distance over the entries whose reference is non-zero)."""
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    diff = np.abs(out - ref)
    nz = ref != 0
    ref_norm = float(np.linalg.norm(ref)) or 1e-300
    return {"rel_fro": float(np.linalg.norm(out - ref)) / ref_norm,
            "max_err": float(diff.max()) if diff.size else 0.0,
            "mred": float(np.mean(diff[nz] / np.abs(ref[nz]))) if nz.any() else 0.0}
