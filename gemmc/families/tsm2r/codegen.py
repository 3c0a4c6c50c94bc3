"""Template context of the TSM2R family (tsm2r.cu.j2 beside this file)."""

from __future__ import annotations

from gemmc.families.base import cbool
from gemmc.families.tsm2r import planner
from gemmc.families.tsm2r.plan import Tsm2rPlan
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import Layout

TEMPLATE = "tsm2r.cu.j2"


def _plan(kernel: Kernel) -> Tsm2rPlan:
    return kernel.plan_as(Tsm2rPlan, "codegen.tsm2r")


def context(kernel: Kernel, hw: Hardware) -> dict:
    plan = _plan(kernel)
    return {
        "threads": plan.t1, "t2": plan.t2, "t3": plan.t3, "kslices": plan.kslices, "row_groups": plan.row_groups,
        "rows_per_warp": plan.rows_per_warp, "warp": hw.warp_size, "cluster": plan.cluster,
        "min_blocks": plan.min_blocks, "stages": plan.stages, "mma": plan.mma, "cp_async": True,
        "cluster_attribute": f"__cluster_dims__({plan.cluster}, 1, 1)" if plan.cluster > 1 else "",
        "a_row": cbool(kernel.layout_a is Layout.ROW), "b_row": cbool(kernel.layout_b is Layout.ROW),
        "c_row": cbool(kernel.layout_c is Layout.ROW),
        "column": planner.column_kernel(kernel, plan),  # the column kernel, else the row kernel (rows.cuh.j2)
    }


def knobs(kernel: Kernel) -> list[str]:
    return list(_plan(kernel).lines())
