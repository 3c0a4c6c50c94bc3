"""The `select_family` pass: which kernel family computes this kernel.

Requires: a normalized kernel. Guarantees: `family` names a registered family and a note says why.
An explicit `algorithm` names the family; under `algorithm auto` every registered family may claim the kernel
(`KernelFamily.claim`) and the strongest claim wins, ties going to the family registered first: a tensor-core
precision requires the tensor-core family, the TSM2 families claim the tall-and-skinny shapes of their model, the
hopper family one bf16/f16 GEMM on sm_90 (tall-and-skinny ones too: the TSM2 families leave those to it), and the
SIMT family takes the rest (half storage included). A family built for the kernel's data on its target that does
not take it says why (`KernelFamily.declines`: a statement that keeps a bf16 GEMM off the tensor cores), in the notes
and in `Kernel.declined`, which `gemmc compile` notes at that statement.
"""

from __future__ import annotations

import dataclasses

from gemmc.errors import InternalError
from gemmc.families.base import Claim
from gemmc.families.registry import FAMILIES
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import AUTO


def select_family(kernel: Kernel, hw: Hardware) -> Kernel:
    claims = [(c[0], -i, f.name, c[1]) for i, f in enumerate(FAMILIES) if (c := f.claim(kernel, hw)) is not None]
    strongest = max(claims, default=None)
    if strongest is not None and (kernel.algorithm == AUTO or strongest[0] is Claim.REQUIRED):
        name, why = strongest[2], strongest[3]  # (the check pass refused an algorithm that contradicts REQUIRED)
    elif kernel.algorithm != AUTO:
        name, why = kernel.algorithm, f"algorithm {kernel.algorithm} in the schedule"
    else:
        raise InternalError("select_family", f"no family claims kernel '{kernel.name}'")
    notes = (*kernel.notes, f"family {name}: {why}")
    declined = next(((f.name, d) for f in FAMILIES if f.name != name and (d := f.declines(kernel, hw)) is not None),
                    None)
    if declined is None:
        return dataclasses.replace(kernel, family=name, notes=notes)
    other, (reason, at) = declined
    return dataclasses.replace(kernel, family=name, notes=(*notes, f"not {other}: {reason}"),
                               declined=f"not {other}: {reason}", declined_span=at if at.line else kernel.span)
