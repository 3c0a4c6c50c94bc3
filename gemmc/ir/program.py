"""The IR of one schedule file: its target, its kernels and its concurrent groups.

Its own module because a group (gemmc/ir/group.py) holds kernels and a program holds groups: here both are below it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gemmc.ir.group import Group
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.types import NO_SPAN, Span


@dataclass(frozen=True, slots=True)
class Program:
    target: Hardware
    kernels: tuple[Kernel, ...]
    filename: str = field(default="<string>", compare=False)
    span: Span = NO_SPAN
    groups: tuple[Group, ...] = ()  # concurrent groups; their members are among `kernels`
