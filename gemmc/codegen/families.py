"""Family -> codegen module. Each module has `TEMPLATE` (a file in templates/), `context(kernel, hw) -> dict`
(plain values only) and `knobs(kernel) -> list[str]` (the family's lines of the generated header comment)."""

from __future__ import annotations

from types import ModuleType

from gemmc.codegen import simt
from gemmc.ir.types import Family

TEMPLATES: dict[Family, ModuleType] = {
    Family.SIMT: simt,
}
