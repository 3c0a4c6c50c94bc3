"""Measured constants as data: each kernel family's calibration table.

A family's thresholds, crossovers and measured catalogue choices live in its package's `calibration.py`, one
`Measured` entry per name: the value its planner uses, the GPU it was measured on, why the rule holds, and the
results files (`bench/results/...`) that show it. The planner binds the values to its own module constants when it
is imported, so planning stays a pure function with no I/O; `load` gives a family's whole table to tools and
tests (docs/INTERNALS.md, "Calibration tables", says how to re-measure an entry).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any, Generic, TypeVar

V = TypeVar("V")

H100 = "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)"  # the `gpu` of every results file measured on the H100 SXM
FAMILIES = ("simt", "tensorcore", "tsm2r", "tsm2l")  # the families whose package holds a calibration.py


@dataclass(frozen=True, slots=True)
class Measured(Generic[V]):
    """One calibration entry: `value`, measured on `gpu`, holds for the reason `why` (the mechanism and what the
    measurement showed, in the present tense); `sources` are the results files, relative to the repository root,
    that show it."""

    value: V
    gpu: str
    why: str
    sources: tuple[str, ...]


@cache
def load(family: str) -> Mapping[str, Measured[Any]]:
    """A family's calibration table: every `Measured` entry of `gemmc.families.<family>.calibration` by name, read
    once."""
    module = importlib.import_module(f"gemmc.families.{family}.calibration")
    return MappingProxyType({name: entry for name, entry in vars(module).items() if isinstance(entry, Measured)})
