"""The `select_family` pass: which kernel family computes this kernel.

Requires: a normalized kernel. Guarantees: `family` is set and a note says why.
A tensor-core precision (f16, bf16, tf32, any split) takes the tensor-core family; else an explicit
`algorithm` wins; `algorithm auto` takes a TSM2 family for the tall-and-skinny shapes of
`tsm2.classify` (unless the schedule fixed a tile or thread count), else the SIMT family.
"""

from __future__ import annotations

import dataclasses

from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import Algorithm, DType, Family
from gemmc.passes import tsm2


def select_family(kernel: Kernel, hw: Hardware) -> Kernel:
    tall_skinny, reason = tsm2.classify(kernel, hw)
    prec = kernel.precision
    if prec is not None and prec.compute not in (DType.F32, DType.F64):
        family, why = Family.TENSORCORE, f"precision {prec} runs on tensor cores"
    elif kernel.algorithm is not Algorithm.AUTO:
        family, why = Family(kernel.algorithm.value), f"algorithm {kernel.algorithm.value} in the schedule"
    elif tall_skinny is not None and kernel.tile is None and kernel.threads is None:
        family, why = tall_skinny, reason
    else:
        family, why = Family.SIMT, "f32/f64 on CUDA cores: the default family"
    return dataclasses.replace(kernel, family=family, notes=(*kernel.notes, f"family {family.value}: {why}"))
