"""Family -> codegen module. Each module has `TEMPLATE` (a file in templates/) or `template(kernel) -> str`,
`context(kernel, hw) -> dict`
(plain values only) and `knobs(kernel) -> list[str]` (the family's lines of the generated header comment)."""

from __future__ import annotations

from types import ModuleType

from gemmc.codegen import simt, tensorcore, tsm2
from gemmc.ir.types import Family

TEMPLATES: dict[Family, ModuleType] = {
    Family.SIMT: simt,
    Family.TSM2R: tsm2,
    Family.TSM2L: tsm2,
    Family.TENSORCORE: tensorcore,
}
