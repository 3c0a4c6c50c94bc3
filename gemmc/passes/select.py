"""The `select_family` pass: which kernel family computes this kernel.

Requires: a normalized kernel. Guarantees: `family` names a registered family and a note says why.
An explicit `algorithm` names the family; under `algorithm auto` every registered family may claim the kernel
(`KernelFamily.claim`) and the strongest claim wins, ties going to the family registered first: a tensor-core
precision requires the tensor-core family, the TSM2 families claim the tall-and-skinny shapes of their model, the
hopper family one bf16/f16 GEMM on sm_90 (tall-and-skinny ones too: the TSM2 families leave those to it), and the
SIMT family takes the rest (half storage included).
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
    return dataclasses.replace(kernel, family=name, notes=(*kernel.notes, f"family {name}: {why}"))
