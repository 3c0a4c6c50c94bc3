"""The kernel families gemmc builds, in registration order (ties between equal `Claim`s go to the first).

Adding a family is one package under gemmc/families and one line here (docs/INTERNALS.md, "Adding a family").
"""

from __future__ import annotations

from gemmc.errors import InternalError
from gemmc.families import dynamic, hopper, hopper_grouped, simt, tensorcore, tsm2l, tsm2r
from gemmc.families.base import KernelFamily

FAMILIES: tuple[KernelFamily, ...] = (
    simt.FAMILY,
    tensorcore.FAMILY,
    tsm2r.FAMILY,
    tsm2l.FAMILY,
    hopper.FAMILY,
    dynamic.FAMILY,
    hopper_grouped.FAMILY,
)

NAMES: tuple[str, ...] = tuple(f.name for f in FAMILIES)


def family(name: str | None) -> KernelFamily:
    """The registered family called `name` (a kernel's `family`, set by the select_family pass)."""
    for f in FAMILIES:
        if f.name == name:
            return f
    raise InternalError("families", f"no kernel family is registered as {name!r}")
