"""The kernel families gemmc builds, in registration order (ties between equal `Claim`s go to the first).

Adding a family is one package under gemmc/families and one line here (docs/INTERNALS.md, "Adding a family").
"""

from __future__ import annotations

from collections.abc import Mapping

from gemmc.errors import InternalError
from gemmc.families import dynamic, hopper, hopper_grouped, simt, tensorcore, tsm2l, tsm2r
from gemmc.families.base import Fusion, KernelFamily, NotFused
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import Span

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


def fuse(members: Mapping[str, Kernel], name: str, span: Span, hw: Hardware) -> Fusion | NotFused:
    """A concurrent group's members, all of one family, as one launch of the family that `fuses` theirs, or why
    they cannot run as one."""
    first = next(iter(members.values()))
    kind = first.family
    for f in FAMILIES:
        if f.fuses == kind:
            return f.fuse(members, name, span, hw)
    ways = "; ".join(f"{f.fuses} members as one {f.name} launch" for f in FAMILIES if f.fuses)
    # where a statement chose the members' family, it is what the note points at
    return NotFused(f"fused runs {ways}; {', '.join(members)} {'are' if len(members) > 1 else 'is'} {kind}",
                    first.written("algorithm", "precision", "dtype"))
