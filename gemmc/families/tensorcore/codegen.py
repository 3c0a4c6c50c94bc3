"""Template context of the tensor-core family (tensorcore.cu.j2 beside this file)."""

from __future__ import annotations

from gemmc.errors import InternalError
from gemmc.families.base import cbool, raster_context
from gemmc.families.tensorcore.plan import F16_TOP, PREP_THREADS, SCRATCH_ALIGN, TensorCorePlan, scratch_bytes
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import Layout

TEMPLATE = "tensorcore.cu.j2"

# (compute type, rounding) -> the device function that rounds an f32 to that part type.
CONVERT = {("f16", "rn"): "gemmc_f16_rn", ("f16", "rz"): "gemmc_f16_rz", ("bf16", "rn"): "gemmc_bf16_rn",
           ("tf32", "rna"): "gemmc_tf32_rna"}
TO_F32 = {"f16": "gemmc_f16_f32", "bf16": "gemmc_bf16_f32", "tf32": "gemmc_tf32_f32"}


def _plan(kernel: Kernel) -> TensorCorePlan:
    return kernel.plan_as(TensorCorePlan, "codegen.tensorcore")


def float_literal(value: float) -> str:
    """An exact f32 literal of a power of two (repr of a double that is exactly representable)."""
    return repr(float(value)) + "f"


def f16x2_pow2(bits: int) -> str:
    """Two packed f16 copies of 2^bits (the operand of mul.f16x2 that multiplies B's hi fragment)."""
    half = (15 + bits) << 10  # f16: exponent bias 15, 10 fraction bits
    return f"0x{half * 0x10001:08x}u"


def context(kernel: Kernel, hw: Hardware) -> dict:
    plan = _plan(kernel)
    v, sp = plan.variant, plan.split
    lo_round = sp.lo_round if sp.parts > 1 else sp.hi_round
    low = min(sp.levels)
    terms = [{"a": t.a, "b": t.b, "big": bool(sp.premul_bits) and lv == low}
             for t, lv in zip(sp.terms, sp.levels, strict=True)]
    if any(t["big"] and t["b"] != 0 for t in terms):
        raise InternalError("codegen.tensorcore", "only B's hi part is pre-multiplied")
    # One problem whose every size needs padding: the template holds its scratch layout to the plan's on it.
    probe = (v.bm + 1, v.bn + 1, v.bk + 1)
    return {
        "raster": raster_context(kernel),
        "prep_threads": PREP_THREADS, "scratch_align": SCRATCH_ALIGN, "smem_align": plan.smem_align,
        "probe": probe,
        "scratch_probe": scratch_bytes((probe,), v.bm, v.bn, v.bk, sp.parts, plan.elem_bytes, plan.b_planes),
        "bm": v.bm, "bn": v.bn, "bk": v.bk, "wm": v.wm, "wn": v.wn, "threads": v.threads, "pad": plan.pad,
        "stages": plan.stages, "cp_async": True, "chain": plan.chain if sp.parts > 1 else 1, "parts": sp.parts,
        "compute": sp.compute, "mma_k": plan.mma[2],
        "elem_bits": 8 * plan.elem_bytes, "ldmatrix": sp.compute != "tf32",
        "cvt_hi": CONVERT[(sp.compute, sp.hi_round)], "cvt_lo": CONVERT[(sp.compute, lo_round)],
        "to_f32": TO_F32[sp.compute], "scale": float_literal(2.0 ** sp.scale_bits), "scale_bits": sp.scale_bits,
        "terms": terms, "premul": bool(sp.premul_bits), "premul_bits": sp.premul_bits,
        "premul_word": f16x2_pow2(sp.premul_bits), "top_a": F16_TOP, "top_b": sp.top_b,
        "level_factor": float_literal(2.0 ** -sp.level_factor_bits) if sp.level_factor_bits else "",
        "split_text": sp.describe(), "flush": sp.parts > 1, "row_scaling": cbool(sp.row_scaling),
        "a_kcontig": cbool(plan.a_kcontig), "b_kcontig": cbool(plan.b_kcontig),
        "c_row": cbool(kernel.layout_c is Layout.ROW),
        "wgmma": plan.wgmma, "wg_n": plan.wg_n, "b_planes": plan.b_planes,
        "premul_scale": float_literal(2.0 ** sp.premul_bits),
    }


def knobs(kernel: Kernel) -> list[str]:
    return list(_plan(kernel).lines()[:2])
