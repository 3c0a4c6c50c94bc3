"""The `normalize` pass: make defaults explicit so later passes never see a missing value.

Requires: a checked kernel. Guarantees: `precision` is set (the dtype's own type when the schedule gave none);
a split's method is the default one when the schedule named none.
"""

from __future__ import annotations

import dataclasses

from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import SPLITS, Precision


def normalize(kernel: Kernel, hw: Hardware) -> Kernel:
    precision = kernel.precision or Precision(kernel.dtype)
    if precision.is_split and precision.method is None:
        precision = dataclasses.replace(precision, method=SPLITS[(precision.compute, precision.terms)][0])
    return dataclasses.replace(kernel, precision=precision)
