"""Template context of the tensor-core family (templates/tensorcore.cu.j2)."""

from __future__ import annotations

from gemmc.codegen.simt import cbool
from gemmc.errors import InternalError
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.plan_tensorcore import TensorCorePlan
from gemmc.ir.types import Layout

TEMPLATE = "tensorcore.cu.j2"

# (compute type, rounding) -> the device function that rounds an f32 to that part type.
CONVERT = {("f16", "rn"): "gemmc_f16_rn", ("f16", "rz"): "gemmc_f16_rz", ("bf16", "rn"): "gemmc_bf16_rn",
           ("tf32", "rna"): "gemmc_tf32_rna"}
TO_F32 = {"f16": "gemmc_f16_f32", "bf16": "gemmc_bf16_f32", "tf32": "gemmc_tf32_f32"}


def _plan(kernel: Kernel) -> TensorCorePlan:
    if not isinstance(kernel.plan, TensorCorePlan):
        raise InternalError("codegen.tensorcore", f"expected a TensorCorePlan, got {type(kernel.plan).__name__}")
    return kernel.plan


def float_literal(value: float) -> str:
    """An exact f32 literal of a power of two (repr of a double that is exactly representable)."""
    return repr(float(value)) + "f"


def context(kernel: Kernel, hw: Hardware) -> dict:
    plan = _plan(kernel)
    v, sp = plan.variant, plan.split
    lo_round = sp.lo_round if sp.parts > 1 else sp.hi_round
    # Accumulators combined smallest level first; each is divided by 2^(level * scale_bits).
    order = sorted(range(sp.accumulators), key=lambda c: -sp.acc_levels[c])
    combine = [{"index": c, "factor": float_literal(2.0 ** -(sp.acc_levels[c] * sp.scale_bits))
                if sp.acc_levels[c] * sp.scale_bits else ""} for c in order]
    return {
        "bm": v.bm, "bn": v.bn, "bk": v.bk, "wm": v.wm, "wn": v.wn, "threads": v.threads, "pad": plan.pad,
        "parts": sp.parts, "accs": sp.accumulators, "compute": sp.compute, "mma_k": plan.mma[2],
        "elem_bits": 8 * plan.elem_bytes, "ldmatrix": sp.compute != "tf32",
        "cvt_hi": CONVERT[(sp.compute, sp.hi_round)], "cvt_lo": CONVERT[(sp.compute, lo_round)],
        "to_f32": TO_F32[sp.compute], "scale": float_literal(2.0 ** sp.scale_bits), "scale_bits": sp.scale_bits,
        "terms": [{"a": t.a, "b": t.b, "acc": t.acc} for t in sp.terms], "combine": combine,
        "split_text": sp.describe(), "flush": sp.parts > 1, "row_scaling": cbool(sp.row_scaling),
        "a_kcontig": cbool(kernel.layout_a is Layout.ROW), "b_kcontig": cbool(kernel.layout_b is Layout.COL),
        "c_row": cbool(kernel.layout_c is Layout.ROW), "beta_zero": cbool(kernel.beta == 0.0),
    }


def knobs(kernel: Kernel) -> list[str]:
    return list(_plan(kernel).lines()[:2])
