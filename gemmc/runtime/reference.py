"""float64 references and the error metrics gemmc reports (relative Frobenius; paper 001's max error and MRED)."""

from __future__ import annotations

from typing import Any

from gemmc.runtime.device import cupy


def reference(a: Any, b: Any, c: Any | None, alpha: float, beta: float) -> Any:
    """alpha * A @ B + beta * C in float64 on the device (C ignored when beta == 0, as the kernels do)."""
    cp = cupy()
    out = alpha * (a.astype(cp.float64) @ b.astype(cp.float64))
    if beta != 0 and c is not None:
        out += beta * c.astype(cp.float64)
    return out


def errors(out: Any, ref: Any) -> dict[str, float]:
    """rel_fro = ||out - ref||_F / ||ref||_F; max_abs = max |out - ref|; mred = mean |out - ref| / |ref|
    over the nonzero reference entries; nan = count of non-finite outputs."""
    cp = cupy()
    o = out.astype(cp.float64)
    diff = o - ref
    denom = float(cp.linalg.norm(ref)) or 1.0
    nz = cp.abs(ref) > 0
    mred = float(cp.mean(cp.abs(diff[nz]) / cp.abs(ref[nz]))) if bool(nz.any()) else 0.0
    max_abs = float(cp.max(cp.abs(diff))) if diff.size else 0.0
    return {"rel_fro": float(cp.linalg.norm(diff)) / denom, "max_abs": max_abs, "mred": mred,
            "nonfinite": int((~cp.isfinite(o)).sum())}
