"""Template context of the hopper family (hopper.cu.j2 and hopper_launcher.j2 beside this file)."""

from __future__ import annotations

from gemmc.families.base import cbool
from gemmc.families.hopper import calibration as cal
from gemmc.families.hopper.plan import HopperPlan, Operand
from gemmc.families.tensorcore.codegen import CONVERT, TO_F32, float_literal
from gemmc.families.tensorcore.plan import F16_TOP, PREP_THREADS
from gemmc.families.tma_loop import C_BUFFERS, TMAP_DTYPE
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import DType, Layout

TEMPLATE = "hopper.cu.j2"


def _plan(kernel: Kernel) -> HopperPlan:
    return kernel.plan_as(HopperPlan, "codegen.hopper")


def context(kernel: Kernel, hw: Hardware) -> dict:
    plan = _plan(kernel)
    p = kernel.problems[0]
    number = hw.arch.removeprefix("sm_")
    return {
        "bm": plan.bm, "bn": plan.bn, "bk": plan.bk, "stages": plan.stages, "cluster": plan.cluster,
        "band": plan.band, "consumers": plan.consumers, "threads": plan.threads,
        "producer_regs": plan.producer_regs, "consumer_regs": plan.consumer_regs,
        "a_bytes": plan.a_bytes, "b_bytes": plan.b_bytes, "stage_bytes": plan.stage_bytes,
        "smem_bytes": plan.smem_bytes, "a_box": plan.a_box, "b_box": plan.b_box,
        "a_kmajor": cbool(plan.a_kmajor), "b_kmajor": cbool(plan.b_kmajor), "compute": plan.compute,
        "c_type": kernel.c_dtype.value, "c_row": cbool(kernel.layout_c is Layout.ROW),
        "beta_zero": cbool(kernel.beta == 0.0), "alpha_one": cbool(kernel.alpha == 1.0),
        "acc_regs": plan.bn // 2, "sm_cap": plan.sm_cap, "elem": plan.elem, "boxw": plan.box_width, "parts": plan.parts,
        "work_bytes": plan.work_bytes, "k_perm": cbool(plan.k_permuted), "sum_stages": cal.SUM_STAGES.value,
        "tma_store": plan.tma_store, "c_sub_cols": plan.c_sub_cols, "c_buffers": C_BUFFERS, "c_box": plan.c_box,
        "c_bytes": plan.c_bytes, "tmap_dtype_c": TMAP_DTYPE[kernel.c_dtype],
        "ksplit": plan.ksplit, "group": plan.group, "reduce_pitch": plan.reduce_pitch,
        "reduce_bytes": plan.reduce_bytes,
        # the standalone launcher's tensor maps (the Python runtime encodes the same in runtime/tma.py)
        "m": p.m, "n": p.n, "k": p.k, "tmap_dtype": TMAP_DTYPE[DType(plan.tma_dtype)],
        "ldc": p.n if kernel.layout_c is Layout.ROW else p.m,
        "tensors": [{"name": name, **vars_of(op)} for name, op in zip("AB", plan.tensors(p.m, p.n, p.k), strict=True)],
        "header_notes": [f"Build the .cu with nvcc -gencode=arch=compute_{number}a,code=sm_{number}a -std=c++17 and "
                         "link with -lcuda: the launcher encodes TMA tensor maps with the driver API "
                         "(cuTensorMapEncodeTiled)."],
        **split_context(plan),
    }


def split_context(plan: HopperPlan) -> dict:
    """The pre-pass and the products of an f16/bf16 split (split.cuh.j2); `split` false for every other plan."""
    sp = plan.split
    if sp is None:
        return {"split": False}
    pairs = plan.term_planes
    return {
        "split": True, "split_text": sp.describe(), "split_parts": sp.parts, "a_planes": plan.a_planes,
        "b_planes": plan.b_planes, "line_regs": plan.line_regs,
        "terms": len(pairs), "term_a": sum(a << (4 * t) for t, (a, _) in enumerate(pairs)),
        "term_b": sum(b << (4 * t) for t, (_, b) in enumerate(pairs)), "plane_steps": plan.plane_steps,
        "pads": plan.pads, "regions": plan.regions, "scratch_bytes": plan.scratch_bytes,
        "prep_blocks": plan.prep_blocks, "prep_threads": PREP_THREADS,
        "cvt_hi": CONVERT[(sp.compute, sp.hi_round)], "cvt_lo": CONVERT[(sp.compute, sp.lo_round)],
        "to_f32": TO_F32[sp.compute], "scale": float_literal(2.0 ** sp.scale_bits), "scale_bits": sp.scale_bits,
        "premul_scale": float_literal(2.0 ** sp.premul_bits), "top_a": F16_TOP, "top_b": sp.top_b,
        "row_scaling": cbool(sp.row_scaling),
    }


def vars_of(op: Operand) -> dict:
    return {"inner": op.inner, "outer": op.outer, "box": op.box, "padded": op.padded}


def knobs(kernel: Kernel) -> list[str]:
    return list(_plan(kernel).lines())
