"""The TSM2L family (paper 002, TSM2X): a tall-and-skinny A (m >> k) times a small B, one GEMM, streamed near memory
bandwidth: each thread keeps whole rows of A in registers."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gemmc.errors import InternalError
from gemmc.families.base import Claim, GridTile, PlannerFamily
from gemmc.families.cells import CellKind, Cells, planned
from gemmc.families.tsm2l import codegen, planner, steps
from gemmc.families.tsm2l.plan import Tsm2lPlan
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import FamilyPlan, Kernel


class Tsm2l(PlannerFamily):
    planning = steps
    planner = planner
    codegen = codegen
    name = "tsm2l"
    plan_type = Tsm2lPlan
    folder = Path(__file__).parent

    def cells(self, kernel: Kernel, hw: Hardware) -> Cells:
        """tsm2l.cu.j2's grid: thread i of the launch takes rows i, i + stride, ... (tcf of them, stride = the grid's
        threads), so block b computes t1 consecutive rows in each of tcf passes over the rows. One kind per pass."""
        plan, work = planned(kernel, Tsm2lPlan)
        p = kernel.problems[0]
        grid = work.grid[0]
        stride = grid * plan.t1
        step, block = np.divmod(np.arange(plan.tcf * grid), grid)
        m0 = step * stride + block * plan.t1
        inside = m0 < p.m  # the last pass may end before the grid does
        kinds = tuple(CellKind(f"pass {r}", plan.t1, p.n, plan.t1, f"{plan.t1} rows x {p.n} columns, one row a thread "
                               f"(rows {r * stride}-{min(p.m, (r + 1) * stride) - 1})") for r in range(plan.tcf))
        mapping = (f"block b, pass r < {plan.tcf}: rows r * {stride} + b * {plan.t1} and the {plan.t1} after it (the "
                   f"launch's {stride} threads take one row each per pass)",)
        return Cells.of({"problem": 0, "m0": m0[inside], "n0": 0, "rows": plan.t1, "cols": p.n, "kind": step[inside],
                         "block": block[inside], "blocks": 1, "tile": -1}, kinds, "row tile", mapping)

    def claim(self, kernel: Kernel, hw: Hardware) -> tuple[Claim, str] | None:
        why = planner.claim(kernel, hw)
        return (Claim.SHAPE, why) if why else None

    def grid_tile(self, kernel: Kernel, plan: FamilyPlan, hw: Hardware) -> GridTile | None:
        if not isinstance(plan, Tsm2lPlan):
            raise InternalError("tsm2l", f"grid_tile of a {type(plan).__name__}")
        return planner.grid_tile(kernel, plan, hw)


FAMILY = Tsm2l()
