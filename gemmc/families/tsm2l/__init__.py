"""The TSM2L family (paper 002, TSM2X): a tall-and-skinny A (m >> k) times a small B, one GEMM, streamed near memory
bandwidth: each thread keeps whole rows of A in registers."""

from __future__ import annotations

from pathlib import Path

from gemmc.errors import InternalError
from gemmc.families.base import Claim, PlannerFamily
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

    def claim(self, kernel: Kernel, hw: Hardware) -> tuple[Claim, str] | None:
        why = planner.claim(kernel)
        return (Claim.SHAPE, why) if why else None

    def grid_tile(self, kernel: Kernel, plan: FamilyPlan, hw: Hardware) -> tuple[int, int, int] | None:
        if not isinstance(plan, Tsm2lPlan):
            raise InternalError("tsm2l", f"grid_tile of a {type(plan).__name__}")
        return planner.grid_tile(kernel, plan, hw)


FAMILY = Tsm2l()
