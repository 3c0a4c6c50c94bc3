"""Template context of the TSM2 families (templates/tsm2r.cu.j2, templates/tsm2l.cu.j2)."""

from __future__ import annotations

from gemmc.codegen.simt import cbool
from gemmc.errors import InternalError
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.plan_tsm2 import Tsm2Plan
from gemmc.ir.types import Family, Layout


def template(kernel: Kernel) -> str:
    return "tsm2l.cu.j2" if kernel.family is Family.TSM2L else "tsm2r.cu.j2"


def _plan(kernel: Kernel) -> Tsm2Plan:
    if not isinstance(kernel.plan, Tsm2Plan):
        raise InternalError("codegen.tsm2", f"expected a Tsm2Plan, got {type(kernel.plan).__name__}")
    return kernel.plan


def context(kernel: Kernel, hw: Hardware) -> dict:
    plan = _plan(kernel)
    p = kernel.problems[0]
    return {
        "threads": plan.t1, "t2": plan.t2, "t3": plan.t3, "tcf": plan.tcf, "kslices": plan.kslices,
        "row_groups": plan.row_groups,
        "rows_per_warp": plan.rows_per_warp, "warp": hw.warp_size, "k": p.k, "n": p.n, "cluster": plan.cluster,
        "stage_row": plan.stage_row,
        "min_blocks": plan.min_blocks, "stages": plan.stages, "mma": plan.mma, "cp_async": plan.family is Family.TSM2R,
        "cluster_attribute": f"__cluster_dims__({plan.cluster}, 1, 1)" if plan.cluster > 1 else "",
        "a_row": cbool(kernel.layout_a is Layout.ROW), "b_row": cbool(kernel.layout_b is Layout.ROW),
        "c_row": cbool(kernel.layout_c is Layout.ROW), "beta_zero": cbool(kernel.beta == 0.0),
        "a_by_rows": cbool(plan.a_by_rows),
    }


def knobs(kernel: Kernel) -> list[str]:
    return list(_plan(kernel).lines())
