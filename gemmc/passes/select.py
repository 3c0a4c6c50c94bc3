"""The `select_family` pass: which kernel family computes this kernel.

Requires: a normalized kernel. Guarantees: `family` is set and a note says why.
An explicit `algorithm` wins; `algorithm auto` takes the SIMT family unless a rule below claims the kernel.
"""

from __future__ import annotations

import dataclasses

from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import Algorithm, Family


def select_family(kernel: Kernel, hw: Hardware) -> Kernel:
    if kernel.algorithm is not Algorithm.AUTO:
        family, why = Family(kernel.algorithm.value), f"algorithm {kernel.algorithm.value} in the schedule"
    else:
        family, why = Family.SIMT, "f32/f64 on CUDA cores: the default family"
    return dataclasses.replace(kernel, family=family, notes=(*kernel.notes, f"family {family.value}: {why}"))
