"""The predictor's features and the kernels planned for a share of the SMs (paper 004 §3.3-§4.1).

A member's candidate GO-kernels start from the planner's own choice for the whole GPU and for 1/2 and 1/4 of its
SMs (the uniform tile rule then takes larger tiles, as the paper's GO-kernels do); the runtime adds the family's
other alternatives and measures them under contention (gemmc/runtime/concurrent.py). The features are pure
functions of those three plans and the target, so that `inspect`, the Python runtime, the training script and
the generated C++ all see the same numbers without a GPU: the occupancy is the planner's (estimated registers),
not the compiled kernel's.
"""

from __future__ import annotations

import dataclasses
import math

from gemmc.ir.group import SHARES
from gemmc.ir.hardware import Hardware
from gemmc.ir.nodes import Kernel
from gemmc.ir.program import Program
from gemmc.ir.types import Layout
from gemmc.model.tlp import occupancy

FEATURE_NAMES = ("log2 M", "log2 N", "log2 K", "A col", "B col", "C col",
                 *(f"{what} (1/{s} SMs)" for s in SHARES for what in ("log2 blocks", "blocks/SM", "log2 waves")))


def share_hardware(hw: Hardware, share: int) -> Hardware:
    """The target as the planner sees it when a kernel gets 1/share of the SMs."""
    return dataclasses.replace(hw, sm_count=max(1, hw.sm_count // share))


def plan_for_share(kernel: Kernel, hw: Hardware, share: int) -> Kernel:
    """`kernel` planned from scratch for 1/share of the SMs, named `<kernel>_share<share>` (share 1: itself).
    The plan runs on the whole GPU like any other; only the planner's choice differs."""
    if share == 1:
        return kernel
    from gemmc.passes import run_pipeline  # passes import the families; this module is imported by the planner

    fresh = dataclasses.replace(kernel, name=f"{kernel.name}_share{share}", family=None, plan=None, work=None,
                                notes=())
    part = share_hardware(hw, share)
    planned = run_pipeline(Program(part, (fresh,))).kernels[0]
    assert planned.plan is not None
    capped = planned.plan.capped(part.sm_count)  # a persistent grid stays on its share (FamilyPlan.capped)
    if capped is planned.plan:
        return planned
    return dataclasses.replace(planned, plan=capped, notes=(
        *planned.notes, f"persistent grid capped to {part.sm_count} of {hw.sm_count} SMs: the GO-kernel for 1/{share} "
        "of the GPU leaves the other SMs to the GEMMs that run beside it"))


def kernel_figures(kernel: Kernel, hw: Hardware) -> tuple[int, int, float]:
    """(blocks, resident blocks per SM, waves on the whole GPU) of a planned kernel, from the planner's figures."""
    plan, work = kernel.plan, kernel.work
    assert plan is not None and work is not None
    occ = max(1, occupancy(hw, plan.threads, plan.regs_estimate, plan.smem_bytes).blocks_per_sm)
    return work.blocks, occ, work.blocks / (hw.sm_count * occ)


def features(kernel: Kernel, shares: tuple[Kernel, ...], hw: Hardware) -> tuple[float, ...]:
    """The feature vector of a one-GEMM kernel: sizes, layouts, and each share plan's blocks, occupancy and
    waves (log2 where the values span decades). `shares` are the plans for SHARES in order."""
    p = kernel.problems[0]
    x = [math.log2(p.m), math.log2(p.n), math.log2(p.k),
         *(float(lay is Layout.COL) for lay in (kernel.layout_a, kernel.layout_b, kernel.layout_c))]
    for k in shares:
        blocks, occ, waves = kernel_figures(k, hw)
        x += [math.log2(blocks), float(occ), math.log2(waves)]
    return tuple(round(v, 6) for v in x)
