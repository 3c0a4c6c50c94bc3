"""The TSM2R family (paper 002, TSM2X): a large A times a tall-and-skinny B (n small), one GEMM,
streamed near memory bandwidth: k split over warps and thread-block clusters, f64 on the tensor cores where they
pay."""

from __future__ import annotations

from pathlib import Path

from gemmc.errors import InternalError
from gemmc.families.base import Claim, PlannerFamily
from gemmc.families.tsm2r import codegen, planner, steps, tuning
from gemmc.families.tsm2r.plan import Tsm2rPlan
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import FamilyPlan, Kernel


class Tsm2r(PlannerFamily):
    planning = steps
    planner = planner
    codegen = codegen
    name = "tsm2r"
    plan_type = Tsm2rPlan
    folder = Path(__file__).parent

    def claim(self, kernel: Kernel, hw: Hardware) -> tuple[Claim, str] | None:
        why = planner.claim(kernel, hw)
        return (Claim.SHAPE, why) if why else None

    def alternatives(self, kernel: Kernel, hw: Hardware) -> tuple[tuple[str, Kernel], ...]:
        return tuning.alternatives(kernel, hw)

    def grid_tile(self, kernel: Kernel, plan: FamilyPlan, hw: Hardware) -> tuple[int, int, int] | None:
        if not isinstance(plan, Tsm2rPlan):
            raise InternalError("tsm2r", f"grid_tile of a {type(plan).__name__}")
        return planner.grid_tile(kernel, plan, hw)


FAMILY = Tsm2r()
