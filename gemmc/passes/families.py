"""Family registry: each family's planner module has `plan(kernel, hw) -> FamilyPlan`,
`worklist(kernel, plan, hw) -> WorkList` and `notes(kernel, plan, hw) -> tuple[str, ...]` (why it chose what it
did)."""

from __future__ import annotations

from types import ModuleType

from gemmc.ir.types import Family
from gemmc.passes import simt, tensorcore, tsm2

PLANNERS: dict[Family, ModuleType] = {
    Family.SIMT: simt,
    Family.TSM2R: tsm2,
    Family.TSM2L: tsm2,
    Family.TENSORCORE: tensorcore,
}
