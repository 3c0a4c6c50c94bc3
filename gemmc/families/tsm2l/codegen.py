"""Template context of the TSM2L family (tsm2l.cu.j2 beside this file)."""

from __future__ import annotations

from gemmc.families.base import cbool
from gemmc.families.tsm2l.plan import Tsm2lPlan
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import Layout

TEMPLATE = "tsm2l.cu.j2"


def _plan(kernel: Kernel) -> Tsm2lPlan:
    return kernel.plan_as(Tsm2lPlan, "codegen.tsm2l")


def context(kernel: Kernel, hw: Hardware) -> dict:
    plan = _plan(kernel)
    p = kernel.problems[0]
    return {
        "threads": plan.t1, "tcf": plan.tcf, "stage_row": plan.stage_row, "warp": hw.warp_size, "k": p.k, "n": p.n,
        "a_row": cbool(kernel.layout_a is Layout.ROW), "b_row": cbool(kernel.layout_b is Layout.ROW),
        "c_row": cbool(kernel.layout_c is Layout.ROW),
    }


def knobs(kernel: Kernel) -> list[str]:
    return list(_plan(kernel).lines())
